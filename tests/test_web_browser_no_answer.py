"""A study page in a real headless Chromium while ``boloop serve``'s PostgreSQL server stops
answering just as an answer's commit reaches it (a real server behind a relay that holds the
COMMIT and then forwards nothing, ``tests/silent_relay.py``): the answer's page comes within
the server's answer limit (``--storage-answer 1.5``), says the database does not answer and
that the answer may be stored (never that it was NOT stored), with the button that sends it
again; once the database goes on, the answer is stored, and the button's answer is refused as
answered already: stored once.

Skipped, with the reason, where chromium/chromedriver/selenium or PostgreSQL are missing (the
browser helpers and their skip come from ``test_web_browser.py``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from boloop.study import load_study

# the browser helpers, and the module's skip where chromium, chromedriver or selenium are missing
from browsers import desktop_driver
from serve_process import Served
from silent_relay import SilentRelay
from study_samples import make_study
from test_web_browser import By, _wait

pytestmark = pytest.mark.xdist_group("postgres")

#: the server's answer limit here (seconds), and what the page may take beyond it
LIMIT, MARGIN = 1.5, 3.0


def _shots() -> Path:
    out = os.environ.get("BOLOOP_SCREENSHOTS")
    path = Path(out) if out else Path(os.environ.get("TMPDIR", "/tmp")) / "boloop-screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_an_answer_met_by_a_database_that_does_not_answer_may_be_stored_and_is_stored_once(
    pg_server, pg_url
):
    shots = _shots()
    make_study("coat", pg_url, answers=1, key="lev1")
    port = int(pg_url.rsplit(":", 1)[1].split("/")[0])
    relay = SilentRelay(port)
    url = pg_url.replace(f":{port}/", f":{relay.port}/")
    served = Served(url, "--storage-answer", str(LIMIT), "--storage-check", "0", "--poll", "0")
    d = desktop_driver()
    try:
        d.get(f"{served.base}/studies/coat")
        qid = int(d.find_element(By.CSS_SELECTOR, "input[name=query_id]").get_attribute("value"))
        d.find_element(By.ID, "value").send_keys("0.42")
        relay.silence_at = b"COMMIT\x00"  # the answer's commit, not READ COMMITTED
        t0 = time.monotonic()
        d.find_element(By.ID, "btn-store").click()
        unsent = _wait(d, lambda drv: drv.find_element(By.ID, "unsent").text)
        took = time.monotonic() - t0
        assert relay.silent.is_set(), "the relay saw no commit"
        assert took < LIMIT + MARGIN, took
        assert f"Your answer to query {qid} may be stored, or not" in unsent
        assert "value: 0.42" in unsent
        body = d.find_element(By.TAG_NAME, "body").text
        assert "The database does not answer" in body and "NOT stored" not in body
        d.save_screenshot(str(shots / "web-database-no-answer.png"))

        relay.silent.clear()  # the held commit goes through
        deadline = time.monotonic() + 15
        while not [r for r in load_study("coat", storage=pg_url).history() if r["query_id"] == qid]:
            assert time.monotonic() < deadline, "the answer whose commit was held is not stored"
            time.sleep(0.1)
        d.find_element(By.ID, "btn-resend").click()
        said = _wait(
            d,
            lambda drv: "answered already with the same answer"
            in drv.find_element(By.TAG_NAME, "body").text
            and drv.find_element(By.TAG_NAME, "body").text,
        )
        assert "nothing is stored twice" in said
        rows = load_study("coat", storage=pg_url).history()
        assert [(r["query_id"], r["answer"]) for r in rows if r["query_id"] == qid] == [(qid, 0.42)]
    finally:
        d.quit()
        relay.silent.clear()
        served.stop(timeout=15)
        relay.close()
    assert not [line for line in served.lines() if "Traceback" in line], served.lines()
