"""docs/studies.md's command list says which keys ``boloop study ask --json`` always gives and
which only where they apply: a newcomer's trial read ``label`` and ``calibration`` among the
keys of every query, while an evaluation's JSON has neither."""

from __future__ import annotations

import json
import re
from pathlib import Path

from boloop.cli import main
from boloop.study import create_study

PAGE = Path(__file__).resolve().parents[1] / "docs" / "studies.md"


def _ask_entry() -> str:
    """The command list's entry of ``boloop study ask NAME [--json]``, its lines joined."""
    lines = PAGE.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("boloop study ask NAME"))
    entry = [lines[start]]
    for ln in lines[start + 1 :]:
        if not ln.startswith(" "):
            break
        entry.append(ln.strip())
    return " ".join(entry)


def _top_level_names(text: str) -> set[str]:
    """The names in ``text`` outside parentheses (inside them it names alternatives)."""
    depth, top = 0, []
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch != ")":
            top.append(ch)
    return set(re.findall(r"[a-z_]+", "".join(top)))


def test_ask_json_keys_always_given_are_those_of_every_query(tmp_path, capsys):
    json_part = _ask_entry().split("JSON:", 1)[1]
    always, _, where_apply = json_part.partition(";")
    always_keys = _top_level_names(always)
    assert {"id", "kind", "params", "rejected_before"} <= always_keys
    assert {"label", "calibration"} <= _top_level_names(where_apply)
    url = f"sqlite:///{tmp_path / 'ask.db'}"
    space = {"threshold": 0.5, "parameters": [{"name": "x", "low": 0.0, "high": 1.0, "grid": 11}]}
    create_study("keys", "randomized-straddle", space, storage=url, seed=0)
    assert main(["study", "ask", "keys", "--json", "--storage", url]) == 0
    given = set(json.loads(capsys.readouterr().out))
    assert always_keys <= given, always_keys - given
    assert given - always_keys <= _top_level_names(where_apply), given - always_keys
