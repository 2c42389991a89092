"""A study's policy steps compute the same bits whatever BLAS thread count the process has
(boloop._blas): a log written by ``boloop serve`` (one BLAS thread) loads in a Python process
(one per core), and the reverse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

REACTOR = """\
monotone = "power"
h = 80.0

[[parameters]]
name = "power"
low = 0.0
high = 100.0
grid = 30

[[parameters]]
name = "flow"
low = 1.0
high = 10.0
grid = 20
"""

#: (f, g) a person gave in the browser for the reactor study's first 33 queries (the last one
#: above the limit); after it, boloop serve asked flow 2.89 and a Python process flow 6.21.
#: That study's g model was the Matern kernel alone, the learned default then: the study is
#: recreated with trend_g=false (the default since is the trend in s, which asks otherwise)
ANSWERS = [
    (-0.014, 25.4), (-0.009, 24.9), (-0.001, 24.8), (-0.014, 25.2), (0.004, 24.4),
    (0.023, 25.3), (-0.008, 25.3), (-0.005, 25.0), (-0.014, 25.4), (-0.009, 24.9),
    (-0.001, 24.8), (-0.014, 25.2), (0.004, 24.4), (0.023, 25.3), (-0.008, 25.3),
    (-0.005, 25.0), (0.008, 24.6), (0.006, 25.4), (0.013, 24.9), (0.009, 24.5),
    (0.012, 28.5), (-0.009, 26.5), (0.032, 27.0), (0.008, 27.0), (0.037, 27.1),
    (0.034, 26.9), (0.027, 27.7), (0.023, 27.0), (0.038, 27.5), (0.02, 27.1),
    (0.048, 27.4), (0.039, 26.6), (0.03, 85.0),
]  # fmt: skip

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from boloop.study import create_study
    space, url, answers = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    st = create_study("reactor", "m-safeopt", space, storage=url, seed=3, trend_g=False)
    asked = []
    for f, g in answers:
        q = st.ask()
        asked.append(int(q.query.index))
        st.tell(q.id, {"f": f, "g": g})
    asked.append(int(st.ask().query.index))
    print(json.dumps(asked))
    """
)


def _asked(tmp_path, threads: str) -> list[int]:
    space = tmp_path / "reactor.toml"
    space.write_text(REACTOR)
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = threads  # read when numpy loads its BLAS
    url = f"sqlite:///{tmp_path / f'threads{threads}.db'}"
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(space), url, json.dumps(ANSWERS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_study_asks_the_same_queries_with_one_or_two_blas_threads(tmp_path):
    one = _asked(tmp_path, "1")  # as boloop serve and boloop study run
    two = _asked(tmp_path, "2")  # a Python process on a two-core machine
    assert len(one) == len(ANSWERS) + 1
    assert one == two
    # which setting comes last is a near tie of the acquisition: 121 (power=3.448, flow=2.89,
    # what boloop serve asked) on the machine of the trial, 211 on another CPU with the same
    # numpy; the property is that the thread count does not decide it, not the index itself


def test_one_blas_thread_limits_and_restores():
    import scipy.linalg  # noqa: F401 - scipy's own BLAS is loaded

    from boloop._blas import one_blas_thread

    def threads() -> list[int]:
        return [
            i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"
        ]

    before = threads()
    with one_blas_thread():
        assert set(threads()) == {1}
        with one_blas_thread():  # re-entrant
            assert set(threads()) == {1}
        assert set(threads()) == {1}
    assert threads() == before
