"""A lab team of two answering one study in two browsers (a desktop and a phone, headless
Chromium): the server restarted with a new token (the open pages say "log in again", keep
what is typed; an answer sent then is not stored, the login page shows it and brings it back);
a refused answer's values shown back, not put in the next query's form; the same values sent
by both with different notes told apart from one form sent twice.

Skipped, with the reason printed, where the browser is not installed (``.ci/run`` installs it).
The server's side of the same through the TestClient: ``test_web_team.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import pytest

from browsers import PHONE, require_browser, stop_polling

require_browser()

from selenium.webdriver.common.by import By  # noqa: E402

from boloop.study import load_study  # noqa: E402
from boloop.web.server import login_link  # noqa: E402
from study_samples import make_study  # noqa: E402
from test_web_browser import _free_port, _open_id, _stop, _wait  # noqa: E402

pytestmark = pytest.mark.xdist_group("browser")

OLD, NEW = "team-token-before-restart-01", "team-token-after-restart-02"


class Server:
    """``boloop serve --token`` over one SQLite file on one port, restarted with another token
    as a ``boloop serve --host 0.0.0.0`` without a fixed token does at every start."""

    def __init__(self, url: str) -> None:
        self.url, self.port, self.proc = url, _free_port(), None
        self.base = f"http://127.0.0.1:{self.port}"
        self.token = ""

    def start(self, token: str) -> None:
        self.token = token
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "boloop.cli", "serve", "--storage", self.url,
             "--port", str(self.port), "--token", token, "--poll", "0.3"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.base + "/static/style.css", timeout=2)
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.proc.kill()
                    pytest.fail("boloop serve did not start")
                time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve-team")
    url = f"sqlite:///{tmp / 'team.db'}"
    make_study("dose", url, answers=1, key="safe", fast=True)
    make_study("duel", url, answers=1, key="safe", fast=True)
    server = Server(url)
    server.start(OLD)
    yield server
    server.stop()


def _shot(d, shots, name: str, narrow: bool = False, show: str | None = None) -> None:
    """A screenshot; ``narrow``: also one at a phone's width (the desktop browser's window);
    ``show``: the id of an element scrolled into view first (a notice below the form)."""
    if show is not None:
        d.execute_script(f"document.getElementById('{show}').scrollIntoView({{block: 'end'}})")
    d.save_screenshot(str(shots / f"team-{name}.png"))
    if narrow:
        d.set_window_size(*PHONE)
        d.save_screenshot(str(shots / f"team-{name}-narrow.png"))
        d.set_window_size(1200, 1500)


def _in_view(d, id_: str) -> bool:
    """Whether element ``id_``'s top is on the screen (not scrolled away by a focused field)."""
    return d.execute_script(
        "var r = document.getElementById(arguments[0]).getBoundingClientRect();"
        "return r.top >= 0 && r.top < window.innerHeight;",
        id_,
    )


def _fill(d, f: str, g: str, note: str) -> None:
    for fid, v in (("out-f", f), ("out-g", g), ("note", note)):
        el = d.find_element(By.ID, fid)
        el.clear()
        el.send_keys(v)


def _typed(d) -> tuple[str, str, str]:
    return tuple(
        d.find_element(By.ID, i).get_attribute("value") for i in ("out-f", "out-g", "note")
    )


def _shown(d, id_: str) -> str:
    """The text of element ``id_`` once it is shown."""
    return (
        _wait(d, lambda drv: drv.find_element(By.ID, id_).is_displayed() and drv)
        .find_element(By.ID, id_)
        .text
    )


def _hidden(d, id_: str) -> bool:
    return not d.find_element(By.ID, id_).is_displayed()


def _rows(url: str, name: str) -> list[tuple]:
    return [
        (r["query_id"], r["answer"], r["note"]) for r in load_study(name, storage=url).history()
    ]


def test_a_restart_with_a_new_token_asks_to_log_in_again_and_loses_no_answer(
    team, browser, phone, shots
):
    """Alice (desktop) and Bob (phone) logged in and typing when the server restarts with a new
    token: both pages say to log in again (not "cannot reach") and keep what is typed. Bob logs
    in in a new tab: the notice goes away. Alice sends: nothing is stored, the login page says
    so with her values and brings them back, in the form, after the login; she stores them.
    Bob's answer to the same query, sent then, is refused and shown back."""
    base, url = team.base, team.url
    if team.token != OLD:  # another test of the module ran first
        team.stop()
        team.start(OLD)
    for d in (browser, phone):
        d.get(base + "/static/favicon.svg")
        d.delete_all_cookies()
        d.get(login_link(base, OLD, next="/studies/dose"))
        _wait(d, lambda drv: drv.current_url == base + "/studies/dose")
    q = _open_id(browser)
    assert _open_id(phone) == q
    before = _rows(url, "dose")
    _fill(browser, "50", "0.1", "alice typed before restart")
    _fill(phone, "51", "0.11", "bob, second bench")
    team.stop()
    assert "Cannot reach the server" in _shown(browser, "offline")
    team.start(NEW)
    for d, who in ((browser, "alice"), (phone, "bob")):
        text = _shown(d, "relogin")
        assert "log in again" in text and "new login link" in text
        assert _hidden(d, "offline")  # not "cannot reach": the server answers
        _shot(d, shots, f"relogin-{who}", show="relogin")
    assert _typed(browser) == ("50", "0.1", "alice typed before restart")
    assert _typed(phone) == ("51", "0.11", "bob, second bench")

    # Alice sends anyway: the login page, which says it was not stored and shows her values
    browser.find_element(By.ID, "btn-store").click()
    text = _shown(browser, "unsent")
    assert f"Your answer to query {q} was NOT stored" in text
    assert "f: 50" in text and "g: 0.1" in text and "note: alice typed before restart" in text
    nxt = browser.find_element(By.CSS_SELECTOR, "input[name=next]").get_attribute("value")
    assert nxt == "/studies/dose"
    assert _rows(url, "dose") == before  # never stored without a valid token
    _shot(browser, shots, "login-unsent-alice", narrow=True)
    browser.find_element(By.ID, "token").send_keys(NEW)
    browser.find_element(By.CSS_SELECTOR, "form[action='/login'] button").click()
    warning = _shown(browser, "warning")
    assert f"Logged in. Your answer to query {q} was NOT stored" in warning
    assert "back in the form" in warning
    _wait(browser, lambda d: d.current_url == base + "/studies/dose")  # its own address
    assert _typed(browser) == ("50", "0.1", "alice typed before restart")
    assert _rows(url, "dose") == before
    _shot(browser, shots, "after-login-alice", narrow=True)
    browser.find_element(By.ID, "btn-store").click()
    _wait(browser, lambda d: "answer stored" in d.find_element(By.TAG_NAME, "body").text)
    assert _rows(url, "dose") == [
        *before, (q, {"f": 50.0, "g": 0.1}, "alice typed before restart")
    ]  # fmt: skip

    # Bob logs in in a new tab (the new login link): his page's notice goes away, his values stay
    page = phone.current_window_handle
    phone.switch_to.new_window("tab")
    phone.get(login_link(base, NEW))
    _wait(phone, lambda d: d.title == "studies - boloop")
    phone.close()
    phone.switch_to.window(page)
    _wait(phone, lambda d: _hidden(d, "relogin"))
    assert _typed(phone) == ("51", "0.11", "bob, second bench")
    phone.find_element(By.ID, "btn-store").click()  # query q was answered by Alice meanwhile
    warning = _shown(phone, "warning")
    assert f"query {q} was answered first by someone else" in warning
    sent = phone.find_element(By.ID, "sent").text
    assert "f: 51" in sent and "g: 0.11" in sent and "note: bob, second bench" in sent
    assert _open_id(phone) != q and _typed(phone) == ("", "", "")  # not in the new query's form
    assert len(_rows(url, "dose")) == len(before) + 1
    _shot(phone, shots, "refused-after-relogin-bob")


def test_a_lost_race_shows_what_was_sent_and_the_same_values_with_another_note_are_told(
    team, browser, phone, shots
):
    """Both answer the same query: Bob's answer is refused, the page says Alice answered it
    first and which query is open now, and shows Bob's values and note (not in the new query's
    form). Then both send the same values with different notes: Bob is told it came from
    another browser and that his note was not stored, not "you sent it twice"."""
    base, url = team.base, team.url
    for d in (browser, phone):  # logged in with the server's token, whichever test ran before
        d.get(login_link(base, team.token, next="/studies/duel"))
        _wait(d, lambda drv: drv.current_url == base + "/studies/duel")
        stop_polling(d)
    q = _open_id(browser)
    _fill(browser, "0.5", "0.1", "alice")
    browser.find_element(By.ID, "btn-store").click()
    _wait(browser, lambda d: _open_id(d) != q)
    _fill(phone, "0.51", "0.11", "bob, 2nd run")
    phone.find_element(By.ID, "btn-store").click()
    warning = _shown(phone, "warning")
    q2 = _open_id(phone)
    assert q2 != q
    assert f"query {q} was answered first by someone else (query {q}: f=0.5, g=0.1" in warning
    assert f"The open query is now {q2}" in warning and "no query was open" not in warning
    sent = phone.find_element(By.ID, "sent").text
    assert "f: 0.51" in sent and "g: 0.11" in sent and "note: bob, 2nd run" in sent
    assert _typed(phone) == ("", "", "")
    assert _in_view(phone, "warning")  # the empty form is not focused: no scroll past it
    _shot(phone, shots, "race-lost-bob")

    # the same values, different notes (now Bob at the desktop is the second)
    for d in (browser, phone):
        d.get(base + "/studies/duel")
        stop_polling(d)
    assert _open_id(browser) == _open_id(phone) == q2
    _fill(phone, "0.5", "0.1", "alice, vial 3")
    phone.find_element(By.ID, "btn-store").click()
    _wait(phone, lambda d: _open_id(d) != q2)
    _fill(browser, "0.5", "0.1", "bob, vial 4")
    browser.find_element(By.ID, "btn-store").click()
    warning = _shown(browser, "warning")
    assert "answered first from another browser, with the same values as yours" in warning
    assert "Your note was NOT stored" in warning and "not stored again" not in warning
    assert "note: bob, vial 4" in browser.find_element(By.ID, "sent").text
    assert browser.find_element(By.ID, "undo-form").get_attribute("data-refused") == "1"
    assert _rows(url, "duel")[-1] == (q2, {"f": 0.5, "g": 0.1}, "alice, vial 3")
    _shot(browser, shots, "same-values-other-note-bob", narrow=True)
