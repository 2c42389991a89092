"""The study page's layout in a real headless Chromium against ``boloop serve``: a live notice
(the study changed elsewhere) never moves the button a person is about to press, and a tap at
the place the button was before the notice still answers; on a phone the pictures' labels are
readable (at least 12 CSS px) with no sideways scrolling, and on a desktop they are drawn as
before.

Skipped, with the reason printed, where the browser is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import pytest

from browsers import require_browser

require_browser()

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

from boloop.study import load_study  # noqa: E402
from study_samples import answer_for, make_study  # noqa: E402
from test_web_browser import _free_port, _open_id, _serve, _stop, _wait  # noqa: E402

pytestmark = pytest.mark.xdist_group("browser")

POLL = 0.3


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('serve-layout') / 'layout.db'}"
    make_study("measure", url, answers=2, key="lev1", fast=True)
    make_study("duel", url, answers=2, key="pref")
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
    assert d.execute_script(
        "var r = arguments[0]; return document.elementFromPoint(r[0] + r[2] / 2, r[1] + r[3] / 2)"
        ".closest('button').id;",
        before["btn-store"],
    ) == "btn-store"
    _changed_elsewhere_and_reopened(url, "measure", q)
    live = _wait(
        d,
        lambda drv: drv.find_element(By.ID, "live").is_displayed()
        and "is still open" in drv.find_element(By.ID, "live").text
        and drv.find_element(By.ID, "live").text,
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
