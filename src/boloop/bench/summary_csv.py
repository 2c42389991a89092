"""A summary table that a partial re-run updates instead of replacing.

The reproduction pages (``docs/reproductions/*/``) keep a ``summary.csv`` beside their scripts,
made from many ``boloop bench run`` sweeps. Re-running one sweep and then the table script used
to rewrite the whole table from that sweep alone, dropping every other sweep's rows.
:func:`update_summary_csv` writes the new rows in place of the stored rows of the same groups
(a group is the value of the key columns: a sweep, a (problem, method) pair) and keeps the
stored rows of every other group, in the stored order; groups new to the table go at its end.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from boloop._files import replaced_when_written
from boloop.errors import InvalidInputError

__all__ = ["SummaryUpdate", "update_summary_csv"]

Group = tuple[str, ...]


@dataclass(frozen=True)
class SummaryUpdate:
    """What :func:`update_summary_csv` did, group by group (each group a tuple of key values)."""

    replaced: list[Group] = field(default_factory=list)
    added: list[Group] = field(default_factory=list)
    kept: list[Group] = field(default_factory=list)

    def describe(self, key: Sequence[str]) -> str:
        """One line per kind of change, for the script's output."""

        def groups(gs: list[Group]) -> str:
            return ", ".join("/".join(g) for g in gs)

        names = ", ".join(key)
        lines = []
        if self.replaced:
            lines.append(f"replaced ({names}): {groups(self.replaced)}")
        if self.added:
            lines.append(f"added ({names}): {groups(self.added)}")
        if self.kept:
            lines.append(
                f"kept from the stored table, not in these results ({names}): {groups(self.kept)}"
            )
        return "\n".join(lines)


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def update_summary_csv(
    path: str | Path,
    header: Sequence[str],
    rows: Sequence[Sequence[Any] | Mapping[str, Any]],
    key: Sequence[str],
) -> SummaryUpdate:
    """Write ``rows`` to the CSV file ``path``, keeping its stored rows of other groups.

    ``rows`` are sequences in ``header``'s order or mappings from header names (a missing name is
    an empty cell). ``key`` names the columns whose values make a row's group. The stored rows of
    a group that ``rows`` have are replaced by ``rows``' (at the place of the group's first stored
    row); stored groups that ``rows`` lack are kept as stored; new groups are appended. Columns are
    ``header``'s, then any the stored table has besides (a kept row's cells are matched by column
    name; a cell a row does not have is empty). ``rows`` must not be empty: a script with no
    results must write nothing.
    """
    header = [str(h) for h in header]
    missing = [k for k in key if k not in header]
    if missing:
        raise InvalidInputError(f"key columns {missing} are not in the header {header}")
    if not rows:
        raise InvalidInputError("no rows: nothing would be written but the stored table's")
    index = [header.index(k) for k in key]
    new: list[list[str]] = []
    for row in rows:
        if isinstance(row, Mapping):
            new.append([_cell(row.get(h)) for h in header])
        else:
            if len(row) != len(header):
                raise InvalidInputError(f"a row of {len(row)} cells for {len(header)} columns")
            new.append([_cell(v) for v in row])
    by_group: dict[Group, list[list[str]]] = {}
    for row in new:
        by_group.setdefault(tuple(row[i] for i in index), []).append(row)

    path = Path(path)
    stored: list[dict[str, str]] = []
    columns = list(header)
    if path.exists():
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            stored = [dict(r) for r in reader if any(r.values())]
            # a column only the stored table has (say, one more round of a longer sweep) stays
            columns += [c for c in reader.fieldnames or [] if c not in columns]
    update = SummaryUpdate()
    out: list[list[str]] = []
    written: set[Group] = set()
    for srow in stored:
        group = tuple(srow.get(k) or "" for k in key)
        if group in by_group:
            if group not in written:
                out.extend(by_group[group])
                written.add(group)
                update.replaced.append(group)
        else:
            out.append([srow.get(c) or "" for c in columns])
            if group not in update.kept:
                update.kept.append(group)
    for group, grows in by_group.items():
        if group not in written:
            out.extend(grows)
            update.added.append(group)
    width = len(columns)
    out = [row + [""] * (width - len(row)) for row in out]
    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced_when_written(path) as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(out)
    return update
