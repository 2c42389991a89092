"""The headless browsers of the page's tests: Debian's chromium driven by selenium (imported
when a browser is made, so that importing this module needs neither). The browser test modules
skip themselves where chromium, chromedriver or selenium are missing (``test_web_browser.py``);
their fixtures (``browser``, ``browser2``, ``phone``) are in ``conftest.py``."""

from __future__ import annotations

import os
import shutil
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
#: the phone the page is tried on (CSS pixels)
PHONE = (390, 844)
_HEADLESS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage")


def desktop_driver() -> Any:
    """Chromium in a 1200 x 1500 window."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (*_HEADLESS, "--window-size=1200,1500", "--disable-extensions"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def phone_driver() -> Any:
    """Chromium emulating a phone of :data:`PHONE` (touch, device pixel ratio 2)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in _HEADLESS:
        opts.add_argument(arg)
    width, height = PHONE
    opts.add_experimental_option(
        "mobileEmulation",
        {
            "deviceMetrics": {"width": width, "height": height, "pixelRatio": 2},
            "userAgent": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) "
            "AppleWebKit/605.1.15 Mobile/15E148",
        },
    )
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def require_browser() -> None:
    """Skip the calling test module, saying why, where the browser, selenium or the web extra
    is not installed (``.ci/run`` installs them): called at the top of each browser module."""
    import pytest

    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip(
            "browser tests SKIPPED: chromium and chromium-driver are not installed "
            "(apt-get install -y chromium chromium-driver; .ci/run does this)",
            allow_module_level=True,
        )
    pytest.importorskip("selenium", reason="browser tests SKIPPED: selenium is not installed")
    pytest.importorskip("fastapi", reason="browser tests SKIPPED: the web extra is not installed")


def stop_polling(d: Any) -> None:
    """Switch the open study page's live refresh off (an empty state URL, app.js): the page
    stays as loaded, a stale form whose colleague's answer is unseen. (Pointing it at a URL
    that answers 404 no longer does: the page then says its study is gone.)"""
    d.execute_script("document.getElementById('study').setAttribute('data-state-url', '');")
