"""One BLAS thread for a study's policy steps, in every process.

A study's log is checked on every load: the replay must ask exactly the stored queries. The
policies' linear algebra (Cholesky factors, products with the candidate grid, hyperparameter
fits) rounds differently with a different number of BLAS threads, and a method that picks the
argmax of nearly tied scores then proposes another point. ``boloop study`` and ``boloop serve``
run with one BLAS thread (:func:`boloop.cli.limit_blas_threads`); a Python process that loads the
same study gets OpenBLAS's default, one thread per core. A log written by ``boloop serve`` then
failed to load from Python (and the reverse): the web study of the reactor (M-SafeOpt) asked
flow 2.89 after its 33rd answer, the same answers told in Python asked flow 6.21.

:func:`one_blas_thread` runs a block with one BLAS thread whatever the process, so the policy
computes the same bits in the CLI, the server and a script or notebook (on the same machine).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["env_pinned", "one_blas_thread"]

_lock = threading.Lock()
_depth = 0
_limiter: Any = None
#: True once the BLAS thread variables were set to 1 before numpy was imported (the CLI): every
#: BLAS library this process loads already runs one thread, nothing to limit
_env_pinned = False
#: the missing-threadpoolctl warning was logged (once per process)
_warned = False


def env_pinned() -> None:
    """Record that every BLAS thread variable was 1 before numpy was imported
    (:func:`boloop.cli.limit_blas_threads`)."""
    global _env_pinned
    _env_pinned = True


def _limit() -> Any:
    """The limiter (``threadpoolctl``, an optional dependency: ``pip install boloop[threads]``),
    or None without it: a warning, once, says how to get the same bits instead."""
    global _warned
    # scipy.linalg loads scipy's own BLAS (numpy has another): both are limited, also when the
    # block is the first to use scipy.linalg (a library loaded inside the block would keep the
    # default thread count for this block)
    import scipy.linalg  # noqa: F401

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        if not _warned:
            _warned = True
            logging.getLogger("boloop").warning(
                "threadpoolctl is not installed: this process runs a study's policy steps with "
                "the BLAS library's own thread count, and a study whose log was written with "
                "another (boloop study and boloop serve use one thread) may fail to replay. "
                "Install boloop[threads], or set OPENBLAS_NUM_THREADS=1 (and OMP_NUM_THREADS=1, "
                "MKL_NUM_THREADS=1) before numpy is imported."
            )
        return None
    return threadpool_limits(limits=1, user_api="blas")


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with one BLAS thread (re-entrant; threads share one limit, restored when
    the last block ends)."""
    global _depth, _limiter
    if _env_pinned:
        yield
        return
    with _lock:
        if _depth == 0:
            _limiter = _limit()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _limiter is not None:
                _limiter.restore_original_limits()
                _limiter = None
