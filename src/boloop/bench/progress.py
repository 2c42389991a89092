"""What a sweep tells the user: the progress bar (:class:`Progress`), what it did
(:class:`SweepReport`, :func:`format_report`) and, after Ctrl-C, what the file keeps
(:class:`SweepInterrupted`, :func:`format_interrupted`)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from boloop.bench.results_file import Key


@dataclass
class SweepReport:
    """What a sweep did: runs completed now, skipped (already present), failed (with messages);
    ``reruns``: one line per problem or method file whose stored runs were run again because the
    file is not the one they ran (``"emc.py changed since its stored runs: rerunning 4 runs"``)."""

    path: Path
    completed: list[Key] = field(default_factory=list)
    skipped: list[Key] = field(default_factory=list)
    failed: list[tuple[Key, str]] = field(default_factory=list)
    seconds: float = 0.0
    reruns: list[str] = field(default_factory=list)


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C (a :class:`KeyboardInterrupt`, so code that catches that still
    does): ``report`` holds the runs completed before it (in the file) and those skipped
    (already in the file); ``total`` is the number of runs of the sweep."""

    def __init__(self, report: SweepReport, total: int) -> None:
        super().__init__("sweep interrupted")
        self.report = report
        self.total = total


class Progress:
    """A plain-text progress bar on a stream (stderr): ``[#####-----] 5/10 runs  12s  ~10s left``.

    On a terminal the bar is redrawn in place and moves with the steps of the runs in progress; on
    other streams (logs, CI) one line is written per finished run. The count is of finished runs
    (whole runs: a run is in the results file or not); the estimate of the time left is shown
    once a run has finished (before, it extrapolated the first steps of the first runs, whose
    start-up it includes: a first "~6548s left" for a sweep of 14 s). Thread-safe. A terminal is
    redrawn at most once per ``redraw_seconds`` while runs progress.
    """

    def __init__(
        self,
        total: int,
        stream: IO[str] | None = None,
        width: int = 30,
        redraw_seconds: float = 0.2,
    ) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.partial: dict[Key, float] = {}
        self.stream = stream
        self.width = width
        self.redraw_seconds = redraw_seconds
        self.t0 = time.perf_counter()
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self._lock = threading.Lock()
        self._last_draw = 0.0
        self._finished: set[Key] = set()

    def advance(self, key: Key, fraction: float) -> None:
        """A run in progress reached ``fraction`` of its budget."""
        with self._lock:
            if key in self._finished:  # a late message from a run already counted
                return
            self.partial[key] = min(max(fraction, 0.0), 1.0)
            if self.tty and time.perf_counter() - self._last_draw > self.redraw_seconds:
                self._draw("")

    def step(self, key: Key | None = None, label: str = "", failed: bool = False) -> None:
        """A run finished (or failed)."""
        with self._lock:
            self.done += 1
            self.failed += failed
            if key is not None:
                self.partial.pop(key, None)
                self._finished.add(key)
            self._draw(label, final=True)

    def _draw(self, label: str, final: bool = False) -> None:
        if self.stream is None or (not self.tty and not final):
            return
        self._last_draw = time.perf_counter()
        progress = self.done + sum(self.partial.values())
        frac = progress / max(self.total, 1)
        fill = int(frac * self.width)
        bar = "#" * fill + "-" * (self.width - fill)
        fail = f" ({self.failed} failed)" if self.failed else ""
        elapsed = time.perf_counter() - self.t0
        # a run has finished: written (done), or at its last step in a task still running (Dask)
        finished = self.done or any(f >= 1.0 for f in self.partial.values())
        left = f"  ~{elapsed / frac * (1 - frac):.0f}s left" if finished and frac < 1 else ""
        text = f"[{bar}] {self.done}/{self.total} runs{fail}  {elapsed:.0f}s{left}  {label}"
        if self.tty:
            self.stream.write("\r" + text[:120].ljust(120))
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(text.rstrip() + "\n")
        self.stream.flush()


def _runs(count: int) -> str:
    return f"{count} run" + ("" if count == 1 else "s")


def format_interrupted(exc: SweepInterrupted) -> str:
    """The CLI's line after Ctrl-C: how many runs of the sweep are kept in the file and that
    the same command resumes (the runs in the file are skipped, the others run)."""
    r = exc.report
    kept = len(r.completed) + len(r.skipped)
    left = exc.total - kept
    return (
        f"boloop: interrupted; {kept} of {_runs(exc.total)} are kept in {r.path} "
        f"({len(r.completed)} finished now, {len(r.skipped)} were there before). Run the same "
        f"command again to resume: it skips the runs in the file and runs the other {left}"
    )


def format_report(report: SweepReport) -> str:
    """One line per outcome for the CLI."""
    lines = [
        f"{_runs(len(report.completed))} completed, {len(report.skipped)} skipped, "
        f"{len(report.failed)} failed in {report.seconds:.1f}s -> {report.path}"
    ]
    lines += [f"FAILED {k[1]} on {k[0]} seed {k[2]}: {msg}" for k, msg in report.failed]
    return "\n".join(lines)
