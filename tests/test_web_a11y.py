"""Accessibility of ``boloop serve``'s pages in the real headless Chromium: axe-core (the PyPI
packaging ``selenium-axe-python``, which ships axe.min.js: no network at test time) on every
page state at a laptop's and a phone's width, and what axe cannot see: single-key answers act
only where a key is nobody else's (not on a media player, a link, a button), can be switched
off, and ignore held keys; every control shows a focus ring of at least 3:1; the focus goes
where the person needs it after storing, after a refusal, after an error, after "dismiss"; the
live refresh does not reload under a keyboard user."""

from __future__ import annotations

import math
import re
import struct
import wave

import pytest

from browsers import require_browser, stop_polling

require_browser()
pytest.importorskip(
    "selenium_axe_python", reason="a11y tests SKIPPED: pip install selenium-axe-python"
)

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium_axe_python import Axe  # noqa: E402

from boloop.study import create_study, load_study  # noqa: E402
from study_samples import SPACES, answer_for, make_study, write_photo_table  # noqa: E402
from test_plausibility import _coating  # noqa: E402
from test_web_browser import _free_port, _open_id, _serve, _stop, _wait  # noqa: E402

pytestmark = pytest.mark.xdist_group("browser")
#: WCAG 2.x A/AA rules (axe's best-practice rules are advice, not failures)
WCAG = {
    "runOnly": {
        "type": "tag",
        "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"],
    }
}


def _tone_table(directory) -> str:
    """Options that are sounds: a CSV table with a sound column and short WAV tones beside it."""
    lines = ["name,sound,pitch"]
    for i in range(4):
        with wave.open(str(directory / f"tone-{i}.wav"), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(8000)
            w.writeframes(b"".join(
                struct.pack("<h", int(8000 * math.sin(2 * math.pi * 220 * (i + 1) * t / 8000)))
                for t in range(8000)
            ))  # fmt: skip
        lines.append(f"tone {i},tone-{i}.wav,{i}")
    (directory / "tones.csv").write_text("\n".join(lines) + "\n")
    return str(directory / "tones.csv")


def _label_study(name: str, url: str, answers: int = 0) -> None:
    """An expert (COBOL) study with at least ``answers`` answers whose open query is a label
    (accept or reject)."""
    study = make_study(name, url, key="expert", fast=True)
    for _ in range(answers + 20):
        q = study.ask()
        if q.kind == "label" and study.n_answered >= answers:
            return
        study.tell(q.id, answer_for(q))
    raise AssertionError("COBOL asked for no label")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("a11y")
    url = f"sqlite:///{tmp / 'lab.db'}"
    _coating(url, answers=6, name="coat")
    make_study("lev1", url, answers=3, key="lev1", fast=True)
    make_study("lev2", url, answers=8, key="lev2", fast=True)  # a 2-D class map
    make_study("expert", url, answers=2, key="expert", fast=True)
    for name in ("label-keys", "label-switch", "label-store", "label-live"):
        _label_study(name, url)
    _label_study("label-summary", url, answers=3)  # with pictures, and their tables
    _label_study("label-live-numbers", url, answers=3)
    _label_study("label-live-cursor", url)
    create_study("pref", SPACES["pref"][0], write_photo_table(tmp), storage=url, seed=3)
    make_study("duel-keys", url, key="pref", fast=True)
    make_study("safe", url, answers=1, key="safe", fast=True)
    create_study("tones", "maxminlcb", _tone_table(tmp), storage=url, seed=1)
    port = _free_port()
    proc = _serve(url, port)
    yield f"http://127.0.0.1:{port}", url
    _stop(proc)


def _violations(d) -> list[str]:
    """axe's WCAG A/AA violations of the page as it is now, one line each."""
    axe = Axe(d)
    axe.inject()
    found = axe.run(options=WCAG)["violations"]
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']]}" for v in found]


def _open(d, url: str) -> None:
    d.get(url)
    if d.find_elements(By.ID, "study"):
        stop_polling(d)


def _watch_submissions(d) -> None:
    """Mark this page and record any form submission from now on (the key handler submits
    synchronously, by a click on a button): :func:`_submitted` reads both at once, so a check
    needs no sleep and a slow server cannot hide a submission."""
    d.execute_script(
        "window.__page = 1; window.__submitted = false;"
        "document.addEventListener('submit', function () { window.__submitted = true; }, true);"
    )


def _submitted(d) -> bool:
    """Whether a form was submitted, or the page left, since :func:`_watch_submissions`."""
    return bool(d.execute_script("return window.__page !== 1 || window.__submitted === true"))


def _answered(url: str, name: str) -> int:
    return load_study(name, storage=url).n_answered


def _focused(d) -> str:
    return d.execute_script(
        "var e = document.activeElement;"
        "return !e || e === document.body ? 'BODY' : (e.id || e.tagName.toLowerCase());"
    )


def _relative_luminance(css: str) -> float:
    rgb = [int(float(c)) for c in css[css.index("(") + 1 : css.index(")")].split(",")[:3]]
    lin = [c / 255 / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_relative_luminance(a), _relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


# -- axe on every page state ---------------------------------------------------------------------
PAGES = [
    "/",
    "/studies/coat",
    "/studies/lev1",
    "/studies/lev2",
    "/studies/expert",
    "/studies/label-keys",
    "/studies/pref",
    "/studies/tones",
    "/studies/safe",
    "/studies/no-such-study",
    "/no-such-page",
]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_passes_axe_at_desktop_and_phone_width(server, browser, phone, page):
    base, _ = server
    for d, where in ((browser, "desktop"), (phone, "phone")):
        _open(d, base + page)
        assert _violations(d) == [], f"{page} on the {where}"


def test_an_unknown_address_is_an_html_page_for_a_browser(server, browser):
    """The router's own 404 (no route) was the bare JSON {"detail":"Not Found"}: no title, no
    language, nothing to go on with."""
    base, _ = server
    browser.get(base + "/no-such-page")
    assert browser.title == "error - boloop"
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "en"
    assert "There is no page at /no-such-page" in browser.find_element(By.TAG_NAME, "main").text
    assert browser.find_element(By.LINK_TEXT, "back to the studies")


def test_a_refused_value_a_question_and_a_stored_answer_pass_axe(server, browser, phone):
    base, url = server
    for d in (browser, phone):
        _open(d, base + "/studies/coat")
        d.find_element(By.ID, "value").send_keys("12..5", Keys.ENTER)
        _wait(d, lambda d: d.find_element(By.CSS_SELECTOR, ".field-error"))
        stop_polling(d)
        assert _violations(d) == [], "a refused value"
        assert _focused(d) == "value"
        assert d.title.startswith("not stored, check the form - ")
        field = d.find_element(By.ID, "value")
        field.clear()
        field.send_keys("7234", Keys.ENTER)
        _wait(d, lambda d: d.find_element(By.ID, "confirm-unusual"))
        stop_polling(d)
        assert _violations(d) == [], "the plausibility question"
        field = d.find_element(By.ID, "value")
        field.clear()
        q = _open_id(d)
        field.send_keys("700", Keys.ENTER)
        _wait(d, lambda d, q=q: _open_id(d) != q and d.find_element(By.ID, "flash"))
        stop_polling(d)
        assert d.title.startswith(f"answer stored: query {q}: 700 - coat")
        assert _violations(d) == [], "the stored flash"


# -- single-key answers --------------------------------------------------------------------------
def test_arrow_keys_and_letters_on_an_options_media_player_choose_nothing(server, browser):
    """WCAG 2.1.1 / 2.1.4: an arrow key that seeks in option A's sound, or a letter, pressed
    while the player has the focus is the player's, not an answer (it stored "B is better")."""
    base, url = server
    _open(browser, base + "/studies/tones")
    q = _open_id(browser)
    n = _answered(url, "tones")
    player = browser.find_element(By.CSS_SELECTOR, "#option-a audio")
    # Tab to it, as a keyboard user does
    for _ in range(30):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        if browser.execute_script("return document.activeElement === arguments[0]", player):
            break
    else:
        pytest.fail("Tab never reached option A's player")
    _watch_submissions(browser)
    for key in (Keys.ARROW_RIGHT, Keys.ARROW_LEFT, "b", "a"):
        ActionChains(browser).send_keys(key).perform()
    assert not _submitted(browser)
    assert _answered(url, "tones") == n and _open_id(browser) == q
    # and the player says whose sound it plays, not just the file's name
    assert player.get_attribute("aria-label").startswith("option A (tone ")


def test_a_letter_typed_on_a_link_or_a_button_answers_nothing(server, browser):
    base, url = server
    _open(browser, base + "/studies/label-keys")
    q = _open_id(browser)
    n = _answered(url, "label-keys")
    link = browser.find_element(By.CSS_SELECTOR, "a[href$='export.csv']")
    _watch_submissions(browser)
    browser.execute_script("arguments[0].focus()", link)
    ActionChains(browser).send_keys("n").perform()  # this stored a reject
    undo = browser.find_element(By.ID, "btn-undo")
    browser.execute_script("arguments[0].focus()", undo)
    ActionChains(browser).send_keys("y").perform()
    assert not _submitted(browser)
    assert _answered(url, "label-keys") == n and _open_id(browser) == q
    # a <summary> (here a picture's "the numbers") opens with a key of its own, answers nothing
    _open(browser, base + "/studies/label-summary")
    qs, ns = _open_id(browser), _answered(url, "label-summary")
    summary = browser.find_element(By.CSS_SELECTOR, "details.numbers summary")
    _watch_submissions(browser)
    browser.execute_script("arguments[0].focus()", summary)
    for key in ("y", "n", "u"):
        ActionChains(browser).send_keys(key).perform()
    assert not _submitted(browser)
    assert _answered(url, "label-summary") == ns and _open_id(browser) == qs
    _open(browser, base + "/studies/label-keys")
    # the page itself still answers by key, and a key held down answers once
    browser.execute_script("document.activeElement.blur()")
    assert _focused(browser) == "BODY"
    _watch_submissions(browser)
    browser.execute_cdp_cmd(
        "Input.dispatchKeyEvent",
        {"type": "keyDown", "key": "n", "code": "KeyN", "windowsVirtualKeyCode": 78,
         "autoRepeat": True, "text": "n"},
    )  # fmt: skip
    browser.execute_cdp_cmd(
        "Input.dispatchKeyEvent",
        {"type": "keyUp", "key": "n", "code": "KeyN", "windowsVirtualKeyCode": 78},
    )
    assert not _submitted(browser), "a repeated keydown (a key held) answered"
    assert _answered(url, "label-keys") == n
    ActionChains(browser).send_keys("n").perform()
    _wait(browser, lambda d, q=q: _open_id(d) != q)
    row = load_study("label-keys", storage=url).history()[-1]
    assert (row["query_id"], row["answer"]) == (q, False)


def test_the_buttons_name_their_keys_and_a_switch_turns_the_keys_off(server, browser):
    base, url = server
    _open(browser, base + "/studies/label-switch")
    accept = browser.find_element(By.ID, "btn-accept")
    assert accept.get_attribute("aria-keyshortcuts") == "y"
    assert browser.find_element(By.ID, "btn-reject").get_attribute("aria-keyshortcuts") == "n"
    switch = browser.find_element(By.ID, "keys-on")
    assert switch.is_displayed() and switch.is_selected()
    q = _open_id(browser)
    n = _answered(url, "label-switch")
    try:
        switch.click()
        assert accept.get_attribute("aria-keyshortcuts") is None
        assert not accept.find_element(By.TAG_NAME, "kbd").is_displayed()
        browser.execute_script("document.activeElement.blur()")
        _watch_submissions(browser)
        ActionChains(browser).send_keys("y").perform()
        assert not _submitted(browser)
        assert _answered(url, "label-switch") == n and _open_id(browser) == q
        # kept by the browser: a page loaded again has them off too
        _open(browser, base + "/studies/label-switch")
        assert not browser.find_element(By.ID, "keys-on").is_selected()
        _watch_submissions(browser)
        ActionChains(browser).send_keys("y").perform()
        assert not _submitted(browser)
        assert _answered(url, "label-switch") == n
        # and on again
        browser.find_element(By.ID, "keys-on").click()
        browser.execute_script("document.activeElement.blur()")
        ActionChains(browser).send_keys("y").perform()
        _wait(browser, lambda d, q=q: _open_id(d) != q)
        assert load_study("label-switch", storage=url).history()[-1]["answer"] is True
    finally:
        browser.execute_script("window.localStorage.clear()")


def test_after_storing_the_title_says_so_and_the_question_has_the_focus(server, browser, phone):
    """A label or duel page stored by key: the next page's title starts with "answer stored"
    and its question's heading has the focus (described by the notice), so a screen reader says
    both, and the keys answer on from there."""
    base, url = server
    for name, key in (("label-store", "y"), ("duel-keys", "b")):
        _open(browser, f"{base}/studies/{name}")
        q = _open_id(browser)
        ActionChains(browser).send_keys(key).perform()
        _wait(browser, lambda d, q=q: _open_id(d) != q)
        stop_polling(browser)
        assert re.match(rf"answer stored: query {q}: \w[^-]* - {name}", browser.title), (
            browser.title
        )
        assert _focused(browser) == "q-title"
        heading = browser.find_element(By.ID, "q-title")
        assert heading.get_attribute("aria-describedby") == "flash"
        assert _violations(browser) == []
        q2 = _open_id(browser)
        if browser.find_element(By.ID, "answer-form").get_attribute("data-kind") == "compare":
            _watch_submissions(browser)
            ActionChains(browser).send_keys(Keys.ARROW_LEFT).perform()  # arrows from the heading
            assert not _submitted(browser), "an arrow key on the focused heading answered"
            assert _open_id(browser) == q2
            ActionChains(browser).send_keys("a").perform()
            _wait(browser, lambda d, q2=q2: _open_id(d) != q2)
            assert load_study(name, storage=url).history()[-1]["answer"] == 0


# -- the focus ring ------------------------------------------------------------------------------
def _ring(d, el) -> tuple[str, float, str]:
    return tuple(
        d.execute_script(
            "var s = getComputedStyle(arguments[0]);"
            "return [s.outlineStyle, parseFloat(s.outlineWidth), s.outlineColor];",
            el,
        )
    )


def test_every_control_shows_a_focus_ring_of_3_to_1(server, browser):
    """WCAG 2.4.7 / 1.4.11: Tab through the study page: every focused control has an outline
    of >= 2 px whose colour contrasts >= 3:1 with the page behind it; a refused field's focus
    ring is the same (its invalid style, an outline of 1.5:1, replaced the ring)."""
    base, _ = server
    _open(browser, base + "/studies/coat")
    browser.find_element(By.ID, "value").send_keys("12..5", Keys.ENTER)
    _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "input[aria-invalid=true]"))
    stop_polling(browser)
    browser.find_element(By.CSS_SELECTOR, "a.brand").send_keys("")  # start from the top
    browser.execute_script("document.querySelector('a.brand').focus()")
    seen = set()
    for _ in range(40):
        el = browser.switch_to.active_element
        tag = el.tag_name
        style, width, colour = _ring(browser, el)
        behind = browser.execute_script(
            "for (var e = arguments[0].parentElement; e; e = e.parentElement) {"
            "  var c = getComputedStyle(e).backgroundColor;"
            "  if (c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') return c; }"
            "return 'rgb(255, 255, 255)';",
            el,
        )
        what = f"{tag}#{el.get_attribute('id')}.{el.get_attribute('class')}"
        assert style != "none" and width >= 2, what
        assert _contrast(colour, behind) >= 3.0, (what, colour, behind)
        seen.add(tag if el.get_attribute("aria-invalid") != "true" else "invalid")
        ActionChains(browser).send_keys(Keys.TAB).perform()
        if browser.switch_to.active_element.tag_name == "body":
            break
    assert {"a", "input", "invalid", "button", "div"} <= seen, seen


def test_accept_and_key_hints_have_the_contrast_of_text(server, browser):
    base, _ = server
    _open(browser, base + "/studies/label-keys")
    for bid in ("btn-accept", "btn-reject"):
        b = browser.find_element(By.ID, bid)
        fg, bg = browser.execute_script(
            "var s = getComputedStyle(arguments[0]); return [s.color, s.backgroundColor];", b
        )
        assert _contrast(fg, bg) >= 4.5, (bid, fg, bg)
        kbd = b.find_element(By.TAG_NAME, "kbd")
        assert browser.execute_script("return getComputedStyle(arguments[0]).opacity", kbd) == "1"
    border = browser.execute_script(
        "return getComputedStyle(document.getElementById('note')).borderTopColor"
    )
    assert _contrast(border, "rgb(255, 255, 255)") >= 3.0, border


# -- where the focus goes ------------------------------------------------------------------------
def test_a_bad_g_focuses_g_not_f(server, browser):
    base, url = server
    _open(browser, base + "/studies/safe")
    browser.find_element(By.ID, "out-f").send_keys("0.3")
    browser.find_element(By.ID, "out-g").send_keys("abc", Keys.ENTER)
    _wait(browser, lambda d: d.find_element(By.ID, "err-g"))
    stop_polling(browser)
    assert _focused(browser) == "out-g"
    assert _violations(browser) == []


def test_a_refused_answer_focuses_its_warning_and_dismiss_the_question(server, browser):
    base, url = server
    _open(browser, base + "/studies/lev1")
    browser.find_element(By.ID, "value").send_keys("0.5")
    study = load_study("lev1", storage=url)
    q = study.ask()
    study.tell(q.id, answer_for(q))  # someone else answers first
    browser.find_element(By.ID, "btn-store").click()
    _wait(browser, lambda d: d.find_element(By.ID, "sent"))
    stop_polling(browser)
    assert _focused(browser) == "warning"
    assert browser.title.startswith("not stored - lev1")
    assert _violations(browser) == []
    browser.find_element(By.ID, "sent-dismiss").send_keys(Keys.ENTER)
    assert _focused(browser) == "q-title"


def test_the_live_refresh_does_not_reload_under_a_keyboard_user(server, browser):
    """A keyboard user who Tabbed to a control (here the export link) is at work: an answer
    given elsewhere is said in the notice; the page does not reload and lose their place (a page
whose focus is still where it loaded reloads as before: test_web_browser.py)."""
    base, url = server
    browser.get(base + "/studies/label-live")  # polls every 0.4 s
    q = _open_id(browser)
    browser.execute_script("document.getElementById('note').focus()")  # nothing typed
    ActionChains(browser).send_keys(Keys.TAB).perform()  # on to the export link, by key
    if browser.switch_to.active_element.get_attribute("id") == "btn-undo":
        ActionChains(browser).send_keys(Keys.TAB).perform()
    on = browser.switch_to.active_element
    assert on.get_attribute("href").endswith("/export.csv")
    study = load_study("label-live", storage=url)
    assert study.ask().id == q
    study.tell(q, True)
    live = _wait(browser, lambda d: d.find_element(By.ID, "live-text"))
    assert f"query {q} is no longer open" in live.text
    assert _open_id(browser) == q
    assert browser.execute_script("return document.activeElement === arguments[0]", on)
    stop_polling(browser)


def test_the_live_refresh_does_not_reload_under_a_reader_or_open_numbers(server, browser):
    """Focus moved without a key (a screen reader's virtual cursor moves it so) to a control,
    or a table of numbers opened by a click: an answer given elsewhere is said in the notice
    and the page stays as the person left it."""
    base, url = server
    browser.get(base + "/studies/label-live-cursor")
    q = _open_id(browser)
    link = browser.find_element(By.CSS_SELECTOR, "a[href$='export.csv']")
    browser.execute_script("arguments[0].focus()", link)  # no keydown at all
    load_study("label-live-cursor", storage=url).tell(q, True)
    live = _wait(browser, lambda d: d.find_element(By.ID, "live-text"))
    assert f"query {q} is no longer open" in live.text and _open_id(browser) == q
    stop_polling(browser)
    browser.get(base + "/studies/label-live-numbers")
    q = _open_id(browser)
    browser.execute_script("document.activeElement.blur()")
    summary = browser.find_element(By.CSS_SELECTOR, "details.numbers summary")
    summary.click()
    browser.execute_script("document.activeElement.blur()")  # only the table is open
    load_study("label-live-numbers", storage=url).tell(q, True)
    live = _wait(browser, lambda d: d.find_element(By.ID, "live-text"))
    assert f"query {q} is no longer open" in live.text and _open_id(browser) == q
    assert browser.find_element(By.CSS_SELECTOR, "details.numbers").get_attribute("open")
    stop_polling(browser)


# -- text alternatives of the pictures -----------------------------------------------------------
@pytest.mark.parametrize("name", ["safe", "pref", "lev1", "coat"])
def test_each_picture_has_its_numbers_as_a_table(server, browser, name):
    """WCAG 1.1.1: what a picture's marks say on hover (their tooltips, which a keyboard or a
    screen reader never reaches) is a table under it, row for row."""
    base, _ = server
    _open(browser, f"{base}/studies/{name}")
    for which in ("progress", "model"):
        fig = browser.find_element(By.ID, f"pic-{which}")
        tips = browser.execute_script(
            "return Array.from(arguments[0].querySelectorAll('.pic-wide svg title'))"
            ".map(t => t.textContent.replace(/\\s+/g, ' ').trim()).filter(t => t);",
            fig,
        )
        if not tips:  # nothing drawn yet ("no answers yet"): no table either
            assert not fig.find_elements(By.CSS_SELECTOR, "details.numbers")
            continue
        details = fig.find_element(By.CSS_SELECTOR, "details.numbers")
        details.find_element(By.TAG_NAME, "summary").click()
        rows = browser.execute_script(
            "return Array.from(arguments[0].querySelectorAll('tbody tr')).map(r =>"
            " Array.from(r.cells).map(c => c.textContent).filter(t => t).join(': '));",
            details,
        )
        assert rows == tips, which
    assert _violations(browser) == []


def test_a_picture_is_described_to_a_screen_reader(server, browser):
    """An SVG of role img is one image to assistive technology: Chromium's accessibility tree
    gives it its label and, from its <desc>, a description with the numbers."""
    base, url = server
    _open(browser, base + "/studies/safe")
    tree = browser.execute_cdp_cmd("Accessibility.getFullAXTree", {})["nodes"]
    images = {
        (n.get("name") or {}).get("value"): (n.get("description") or {}).get("value", "")
        for n in tree
        if (n.get("role") or {}).get("value") == "image" and not n.get("ignored")
    }
    n = load_study("safe", storage=url).n_answered
    desc = images.get("progress of study safe", "")
    assert desc.startswith(f"{n} measurements.") and "Key: best safe f so far" in desc, images
    assert "Shown: safe set" in images.get("model of study safe", ""), images


def test_the_growth_picture_has_its_numbers_in_place(server, browser, phone):
    """The safe set's growth is an <img> (a replay the page never waits for): its table "the
    numbers", opened, shows in place the rows of its page of numbers (growth_numbers of the
    study: a row per answer), at a laptop's and a phone's width, and the page still passes."""
    import re
    import urllib.request

    from boloop.study.pictures import growth_numbers

    base, url = server
    lead, rows = growth_numbers(load_study("safe", storage=url))
    assert rows and len(rows) == _answered(url, "safe")
    with urllib.request.urlopen(f"{base}/studies/safe/pictures/growth-numbers") as r:
        page = r.read().decode()
    assert re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", page) == rows
    for d in (browser, phone):
        _open(d, base + "/studies/safe")
        img = d.find_element(By.CSS_SELECTOR, "#pic-growth img")
        assert "numbers" in img.get_attribute("alt")
        box = d.find_element(By.ID, "numbers-growth")
        d.execute_script("arguments[0].scrollIntoView({block: 'center'});", box)
        box.find_element(By.TAG_NAME, "summary").click()
        shown = _wait(d, lambda drv: drv.execute_script(
            "return Array.from(document.querySelectorAll('#numbers-growth tbody tr')).map(r =>"
            " Array.from(r.cells).map(c => c.textContent));"
        ))  # fmt: skip
        assert [tuple(r) for r in shown] == rows
        assert box.find_element(By.ID, "growth-lead").text == lead
        assert box.find_element(By.TAG_NAME, "summary").text == f"the numbers ({len(rows)})"
        assert not d.find_element(By.ID, "growth-numbers-link").is_displayed()
        assert _violations(d) == []


def test_the_class_map_draws_its_marks_at_desktop_and_phone_width(server, browser, phone):
    """The 2-D level-set class map on the page: the picture shown (the wide one on a laptop,
    the phone's drawing on a phone) has its plus/minus marks and its two boundary lines drawn
    inside it, and its key shows the marks; its description counts the classes."""
    base, _ = server
    for d, shown in ((browser, ".pic-wide"), (phone, ".pic-narrow")):
        _open(d, base + "/studies/lev2")
        info = d.execute_script(
            "var svg = document.querySelector('#pic-model ' + arguments[0] + ' svg');"
            "var s = svg.getBoundingClientRect();"
            "var marks = Array.from(svg.querySelectorAll('path')).filter(p =>"
            "  p.getAttribute('stroke-width') === '1.3' && !p.querySelector('title'));"
            "var lines = Array.from(svg.querySelectorAll('path')).filter(p =>"
            "  p.getAttribute('stroke-width') === '1.6' || p.getAttribute('stroke-dasharray') === '3 2');"
            "function inside(p) { var b = p.getBoundingClientRect();"
            "  return b.width > 0 && b.left >= s.left - 1 && b.right <= s.right + 1"
            "    && b.top >= s.top - 1 && b.bottom <= s.bottom + 1; }"
            "return {shown: svg.getClientRects().length > 0, marks: marks.length,"
            "  marksInside: marks.every(inside), lines: lines.length, linesInside: lines.every(inside),"
            "  desc: svg.querySelector('desc').textContent};",
            shown,
        )
        assert info["shown"], shown
        # the map's marks, and a plus and a minus in the key (one path each)
        assert info["marks"] >= 3 and info["marksInside"], info
        assert info["lines"] == 2 and info["linesInside"], info
        assert "Of the 165 grid points drawn: " in info["desc"], info["desc"]


#: what axe finds in Swagger UI's own page (third party: its markup and its colours, which no
#: setting of it or of FastAPI changes); docs/web.md lists them
SWAGGER_FINDINGS = {"color-contrast"}


def test_the_api_docs_have_only_swagger_uis_own_axe_findings(server, browser):
    """/docs names its language and its operations' paths are no links inside their toggle
    buttons (deepLinking off): the findings settings fix. What axe still finds there is the
    list docs/web.md gives (Swagger UI's own colours), with an operation open too: a change
    in it (a new Swagger UI) fails here, and the list is looked at again."""
    base, _ = server
    browser.get(base + "/docs")
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".opblock-summary-control"))
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "en"
    found = {v.split(" ")[0] for v in _violations(browser)}
    assert found == SWAGGER_FINDINGS
    browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-control")[2].click()
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".opblock-body"))
    assert {v.split(" ")[0] for v in _violations(browser)} == SWAGGER_FINDINGS
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "web.md").read_text()
    for rule in SWAGGER_FINDINGS:
        assert f"`{rule}`" in text, rule
