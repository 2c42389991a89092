"""The study page's layout in a real headless Chromium against ``boloop serve``: a live notice
(the study changed elsewhere) never moves the button a person is about to press, and a tap at
the place the button was before the notice still answers; on a phone the pictures' labels are
readable (at least 12 CSS px) with no sideways scrolling, and on a desktop they are drawn as
before.

Skipped, with the reason printed, where the browser is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import re
import urllib.request

import pytest

from browsers import PHONE, require_browser

require_browser()

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

from boloop.study import load_study  # noqa: E402
from study_samples import answer_for, make_drinks, make_edge, make_study  # noqa: E402
from test_web_browser import _free_port, _open_id, _serve, _stop, _wait  # noqa: E402

pytestmark = pytest.mark.xdist_group("browser")

POLL = 0.3
#: studies whose pictures are measured (study_samples keys) and ``drinks``
PICTURED = ("lev1", "lev2", "expert", "expert4", "pref", "safe")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('serve-layout') / 'layout.db'}"
    make_study("measure", url, answers=2, key="lev1", fast=True)
    make_study("duel", url, answers=2, key="pref")
    make_study("stored", url, answers=2, key="lev1", fast=True)  # stored, then a notice
    for key in PICTURED:  # every kind of picture: 1-D, 2-D, slices, g, win rates, safe set
        make_study(key, url, answers=6, key=key, fast=True)
    make_drinks("drinks", url, answers=6)  # options named by their values
    make_edge("edge", url)  # measurements just above the threshold at the right end
    port = _free_port()
    proc = _serve(url, port, poll=POLL)
    yield f"http://127.0.0.1:{port}", url
    _stop(proc)


def _rects(d, ids: tuple[str, ...]) -> dict[str, tuple[float, float, float, float]]:
    """The viewport rectangles of elements ``ids`` and the page's scroll offset, in one read."""
    return d.execute_script(
        "var out = {scroll: [window.scrollX, window.scrollY, 0, 0]};"
        "arguments[0].forEach(function (i) {"
        "  var r = document.getElementById(i).getBoundingClientRect();"
        "  out[i] = [r.left, r.top, r.width, r.height]; });"
        "return out;",
        list(ids),
    )


def _tap_at(d, rect) -> None:
    """A pointer click at the centre of ``rect`` (viewport coordinates), wherever the page's
    elements are now: what a finger aimed at ``rect`` hits."""
    x, y, w, h = rect
    actions = ActionChains(d)
    actions.w3c_actions.pointer_action.move_to_location(int(x + w / 2), int(y + h / 2))
    actions.w3c_actions.pointer_action.click()
    actions.perform()


def _changed_elsewhere_and_reopened(url: str, name: str, q: int) -> None:
    """Another client (a Python program on the same storage) answers query ``q`` and withdraws
    that answer: the study changed (the page's notice), and ``q`` is open again."""
    other = load_study(name, storage=url)
    query = other.ask()
    assert query.id == q
    other.tell(q, answer_for(query), note="from elsewhere")
    other.undo()


@pytest.mark.parametrize("device", ["browser", "phone"])
def test_a_live_notice_does_not_move_the_store_button(server, device, request, shots):
    """A value and a note typed, the store button's place recorded; an answer given and
    withdrawn elsewhere makes the page say so (its poll), first that the query was answered,
    then that it is open again. Meanwhile the store button, the note and undo stay exactly
    where they were (the page did not scroll either), and a tap at the recorded place stores
    the typed value for that query."""
    base, url = server
    d = request.getfixturevalue(device)
    d.get(base + "/studies/measure")
    q = _open_id(d)
    d.find_element(By.ID, "value").send_keys("0.61")
    d.find_element(By.ID, "note").send_keys("bench 2")
    ids = ("btn-store", "note", "btn-undo")
    before = _rects(d, ids)
    assert (
        d.execute_script(
            "var r = arguments[0]; return document.elementFromPoint(r[0] + r[2] / 2, r[1] + r[3] / 2)"
            ".closest('button').id;",
            before["btn-store"],
        )
        == "btn-store"
    )
    _changed_elsewhere_and_reopened(url, "measure", q)
    live = _wait(
        d,
        lambda drv: (
            drv.find_element(By.ID, "live").is_displayed()
            and "is still open" in drv.find_element(By.ID, "live").text
            and drv.find_element(By.ID, "live").text
        ),
    )
    assert f"query {q} is still open" in live
    d.save_screenshot(str(shots / f"layout-live-notice-{device}.png"))
    assert _rects(d, ids) == before
    # the notice is readable where it is: inside the page's width, and a live region
    assert d.find_element(By.ID, "live").get_attribute("role") == "status"
    assert d.execute_script("return document.documentElement.scrollWidth") <= d.execute_script(
        "return window.innerWidth"
    )
    _tap_at(d, before["btn-store"])
    _wait(d, lambda drv: _open_id(drv) != q)
    stored = [r for r in load_study("measure", storage=url).history() if r["query_id"] == q]
    assert [(r["answer"], r["note"]) for r in stored] == [(0.61, "bench 2")]


def test_a_live_notice_does_not_move_the_answer_buttons_of_a_duel(server, phone, shots):
    """The same on a phone for a duel (two answer buttons, a note typed): the notice that
    the study changed leaves both buttons in place, and a tap where "B is better" was answers
    b."""
    base, url = server
    phone.get(base + "/studies/duel")
    q = _open_id(phone)
    phone.find_element(By.ID, "note").send_keys("tasted twice")
    ids = ("btn-a", "btn-b", "note", "btn-undo")
    before = _rects(phone, ids)
    _changed_elsewhere_and_reopened(url, "duel", q)
    _wait(phone, lambda drv: "is still open" in drv.find_element(By.ID, "live").text)
    assert phone.find_element(By.ID, "live").is_displayed()
    phone.save_screenshot(str(shots / "layout-live-notice-duel-phone.png"))
    assert _rects(phone, ids) == before
    _tap_at(phone, before["btn-b"])
    _wait(phone, lambda drv: _open_id(drv) != q)
    stored = [r for r in load_study("duel", storage=url).history() if r["query_id"] == q]
    assert [(r["answer"], r["note"]) for r in stored] == [(1, "tasted twice")]


def _in_view(rect, height: float) -> bool:
    x, y, w, h = rect
    return y >= 0 and y + h <= height


def _overlap(a, b) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


@pytest.mark.parametrize("device", ["browser", "phone"])
def test_a_notice_out_of_view_after_storing_is_pointed_to(server, device, request, shots):
    """An answer stored on the page, the next value typed, then an answer given elsewhere: the
    live notice appears below the form. On a phone it is out of view (the focus stays in the
    field the page focused, which is where it must stay: nothing scrolls under a finger), so a
    link pinned to an edge of the window says there is a notice and goes to it: inside the
    window, over none of the form's controls, which stay where they were; a tap on it brings
    the notice into view. On a desktop, where the notice is in view, there is no such link."""
    base, url = server
    d = request.getfixturevalue(device)
    d.get(base + "/studies/stored")
    q = _open_id(d)
    d.find_element(By.ID, "value").send_keys("0.42")
    d.find_element(By.ID, "btn-store").click()
    _wait(d, lambda drv: _open_id(drv) != q and drv.title.startswith("answer stored"))
    q2 = _open_id(d)
    d.find_element(By.ID, "value").send_keys("0.17")
    ids = ("btn-store", "value", "note", "btn-undo")
    before = _rects(d, ids)
    other = load_study("stored", storage=url)
    query = other.ask()
    assert query.id == q2
    other.tell(q2, answer_for(query))
    _wait(d, lambda drv: "is no longer open" in drv.find_element(By.ID, "live").text)
    height = d.execute_script("return window.innerHeight")
    live = _rects(d, ("live",))["live"]
    assert _rects(d, ids) == before  # nothing moved, nothing scrolled
    peek = d.find_element(By.ID, "notice-peek")
    if _in_view(live, height):
        assert device == "browser" and not peek.is_displayed()
        return
    assert device == "phone"  # what this test is about: a phone's screen is full of form
    _wait(d, lambda drv: peek.is_displayed())
    d.save_screenshot(str(shots / "layout-notice-pointer-phone.png"))
    where = _rects(d, ("notice-peek",))["notice-peek"]
    assert _in_view(where, height)
    assert not any(_overlap(where, before[i]) for i in ids), (where, before)
    assert "Notice below" in peek.text and "An answer was given elsewhere" in peek.text
    assert peek.get_attribute("href").endswith("#notices")  # a link: keyboards reach it too
    peek.click()
    _wait(d, lambda drv: _in_view(_rects(drv, ("live",))["live"], height))
    _wait(d, lambda drv: not peek.is_displayed())  # the notice is in view: no pointer to it
    # the keyboard went there too: the focus is in the notice, not left behind on the link
    assert d.execute_script(
        "var a = document.activeElement; return !!a && a.id !== 'notice-peek' && "
        "document.getElementById('notices').contains(a);"
    )
    assert d.find_element(By.ID, "value").get_attribute("value") == "0.17"  # nothing reloaded


#: every shown picture's texts, measured on the page: the smallest label as drawn on the screen
#: (its font size times the picture's scale, rotations included), the texts outside their
#: picture, each picture's viewBox width, and how far each figure and the page scroll sideways
_MEASURE = """
var out = {min: 1e9, outside: [], widths: [], figures: [], page: 0, texts: 0};
document.querySelectorAll('.pictures svg').forEach(function (svg) {
  if (!svg.getClientRects().length) { return; }  // not shown at this width
  var s = svg.getBoundingClientRect();
  out.widths.push(svg.viewBox.baseVal.width);
  svg.querySelectorAll('text').forEach(function (t) {
    var m = t.getScreenCTM();
    var px = Math.hypot(m.a, m.b) * parseFloat(getComputedStyle(t).fontSize);
    out.min = Math.min(out.min, px);
    out.texts += 1;
    var b = t.getBoundingClientRect();
    if (b.left < s.left - 0.5 || b.top < s.top - 0.5 || b.right > s.right + 0.5
        || b.bottom > s.bottom + 0.5) { out.outside.push(t.textContent); }
  });
});
document.querySelectorAll('.pictures figure').forEach(function (f) {
  out.figures.push(f.scrollWidth - f.clientWidth);
});
out.page = document.documentElement.scrollWidth - window.innerWidth;
return out;
"""


@pytest.mark.parametrize("name", [*PICTURED, "drinks"])
def test_the_pictures_are_readable_on_a_phone_without_scrolling_sideways(
    server, phone, shots, name
):
    """On a 390 px phone every label of every picture is drawn at 12 CSS px or more, lies
    inside its picture, and neither a picture nor the page scrolls sideways; so does the safe
    set's growth, an image of its own (its labels' size from its SVG's font size and viewBox)."""
    base, _ = server
    phone.get(f"{base}/studies/{name}")
    assert phone.execute_script("return window.innerWidth") == PHONE[0]
    m = phone.execute_script(_MEASURE)
    assert len(m["widths"]) == 2 and m["texts"] > 10
    assert m["min"] >= 12, m
    assert m["outside"] == []
    assert m["figures"] and max(m["figures"]) <= 0 and m["page"] <= 0, m
    for which in ("progress", "model"):  # the phone's drawing, as served with ?phone=1
        url = f"{base}/studies/{name}/pictures/{which}.svg?phone=1"
        assert _shown_is(phone, which, urllib.request.urlopen(url).read().decode())
    fig = phone.find_element(By.ID, "pic-model")
    phone.execute_script("arguments[0].scrollIntoView();", fig)
    fig.screenshot(str(shots / f"layout-{name}-model-phone.png"))
    if name == "safe":
        img = phone.find_element(By.CSS_SELECTOR, "#pic-growth img")
        src, drawn = _wait(
            phone,
            lambda d: d.execute_script(
                "var i = arguments[0]; return i.complete && i.naturalWidth && "
                "[i.currentSrc, i.getBoundingClientRect().width];",
                img,
            ),
        )
        svg = urllib.request.urlopen(src).read().decode()
        box = float(re.search(r'viewBox="0 0 ([0-9.]+)', svg).group(1))
        sizes = [float(v) for v in re.findall(r'font-size="([0-9.]+)"', svg)]
        assert sizes and min(sizes) * drawn / box >= 12
        assert phone.execute_script(_MEASURE)["page"] <= 0


@pytest.mark.parametrize("name", [*PICTURED, "drinks"])
def test_the_pictures_on_a_desktop_are_drawn_as_before(server, browser, name):
    """At a laptop's width the page shows the pictures as always: the ones served at their
    own address (560 units wide), side by side at nearly their own size (labels of about
    11 px), every text inside its picture."""
    base, _ = server
    browser.get(f"{base}/studies/{name}")
    m = browser.execute_script(_MEASURE)
    assert m["widths"] == [560, 560]
    assert m["min"] >= 10.5 and m["outside"] == [] and m["page"] <= 0, m
    for which in ("progress", "model"):  # the very picture served at its own address
        url = f"{base}/studies/{name}/pictures/{which}.svg"
        wide, narrow = (urllib.request.urlopen(u).read().decode() for u in (url, url + "?phone=1"))
        assert _shown_is(browser, which, wide) and not _shown_is(browser, which, narrow)


def _shown_is(d, which: str, svg: str) -> bool:
    """Whether the picture ``which`` shown on the page is the SVG document ``svg`` (node by
    node, as the browser parses both)."""
    return d.execute_script(
        "var shown = Array.from(document.querySelectorAll('#pic-' + arguments[0] + ' svg'))"
        "  .find(function (s) { return s.getClientRects().length; });"
        "var doc = new DOMParser().parseFromString(arguments[1], 'image/svg+xml');"
        "return doc.documentElement.isEqualNode(shown);",
        which,
        svg,
    )


#: in each shown picture, the rendered boxes (screen px) of the threshold's label and of the
#: marks that carry a tooltip (measured points), and the label's overlaps with them
_LABEL_CLEAR = """
var out = [];
document.querySelectorAll('.pictures svg').forEach(function (svg) {
  if (!svg.getClientRects().length) { return; }
  var label = Array.from(svg.querySelectorAll('text'))
    .find(function (t) { return t.textContent.indexOf('threshold ') === 0; });
  if (!label) { return; }
  var b = label.getBoundingClientRect();
  var marks = Array.from(svg.querySelectorAll('circle, path'))
    .filter(function (m) { return m.querySelector('title'); });
  var hits = marks.filter(function (m) {
    var r = m.getBoundingClientRect();
    return r.left < b.right && b.left < r.right && r.top < b.bottom && b.top < r.bottom;
  }).map(function (m) { return m.querySelector('title').textContent; });
  out.push({label: label.textContent, marks: marks.length, hits: hits});
});
return out;
"""


@pytest.mark.parametrize("device", ["browser", "phone"])
def test_the_threshold_s_label_is_drawn_clear_of_the_points(server, device, request, shots):
    """(A newcomer's trial.) The threshold's label, as the browser draws its text (its real
    extent, not an estimate), overlaps no measured point in either picture, on a laptop and on
    a phone; the last measurements lie just above the threshold at the line's right end,
    where the label used to be (test_study_pictures checks that on the SVG)."""
    base, _ = server
    d = request.getfixturevalue(device)
    d.get(f"{base}/studies/edge")
    drawn = d.execute_script(_LABEL_CLEAR)
    assert len(drawn) == 2 and all(p["marks"] >= 11 for p in drawn), drawn
    assert all(p["hits"] == [] for p in drawn), drawn
    fig = d.find_element(By.ID, "pic-progress")
    d.execute_script("arguments[0].scrollIntoView();", fig)
    fig.screenshot(str(shots / f"layout-threshold-label-{device}.png"))


#: each labelled field of a form: the label's bottom and the top of the field's focus ring
#: (the field's box grown by its outline's width and offset), the field focused as a keyboard
#: user focuses it (a text field shows its ring however it was focused)
_RING_AND_LABEL = """
var out = [];
document.querySelectorAll('input:not([type=hidden]):not([type=checkbox]), select, textarea')
  .forEach(function (field) {
    var label = field.id && document.querySelector('label[for="' + field.id + '"]');
    if (!label || !field.getClientRects().length) return;
    field.focus();
    var cs = getComputedStyle(field), f = field.getBoundingClientRect();
    var l = label.getBoundingClientRect();
    var grow = parseFloat(cs.outlineWidth) + parseFloat(cs.outlineOffset);
    out.push({id: field.id, ring: cs.outlineStyle !== 'none' && field.matches(':focus-visible'),
              ring_top: f.top - grow, label_bottom: l.bottom, label_above: l.top < f.top});
  });
return out;"""


@pytest.mark.parametrize("device", ["browser", "phone"])
@pytest.mark.parametrize("page", ["/studies/safe", "/studies/measure", "/"])
def test_a_focused_field_s_ring_clears_its_label(server, device, page, request):
    """A newcomer's trial: the measurement field's focus ring (3px, 2px outside the field) covered
    the bottom of its label, which sat right above the field, on desktop and phone. Every
    labelled field of the answer form and the create form shows its ring below its label."""
    base, _ = server
    d = request.getfixturevalue(device)
    d.get(base + page)
    fields = d.execute_script(_RING_AND_LABEL)
    above = [f for f in fields if f["label_above"]]
    assert above, fields  # precondition: the page has labelled fields under their labels
    for f in above:
        assert f["ring"], f  # the field shows a ring when focused
        assert f["ring_top"] >= f["label_bottom"], f
