"""boloop as a user outside the project has it: a wheel, not the source tree.

An editable install or ``PYTHONPATH=src`` hides what only an installed package shows: a template
or static file left out of the wheel, a module that reads a file relative to the repository, an
optional package imported eagerly, a command that needs an extra and ends in a traceback. The
wheel is built offline from a copy of the sources (``pip wheel --no-deps --no-build-isolation``:
no stale ``build/`` directory, no network), and what the package reads at run time is derived
from the source tree, never listed here.
"""

from __future__ import annotations

import sys

import pytest

from boloop.cli import main


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
