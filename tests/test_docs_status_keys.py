"""docs/studies.md names every key of ``Study.status()`` in its list of them (the paragraph
"The keys of `study.status()`"): a key added to the status and not to the page is found here."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from boloop.study import create_study

PAGE = Path(__file__).resolve().parents[1] / "docs" / "studies.md"


def _documented_keys() -> set[str]:
    """The keys the paragraph lists: its backticked names outside parentheses (inside them it
    names sub-keys, `to`, `value`, ..., which must not count as the status's own)."""
    text = PAGE.read_text()
    start = text.index("The keys of `study.status()`")
    paragraph = text[text.index(":", start) : text.index("\n\n", start)]
    depth, top = 0, []
    for ch in paragraph:
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch != ")":
            top.append(ch)
    return set(re.findall(r"`([a-z_]+)`", "".join(top)))


def test_the_list_is_read_without_the_sub_keys():
    keys = _documented_keys()
    assert {"name", "moved", "horizon", "open_query", "continue_command"} <= keys
    assert not {"to", "at", "value", "left", "evaluations", "rejected_before"} & keys


def test_every_status_key_is_named_on_the_studies_page():
    space = {"threshold": 0.5, "parameters": [{"name": "x", "low": 0.0, "high": 1.0, "grid": 11}]}
    study = create_study("keys", "randomized-straddle", space, storage=f"memory://{uuid.uuid4()}")
    study.tell(study.ask().id, 0.3)
    missing = sorted(set(study.status()) - _documented_keys())
    assert missing == [], f"status keys not named in docs/studies.md: {missing}"
