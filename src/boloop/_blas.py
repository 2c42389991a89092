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
import os
import threading
from collections.abc import Iterator
from typing import Any

__all__ = [
    "BLAS_THREAD_VARIABLES",
    "env_pinned",
    "one_blas_thread",
    "one_blas_thread_for_good",
    "thread_variables_set",
]

#: the BLAS/OpenMP thread variables; each library reads its own when it loads (OpenBLAS reads
#: ``OPENBLAS_NUM_THREADS``, else ``OMP_NUM_THREADS``)
BLAS_THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)

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


def thread_variables_set() -> list[str]:
    """The :data:`BLAS_THREAD_VARIABLES` set in this process's environment (by the user, or by
    :func:`boloop.cli.limit_blas_threads`)."""
    return [name for name in BLAS_THREAD_VARIABLES if name in os.environ]


def one_blas_thread_for_good() -> bool:
    """One BLAS thread in this process from now on (a worker process of a bench sweep; never
    restored): every variable of :data:`BLAS_THREAD_VARIABLES` is set to 1, which a library
    loaded later reads, and the libraries already loaded (numpy's and scipy's BLAS, loaded
    here first if they were not; a forked worker has its parent's, with the parent's thread
    count) are limited to one thread with ``threadpoolctl``. False where ``threadpoolctl`` is
    not installed: then only the libraries loaded after the variables were set run one thread
    (those of a spawned worker whose parent set them before starting it)."""
    os.environ.update(dict.fromkeys(BLAS_THREAD_VARIABLES, "1"))
    import scipy.linalg  # noqa: F401  (scipy's own BLAS: loaded now, so limited now)

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return False
    threadpool_limits(limits=1)  # BLAS and OpenMP alike, for good
    return True
