"""Every ```python block of the README and of ``docs/*.md`` runs as written (a newcomer copies
them; the Python reference of docs/studies.md failed at its fourth call before this test).

Per page, in a fresh directory, the page's Python blocks run in order, each as its own script
(``python block.py``, the directory on ``sys.path``, the default storage ``sqlite:///boloop.db``
there, ``0`` typed at every ``input()``): a block whose first line is ``# name.py`` is written as
``name.py``, so the blocks after it import it (``import emc``). The data files the pages name
before their blocks (``recipes.csv``:, ``coating.toml``:, ...; a ```csv, ```toml or ```json block
after a paragraph that ends in ``:`` and names the file in backticks) are written there first, from
every page, so the README's ``create_study(..., "recipes.csv")`` finds the table that
docs/studies.md shows.

A block that must not run (it needs a Dask scheduler or a database server that a test machine has
not) is marked by the line ``<!-- docs-test: skip (the reason) -->`` right before its fence; the
marker is invisible on the rendered page and its reason is checked to be given.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP = re.compile(r"<!-- docs-test: skip \((?P<reason>[^)]+)\) -->")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
DATA_LANGS = {"csv", "toml", "json"}


def _blocks(page: Path) -> list[tuple[int, str, str, str]]:
    """``(line, lang, body, paragraph before the fence)`` of every fenced block of ``page``."""
    lines = page.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        j = i + 1
        while not lines[j].startswith("```"):
            j += 1
        k = i
        while k > 0 and not lines[k - 1].strip():
            k -= 1
        start = k
        while start > 0 and lines[start - 1].strip() and not lines[start - 1].startswith("```"):
            start -= 1
        before = " ".join(s.strip() for s in lines[start:k])
        out.append((i + 1, m["lang"], "\n".join(lines[i + 1 : j]) + "\n", before))
        i = j + 1
    return out


def _data_files() -> dict[str, str]:
    """The data files the pages show, by name: a csv/toml/json block after a paragraph ending in
    ':' that names a file of that kind in backticks."""
    files: dict[str, str] = {}
    for page in PAGES:
        for _, lang, body, before in _blocks(page):
            if lang not in DATA_LANGS or not before.endswith(":"):
                continue
            names = re.findall(rf"`([\w.-]+\.{lang})`", before)
            if names:
                assert files.get(names[0], body) == body, f"two different {names[0]} in the docs"
                files[names[0]] = body
    return files


def _python_blocks(page: Path) -> list[tuple[int, str]]:
    runnable = []
    for line, lang, body, before in _blocks(page):
        if lang != "python":
            continue
        skip = SKIP.search(before)
        if skip is not None and before.endswith(skip[0]):  # the line right before the fence
            assert skip["reason"].strip(), f"{page.name}:{line}: a skip marker needs a reason"
            continue
        runnable.append((line, body))
    return runnable


PAGES_WITH_PYTHON = [p for p in PAGES if _python_blocks(p)]


def test_the_pages_have_python_examples_and_data_files():
    """The extraction finds what the pages show (a change of the fences would otherwise leave
    this test running nothing)."""
    assert {p.name for p in PAGES_WITH_PYTHON} >= {"README.md", "studies.md", "methods.md"}
    assert {"recipes.csv", "coating.toml", "trial.toml", "process.json"} <= set(_data_files())


@pytest.mark.parametrize("page", PAGES_WITH_PYTHON, ids=lambda p: p.name)
def test_the_python_examples_run_as_written(page, tmp_path):
    for name, text in _data_files().items():
        (tmp_path / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "BOLOOP_STORAGE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    for line, body in _python_blocks(page):
        first = body.splitlines()[0]
        named = re.fullmatch(r"# ([\w-]+\.py)", first.strip())
        script = tmp_path / (named[1] if named else f"block_{line}.py")
        script.write_text(body)
        res = subprocess.run(
            [sys.executable, script.name],
            cwd=tmp_path,
            env=env,
            input="0\n" * 100,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 0, f"{page.name}:{line} failed:\n{res.stderr[-3000:]}"
