"""A study kept busy by other writers (``StorageBusyError``: "too many concurrent writers, try
again") is a try-again answer like an outage, not the 400 of a bad answer: HTTP 503 with a short
``Retry-After``, ``"error": "storage_busy"`` on the API, and on the page the answer that was not
stored with a button that sends it again. The store's own retries are not provoked here (they
need other writers to win five races in a row); ``Study.tell`` raises the error as it would."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from boloop.errors import StorageBusyError  # noqa: E402
from boloop.study import Study  # noqa: E402
from boloop.web import create_app  # noqa: E402
from study_samples import make_study  # noqa: E402


def _busy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
    raise StorageBusyError(
        f"study {self.name!r}: too many concurrent writers, try again (nothing was stored)"
    )


def test_a_busy_study_is_a_503_try_again_on_the_api_and_the_page(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'busy.db'}"
    study = make_study("lev1", url, answers=2, fast=True)
    q = study.ask()
    client = TestClient(create_app(url, None), follow_redirects=False)
    page = client.get("/studies/lev1")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)

    monkeypatch.setattr(Study, "tell", _busy)
    r = client.post("/api/studies/lev1/tell", json={"query_id": q.id, "answer": 0.25})
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert r.json()["error"] == "storage_busy" and r.json()["stored"] is False

    r = client.post(
        "/studies/lev1/tell", data={"csrf": csrf, "query_id": str(q.id), "value": "0.25"}
    )
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert "The study is busy" in r.text and "cannot be reached" not in r.text
    assert "was NOT stored" in r.text and 'id="btn-resend"' in r.text
    assert "0.25" in r.text
    # a POST's result: reloading it would send the form again, so the page does not advise it
    assert "reload this page" not in r.text and "as below" in r.text

    monkeypatch.undo()  # the others are done: the same answer is stored once
    r = client.post("/api/studies/lev1/tell", json={"query_id": q.id, "answer": 0.25})
    assert r.status_code == 200 and r.json()["stored"] is True
    assert [row["answer"] for row in study.history()][-1] == 0.25
