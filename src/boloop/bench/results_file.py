"""The results file of a sweep, ``DIR/results.csv``: its columns, reading it, whether a run in it
is complete, appending a run's rows, rewriting it atomically, and the output folder (the format,
and how a sweep keeps the file, are described in :mod:`boloop.bench.runner`)."""

from __future__ import annotations

import csv
import io
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from boloop.errors import InvalidInputError
from boloop.simulate import KEY_COLUMNS, TIME_COLUMNS

RESULTS_FILE = "results.csv"

#: the columns that name the code of a run of a problem or a method given as a file: the sha256
#: (hex) of the file's bytes, or of them and the user's modules it imports (see the docstring of
#: :mod:`boloop.bench.runner`); empty for ids of the library (and methods named by their id)
PROBLEM_SHA256, METHOD_SHA256 = "problem_file_sha256", "method_file_sha256"
SHA256_COLUMNS = (PROBLEM_SHA256, METHOD_SHA256)

Key = tuple[str, str, int]


def check_output_folder(out: str | Path) -> Path:
    """``out`` as a :class:`~pathlib.Path`, refused if it cannot be a folder: it, or the nearest
    folder above it that exists, is a file. Nothing is created (a sweep that fails before its
    first run writes nothing)."""
    out = Path(out)
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                raise InvalidInputError(
                    f"the output folder {str(out)!r} cannot be made: {str(folder)!r} is a file, "
                    "not a folder"
                )
            break
    return out


def read_results(path: str | Path) -> tuple[list[str], dict[Key, list[dict[str, str]]]]:
    """Metric columns and the rows (as strings) by (problem, method, seed) of a results.csv (the
    rows hold every column, :data:`SHA256_COLUMNS` too; those are no metric)."""
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_FILE
    try:
        fh = path.open(newline="", encoding="utf-8-sig")  # a spreadsheet adds a BOM
    except FileNotFoundError:
        return [], {}
    except IsADirectoryError:  # a sweep created its output folder after the is_dir() check
        return read_results(path)
    with fh:
        try:
            return _read_rows(path, fh)
        except UnicodeDecodeError as exc:  # edited in a program that saved it in another code
            bad = exc.object[exc.start : exc.start + 1].hex()
            raise InvalidInputError(
                f"{path} is not a boloop results file: it is not UTF-8 text (byte 0x{bad}); "
                "boloop writes it in UTF-8"
            ) from None


def _read_rows(path: Path, fh: IO[str]) -> tuple[list[str], dict[Key, list[dict[str, str]]]]:
    """The body of :func:`read_results`: ``fh`` is ``path`` open for reading."""
    reader = csv.DictReader(fh)
    header = list(reader.fieldnames or [])
    missing = [c for c in (*KEY_COLUMNS, *TIME_COLUMNS) if c not in header]
    if missing:
        raise InvalidInputError(f"{path} is not a boloop results file: no columns {missing}")
    metrics = [
        c
        for c in header
        if c not in KEY_COLUMNS and c not in TIME_COLUMNS and c not in SHA256_COLUMNS
    ]
    runs: dict[Key, list[dict[str, str]]] = {}
    for row in reader:
        # a row cut short by an interrupted append has missing (None) or extra fields
        if None in row or None in row.values():
            continue
        try:
            key = (row["problem"], row["method"], int(row["seed"]))
            int(row["step"])
        except ValueError:
            continue
        runs.setdefault(key, []).append(row)
    return metrics, runs


def is_complete(rows: Sequence[dict[str, Any]] | None, budget: int) -> bool:
    """Whether the rows of one run are exactly steps 1..budget."""
    return rows is not None and sorted(int(r["step"]) for r in rows) == list(range(1, budget + 1))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if value != value else repr(value))
    return str(value)


def append_results(
    path: str | Path,
    metrics: Sequence[str],
    rows: list[dict[str, Any]],
    extra: Sequence[str] = (),
) -> None:
    """Append the rows of one run to ``path`` in one write, flushed to disk. The file must exist
    with the header ``problem, method, seed, step, *metrics, ask_seconds, tell_seconds, *extra``
    (``extra``: :data:`SHA256_COLUMNS` or none)."""
    header = [*KEY_COLUMNS, *metrics, *TIME_COLUMNS, *extra]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in sorted(rows, key=lambda r: int(r["step"])):
        writer.writerow([_cell(row.get(c)) for c in header])
    with open(path, "a", newline="", encoding="utf-8") as fh:
        fh.write(buf.getvalue())
        fh.flush()
        os.fsync(fh.fileno())


def write_results(
    path: str | Path,
    metrics: Sequence[str],
    runs: dict[Key, list[dict[str, Any]]],
    extra: Sequence[str] = (),
) -> None:
    """Write all runs to ``path`` atomically, sorted by problem, method, seed, step; ``extra``
    columns (:data:`SHA256_COLUMNS` or none) follow ``tell_seconds``."""
    path = Path(path)
    header = [*KEY_COLUMNS, *metrics, *TIME_COLUMNS, *extra]
    fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(header)
            for key in sorted(runs):
                for row in sorted(runs[key], key=lambda r: int(r["step"])):
                    writer.writerow([_cell(row.get(c)) for c in header])
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
