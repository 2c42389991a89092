"""``boloop.bench.summary_csv.update_summary_csv``: a partial re-run updates a stored table."""

from __future__ import annotations

import csv

import pytest

from boloop.bench.summary_csv import update_summary_csv
from boloop.errors import InvalidInputError

HEADER = ["sweep", "method", "mean"]


def _rows(path):
    with path.open(newline="") as fh:
        return list(csv.reader(fh))


def test_a_new_file_holds_the_rows(tmp_path):
    path = tmp_path / "sub" / "summary.csv"
    update = update_summary_csv(
        path, HEADER, [["a", "m", 1.5], {"sweep": "b", "method": "m"}], ["sweep"]
    )
    assert _rows(path) == [HEADER, ["a", "m", "1.5"], ["b", "m", ""]]
    assert update.added == [("a",), ("b",)] and not update.replaced and not update.kept


def test_stored_groups_are_replaced_in_place_kept_or_appended(tmp_path):
    path = tmp_path / "summary.csv"
    path.write_text("sweep,method,mean\na,m,1\nb,m,2\nb,n,3\nc,m,4\n")
    update = update_summary_csv(path, HEADER, [["d", "m", 9], ["b", "m", 7]], ["sweep"])
    # b's two stored rows give way to its one new row, at b's place; a and c untouched; d last
    assert _rows(path) == [
        HEADER,
        ["a", "m", "1"],
        ["b", "m", "7"],
        ["c", "m", "4"],
        ["d", "m", "9"],
    ]
    assert update.replaced == [("b",)]
    assert update.kept == [("a",), ("c",)]
    assert update.added == [("d",)]
    assert "kept from the stored table, not in these results (sweep): a, c" in update.describe(
        ["sweep"]
    )


def test_groups_of_several_columns(tmp_path):
    path = tmp_path / "summary.csv"
    path.write_text("sweep,method,mean\na,m,1\na,n,2\n")
    update_summary_csv(path, HEADER, [["a", "n", 5]], ["sweep", "method"])
    assert _rows(path) == [HEADER, ["a", "m", "1"], ["a", "n", "5"]]


def test_a_column_only_the_stored_table_has_is_kept(tmp_path):
    path = tmp_path / "summary.csv"
    path.write_text("sweep,method,mean,round4\na,m,1,0.5\nb,m,2,0.7\n")
    update_summary_csv(path, HEADER, [["b", "m", 3]], ["sweep"])
    assert _rows(path) == [
        ["sweep", "method", "mean", "round4"],
        ["a", "m", "1", "0.5"],
        ["b", "m", "3", ""],
    ]


def test_no_rows_or_a_key_outside_the_header_writes_nothing(tmp_path):
    path = tmp_path / "summary.csv"
    path.write_text("sweep,method,mean\na,m,1\n")
    with pytest.raises(InvalidInputError, match="no rows"):
        update_summary_csv(path, HEADER, [], ["sweep"])
    with pytest.raises(InvalidInputError, match="not in the header"):
        update_summary_csv(path, HEADER, [["a", "m", 2]], ["problem"])
    with pytest.raises(InvalidInputError, match="3 columns"):
        update_summary_csv(path, HEADER, [["a", "m"]], ["sweep"])
    assert path.read_text() == "sweep,method,mean\na,m,1\n"
