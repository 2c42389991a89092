"""list_studies while another process removes a study (``boloop study migrate
--undo`` drops a copy) after the storage's counts were read."""

from __future__ import annotations

import dataclasses

import boloop.study.listing as listing
from boloop.study import create_study, list_studies
from boloop.study.log import now_iso
from boloop.study.storage import open_storage


def test_a_study_removed_while_the_list_is_read_does_not_fail_the_listing(tmp_path, monkeypatch):
    """'old' is continued by 'new' as an earlier boloop recorded it (no time, another storage's
    text: the logs must be read). 'old' is removed right after the created events were read:
    the listing leaves it out (as it does a study removed before its log is read), it does not
    fail with 'unknown study'."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    old = create_study("old", "randomized-straddle", problem="levelset/toy", storage=url, seed=0)
    old.tell(old.ask().id, 0.3)
    create_study("new0", from_study="old", storage=url)
    store = open_storage(url)
    log = store.events(store.study_id("new0"))
    record = {k: v for k, v in log[0].payload["from_study"].items() if k != "created_at"}
    record["storage"] = "sqlite:////elsewhere/lab.db"
    when = now_iso()
    head = dataclasses.replace(
        log[0], payload={**log[0].payload, "from_study": record}, created_at=when
    )
    store.import_study("new", when, [head, *log[1:]])
    read_first = listing.readable_created_events

    def read_then_drop(storage, names):
        out = read_first(storage, names)
        open_storage(url).drop_study("old", len(store.events(store.study_id("old"))) - 1)
        return out

    monkeypatch.setattr(listing, "readable_created_events", read_then_drop)
    names = {row["name"] for row in list_studies(url)}
    assert {"new", "new0"} <= names
