"""The login link and the share page of ``boloop serve`` in a real headless Chromium (Debian's
chromium + chromium-driver, driven by selenium): a token server (``--token``), a desktop browser
for the person running the study and a phone for the colleague who scans the code.

Skipped, with the reason printed, where the browser is not installed (``.ci/run`` installs it).
The same through the TestClient: ``test_web_login_link.py``.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from browsers import PHONE, require_browser

require_browser()

from selenium.webdriver.common.by import By  # noqa: E402

from boloop.web.server import login_link  # noqa: E402
from study_samples import make_study  # noqa: E402
from test_web_browser import _free_port, _stop, _wait  # noqa: E402

pytestmark = pytest.mark.xdist_group("browser")

TOKEN = "browser-login-link-token-0123456789"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``boloop serve --token`` on a free loopback port (a token server, as on the lab
    network) over a temporary SQLite file with one study."""
    import sys
    import urllib.request

    tmp = tmp_path_factory.mktemp("serve-link")
    url = f"sqlite:///{tmp / 'lab.db'}"
    make_study("lev1", url, fast=True)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "boloop.cli", "serve", "--storage", url, "--port", str(port),
         "--token", TOKEN],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base + "/static/style.css", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"boloop serve did not start: {proc.stdout.read().decode()}")
            time.sleep(0.2)
    yield base
    _stop(proc)


def _fresh(d, base: str) -> None:
    """A browser that has never logged in to the server (its cookies gone)."""
    d.get(base + "/static/favicon.svg")
    d.delete_all_cookies()


def _logged_in(d, base: str) -> bool:
    d.get(base + "/")
    return bool(d.find_elements(By.CSS_SELECTOR, "form[action='/logout']"))


def test_opening_the_login_link_logs_in_and_the_token_leaves_the_address_bar(browser, server):
    base = server
    _fresh(browser, base)
    assert not _logged_in(browser, base)
    browser.get(login_link(base, TOKEN))
    _wait(browser, lambda d: d.title == "studies - boloop")
    assert browser.current_url == base + "/"
    assert TOKEN not in browser.current_url
    assert TOKEN not in browser.page_source
    cookie = browser.get_cookie("boloop_session")
    assert cookie and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert TOKEN not in cookie["value"]
    assert _logged_in(browser, base)
    # with next: that page
    _fresh(browser, base)
    browser.get(login_link(base, TOKEN, next="/studies/lev1"))
    _wait(browser, lambda d: d.current_url == base + "/studies/lev1")
    assert browser.find_elements(By.CSS_SELECTOR, "input[name=query_id]")  # the study page


def test_a_wrong_login_link_does_not_log_in(browser, server):
    base = server
    _fresh(browser, base)
    browser.get(login_link(base, TOKEN + "x"))
    _wait(browser, lambda d: "wrong token" in d.find_element(By.CSS_SELECTOR, "[role=alert]").text)
    assert browser.title == "log in - boloop"
    assert browser.get_cookie("boloop_session") is None
    assert not _logged_in(browser, base)
    assert browser.current_url == base + "/login?next=/"  # the guard sends it to the form


def test_a_login_link_clicked_on_another_site_logs_in(browser, server):
    """A link in a web mail or a chat: the navigation is cross-site, so the browser sends no
    SameSite=Strict cookie through its redirects; the page that refreshes on carries it."""
    base = server
    _fresh(browser, base)
    link = login_link(base, TOKEN, next="/studies/lev1")
    browser.get(f'data:text/html,<a id="go" href="{link.replace("&", "%26")}">log in</a>')
    browser.find_element(By.ID, "go").click()
    _wait(browser, lambda d: d.current_url == base + "/studies/lev1")
    assert browser.find_elements(By.CSS_SELECTOR, "input[name=query_id]")
    assert _logged_in(browser, base)


def test_the_share_page_shows_the_link_and_its_qr_code_which_a_phone_opens(
    browser, phone, server, shots
):
    segno = pytest.importorskip("segno")
    from qr_read import modules_of_svg

    base = server
    _fresh(browser, base)
    browser.get(login_link(base, TOKEN))
    _wait(browser, lambda d: d.title == "studies - boloop")
    browser.find_element(By.CSS_SELECTOR, "a[href='/share']").click()
    _wait(browser, lambda d: d.current_url == base + "/share")
    # a loopback server knows no other address: the one this browser used
    want = login_link(base, TOKEN)
    anchor = browser.find_element(By.CSS_SELECTOR, ".share-link a")
    assert anchor.text == want and anchor.get_attribute("href") == want
    assert "Anyone with this link can answer and undo" in browser.find_element(By.TAG_NAME, "main").text
    svg = browser.find_element(By.CSS_SELECTOR, ".qr-box svg")
    assert svg.size["width"] >= 200 and svg.size["width"] == svg.size["height"]
    dark, size = modules_of_svg(svg.get_attribute("outerHTML"))
    matrices = {
        e: {(x, y) for y, row in enumerate(q.matrix) for x, v in enumerate(row) if v}
        for e, q in ((e, segno.make_qr(want, error=e)) for e in "LMQH")
        if q.symbol_size(border=0) == (size, size)
    }
    assert dark in matrices.values(), "the SVG is segno's QR code of exactly the link"
    browser.save_screenshot(str(shots / "web-share.png"))

    # the phone opens what the code holds (the link) and lands logged in on the study list
    _fresh(phone, base)
    phone.get(anchor.get_attribute("href"))
    _wait(phone, lambda d: d.title == "studies - boloop")
    assert phone.current_url == base + "/" and _logged_in(phone, base)
    phone.get(base + "/share")
    _wait(phone, lambda d: d.find_elements(By.CSS_SELECTOR, ".qr-box svg"))
    width = phone.execute_script("return document.documentElement.scrollWidth")
    assert width <= PHONE[0], "the share page fits a phone's width"
    phone.save_screenshot(str(shots / "web-share-phone.png"))


def test_a_browser_not_logged_in_cannot_see_the_share_page(browser, server):
    base = server
    _fresh(browser, base)
    browser.get(base + "/share")
    _wait(browser, lambda d: d.title == "log in - boloop")
    assert browser.current_url == base + "/login?next=/share"
    assert TOKEN not in browser.page_source
    assert not browser.find_elements(By.CSS_SELECTOR, "svg")
    # logging in with the form then opens it
    browser.find_element(By.ID, "token").send_keys(TOKEN)
    browser.find_element(By.CSS_SELECTOR, "form[action='/login'] button").click()
    _wait(browser, lambda d: d.current_url == base + "/share")
    assert browser.find_elements(By.CSS_SELECTOR, ".qr-box svg")
