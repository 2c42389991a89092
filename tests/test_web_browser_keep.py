"""Nothing typed is lost, in a real headless Chromium against ``boloop serve`` subprocesses:
an answer sent while the page knows its server cannot be reached is held on the page, not sent
to the browser's error page; what is typed is kept in the tab (sessionStorage) and comes back
after a reload or Back, and is forgotten once its query is answered; a refused answer's notice
with the values sent is not reloaded away by the live refresh of a busy study; the live notice
says what changed (answers given, or one withdrawn) instead of "someone else answered".

Skipped, with the reason printed, where the browser is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import time

import pytest

from browsers import PHONE, require_browser

require_browser()

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from boloop.study import load_study  # noqa: E402
from study_samples import answer_for, make_study  # noqa: E402
from test_web_browser import _free_port, _open_id, _serve, _stop, _wait  # noqa: E402

pytestmark = pytest.mark.xdist_group("browser")

POLL = 0.3


class Server:
    """``boloop serve`` over one SQLite file on one port, stopped and started again."""

    def __init__(self, url: str) -> None:
        self.url, self.port, self.proc = url, _free_port(), None
        self.base = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = _serve(self.url, self.port, poll=POLL)

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('serve-keep') / 'keep.db'}"
    make_study("kill", url, key="lev1", fast=True)  # its server is killed under a typed answer
    make_study("busy", url, answers=2, key="lev1", fast=True)  # others answer all the time
    make_study("undone", url, answers=2, key="lev1", fast=True)  # an answer withdrawn elsewhere
    make_study("moving", url, answers=1, key="lev1", fast=True)  # migrated while open, undone
    s = Server(url)
    s.start()
    yield s
    s.stop()


def _shot(d, shots, name: str, at: str | None = None) -> None:
    """A screenshot at the desktop's width and one at a phone's (element ``at`` in view)."""
    d.save_screenshot(str(shots / f"keep-{name}.png"))
    d.set_window_size(*PHONE)
    if at:
        d.execute_script("document.getElementById(arguments[0]).scrollIntoView();", at)
    d.save_screenshot(str(shots / f"keep-{name}-phone.png"))
    d.set_window_size(1200, 1500)


def _typed(d) -> tuple[str, str]:
    return tuple(d.find_element(By.ID, i).get_attribute("value") for i in ("value", "note"))


def _shown(d, id_: str) -> str:
    """The text of element ``id_`` once it is shown."""
    return _wait(
        d,
        lambda drv: (
            drv.find_element(By.ID, id_).is_displayed() and drv.find_element(By.ID, id_).text
        ),
    )


def _kept(d) -> list[str]:
    """The keys this tab keeps typed answers under (sessionStorage)."""
    return d.execute_script(
        "var k = []; for (var i = 0; i < sessionStorage.length; i++) {"
        "  if (sessionStorage.key(i).indexOf('boloop.typed:') === 0) k.push(sessionStorage.key(i));"
        "} return k.sort();"
    )


def _rows(url: str, name: str) -> list[tuple]:
    return [
        (r["query_id"], r["answer"], r["note"]) for r in load_study(name, storage=url).history()
    ]


def test_an_answer_sent_while_the_server_is_down_is_held_and_what_is_typed_survives(
    server, browser, shots
):
    """The trial: "0.61" and a note typed, the server killed, store clicked. The page knows
    (its poll failed): it holds the answer with a message instead of leaving for Chromium's
    error page; Enter does the same. Back with the server, the message says to store it now.
    What is typed also survives the page itself: a reload gets it back from the tab's
    sessionStorage, and so does Back from the error page of a form sent before the page knew;
    once stored, it is forgotten."""
    base, url = server.base, server.url
    page = base + "/studies/kill"
    browser.get(page)
    q = _open_id(browser)
    browser.find_element(By.ID, "value").send_keys("0.61")
    browser.find_element(By.ID, "note").send_keys("coupon 7, second bench")
    server.stop()
    try:
        assert "Cannot reach the server" in _shown(browser, "offline")
        browser.find_element(By.ID, "btn-store").click()
        held = _shown(browser, "held")
        assert "NOT sent" in held and "cannot be reached" in held and "store again" in held
        assert browser.current_url == page  # not Chromium's ERR_CONNECTION_REFUSED page
        assert _typed(browser) == ("0.61", "coupon 7, second bench")
        browser.find_element(By.ID, "value").send_keys(Keys.ENTER)  # Enter is held as well
        time.sleep(3 * POLL)
        assert browser.current_url == page and _shown(browser, "held").startswith("NOT sent")
        _shot(browser, shots, "held-server-down", at="value")
    finally:
        server.start()
    text = (
        _wait(browser, lambda d: "reached again" in d.find_element(By.ID, "held").text and d)
        .find_element(By.ID, "held")
        .text
    )
    assert "NOT sent yet" in text and "press store" in text
    assert not browser.find_element(By.ID, "offline").is_displayed()
    assert _rows(url, "kill") == []  # nothing was sent
    _shot(browser, shots, "held-server-back", at="value")

    # a reload: the form comes back empty from the server, and the tab fills it in again
    browser.refresh()
    restored = _shown(browser, "restored")
    assert f"query {q}" in restored and "NOT stored yet" in restored
    assert _typed(browser) == ("0.61", "coupon 7, second bench")
    assert _kept(browser) == [f"boloop.typed:/studies/kill#{q}"]
    _shot(browser, shots, "restored-after-reload")

    # sent before the page knew the server was gone: Chromium's error page, then Back
    server.stop()
    try:
        browser.execute_script("document.getElementById('answer-form').submit();")
        _wait(browser, lambda d: d.current_url.startswith("chrome-error:") or "ERR_" in
              d.page_source)  # fmt: skip
    finally:
        server.start()
    browser.back()
    _wait(browser, lambda d: _open_id(d) == q and _typed(d) == ("0.61", "coupon 7, second bench"))
    # the page may be the one left (back-forward cache), whose poll had failed: it knows the
    # server is back at its next poll
    _wait(browser, lambda d: not d.find_element(By.ID, "offline").is_displayed())
    assert _rows(url, "kill") == []
    browser.find_element(By.ID, "btn-store").click()
    _wait(browser, lambda d: "answer stored" in d.find_element(By.TAG_NAME, "body").text)
    assert _rows(url, "kill") == [(q, 0.61, "coupon 7, second bench")]
    assert _typed(browser) == ("", "") and _kept(browser) == []  # stored: forgotten
    browser.refresh()
    assert _typed(browser) == ("", "") and not browser.find_elements(By.ID, "restored")


def _refused(server, d, name: str) -> tuple[int, int]:
    """The page of ``name`` open at query q; someone else answers q; the page's answer to q
    (values near the stored ones, and a note) is refused. Returns (q, the page's new query)."""
    url = server.url
    d.get(f"{server.base}/studies/{name}")
    q = _open_id(d)
    other = load_study(name, storage=url)
    assert other.ask().id == q
    value = answer_for(other.ask())
    d.find_element(By.ID, "value").send_keys(str(value))  # typed first: the page stays
    d.find_element(By.ID, "note").send_keys("stale from page")
    other.tell(q, value, note="the other bench")
    # the page's poll shows the change above the form, which moves the button: click after it
    # (a click as the notice appears can miss the moving button, as a person's tap can)
    _shown(d, "live")
    d.find_element(By.ID, "btn-store").click()
    sent = _shown(d, "sent")
    assert f"Not stored (for query {q})" in sent and "note: stale from page" in sent
    return q, _open_id(d)


def test_a_refused_answers_notice_stays_while_others_answer(server, browser, shots):
    """The trial's busy study: the refused answer's notice and the values sent vanished within
    seconds, the live refresh reloading to the newest query. Now the page stays, says what
    changed and that it does not reload while it shows the values; dismissing the notice lets
    the live refresh show the open query."""
    url = server.url
    q, q2 = _refused(server, browser, "busy")
    other = load_study("busy", storage=url)
    for _ in range(2):  # the others go on
        nq = other.ask()
        other.tell(nq.id, answer_for(nq))
    live = _shown(browser, "live")
    assert "2 answers were given elsewhere" in live or "An answer was given elsewhere" in live
    assert f"query {q2} is no longer open" in live and "does not reload by itself" in live
    time.sleep(10 * POLL)
    assert _open_id(browser) == q2  # not reloaded
    sent = browser.find_element(By.ID, "sent").text
    assert f"Not stored (for query {q})" in sent and "note: stale from page" in sent
    assert "Someone else" not in browser.find_element(By.TAG_NAME, "body").text
    _shot(browser, shots, "refused-kept-on-busy-study")
    browser.find_element(By.ID, "sent-dismiss").click()
    new = _wait(browser, lambda d: _open_id(d) != q2 and _open_id(d))
    assert new == load_study("busy", storage=url).ask().id
    assert not browser.find_elements(By.ID, "sent")


def test_a_refused_answers_reload_button_shows_the_study_as_it_is(server, phone, shots):
    """The live notice's button reloads the page: the open query, the notice gone."""
    url = server.url
    q, q2 = _refused(server, phone, "busy")
    other = load_study("busy", storage=url)
    nq = other.ask()
    other.tell(nq.id, answer_for(nq))
    assert "An answer was given elsewhere" in _shown(phone, "live")
    assert phone.find_element(By.ID, "sent").is_displayed()
    phone.save_screenshot(str(shots / "keep-refused-live-notice-phone.png"))
    phone.find_element(By.ID, "live-reload").click()
    new = _wait(phone, lambda d: _open_id(d) != q2 and _open_id(d))
    assert new == load_study("busy", storage=url).ask().id
    assert not phone.find_elements(By.ID, "sent")


def test_an_answer_withdrawn_elsewhere_is_said_as_such(server, browser, shots):
    """A page being typed in when another page (or program) withdraws the last answer: the
    notice says an answer was withdrawn and which query is open now, not "someone else
    answered"."""
    url = server.url
    browser.get(f"{server.base}/studies/undone")
    q = _open_id(browser)
    browser.find_element(By.ID, "note").send_keys("still measuring")
    other = load_study("undone", storage=url)
    withdrawn = other.undo()
    p = other.ask().id
    assert p != q and withdrawn["query_id"] == p
    live = _shown(browser, "live")
    said = "An answer was withdrawn (undo) elsewhere (another page, person or program)"
    assert f"{said}: query {q} is no longer open." in live
    assert f"The open query is now {p}." in live and "What you typed here is not stored" in live
    assert "Someone else" not in live
    assert browser.find_element(By.ID, "note").get_attribute("value") == "still measuring"
    _shot(browser, shots, "withdrawn-elsewhere")


def test_a_page_open_while_its_study_moves_or_is_removed_says_so(server, browser, tmp_path):
    """The second review: a page being typed in when ``migrate`` moved its study said "query
    1 is still open: your answer to it can still be stored" (it cannot: the copy is
    read-only), and a page of the copy that ``migrate --undo`` removed said nothing at all."""
    from boloop.study.storage_migrate import migrate_studies, undo_migration

    target = f"sqlite:///{tmp_path / 'target.db'}"
    browser.get(f"{server.base}/studies/moving")
    browser.find_element(By.ID, "note").send_keys("typed before the move")
    migrate_studies(server.url, target, ["moving"])
    live = _shown(browser, "live")
    assert f"This study was moved to {target} (boloop study migrate)" in live
    assert "can still be stored" not in live and "What you typed stays on this page" in live
    assert browser.find_element(By.ID, "note").get_attribute("value") == "typed before the move"
    there = Server(target)  # the copy, served; then removed under its open page
    there.start()
    try:
        browser.get(f"{there.base}/studies/moving")
        browser.find_element(By.ID, "note").send_keys("typed at the copy")
        undo_migration(server.url, target, ["moving"])
        gone = _shown(browser, "offline")
        assert "This study is no longer on this server" in gone
        assert browser.find_element(By.ID, "note").get_attribute("value") == "typed at the copy"
    finally:
        there.stop()
