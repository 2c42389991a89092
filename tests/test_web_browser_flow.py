"""The study page's behaviour in a real headless Chromium at a laptop's and a phone's width
(390 x 844, a phone's metrics emulated): what the address, a reload, the live refresh and Back
do after an answer (refused or stored), the safety-limit checkbox after a lost race, the
page's width on a phone and how times are shown. Each test is a finding of a newcomer's
trial (session 13) that failed before its fix.

Screenshots go to ``$BOLOOP_SCREENSHOTS`` (default: a temporary directory). Skipped, with the
reason, where chromium/chromedriver/selenium are missing (the skip comes with the helpers of
``test_web_browser.py``).
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from boloop.study import create_study, load_study

# the browser helpers, and the module's skip where chromium, chromedriver or selenium are missing
from browsers import PHONE, stop_polling
from study_samples import answer_for, make_study, reactor_space, reactor_truth
from test_web_browser import (
    By,
    Keys,
    _alert,
    _free_port,
    _open_id,
    _serve,
    _stop,
    _wait,
    _wait_for_new_query,
)

#: one worker runs every browser test (they share the machine's two cores)
pytestmark = pytest.mark.xdist_group("browser")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``boloop serve`` over a SQLite file in a directory with a long name (the storage URL is
    a long unbreakable word in the stuck notice and the footer)."""
    tmp = tmp_path_factory.mktemp("a-storage-directory-with-a-rather-long-name")
    url = f"sqlite:///{tmp / 'lab.db'}"
    for name in ("refused-empty", "refused-typo", "back", "back-phone", "sent-twice"):
        make_study(name, url, answers=2, key="lev1", fast=True)
    for name in ("safe-race", "safe-confirm"):
        make_study(name, url, answers=1, key="safe", fast=True)
    hist = make_study("history", url, key="lev1", fast=True)
    for k in range(6):
        q = hist.ask()
        hist.tell(
            q.id, answer_for(q), note="re-measured, the first entry was a typo" if k else None
        )
    _stuck("stuck", url)
    port = _free_port()
    proc = _serve(url, port)
    yield f"http://127.0.0.1:{port}", url
    _stop(proc)


def _stuck(name: str, url: str) -> None:
    """A safe study of a made-up reactor that stops certifying more (its page shows the stuck
    notice, which names the storage URL in a command to go on)."""
    study = create_study(name, "m-safeopt", reactor_space(20, 8), seed=0, storage=url)
    rng = np.random.default_rng(0)
    for _ in range(30):
        q = study.ask()
        t = reactor_truth(float(q.params["power"]), float(q.params["flow"]))
        study.tell(q.id, {"f": t["f"] + 0.01 * rng.normal(), "g": t["g"] + 0.3 * rng.normal()})
    assert study.status()["stuck"], "the reactor study should be stuck"


def _full_shot(d, path: Path) -> None:
    """A screenshot of the whole page (beyond the window), its width the page's own."""
    import base64

    size = d.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000), "scale": 1}
    shot = d.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    path.write_bytes(base64.b64decode(shot["data"]))


def _path(d) -> str:
    return d.execute_script("return window.location.pathname + window.location.search;")


def _body(d) -> str:
    return d.find_element(By.TAG_NAME, "body").text


def _tell_elsewhere(url: str, name: str) -> int:
    """Answer the open query of study ``name`` from this process (a colleague at another
    computer); returns the id of the query answered."""
    study = load_study(name, storage=url)
    q = study.ask()
    study.tell(q.id, answer_for(q))
    return q.id


# -- 1. a refused answer's page: its address, live refresh and reload --------------------------
def test_a_refused_empty_answer_live_refreshes_to_the_open_query(server, phone, shots):
    """An empty value is refused; the page's address is the study's, so when a colleague
    answers, the live refresh (the field is empty: nothing typed) shows the open query, never
    the 405 of GETting the form's POST address."""
    base, url = server
    phone.get(f"{base}/studies/refused-empty")
    q = _open_id(phone)
    phone.find_element(By.ID, "value").send_keys(Keys.ENTER)  # empty
    _wait(
        phone, lambda d: "must be a number" in d.find_element(By.CSS_SELECTOR, ".field-error").text
    )
    assert _tell_elsewhere(url, "refused-empty") == q
    new = _wait_for_new_query(phone, q)  # the live refresh reloaded the study's page
    assert new == load_study("refused-empty", storage=url).ask().id
    assert "Method Not Allowed" not in _body(phone)
    assert _path(phone) == "/studies/refused-empty"
    phone.save_screenshot(str(shots / "flow-refused-empty-live-refresh-phone.png"))


def test_a_refused_typo_then_a_colleague_answers_reload_shows_the_open_query(server, phone, shots):
    """A typo (``6o1,2``) is refused and stays in the field, so the live refresh does not
    reload under it but says someone answered; a reload then shows the open query (a GET of the
    study's page) and sends nothing again."""
    base, url = server
    phone.get(f"{base}/studies/refused-typo")
    q = _open_id(phone)
    phone.find_element(By.ID, "value").send_keys("6o1,2", Keys.ENTER)
    _wait(
        phone, lambda d: "must be a number" in d.find_element(By.CSS_SELECTOR, ".field-error").text
    )
    n = load_study("refused-typo", storage=url).n_answered
    _tell_elsewhere(url, "refused-typo")
    live = _wait(phone, lambda d: d.find_element(By.ID, "live").is_displayed() and d)
    said = live.find_element(By.ID, "live").text
    assert "An answer was given elsewhere (another page, person or program)" in said
    assert f"query {q} is no longer open" in said
    assert _open_id(phone) == q  # what was typed is still there
    phone.save_screenshot(str(shots / "flow-refused-typo-someone-answered-phone.png"))
    phone.refresh()
    assert _alert(phone) is None  # no "resend the form?" question
    new = _wait_for_new_query(phone, q)
    study = load_study("refused-typo", storage=url)
    assert new == study.ask().id and study.n_answered == n + 1  # nothing sent again
    assert "Method Not Allowed" not in _body(phone)
    assert not phone.find_element(By.ID, "value").get_attribute("value")
    assert _path(phone) == "/studies/refused-typo"
    phone.save_screenshot(str(shots / "flow-refused-typo-after-reload-phone.png"))


def test_the_form_addresses_answer_a_get_with_the_study_page(server):
    """A GET of a form's POST address (a bookmark, an old page's refresh) is the study's page
    (a redirect), not a JSON 405."""
    base, _ = server
    for action in ("tell", "undo"):
        with urllib.request.urlopen(f"{base}/studies/back/{action}", timeout=10) as r:
            assert r.status == 200 and r.url == f"{base}/studies/back"
            assert 'id="study"' in r.read().decode()


# -- 2. Back after an answer ---------------------------------------------------------------------
@pytest.mark.parametrize(("name", "width"), [("back", "laptop"), ("back-phone", "phone")])
def test_back_after_an_answer_shows_the_open_query(server, browser, phone, shots, name, width):
    """Back to the page an answer was sent from (restored from the back-forward cache) shows
    the open query, not the answered one, and says nothing about someone else answering."""
    base, url = server
    d = browser if width == "laptop" else phone
    d.get(f"{base}/studies/{name}")
    q = _open_id(d)
    d.find_element(By.ID, "value").send_keys("0.5", Keys.ENTER)
    new = _wait_for_new_query(d, q)
    _wait(d, lambda drv: _path(drv) == f"/studies/{name}")  # "?done=told" dropped
    d.back()
    assert _wait(d, lambda drv: _open_id(drv) != q and _open_id(drv)) == new
    assert not d.find_element(By.ID, "live").is_displayed()
    assert "Someone else" not in _body(d)
    study = load_study(name, storage=url)
    assert study.history()[-1]["query_id"] == q and study.history()[-1]["answer"] == 0.5
    d.save_screenshot(str(shots / f"flow-back-after-answer-{width}.png"))


def test_the_same_answer_sent_again_is_not_blamed_on_someone_else(server, browser, shots):
    """A form whose query was answered already with the very answer it sends (sent twice: a
    double click, a stale page sent again) is told so, not "someone else answered it first",
    and nothing is stored twice; the undo does not call the last answer someone else's."""
    base, url = server
    browser.get(f"{base}/studies/sent-twice")
    stop_polling(browser)  # a page left as it was (the first sending is not seen)
    q = _open_id(browser)
    study = load_study("sent-twice", storage=url)
    study.tell(study.ask().id, 0.5)  # the first sending
    browser.find_element(By.ID, "value").send_keys("0.5", Keys.ENTER)  # the second
    text = _wait(browser, lambda d: d.find_element(By.ID, "warning").text)
    assert "not stored again" in text and "with the same answer" in text
    assert f"query {q}: 0.5, given" in text
    assert "Someone else" not in _body(browser)
    assert browser.find_element(By.ID, "undo-form").get_attribute("data-refused") is None
    study.refresh()
    assert [r["query_id"] for r in study.history()].count(q) == 1
    assert _open_id(browser) == study.ask().id != q
    browser.save_screenshot(str(shots / "flow-sent-twice-laptop.png"))


# -- 3. the "store g above the limit" checkbox -------------------------------------------------
def _fill_safe(d, f: str, g: str) -> None:
    for fid, v in (("out-f", f), ("out-g", g)):
        el = d.find_element(By.ID, fid)
        el.clear()
        el.send_keys(v)


def test_a_lost_race_with_normal_values_shows_no_over_limit_checkbox(server, browser, shots):
    """An answer refused because someone answered first, with g below the limit: the page
    offers no "store g above the limit" box (nothing was above it), and the next answer above
    the limit is still asked about."""
    base, url = server
    browser.get(f"{base}/studies/safe-race")
    stop_polling(browser)  # no live refresh: the form stays as it was (a colleague's answer unseen)
    q = _open_id(browser)
    _tell_elsewhere(url, "safe-race")
    _fill_safe(browser, "14.84", "0.225")
    browser.find_element(By.ID, "btn-store").click()
    _wait(browser, lambda d: "not stored" in d.find_element(By.ID, "warning").text)
    assert _open_id(browser) != q
    assert not browser.find_elements(By.ID, "confirm-over")
    browser.save_screenshot(str(shots / "flow-safe-race-lost-laptop.png"))
    _fill_safe(browser, "0.1", "0.95")  # above h = 0.8: the page asks first
    browser.find_element(By.ID, "btn-store").click()
    alert = _wait(browser, _alert)
    assert "above the safety limit" in alert.text
    alert.dismiss()
    assert load_study("safe-race", storage=url).n_answered == 2


def test_the_over_limit_checkbox_is_for_its_own_query_only(server, browser, shots):
    """Without JavaScript's dialog (the server's own check), a g above the limit is refused
    with a box to store it as measured; when that query is then answered elsewhere, the page
    that comes back (refused: someone answered first) has no box for the new query."""
    base, url = server
    browser.get(f"{base}/studies/safe-confirm")
    stop_polling(browser)  # as without JavaScript: no dialog, no live refresh
    browser.execute_script("document.getElementById('answer-form').removeAttribute('data-limit-h');")
    q = _open_id(browser)
    _fill_safe(browser, "0.1", "0.95")
    browser.find_element(By.ID, "btn-store").click()
    box = _wait(browser, lambda d: d.find_element(By.ID, "confirm-over"))
    assert "above the safety limit" in browser.find_element(By.ID, "warning").text
    assert _open_id(browser) == q and not box.is_selected()
    browser.save_screenshot(str(shots / "flow-safe-over-limit-box-laptop.png"))
    stop_polling(browser)
    _tell_elsewhere(url, "safe-confirm")
    box.click()  # ticked, for query q, which is no longer open
    browser.find_element(By.ID, "btn-store").click()
    _wait(browser, lambda d: "not stored" in d.find_element(By.ID, "warning").text)
    assert _open_id(browser) != q
    assert not browser.find_elements(By.ID, "confirm-over")


def test_a_value_far_outside_the_stored_ones_is_asked_about_before_storing(server, phone, shots):
    """A hardness typed ten times too large (the trial's typo: only undo mended it) is held
    back with the question and a box to store it as typed; corrected, it is stored."""
    from test_plausibility import _coating

    base, url = server
    _coating(url, answers=6, name="typo")
    phone.get(f"{base}/studies/typo")
    q = _open_id(phone)
    phone.find_element(By.ID, "value").send_keys("7234", Keys.ENTER)
    box = _wait(phone, lambda d: d.find_element(By.ID, "confirm-unusual"))
    text = phone.find_element(By.ID, "warning").text
    assert "7234 for the hardness is far outside" in text and "723.4 would be" in text
    assert _open_id(phone) == q and not box.is_selected()
    assert load_study("typo", storage=url).n_answered == 6  # nothing stored yet
    phone.save_screenshot(str(shots / "flow-unusual-value-phone.png"))
    field = phone.find_element(By.ID, "value")
    field.clear()
    field.send_keys("723,4", Keys.ENTER)  # corrected (a decimal comma): no question
    _wait(phone, lambda d: _open_id(d) != q)
    assert load_study("typo", storage=url).history()[-1]["answer"] == 723.4
    q = _open_id(phone)
    phone.find_element(By.ID, "value").send_keys("9999", Keys.ENTER)
    _wait(phone, lambda d: d.find_element(By.ID, "confirm-unusual")).click()
    phone.find_element(By.ID, "btn-store").click()  # ticked: stored as typed
    _wait(phone, lambda d: _open_id(d) != q)
    assert load_study("typo", storage=url).history()[-1]["answer"] == 9999.0


def test_a_keystroke_slip_is_asked_about_with_the_value_meant(server, phone, shots):
    """Inside the stored values' range, two digits swapped (a value the range rule cannot see)
    are asked about through the prediction at the query's setting, the question names the
    value as meant (its text, one keystroke away); the value meant, typed again, is stored
    without a question."""
    base, url = server
    study = make_study("keystroke", url, answers=20, key="lev1", fast=True)
    meant = f"{answer_for(study.ask()):.4f}"
    head, digits = meant.split(".")
    i = next(k for k in range(len(digits) - 1) if digits[k] != digits[k + 1])
    slipped = f"{head}.{digits[:i]}{digits[i + 1]}{digits[i]}{digits[i + 2:]}"
    phone.get(f"{base}/studies/keystroke")
    q = _open_id(phone)
    phone.find_element(By.ID, "value").send_keys(slipped, Keys.ENTER)
    _wait(phone, lambda d: d.find_element(By.ID, "confirm-unusual"))
    text = phone.find_element(By.ID, "warning").text
    assert f"{slipped} for the value is far from what the 20 values" in text
    assert f"two digits swapped? {meant} would be close to it" in text
    assert load_study("keystroke", storage=url).n_answered == 20  # nothing stored yet
    phone.save_screenshot(str(shots / "flow-keystroke-slip-phone.png"))
    field = phone.find_element(By.ID, "value")
    field.clear()
    field.send_keys(meant, Keys.ENTER)
    _wait(phone, lambda d: _open_id(d) != q)
    assert load_study("keystroke", storage=url).history()[-1]["answer"] == float(meant)


# -- 4. the page's width on a phone ------------------------------------------------------------
@pytest.mark.parametrize("page", ["/", "/studies/history", "/studies/stuck"])
def test_no_page_is_wider_than_a_phone(server, phone, shots, page):
    """At 390 px the page never scrolls sideways: tables scroll inside their own box, long
    words (the storage URL in the stuck notice and the footer) wrap."""
    base, _ = server
    phone.get(base + page)
    widths = phone.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth];"
    )
    assert widths[1] == PHONE[0]
    slug = page.strip("/").replace("/", "-") or "list"
    _full_shot(phone, shots / f"flow-width-{slug}-phone.png")
    assert widths[0] <= widths[1], f"{page}: {widths[0]} px wide on a {widths[1]} px screen"
    if page == "/studies/stuck":  # the owner's details, opened, wrap too
        notice = phone.find_element(By.ID, "study-stuck")
        notice.find_element(By.TAG_NAME, "summary").click()
        assert "--storage sqlite:///" in notice.text and notice.rect["width"] <= PHONE[0]
        widths = phone.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth];"
        )
        assert widths[0] <= widths[1], f"{page} opened: {widths[0]} px on {widths[1]} px"
    if page == "/":  # the create form's fields lie inside its card
        right = phone.execute_script(
            "var f = document.getElementById('create-form');"
            "return [f.getBoundingClientRect().right].concat(Array.from("
            "  f.querySelectorAll('input:not([type=hidden]), select'))"
            "  .map(function (e) { return e.getBoundingClientRect().right; }));"
        )
        assert max(right[1:]) <= right[0], right
    if page != "/studies/stuck":  # the table is all there: its box scrolls
        table = phone.find_element(By.CSS_SELECTOR, "table.history, table.studies")
        box = table.find_element(By.XPATH, "..")
        sizes = phone.execute_script(
            "var b = arguments[0]; return [b.scrollWidth, b.clientWidth, "
            "getComputedStyle(b).overflowX];",
            box,
        )
        assert sizes[2] == "auto" and sizes[1] <= PHONE[0]


def test_tapping_a_point_of_a_picture_shows_its_value(server, phone, shots):
    """A phone has no hover: a tap on a drawn point shows its title (its value) under the
    picture; the picture's labels are no smaller than 12 px on the screen (the picture drawn
    for a phone; ``test_web_browser_layout`` measures every family's)."""
    base, _ = server
    phone.get(f"{base}/studies/history")
    fig = phone.find_element(By.ID, "pic-progress")
    phone.execute_script("arguments[0].scrollIntoView();", fig)
    point = next(c for c in fig.find_elements(By.CSS_SELECTOR, "circle") if c.is_displayed())
    title = point.find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert title
    phone.execute_script(
        "arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}));", point
    )
    shown = _wait(phone, lambda d: d.find_element(By.CSS_SELECTOR, "#pic-progress .tapped").text)
    assert shown == title
    sizes = phone.execute_script(  # each label's font size as drawn on the screen, in px
        "var svg = Array.from(document.querySelectorAll('#pic-progress svg'))"
        "  .find(function (s) { return s.getClientRects().length; });"
        "var scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;"
        "return Array.from(svg.querySelectorAll('text')).map(function (t) {"
        "  return parseFloat(getComputedStyle(t).fontSize) * scale; });"
    )
    assert sizes and min(sizes) >= 12, sizes
    widths = phone.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth];"
    )
    assert widths[0] <= widths[1]
    fig.screenshot(str(shots / "flow-picture-tap-phone.png"))


# -- 5. times ----------------------------------------------------------------------------------
@pytest.mark.parametrize("width", ["laptop", "phone"])
def test_times_are_shown_to_the_second_with_the_iso_value_kept(
    server, browser, phone, shots, width
):
    """The history's and the list's times read ``2026-11-27 09:15:06``; the exact stored value
    (ISO 8601, microseconds) stays in the ``<time datetime>`` (and its tooltip)."""
    base, url = server
    d = browser if width == "laptop" else phone
    d.get(f"{base}/studies/history")
    hist = list(reversed(load_study("history", storage=url).history()))
    cells = d.find_elements(By.CSS_SELECTOR, "#history tbody tr td:last-child time")
    assert len(cells) == len(hist)
    for cell, row in zip(cells, hist):
        iso = row["told_at"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z?", iso)
        assert cell.text == iso[:19].replace("T", " ")
        assert cell.get_attribute("datetime") == iso == cell.get_attribute("title")
    d.save_screenshot(str(shots / f"flow-history-times-{width}.png"))
    d.get(f"{base}/")
    shown = [t.text for t in d.find_elements(By.CSS_SELECTOR, "table.studies time")]
    assert shown and all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", t) for t in shown)
    d.save_screenshot(str(shots / f"flow-list-{width}.png"))
