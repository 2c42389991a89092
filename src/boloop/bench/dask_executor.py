"""The runs of a sweep on a Dask cluster (``boloop bench run --executor dask``).

Needs the ``dask`` extra (``pip install 'boloop[dask]'``: ``distributed``), imported only here and
only when this executor is used. Each (problem, method, seed) is one task running the same function
as a process-pool worker (:func:`boloop.bench.runner._run_one`), so the rows are the same, row for
row, for the same seeds; the parent writes ``results.csv`` exactly as for the process pool.

* Without a scheduler address a ``distributed.LocalCluster`` is started on this machine (one
  single-threaded worker process per job, BLAS/OpenMP threads 1, no dashboard) and closed after the
  sweep. With ``tcp://host:port`` the sweep runs on that scheduler's workers, which must import the
  same boloop (and see the same paths for ``file.py:factory`` problems).
* A worker that dies (killed, out of memory) loses nothing: the scheduler runs its tasks again on
  other workers (Dask's ``distributed.scheduler.allowed-failures``, 3 by default: a run on which
  that many workers died is reported failed with ``KilledWorker``).
* The progress bar moves with the steps of the runs in progress through a Dask event topic of the
  sweep (:meth:`distributed.Worker.log_event`), at most five messages a second per run.
* If the client is interrupted (Ctrl-C, a killed ``boloop``), its tasks are cancelled; a rerun of
  the sweep resumes from ``results.csv`` like any other.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from boloop.errors import InvalidInputError

__all__ = ["DASK_EXTRA_MESSAGE", "import_distributed", "dask_client", "run_on_dask"]

logger = logging.getLogger("boloop")

DASK_EXTRA_MESSAGE = (
    "--executor dask needs the 'dask' extra ({missing} is missing): pip install 'boloop[dask]'"
)

#: environment of LocalCluster workers: one BLAS/OpenMP thread per single-threaded worker
WORKER_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "BLIS_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
}


def import_distributed() -> Any:
    """The ``distributed`` module, or an :class:`InvalidInputError` naming the extra to install."""
    try:
        import distributed
    except ImportError as exc:
        raise InvalidInputError(
            DASK_EXTRA_MESSAGE.format(missing=exc.name or "distributed")
        ) from exc
    return distributed


@contextmanager
def dask_client(scheduler: str | None, n_workers: int) -> Iterator[Any]:
    """A ``distributed.Client`` for a sweep, closed on exit (with the LocalCluster it started).

    ``scheduler`` None starts a LocalCluster of ``n_workers`` single-threaded worker processes on
    127.0.0.1 (random ports, no dashboard). An address that cannot be reached within Dask's
    connect timeout (``distributed.comm.timeouts.connect``, 30 s by default; the environment
    variable ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT`` changes it) raises
    :class:`InvalidInputError`.
    """
    distributed = import_distributed()
    cluster = None
    if scheduler is None:
        cluster = distributed.LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            env=dict(WORKER_ENV),
        )
        address = cluster.scheduler_address
    else:
        address = scheduler.strip()
        if not address:
            raise InvalidInputError("--scheduler needs an address like tcp://host:8786")
    try:
        try:
            client = distributed.Client(address, set_as_default=False)
        except (OSError, ValueError, TypeError) as exc:  # refused, timed out, malformed address
            raise InvalidInputError(
                f"cannot connect to the Dask scheduler at {address!r}: {exc} (is `dask scheduler` "
                "running there? nothing was written)"
            ) from exc
        try:
            if scheduler is not None:
                workers = client.scheduler_info().get("workers", {})
                if not workers:
                    logger.warning(
                        "the Dask scheduler at %s has no workers yet; the sweep waits for them",
                        address,
                    )
            yield client
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()


def _run_on_worker(spec: Any, topic: str | None) -> tuple[Any, list[str], list[dict[str, Any]]]:
    """One run in a Dask worker; progress steps go to the sweep's event ``topic``."""
    from boloop.bench.runner import _run_one

    report_step = None
    if topic is not None:
        from distributed import get_worker

        worker = get_worker()

        def report_step(key: tuple[str, str, int], step: int) -> None:
            worker.log_event(topic, [list(key), step])

    return _run_one(spec, report_step)


def run_on_dask(
    client: Any,
    todo: Sequence[Any],
    finish: Callable[[Any, Any, BaseException | None], None],
    report_step: Callable[[tuple[str, str, int], int], None] | None,
) -> None:
    """Submit one task per run spec and call ``finish(spec, result, error)`` in this thread as each
    ends (in completion order). On any exception here (an interruption) every task still pending
    is cancelled before it propagates."""
    from distributed import as_completed

    token = uuid.uuid4().hex[:12]
    topic = f"boloop-progress-{token}" if report_step is not None else None
    if topic is not None and report_step is not None:
        step_callback = report_step

        def on_event(event: tuple[float, Any]) -> None:
            try:
                key, step = event[1]
                step_callback((str(key[0]), str(key[1]), int(key[2])), int(step))
            except Exception:  # a malformed message must not break the client's event loop
                logger.debug("ignored progress event %r", event)

        client.subscribe_topic(topic, on_event)
    futures: dict[Any, Any] = {}
    try:
        for i, spec in enumerate(todo):
            fut = client.submit(
                _run_on_worker, spec, topic, key=f"boloop-run-{token}-{i}", pure=False
            )
            futures[fut] = spec
        for fut in as_completed(list(futures), loop=client.loop):
            spec = futures[fut]
            if fut.status == "finished":
                finish(spec, fut.result(), None)
            elif fut.cancelled():
                finish(spec, None, RuntimeError("the Dask task was cancelled (scheduler lost?)"))
            else:
                error = fut.exception()
                tb = fut.traceback()
                finish(spec, None, error.with_traceback(tb) if tb is not None else error)
    except BaseException:
        pending = [f for f in futures if not f.done()]
        if pending:
            logger.info("cancelling %d pending Dask runs", len(pending))
            try:
                client.cancel(pending, force=True)
            except Exception:  # the scheduler may already be gone
                logger.debug("could not cancel the pending runs", exc_info=True)
        raise
    finally:
        if topic is not None:
            try:
                client.unsubscribe_topic(topic)
            except Exception:
                logger.debug("could not unsubscribe %s", topic, exc_info=True)
