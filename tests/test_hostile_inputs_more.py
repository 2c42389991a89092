"""A second hostile-input trial (the first: ``test_hostile_inputs.py``), at the entry points it
did not try: ``boloop bench run|plot|summary``, ``boloop problems|methods|metrics``, the
media files of a study's space, and a token server built with ``create_app``. What a user
mistypes or a script misuses is refused with a message naming what is wrong (a
:class:`~boloop.errors.BoloopError`; exit status 2 and one ``boloop: error:`` line), and nothing
already written is lost or changed."""

from __future__ import annotations

import pytest

from cli_runner import assert_refused, run_cli

SWEEP = ["--problem", "levelset/sinusoidal", "--method", "random", "--budget", "2", "--quiet"]


# -- boloop bench run --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "seeds,words",
    [
        ("²", "seeds must be 'N'"),  # a digit to str.isdigit, not to int(): was a ValueError
        ("0-99999999999", "at most"),  # was a MemoryError after filling the memory
        ("99999999999999999999", "at most"),  # was an OverflowError
    ],
)
def test_bench_run_refuses_seeds_it_cannot_read_or_hold(tmp_path, seeds, words):
    res = run_cli(["bench", "run", *SWEEP, "--seeds", seeds, "--out", "out"], cwd=tmp_path)
    assert_refused(res, words)
    assert not (tmp_path / "out").exists()
