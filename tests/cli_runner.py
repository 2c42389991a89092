"""Run the ``boloop`` command in this process, as a subprocess would see it.

``run_cli(argv, cwd=..., env=..., stdin=...)`` calls :func:`boloop.cli.main` with the working
directory, the environment, stdin, stdout and stderr of a child process and gives back a
:class:`subprocess.CompletedProcess` (exit code, stdout, stderr). It tests the same command-line
code as ``python -m boloop.cli`` (whose ``__main__`` is ``sys.exit(main())``) without paying an
interpreter start and the numpy/scipy imports for every call; an exception the command does not
turn into an exit code propagates and fails the test (where a child would print a traceback).
The tests that check the real entry point (imports, signals, the process's exit) keep spawning it.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path


def run_cli(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess:
    from boloop.cli import main

    old_env, old_cwd, old_stdin = dict(os.environ), os.getcwd(), sys.stdin
    out, err = io.StringIO(), io.StringIO()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        sys.stdin = io.StringIO(stdin or "")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse's refusals
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin = old_stdin
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(old_env)
    return subprocess.CompletedProcess(list(argv), code, out.getvalue(), err.getvalue())


def assert_refused(res: subprocess.CompletedProcess, *words: str) -> str:
    """Check that a command was refused as the CLI promises (exit status 2, one line
    ``boloop: error: ...`` naming each of ``words``, no traceback) and return that line."""
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("boloop: error: "), res.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]
