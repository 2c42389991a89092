"""The server's studies by name (``boloop.web.pool.StudyPool``): a study asked for by several
requests at once is loaded once, and names asked for that are no study leave nothing behind."""

from __future__ import annotations

import threading
import time
import tracemalloc

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

import boloop.web.pool  # noqa: E402
from boloop.web import create_app  # noqa: E402
from study_samples import make_study  # noqa: E402


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'web.db'}"


def test_names_that_are_no_study_leave_nothing_behind(url):
    """A crawler or a typo asking for thousands of names that are no study: each a 404, and
    the server holds no more memory for them afterwards (a loading lock per name asked for was
    kept for ever)."""
    client = TestClient(create_app(url, storage_check_seconds=0))
    for i in range(50):  # the routes and caches warmed up
        assert client.get(f"/api/studies/warm{i}").status_code == 404
    pool_file = boloop.web.pool.__file__
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, pool_file)])
        for i in range(2000):
            assert client.get(f"/api/studies/nope{i}").status_code == 404
        after = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, pool_file)])
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert grown < 20_000, f"{grown} bytes held for 2000 names that are no study"


def test_a_study_asked_for_at_once_is_loaded_once(url, monkeypatch):
    make_study("coat", url, answers=1, key="lev1", fast=True)
    app = create_app(url, storage_check_seconds=0)
    loads: list[str] = []
    real = boloop.web.pool.load_study

    def slow_load(name, **kwargs):
        loads.append(name)
        time.sleep(0.3)  # the others arrive while it loads
        return real(name, **kwargs)

    monkeypatch.setattr(boloop.web.pool, "load_study", slow_load)
    codes: list[int] = []

    def call() -> None:
        codes.append(TestClient(app).get("/api/studies/coat").status_code)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert codes == [200] * 4
    assert loads == ["coat"]
