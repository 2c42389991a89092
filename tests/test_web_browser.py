"""``boloop serve`` end to end in a real headless Chromium (Debian's chromium + chromium-driver,
driven by selenium): answers by clicking and by keyboard, undo, a bad number, two browsers racing
on one query, a page that updates itself. Screenshots go to ``$BOLOOP_SCREENSHOTS`` (default: a
temporary directory) and are used in docs/web.md.

Skipped, with the reason printed, where the browser is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from browsers import require_browser, stop_polling

require_browser()

from selenium.common.exceptions import (  # noqa: E402
    NoSuchElementException,
    WebDriverException,
)
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from boloop.study import create_study, load_study  # noqa: E402
from study_samples import (  # noqa: E402
    DRINKS,
    SPACES,
    answer_for,
    make_drinks,
    make_study,
    write_photo_table,
)  # noqa: E402

#: one worker runs them all, in order (one server, two browsers; undo follows the answers)
pytestmark = pytest.mark.xdist_group("browser")

#: the study of each family the browser answers (small spaces: the method's step is fast)
FAMILIES = {"levelset": "lev1", "expert": "expert", "preference": "pref", "safe": "safe"}
WAIT = 20.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``boloop serve`` as a subprocess on a free loopback port over a temporary SQLite file."""
    tmp = tmp_path_factory.mktemp("serve")
    url = f"sqlite:///{tmp / 'lab.db'}"
    for name in FAMILIES.values():
        if name != "pref":
            make_study(name, url, fast=True)
    # the preference options have photos: a CSV table with a photo column, PNGs beside it
    create_study("pref", SPACES["pref"][0], write_photo_table(tmp), storage=url, seed=3)
    make_study("race", url, key="pref")
    make_study("undo", url, answers=3, key="lev1", fast=True)
    make_study("lab/run 1", url, key="pref")  # a name with a slash and a space
    make_study("expert-long", url, answers=24, key="expert", fast=True)
    make_study("enter-label", url, key="expert", fast=True)  # pressing Enter in a note
    make_study("enter-duel", url, key="pref")
    make_study("undo-race", url, key="pref")  # undo from the page whose answer was refused
    make_drinks("drinks", url)  # its recommendation was in no duel
    make_study("offline", url, key="lev1", fast=True)  # its server stops and comes back
    make_study("live-warning", url, key="pref")  # answered while another page is being typed in
    make_drinks("drinks-15", url, answers=15)  # many options named by their values
    make_study("pref-new", url, key="pref")  # no answer yet: no recommendation to show
    make_study("pref-hist", url, answers=3, key="pref")  # named options in the history
    make_study("expert-new", url, key="expert", fast=True)
    make_study("safe-over", url, key="safe", fast=True)  # a g above the limit is stored
    make_study("safe-unit", url, key="safe", fast=True)  # a g typed with its unit
    _expert_measuring("expert-rec", url)
    make_study("lev-rec", url, answers=8, key="lev1", fast=True)  # a level set's counts
    make_study("lev-map", url, answers=10, key="lev2")  # a 2-D class map
    from boloop.problems import get
    from boloop.simulate import oracle_rng

    toy, rng = get("safe/toy"), oracle_rng(0)
    long = create_study(
        "safe-long", "m-safeopt", problem="safe/toy", storage=url, seed=0,
        fit_hyperparameters=False,
    )  # fmt: skip
    for _ in range(30):
        q = long.ask()
        long.tell(q.id, toy.answer(q.query, rng))
    port = _free_port()
    proc = _serve(url, port)
    base = f"http://127.0.0.1:{port}"
    yield base, url
    _stop(proc)


def _expert_measuring(name: str, url: str) -> None:
    """An expert study answered until it has a measured value (so a recommendation) and its
    open query asks for a measurement."""
    study = make_study(name, url, key="expert", fast=True)
    for _ in range(60):
        q = study.ask()
        if q.kind == "evaluate" and any(r["kind"] == "evaluate" for r in study.history()):
            return
        study.tell(q.id, answer_for(q))
    raise AssertionError(f"{name}: no measurement asked after a value was measured")


def _serve(url: str, port: int, poll: float = 0.4) -> subprocess.Popen:
    """``boloop serve`` over ``url`` on ``port``, once it answers."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "boloop.cli",
            "serve",
            "--storage",
            url,
            "--port",
            str(port),
            "--poll",
            str(poll),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(base + "/api/studies", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            out = proc.stdout.read().decode() if proc.stdout else ""
            proc.kill()
            pytest.fail(f"boloop serve did not start: {out}")
        time.sleep(0.2)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait(d, until):
    """Wait for ``until(driver)`` to be truthy, reading through page loads."""
    return WebDriverWait(
        d,
        WAIT,
        poll_frequency=0.05,
        # the page may be between two documents: read again
        ignored_exceptions=(WebDriverException, ValueError),
    ).until(until)


def _open_id(d) -> int:
    """The query id of the page's answer form (read in one script: pages reload under us)."""
    value = d.execute_script(
        "var e = document.querySelector('input[name=query_id]'); return e ? e.value : null;"
    )
    if value is None:
        raise NoSuchElementException("no answer form on the page (yet)")
    return int(value)


def _wait_for_new_query(d, old: int) -> int:
    return _wait(d, lambda drv: _open_id(drv) != old and _open_id(drv))


def _answer(d, q, by_key: bool) -> object:
    """Answer query q on the open page by clicking or by keyboard; returns the stored value
    the study must then hold."""
    ans = answer_for(q)
    body = d.find_element(By.TAG_NAME, "body")
    if q.kind == "label":
        if by_key:
            body.send_keys("y" if ans else "n")
        else:
            d.find_element(By.ID, "btn-accept" if ans else "btn-reject").click()
        return bool(ans)
    if q.kind == "compare":
        if by_key:
            body.send_keys(Keys.ARROW_LEFT if ans == "a" else "b")
        else:
            d.find_element(By.ID, f"btn-{ans}").click()
        return 0 if ans == "a" else 1
    fields = {f"out-{k}": v for k, v in ans.items()} if q.outputs else {"value": ans}
    last = None
    for fid, v in fields.items():
        last = d.find_element(By.ID, fid)
        last.clear()
        last.send_keys(repr(float(v)))
    if by_key:
        last.send_keys(Keys.ENTER)
    else:
        d.find_element(By.ID, "btn-store").click()
    if q.outputs and ans["g"] > 0.8:  # the page asks before storing g above the limit h
        alert = _wait(d, _alert)
        assert "above the safety limit" in alert.text
        alert.accept()
    return {k: float(v) for k, v in ans.items()} if q.outputs else float(ans)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_ten_answers_by_click_and_key_are_stored_exactly(server, browser, shots, family):
    base, url = server
    name = FAMILIES[family]
    browser.get(f"{base}/studies/{name}")
    study = load_study(name, storage=url)  # the same storage, read by this process
    expected = []
    for k in range(10):
        q = study.ask()  # the open query the page shows (asked and logged by the server)
        assert _open_id(browser) == q.id
        if k == 4 and q.kind == "evaluate":  # a bad number: an error next to the field
            field = browser.find_element(By.ID, "out-f" if q.outputs else "value")
            field.send_keys("12..5", Keys.ENTER)
            err = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".field-error").text)
            assert "must be a number" in err
            study.refresh()
            assert study.n_answered == len(expected)
        if q.kind != "compare" or q.a_label != q.b_label:  # docs: a duel of two options
            browser.save_screenshot(str(shots / f"web-{family}.png"))
        value = _answer(browser, q, by_key=k % 2 == 1)
        expected.append((q.id, value))
        _wait_for_new_query(browser, q.id)
    if family == "preference":  # the options' photos are shown, served from the study
        loaded = browser.execute_script(
            "return Array.from(document.querySelectorAll('.media img'))"
            ".map(function (i) { return i.complete && i.naturalWidth; });"
        )
        assert loaded == [96, 96]
    hist = study.history()
    got = [(r["query_id"], r["answer"]) for r in hist]
    assert got == expected


def test_the_expert_model_and_the_safe_sets_growth_are_drawn(server, browser, shots):
    """Two longer studies (answers from closed forms and the safe/toy oracle): the expert's
    latent g is drawn under the f model; the safe set's growth loads as an image of its own."""
    base, _ = server
    browser.get(f"{base}/studies/expert-long")
    assert "expert model: latent g" in browser.find_element(By.ID, "pic-model").text
    pic = browser.find_element(By.ID, "pic-model")
    browser.execute_script("arguments[0].scrollIntoView();", pic)
    pic.screenshot(str(shots / "web-expert-model.png"))
    browser.get(f"{base}/studies/safe-long")
    size = _wait(
        browser,
        lambda d: d.execute_script(
            "var i = document.querySelector('#pic-growth img');"
            "return i && i.complete && i.naturalWidth;"
        ),
    )
    assert size > 100
    pic = browser.find_element(By.ID, "pic-growth")
    browser.execute_script("arguments[0].scrollIntoView();", pic)
    pic.screenshot(str(shots / "web-safe-growth.png"))
    # its numbers, opened in place: a row per answer (the replayed sets; test_study_pictures)
    browser.find_element(By.CSS_SELECTOR, "#numbers-growth summary").click()
    rows = _wait(
        browser,
        lambda d: d.find_elements(By.CSS_SELECTOR, "#numbers-growth tbody tr"),
    )
    assert len(rows) == 30 and rows[0].text.startswith("after answer 1 ")
    browser.execute_script("arguments[0].scrollIntoView();", pic)
    pic.screenshot(str(shots / "web-safe-growth-numbers.png"))


def test_the_level_set_class_map_reads_without_colour(server, browser, shots):
    """The 2-D class map on the page: plus and minus marks and the two lines are drawn (their
    placement: test_study_pictures); the docs show it in colour and in greyscale."""
    base, _ = server
    browser.get(f"{base}/studies/lev-map")
    pic = browser.find_element(By.ID, "pic-model")
    assert "level set classes at threshold" in pic.text
    marks = browser.execute_script(
        "return Array.from(arguments[0].querySelectorAll('.pic-wide svg path'))"
        ".filter(p => p.getAttribute('stroke-width') === '1.3' && !p.querySelector('title'))"
        ".map(p => p.getBoundingClientRect().width);",
        pic,
    )
    assert len(marks) >= 3 and all(w > 0 for w in marks)  # the map's, a plus and a minus key
    browser.execute_script("arguments[0].scrollIntoView();", pic)
    pic.screenshot(str(shots / "web-levelset-map.png"))
    browser.execute_script("arguments[0].style.filter = 'grayscale(1)';", pic)
    pic.screenshot(str(shots / "web-levelset-map-grey.png"))
    browser.execute_script("arguments[0].style.filter = '';", pic)


@pytest.mark.parametrize("name", ["drinks", "drinks-15"])
def test_the_preference_pictures_fit_and_show_the_recommendation(server, browser, shots, name):
    """Every text of the pictures lies inside its picture (names and caption are wrapped, not
    cut by the page); the recommendation has a row even when it was in no duel."""
    base, _ = server
    browser.get(f"{base}/studies/{name}")
    outside = browser.execute_script(
        "var out = [];"
        "document.querySelectorAll('#pic-model svg, #pic-progress svg').forEach(function (svg) {"
        "  var s = svg.getBoundingClientRect();"
        "  svg.querySelectorAll('text').forEach(function (t) {"
        "    var b = t.getBoundingClientRect();"  # on the page, rotations included
        "    if (b.left < s.left - 0.5 || b.top < s.top - 0.5 || b.right > s.right + 0.5"
        "        || b.bottom > s.bottom + 0.5) { out.push(t.textContent); }"
        "  });"
        "});"
        "return out;"
    )
    assert outside == []
    model = browser.find_element(By.ID, "pic-model")
    bold = [t.text for t in model.find_elements(By.CSS_SELECTOR, "text[font-weight=bold]")]
    assert any("sweetness=" in t for t in bold)  # the recommendation's row
    if name == "drinks":
        assert "not in a duel yet" in model.text
    browser.execute_script("arguments[0].scrollIntoView();", model)
    model.screenshot(str(shots / f"web-{name}-model.png"))
    browser.find_element(By.ID, "pic-progress").screenshot(str(shots / f"web-{name}-progress.png"))


def test_create_form_random_of_a_family_creates_that_study(server, browser, shots, tmp_path):
    """ "random (preference)" in the method select, a space file uploaded: the study is created
    (the form sent the method without its family, and "random" is in every family)."""
    import json

    from selenium.webdriver.support.ui import Select

    base, url = server
    space = tmp_path / "drinks.json"
    space.write_text(json.dumps(DRINKS))
    browser.get(f"{base}/")
    browser.find_element(By.ID, "c-name").send_keys("web-random")
    Select(browser.find_element(By.ID, "c-method")).select_by_visible_text("random (preference)")
    browser.find_element(By.ID, "c-space").send_keys(str(space))
    browser.find_element(By.ID, "create-form").screenshot(str(shots / "web-create-form.png"))
    browser.find_element(By.CSS_SELECTOR, "#create-form button[type=submit]").click()
    _wait(browser, lambda d: d.current_url.endswith("/studies/web-random"))
    study = load_study("web-random", storage=url)
    assert (study.family, study.method) == ("preference", "random")


def test_a_study_whose_name_has_a_slash_opens_from_the_list_and_takes_answers(server, browser):
    base, url = server
    browser.get(f"{base}/")
    browser.find_element(By.LINK_TEXT, "lab/run 1").click()
    _wait(browser, lambda d: d.current_url.endswith("/studies/lab%2Frun%201"))
    study = load_study("lab/run 1", storage=url)
    q = study.ask()
    assert _open_id(browser) == q.id
    browser.find_element(By.ID, "btn-a").click()
    _wait_for_new_query(browser, q.id)
    assert [(r["query_id"], r["answer"]) for r in study.history()] == [(q.id, 0)]


def test_undo_in_the_browser(server, browser):
    base, url = server
    browser.get(f"{base}/studies/undo")
    before = load_study("undo", storage=url).history()
    browser.find_element(By.ID, "btn-undo").click()
    _wait(browser, lambda d: _alert(d) is not None)
    _alert(browser).accept()
    _wait(browser, lambda d: "last answer withdrawn" in d.find_element(By.TAG_NAME, "body").text)
    after = load_study("undo", storage=url).history()
    assert after == before[:-1]
    assert _open_id(browser) == before[-1]["query_id"]


def test_safe_limit_warning_stores_nothing_when_cancelled(server, browser, shots):
    base, url = server
    browser.get(f"{base}/studies/safe")
    n = load_study("safe", storage=url).n_answered
    q = load_study("safe", storage=url).ask()
    assert "g ≤ 0.8" in browser.find_element(By.ID, "limit").text
    browser.find_element(By.ID, "out-f").send_keys("0.1")
    for g in ("0.93", "0,93"):  # a decimal comma is read as the server reads it
        field = browser.find_element(By.ID, "out-g")
        field.clear()
        field.send_keys(g, Keys.ENTER)
        _wait(browser, lambda d: _alert(d) is not None)
        assert "above the safety limit" in _alert(browser).text
        _alert(browser).dismiss()
        assert load_study("safe", storage=url).n_answered == n
        assert _open_id(browser) == q.id


def _store_over_limit(d, base, name):
    """Store f = 0.1, g = 0.95 (above the limit 0.8) on the page, confirming the dialog; returns
    the query id answered."""
    d.get(f"{base}/studies/{name}")
    qid = _open_id(d)
    d.find_element(By.ID, "out-f").send_keys("0.1")
    d.find_element(By.ID, "out-g").send_keys("0.95", Keys.ENTER)
    alert = _wait(d, _alert)
    assert "above the safety limit" in alert.text
    alert.accept()
    _wait(d, lambda drv: _open_id(drv) != qid)
    return qid


def test_a_stored_g_above_the_limit_stays_a_red_warning_on_the_page(server, browser, shots):
    """After a measured g above h is stored, the page says so, as Study.status() does, in a red
    banner that stays on every load while the answer stands, and goes with its undo."""
    base, url = server
    browser.get(f"{base}/studies/safe-over")
    assert not browser.find_elements(By.ID, "study-warnings")
    qid = _store_over_limit(browser, base, "safe-over")
    warnings = load_study("safe-over", storage=url).status()["warnings"]
    assert len(warnings) == 1 and f"query {qid}" in warnings[0]
    banner = _wait(browser, lambda d: d.find_element(By.ID, "study-warnings"))
    assert banner.is_displayed() and warnings[0] in banner.text
    assert banner.get_attribute("role") == "alert"
    colour = browser.execute_script(
        "return getComputedStyle(document.getElementById('study-warnings')).borderTopColor;"
    )
    assert colour == "rgb(192, 57, 43)"  # the page's red, not the green of "answer stored"
    browser.save_screenshot(str(shots / "web-safe-over-limit.png"))
    browser.get(f"{base}/studies/safe-over")  # a later visit: still there
    assert warnings[0] in browser.find_element(By.ID, "study-warnings").text
    browser.find_element(By.ID, "btn-undo").click()
    _wait(browser, _alert).accept()
    _wait(browser, lambda d: "last answer withdrawn" in d.find_element(By.TAG_NAME, "body").text)
    assert load_study("safe-over", storage=url).status()["warnings"] == []
    assert not browser.find_elements(By.ID, "study-warnings")


def test_the_answer_stored_notice_is_said_once(server, browser, shots):
    """A reload (or Back) after storing does not say "answer stored" again: nothing new was."""
    base, url = server
    _store_over_limit(browser, base, "safe-over")
    flash = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".flash").text)
    assert re.fullmatch(r"answer stored: query \d+: f=0\.1, g=0\.95", flash), flash
    assert browser.execute_script("return window.location.search;") == ""
    browser.refresh()
    _wait(browser, lambda d: d.find_element(By.ID, "study-warnings"))
    assert not browser.find_elements(By.CSS_SELECTOR, ".flash")
    browser.back()  # the page before the answer: no notice either
    _wait(browser, lambda d: d.find_element(By.ID, "answer-form"))
    assert not browser.find_elements(By.CSS_SELECTOR, ".flash")


def test_g_with_a_unit_is_refused_before_any_question_about_the_limit(server, browser, shots):
    """``85 C`` is not a number for the server: the page must not ask "g = 85 is above the
    safety limit... store it?" first; the answer is refused as not a number, nothing stored."""
    base, url = server
    browser.get(f"{base}/studies/safe-unit")
    n = load_study("safe-unit", storage=url).n_answered
    qid = _open_id(browser)
    browser.find_element(By.ID, "out-f").send_keys("0.1")
    browser.find_element(By.ID, "out-g").send_keys("0.95 C", Keys.ENTER)
    err = _wait(
        browser,
        lambda d: _alert(d) is not None or d.find_element(By.CSS_SELECTOR, ".field-error").text,
    )
    asked = _alert(browser)
    if asked is not None:
        text = asked.text
        asked.dismiss()  # the page stays usable for the tests after this one
        pytest.fail(f"the page asked about the limit for a value it cannot store: {text}")
    assert "g must be a number, got '0.95 C'" in err
    browser.save_screenshot(str(shots / "web-safe-unit.png"))
    assert load_study("safe-unit", storage=url).n_answered == n
    assert _open_id(browser) == qid


@pytest.mark.parametrize(
    ("name", "button", "clicked", "key"),
    [("enter-label", "btn-reject", False, "y"), ("enter-duel", "btn-b", 1, Keys.ARROW_LEFT)],
)
def test_enter_in_the_note_of_a_choice_stores_nothing(
    server, browser, shots, name, button, clicked, key
):
    """On a page whose answer is one of two buttons, Enter in the note must not submit the
    form with its first button ("accept", "A is better"): the person has not chosen yet. The
    buttons still answer by click and by key."""
    base, url = server
    browser.get(f"{base}/studies/{name}")
    study = load_study(name, storage=url)
    q = study.ask()
    assert _open_id(browser) == q.id
    note = browser.find_element(By.ID, "note")
    note.send_keys("too hot, I would not", Keys.ENTER)
    time.sleep(1.0)  # a submission would have stored and reloaded by now
    study.refresh()
    assert study.n_answered == 0
    assert _open_id(browser) == q.id
    assert browser.find_element(By.ID, "note").get_attribute("value") == "too hot, I would not"
    browser.save_screenshot(str(shots / f"web-enter-in-note-{name}.png"))
    browser.find_element(By.ID, button).click()  # a click answers, with the note
    q2 = _wait_for_new_query(browser, q.id)
    row = study.history()[-1]
    assert (row["query_id"], row["answer"], row["note"]) == (q.id, clicked, "too hot, I would not")
    browser.find_element(By.TAG_NAME, "body").send_keys(key)  # and so does the page's key
    _wait_for_new_query(browser, q2)
    assert [r["query_id"] for r in study.history()] == [q.id, q2]


def test_a_page_says_when_it_cannot_reach_the_server(server, browser, shots):
    """While the server is down the page's poll fails: a notice says so (and that the typed
    answer stays in the form); it goes away when the server is back."""
    _, url = server
    port = _free_port()
    proc = _serve(url, port, poll=0.3)
    try:
        browser.get(f"http://127.0.0.1:{port}/studies/offline")
        browser.find_element(By.ID, "value").send_keys("0.42")
        assert not browser.find_element(By.ID, "offline").is_displayed()
        _stop(proc)
        _wait(browser, lambda d: d.find_element(By.ID, "offline").is_displayed())
        text = browser.find_element(By.ID, "offline").text
        assert "Cannot reach the server" in text and "stays in the form" in text
        assert browser.find_element(By.ID, "value").get_attribute("value") == "0.42"
        browser.save_screenshot(str(shots / "web-server-unreachable.png"))
        proc = _serve(url, port, poll=0.3)
        _wait(browser, lambda d: not d.find_element(By.ID, "offline").is_displayed())
        browser.find_element(By.ID, "value").send_keys(Keys.ENTER)  # now it is stored
        _wait(browser, lambda d: "answer stored" in d.find_element(By.TAG_NAME, "body").text)
        assert load_study("offline", storage=url).history()[-1]["answer"] == 0.42
    finally:
        _stop(proc)


def test_someone_else_answered_is_a_warning_not_a_success(server, browser, browser2, shots):
    """A page being typed in is not reloaded when another answers: it says so, in the warning
    style (amber), not the green of "answer stored"."""
    base, _ = server
    browser2.get(f"{base}/studies/live-warning")  # polls every 0.4 s
    browser2.find_element(By.ID, "note").send_keys("still tasting")
    browser.get(f"{base}/studies/live-warning")
    browser.find_element(By.ID, "btn-a").click()
    live = _wait(browser2, lambda d: d.find_element(By.ID, "live").is_displayed() and d)
    live = live.find_element(By.ID, "live")
    assert "An answer was given elsewhere (another page, person or program)" in live.text
    assert "is no longer open" in live.text and "Someone else" not in live.text
    assert "warning" in live.get_attribute("class").split()
    browser2.save_screenshot(str(shots / "web-someone-else-answered.png"))
    colours = browser2.execute_script(
        "function bg(cls) { var p = document.createElement('p'); p.className = cls;"
        "  document.body.appendChild(p); var c = getComputedStyle(p).backgroundColor;"
        "  p.remove(); return c; }"
        "return [getComputedStyle(document.getElementById('live')).backgroundColor,"
        "        bg('warning'), bg('flash')];"
    )
    assert colours[0] == colours[1] != colours[2]  # amber, not the green of "answer stored"


def _race(server, browser, browser2, name):
    """Both browsers on the same open duel of study ``name`` (live refresh off); browser answers
    A, then browser2 answers B a moment later and is refused. Returns (study, query, warning)."""
    base, url = server
    for d in (browser, browser2):
        d.get(f"{base}/studies/{name}")
        stop_polling(d)
    study = load_study(name, storage=url)
    q = study.ask()
    assert _open_id(browser) == _open_id(browser2) == q.id
    browser.find_element(By.ID, "btn-a").click()
    _wait_for_new_query(browser, q.id)
    browser2.find_element(By.ID, "btn-b").click()  # the same query, a moment later
    text = _wait(
        browser2,
        lambda d: (
            "not stored" in d.find_element(By.ID, "warning").text
            and d.find_element(By.ID, "warning").text
        ),
    )
    return study, q, text


def test_two_browsers_race_on_one_query_one_wins(server, browser, browser2):
    study, q, text = _race(server, browser, browser2, "race")
    assert f"query {q.id} was answered first by someone else" in text
    assert _open_id(browser2) == _open_id(browser) != q.id  # told, and shown the next query
    hist = study.history()
    assert [(r["query_id"], r["answer"]) for r in hist] == [(q.id, 0)]


def test_undo_after_a_refused_answer_names_the_other_answer_and_whose_it_is(
    server, browser, browser2, shots
):
    """browser2's answer is refused (browser answered first); its undo dialog names the
    answer it would withdraw (query, answer, time) and says it is not browser2's. Cancelled,
    nothing is withdrawn; an undo of an answer that is no longer the last withdraws nothing."""
    study, q, _ = _race(server, browser, browser2, "undo-race")
    told = study.history()[-1]["told_at"][:19].replace("T", " ")
    browser2.save_screenshot(str(shots / "web-undo-refused-page.png"))
    browser2.find_element(By.TAG_NAME, "body").send_keys("u")
    text = _wait(browser2, _alert).text
    assert f"query {q.id}: A is better, given {told} UTC" in text
    assert "NOT your answer" in text
    _alert(browser2).dismiss()
    assert study.history()[-1]["query_id"] == q.id  # nothing withdrawn
    stop_polling(browser2)
    q2 = _open_id(browser)
    browser.find_element(By.ID, "btn-b").click()  # meanwhile another answer comes in
    _wait_for_new_query(browser, q2)
    browser2.find_element(By.ID, "btn-undo").click()
    _wait(browser2, _alert).accept()  # it names query q, which is no longer the last
    warning = _wait(browser2, lambda d: d.find_element(By.ID, "warning").text)
    assert "Nothing was withdrawn" in warning and f"query {q2}: B is better" in warning
    assert [r["query_id"] for r in study.history()] == [q.id, q2]
    browser2.find_element(By.ID, "btn-undo").click()  # the page now names q2
    alert = _wait(browser2, _alert)
    assert f"query {q2}: B is better" in alert.text
    alert.accept()
    flash = _wait(browser2, lambda d: d.find_element(By.CSS_SELECTOR, ".flash:not([hidden])").text)
    assert f"last answer withdrawn: query {q2}: B is better" in flash
    assert [r["query_id"] for r in study.history()] == [q.id]
    browser2.save_screenshot(str(shots / "web-undo-withdrawn.png"))


def test_a_page_left_open_updates_when_another_answers(server, browser, browser2, shots):
    base, url = server
    browser2.get(f"{base}/studies/race")  # polls every 0.4 s
    browser.get(f"{base}/studies/race")
    q = _open_id(browser)
    assert _open_id(browser2) == q
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_RIGHT)
    new = _wait_for_new_query(browser, q)
    assert _wait_for_new_query(browser2, q) == new  # browser2 reloaded itself
    study = load_study("race", storage=url)
    assert [(r["query_id"], r["answer"]) for r in study.history()][-1] == (q, 1)
    browser2.get(f"{base}/")
    browser2.save_screenshot(str(shots / "web-studies.png"))


def _alert(d):
    try:
        return d.switch_to.alert
    except Exception:  # noqa: BLE001 - no alert open
        return None


def test_api_docs_render_offline(server, browser, shots):
    """Swagger UI from the package's own copy (no CDN) renders every API operation."""
    base, _ = server
    browser.get(f"{base}/docs")
    text = _wait(
        browser,
        lambda d: (
            "/api/studies/{name}/tell" in d.find_element(By.TAG_NAME, "body").text
            and d.find_element(By.TAG_NAME, "body").text
        ),
    )
    for op in (
        "/api/studies/{name}/ask",
        "/api/studies/{name}/undo",
        "/api/studies/{name}/history",
    ):
        assert op in text
    requested = browser.execute_script(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; });"
    )
    assert requested and all(u.startswith(base) for u in requested), requested
    browser.save_screenshot(str(shots / "web-docs.png"))


def test_the_create_form_marks_each_familys_default_method(server, browser, shots):
    """The method select says which method a family runs by default (preference: eubo-regret,
    expert: cobol) and no other."""
    from selenium.webdriver.support.ui import Select

    from boloop.algorithms.registry import FAMILY_DEFAULTS

    base, _ = server
    browser.get(f"{base}/")
    select = Select(browser.find_element(By.ID, "c-method"))
    marked = sorted(o.text for o in select.options if "default" in o.text)
    assert marked == sorted(f"{m} ({f}, default)" for f, m in FAMILY_DEFAULTS.items())
    assert "eubo-regret (preference, default)" in marked and "cobol (expert, default)" in marked
    select.select_by_visible_text("cobol (expert, default)")
    assert select.first_selected_option.get_attribute("value") == "expert/cobol"
    browser.execute_script("document.getElementById('c-method').size = 14;")  # the list, open
    browser.find_element(By.ID, "create-form").screenshot(str(shots / "web-create-defaults.png"))
    select.select_by_visible_text("eubo-regret (preference, default)")
    browser.find_element(By.ID, "create-form").screenshot(
        str(shots / "web-create-defaults-preference.png")
    )


@pytest.mark.parametrize("name", ["pref-hist", "drinks"])
def test_the_preference_history_names_the_chosen_option(server, browser, shots, name):
    """An answer in the history says which option was chosen: its name when the options have
    names ("b (recipe 3)"), its parameters otherwise."""
    base, url = server
    browser.get(f"{base}/studies/{name}")
    # this study's page, not the last one's (met once under load: the cells of the study the
    # browser showed before)
    _wait(browser, lambda d: d.find_element(By.TAG_NAME, "h1").text == name)
    hist = load_study(name, storage=url).history()
    cells = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#history tbody td.answer")]
    expected = []
    for r in reversed(hist):  # newest first
        side = "a" if r["answer"] == 0 else "b"
        params = ", ".join(f"{k}={v:.6g}" for k, v in r[side].items())
        expected.append(f"{side} ({r.get(side + '_label') or params})")
    assert cells == expected
    if name == "pref-hist":
        assert all("(recipe " in c for c in cells)
    history = browser.find_element(By.ID, "history")
    browser.execute_script("arguments[0].scrollIntoView();", history)
    history.screenshot(str(shots / f"web-history-{name}.png"))


def _shown(d, element_id: str) -> str:
    return d.find_element(By.ID, element_id).text


def test_the_expert_page_says_its_recommendation_and_that_lower_is_better(server, browser, shots):
    """COBOL's recommendation in words, in the study's parameter names (the picture only has a
    star), with what it means; at the measurement form, that lower values are better. Before
    any answer: no recommendation."""
    base, url = server
    browser.get(f"{base}/studies/expert-rec")
    st = load_study("expert-rec", storage=url).status(last=0)
    rec = st["recommendation"]
    assert list(rec) == ["a", "b"]
    text = _shown(browser, "recommendation")
    assert text.startswith(f"recommendation of cobol: a={rec['a']:.6g}, b={rec['b']:.6g}")
    assert st["recommendation_meaning"] in text and "minimises" in text
    goal = browser.find_element(By.CSS_SELECTOR, "#answer-form #goal")  # at the form
    assert goal.text == "Lower measured values are better: cobol minimises the value."
    browser.save_screenshot(str(shots / "web-expert-recommendation.png"))
    browser.get(f"{base}/studies/expert-new")
    assert _shown(browser, "recommendation").startswith(
        "recommendation of cobol: none yet (no answers yet)"
    )
    browser.get(f"{base}/studies/lev-rec")  # a level set: the estimate's counts, no goal
    st = load_study("lev-rec", storage=url).status(last=0)
    rec = st["recommendation"]
    assert st["answered"] > 0 and rec["n_undecided"] is not None
    text = _shown(browser, "recommendation")
    assert text.startswith(
        f"recommendation of {st['method']}: {rec['n_upper']} of {rec['n_candidates']} "
        f"candidates estimated above the threshold {rec['threshold']:g}; "
    )
    undecided = rec["n_undecided"]
    assert (f"{undecided} still undecided" if undecided else "none still undecided") in text
    # a level set's question at the form: whether the value is above the threshold
    goal = browser.find_element(By.CSS_SELECTOR, "#answer-form #goal").text
    assert goal.startswith(f"Is the measured value above {rec['threshold']:g} here?")


def test_a_preference_study_recommends_nothing_before_its_first_answer(server, browser, shots):
    """Before any answer the picture and the page say "no answers yet" and name no option as
    recommended; after one answer both name the method's recommendation."""
    base, url = server
    browser.get(f"{base}/studies/pref-new")
    assert _shown(browser, "pic-model").splitlines()[0] == "no answers yet"
    assert "recommend" not in browser.find_element(By.CSS_SELECTOR, "#pic-model svg").text
    assert _shown(browser, "recommendation").startswith(
        "recommendation of maxminlcb: none yet (no answers yet)"
    )
    browser.save_screenshot(str(shots / "web-preference-no-answers.png"))
    q = _open_id(browser)
    browser.find_element(By.ID, "btn-a").click()
    _wait_for_new_query(browser, q)
    st = load_study("pref-new", storage=url).status(last=0)
    label = st["recommendation_label"]
    assert label and f"recommendation of maxminlcb: {label}" in _shown(browser, "pic-model")
    assert _shown(browser, "recommendation").startswith(f"recommendation of maxminlcb: {label} (")
    browser.save_screenshot(str(shots / "web-preference-first-answer.png"))
