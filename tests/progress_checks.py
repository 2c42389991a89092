"""Reading the frames of ``boloop bench run``'s progress bar on a terminal (each drawn after a
``\\r``): ``[#####-------] 3/6 runs  2s  ~5s left  label``."""

from __future__ import annotations

import re
from dataclasses import dataclass

FRAME = re.compile(
    r"\[(?P<bar>[#-]+)\] (?P<count>\S+)/(?P<total>\d+) runs(?: \(\d+ failed\))?"
    r"  (?P<elapsed>\d+)s(?:  ~(?P<left>\d+)s left)?"
)


@dataclass(frozen=True)
class Frame:
    """One drawing of the bar: its ``fill`` of ``width`` characters, the run count as printed,
    the estimate of the seconds left (None: not shown)."""

    fill: int
    width: int
    count: str
    total: int
    left: int | None

    @property
    def ahead_of_count(self) -> bool:
        """The bar shows more than the finished runs (it follows the runs in progress)."""
        return self.fill > int(self.count) * self.width // self.total


def frames(text: str) -> list[Frame]:
    """Every drawing of the bar in ``text`` (a terminal's output, frames separated by ``\\r``)."""
    found = []
    for part in text.split("\r"):
        m = FRAME.search(part)
        if m:
            bar = m["bar"]
            found.append(
                Frame(
                    fill=bar.count("#"),
                    width=len(bar),
                    count=m["count"],
                    total=int(m["total"]),
                    left=int(m["left"]) if m["left"] is not None else None,
                )
            )
    return found


def check_whole_counts_and_no_early_estimate(text: str, total: int) -> list[Frame]:
    """The frames of a sweep of ``total`` runs: every count is a whole number of runs, and no
    estimate of the time left while the bar shows less than one run's share (no run can have
    finished then). Returns the frames."""
    found = frames(text)
    assert found, text
    for f in found:
        assert f.count.isdigit(), f"a run count that is no whole number: {f}"
        assert f.total == total
        if f.fill * total < f.width:
            assert f.left is None, f"an estimate before any run finished: {f}"
    return found
