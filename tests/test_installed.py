"""boloop as a user outside the project has it: a wheel, not the source tree.

An editable install or ``PYTHONPATH=src`` hides what only an installed package shows: a template
or static file left out of the wheel, a module that reads a file relative to the repository, an
optional package imported eagerly, a command that needs an extra and ends in a traceback. The
wheel is built offline from a copy of the sources (``pip wheel --no-deps --no-build-isolation``:
no stale ``build/`` directory, no network), and what the package reads at run time is derived
from the source tree, never listed here.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

import boloop
from boloop.bench.demo import DemoEntry, run_demo
from boloop.cli import main


def test_python_dash_m_boloop_is_the_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "boloop", "--version"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"boloop {boloop.__version__}"


@pytest.mark.parametrize(
    "hidden, package",
    [
        (("uvicorn",), "uvicorn"),
        (("fastapi",), "fastapi"),
        (("python_multipart", "multipart", "multipart.multipart"), "python-multipart"),
    ],
)
def test_serve_without_the_web_extra_says_which_extra_in_one_line(
    hidden: tuple[str, ...],
    package: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import boloop.web.server

    def no_server(*args: object, **kwargs: object) -> None:
        raise AssertionError("the server was started without the web extra")

    monkeypatch.setattr(boloop.web.server, "serve", no_server)  # never bind a port here
    for name in hidden:  # as if the package were not installed
        monkeypatch.setitem(sys.modules, name, None)
    code = main(["serve", "--host", "0.0.0.0", "--port", "8799"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    # one line, before the address and a generated token would be printed
    assert len(err.strip().splitlines()) == 1, err
    assert package in err and "pip install 'boloop[web]'" in err
    assert "http://" not in err


def test_demo_without_matplotlib_prints_its_table_and_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # the core install: no plot extra
    entry = DemoEntry("levelset", "levelset/toy", ("toy-random",), 4, seeds="2", toy=True)
    text = run_demo(tmp_path / "demo", entries=[entry], jobs=1)
    assert "### levelset/toy" in text and "| toy-random | 2 | 4 |" in text
    assert "no plots" in text and "pip install 'boloop[plot]'" in text
    assert list((tmp_path / "demo").glob("*.png")) == []
    with open(tmp_path / "demo" / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 4
