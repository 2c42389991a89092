"""The login link of ``boloop serve`` (``GET /login?token=...``), the share page (``/share``) with
its QR code, what ``boloop serve`` prints, and the access log that must not print a token: through
the framework's TestClient, and ``boloop serve`` / uvicorn as subprocesses.

The same in a real browser: ``test_web_browser_login_link.py``.
"""

from __future__ import annotations

import logging
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from http.cookies import SimpleCookie

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from boloop.web import create_app  # noqa: E402
from boloop.web.server import login_link, mask_access_log, server_urls  # noqa: E402
from study_samples import make_study  # noqa: E402
from test_web import _csrf as web_csrf  # noqa: E402

TOKEN = "correct-horse-battery"


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'web.db'}"


def _client(url, token=TOKEN, **kw):
    return TestClient(create_app(url, token, **kw), follow_redirects=False)


def _csrf(client, path="/login"):
    return web_csrf(client, path)


def _session_cookie(response) -> SimpleCookie:
    """The ``boloop_session`` cookie a response sets (value and attributes), or an empty jar."""
    jar = SimpleCookie()
    for header in response.headers.get_list("set-cookie"):
        if header.startswith("boloop_session="):
            jar.load(header)
    return jar


# -- the login link ---------------------------------------------------------------------------
def test_a_login_link_logs_in_as_the_form_does_and_redirects_the_token_away(url):
    make_study("lev1", url, answers=1)
    c = _client(url)
    assert c.get("/studies/lev1").status_code == 303  # not logged in
    r = c.get(f"/login?token={TOKEN}&next=/studies/lev1")
    assert r.status_code == 303 and r.headers["location"] == "/studies/lev1"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert r.headers["cache-control"] == "no-store"
    link_cookie = _session_cookie(r)["boloop_session"]
    assert TOKEN not in r.headers["set-cookie"]
    assert c.get("/studies/lev1").status_code == 200  # logged in

    # the very cookie of the form: value and attributes
    form = _client(url)
    r = form.post("/login", data={"csrf": _csrf(form), "token": TOKEN, "next": "/"})
    form_cookie = _session_cookie(r)["boloop_session"]
    assert link_cookie.value == form_cookie.value
    for attr in ("httponly", "samesite", "path", "secure", "expires", "max-age", "domain"):
        assert link_cookie[attr] == form_cookie[attr], attr
    assert link_cookie["httponly"] and link_cookie["samesite"].lower() == "strict"

    # without next: the study list
    r = _client(url).get(f"/login?token={TOKEN}")
    assert r.status_code == 303 and r.headers["location"] == "/"


@pytest.mark.parametrize(
    "nxt",
    [
        "https://evil.example/x",
        "//evil.example/x",
        "/\\evil.example",
        "javascript:alert(1)",
        "evil.example",
        "",
        # a browser drops tabs and newlines from a URL: these are //evil.example
        "/\t/evil.example",
        "/\n/evil.example",
        "/\r/evil.example",
    ],
)
def test_a_login_link_goes_nowhere_but_this_server(url, nxt):
    from urllib.parse import quote

    r = _client(url).get(f"/login?token={TOKEN}&next={quote(nxt, safe='')}")
    assert r.status_code == 303 and r.headers["location"] == "/"
    r = _client(url, None).get(f"/login?token=&next={quote(nxt, safe='')}")  # no token server
    assert r.status_code == 303 and r.headers["location"] == "/"


def test_a_study_name_with_a_space_survives_the_login(url):
    """The guard's next (percent-encoded) and one typed with a space go on to that study: the
    login link's check of next refuses control characters, not a space."""
    from urllib.parse import parse_qs, urlsplit

    make_study("my study", url, key="lev1")
    c = _client(url)
    r = c.get("/studies/my%20study")
    (nxt,) = parse_qs(urlsplit(r.headers["location"]).query)["next"]
    for given in (nxt, "/studies/my study"):
        r = _client(url).get("/login", params={"token": TOKEN, "next": given})
        assert r.status_code == 303 and r.headers["location"] == "/studies/my%20study", given
        r = _client(url).get(
            "/login",
            params={"token": TOKEN, "next": given},
            headers={"Sec-Fetch-Site": "cross-site"},
        )
        assert f'content="0; url={given}"' in r.text, given
        form = _client(url)
        r = form.post("/login", data={"csrf": _csrf(form), "token": TOKEN, "next": given})
        assert r.status_code == 303 and r.headers["location"] == "/studies/my%20study", given
        assert form.get(r.headers["location"]).status_code == 200


def test_a_wrong_login_link_logs_nothing_in_and_says_so_as_the_form(url):
    make_study("lev1", url)
    c = _client(url)
    for wrong in ("nope", "", TOKEN[:-1], TOKEN + "x", TOKEN.upper()):
        r = c.get("/login", params={"token": wrong, "next": "/studies/lev1"})
        assert r.status_code == 401 and "wrong token" in r.text, wrong
        assert r.headers["referrer-policy"] == "no-referrer"
        assert not _session_cookie(r), "nothing logged in"
        # the form again, with the same next
        assert 'name="next" value="/studies/lev1"' in r.text and 'name="token"' in r.text
        assert c.get("/studies/lev1").status_code == 303
    # the form's answer to the same wrong token is the same page
    r = c.post("/login", data={"csrf": _csrf(c), "token": "nope", "next": "/studies/lev1"})
    assert r.status_code == 401 and "wrong token" in r.text


def test_without_a_token_a_login_link_just_redirects(url):
    c = _client(url, None)
    r = c.get("/login?token=&next=/studies/x")
    assert r.status_code == 303 and r.headers["location"] == "/studies/x"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert not _session_cookie(r)
    assert c.get("/login").status_code == 200  # the form as before


def test_a_login_link_followed_from_another_site_goes_on_by_itself(url):
    """A link clicked on another site's page: browsers send no SameSite=Strict cookie on that
    navigation, redirects included, so the answer is a page that logs in and refreshes to next
    (a navigation of this site), with the same cookie. (The browser test clicks one.)"""
    c = _client(url)
    r = c.get(
        f"/login?token={TOKEN}&next=/studies/x",
        headers={"Sec-Fetch-Site": "cross-site"},
    )
    assert r.status_code == 200
    assert '<meta http-equiv="refresh" content="0; url=/studies/x">' in r.text
    assert r.headers["referrer-policy"] == "no-referrer"
    assert r.headers["cache-control"] == "no-store"
    assert _session_cookie(r)["boloop_session"]["samesite"].lower() == "strict"
    assert TOKEN not in r.text
    # a next from elsewhere is refused there too, and a wrong token is the 401
    r = c.get(f"/login?token={TOKEN}&next=//evil.example", headers={"Sec-Fetch-Site": "cross-site"})
    assert 'content="0; url=/"' in r.text
    # the meta refresh is read by the browser's URL parser, which drops a tab: /<TAB>/evil
    # would be //evil.example (the 303's Location is percent-encoded; this page's is not)
    r = c.get(
        f"/login?token={TOKEN}&next=/%09/evil.example", headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert 'content="0; url=/"' in r.text and "evil.example" not in r.text
    c2 = _client(url)
    r = c2.get("/login?token=nope", headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 401 and not _session_cookie(r)


def test_login_link_encodes_a_given_token():
    from urllib.parse import parse_qs, urlsplit

    tok = "a+b&c#d e/f"
    link = login_link("http://labpc:8000/", tok)
    assert link.startswith("http://labpc:8000/login?token=")
    assert parse_qs(urlsplit(link).query)["token"] == [tok]
    link = login_link("http://[::1]:8000/", tok, next="/share")
    assert link.startswith("http://[::1]:8000/login?token=") and link.endswith("&next=/share")
    assert parse_qs(urlsplit(link).query) == {"token": [tok], "next": ["/share"]}


def test_a_login_link_with_a_given_token_of_odd_characters_logs_in(url):
    tok = "a+b&c#d e/f%"
    c = _client(url, tok)
    r = c.get(login_link("http://testserver/", tok, next="/share"))
    assert r.status_code == 303 and r.headers["location"] == "/share"
    assert c.get("/share").status_code == 200


# -- the share page ---------------------------------------------------------------------------
def _share_links(html: str) -> list[str]:
    return re.findall(r'<p class="share-link"><a href="([^"]+)"', html)


def test_the_share_page_is_for_a_logged_in_browser_only(url):
    c = _client(url)
    r = c.get("/share")
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/share"
    r = c.get("/share", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 303
    assert c.get(f"/login?token={TOKEN}").status_code == 303
    r = c.get("/share", headers={"Host": "10.0.0.5:8000"})
    assert r.status_code == 200
    assert r.headers["cache-control"] == "no-store"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert _share_links(r.text) == [f"http://10.0.0.5:8000/login?token={TOKEN}"]
    assert "anyone with this link can answer and undo answers" in r.text.lower()
    assert '<svg viewBox="' in r.text
    # the study list links to it for a logged-in browser
    assert 'href="/share"' in c.get("/").text


def test_the_share_page_offers_the_address_used_then_the_known_ones(url):
    c = _client(url, addresses=["http://labpc:8000/", "http://192.168.1.20:8000/"])
    c.get(f"/login?token={TOKEN}")
    r = c.get("/share", headers={"Host": "labpc.lab.example:8000"})
    assert _share_links(r.text) == [
        f"http://labpc.lab.example:8000/login?token={TOKEN}",
        f"http://labpc:8000/login?token={TOKEN}",
        f"http://192.168.1.20:8000/login?token={TOKEN}",
    ]
    assert r.text.count("<svg") == 3
    # a browser on this machine (loopback) would hand out an address no phone can open
    for host in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000"):
        links = _share_links(c.get("/share", headers={"Host": host}).text)
        assert links == [
            f"http://labpc:8000/login?token={TOKEN}",
            f"http://192.168.1.20:8000/login?token={TOKEN}",
        ], host
    # a Host header that is no host is not used, and nothing of it reaches the page
    bad = 'x"><script>alert(1)</script>'
    r = c.get("/share", headers={"Host": bad})
    assert r.status_code == 200 and "<script>alert" not in r.text
    assert _share_links(r.text)[0] == f"http://labpc:8000/login?token={TOKEN}"


def test_a_share_page_escapes_what_it_shows(url):
    tok = 'tok"<b>&x'
    c = _client(url, tok)
    c.get(login_link("http://testserver/", tok))
    r = c.get("/share", headers={"Host": "labpc:8000"})
    assert "<b>" not in r.text.split("<main>", 1)[1]
    assert _share_links(r.text) == ["http://labpc:8000/login?token=tok%22%3Cb%3E%26x"]


def test_a_loopback_server_shares_its_address(url):
    c = _client(url, None)
    r = c.get("/share", headers={"Host": "127.0.0.1:8000"})
    assert r.status_code == 200
    assert _share_links(r.text) == ["http://127.0.0.1:8000/"]
    assert "needs no token" in r.text
    assert 'href="/share"' in c.get("/").text


def test_without_segno_the_share_page_shows_the_link_and_names_the_package(url, monkeypatch):
    monkeypatch.setitem(sys.modules, "segno", None)  # import segno raises ImportError
    c = _client(url)
    c.get(f"/login?token={TOKEN}")
    r = c.get("/share", headers={"Host": "labpc:8000"})
    assert r.status_code == 200
    assert _share_links(r.text) == [f"http://labpc:8000/login?token={TOKEN}"]
    assert "<svg" not in r.text
    assert "pip install segno" in r.text


def test_the_share_page_qr_code_is_segnos_code_of_the_link(url):
    segno = pytest.importorskip("segno")
    from qr_read import modules_of_svg

    c = _client(url)
    c.get(f"/login?token={TOKEN}")
    r = c.get("/share", headers={"Host": "labpc:8000"})
    link = _share_links(r.text)[0]
    svg = re.search(r"<svg.*?</svg>", r.text, re.S).group(0)
    dark, size = modules_of_svg(svg)
    codes = {e: segno.make_qr(link, error=e) for e in "LMQH"}
    matching = [e for e, q in codes.items() if q.symbol_size(border=0) == (size, size)
                and dark == {(x, y) for y, row in enumerate(q.matrix)
                             for x, v in enumerate(row) if v}]  # fmt: skip
    assert matching, "the SVG is the QR code of the link at some error correction level"
    other = segno.make_qr(link.replace(TOKEN, "x" * len(TOKEN)), error=matching[0])
    assert dark != {(x, y) for y, row in enumerate(other.matrix) for x, v in enumerate(row) if v}


# -- the access log -----------------------------------------------------------------------------
def test_the_access_log_filter_masks_a_login_links_token():
    """uvicorn's access record: ``'%s - "%s %s HTTP/%s" %d'`` with the path and its query."""
    mask_access_log()
    mask_access_log()  # idempotent
    access = logging.getLogger("uvicorn.access")
    assert len([f for f in access.filters if type(f).__name__ == "_MaskToken"]) == 1
    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5555", "GET", f"/login?next=/x&token={TOKEN}&a=1", "1.1", 303), None,
    )  # fmt: skip
    assert all(f.filter(record) for f in access.filters)
    text = record.getMessage()
    assert TOKEN not in text
    assert text == '127.0.0.1:5555 - "GET /login?next=/x&token=***&a=1 HTTP/1.1" 303'
    # the name percent-encoded (the server reads it as token all the same): masked too
    encoded = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5555", "GET", f"/login?tok%65n={TOKEN}", "1.1", 303), None,
    )  # fmt: skip
    assert all(f.filter(encoded) for f in access.filters)
    assert encoded.getMessage() == '127.0.0.1:5555 - "GET /login?tok%65n=*** HTTP/1.1" 303'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> int:
    """The status of a GET, redirects not followed."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _wait_up(base: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            _get(base + "/static/style.css")
            return
        except OSError:
            assert proc.poll() is None, "the server exited"
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)


def test_uvicorns_access_log_prints_no_login_token(url, tmp_path):
    """The app under one's own uvicorn, access log on (its default): the request line of a login
    link is logged, its token masked."""
    port = _free_port()
    script = (
        "import sys, uvicorn\n"
        "from boloop.web import create_app\n"
        f"uvicorn.run(create_app({url!r}, {TOKEN!r}), host='127.0.0.1', port={port}, "
        "log_level='info')\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_up(base, proc)
        assert _get(f"{base}/login?token={TOKEN}&next=/") == 303
        assert _get(f"{base}/login?next=/&token=wrong-{TOKEN}") == 401
    finally:
        proc.terminate()
        err, _ = proc.communicate(timeout=20)
    assert '"GET /login?token=***&next=/ HTTP/1.1" 303' in err, err
    assert '"GET /login?next=/&token=*** HTTP/1.1" 401' in err, err
    assert TOKEN not in err


def test_serve_prints_the_login_links_that_log_in_and_logs_no_request_line(tmp_path):
    """``boloop -v serve --host 0.0.0.0``: beside the generated token, the login link of every
    address printed for other machines and the one that opens the share page here; the link
    logs in, and the server's log (``-v``: everything) prints no request line at all."""
    port = _free_port()
    url = f"sqlite:///{tmp_path / 'net.db'}"
    cmd = [sys.executable, "-m", "boloop.cli", "-v", "serve", "--storage", url,
           "--host", "0.0.0.0", "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        while not any("open on this machine" in ln for ln in lines[:-1]):
            line = proc.stderr.readline()
            assert line, "".join(lines)
            lines.append(line)
        local, others = server_urls("0.0.0.0", port)
        token = lines[2].strip()
        assert len(token) >= 32 and "needs this token" in lines[1]
        assert lines[3].startswith("boloop serve: or open a login link (it holds the token)")
        links = [ln.strip() for ln in lines[4 : 4 + len(others)]]
        assert links == [f"{o}login?token={token}" for o in others]
        assert lines[-2].startswith("boloop serve: the share page shows it as a QR code")
        here = lines[-1].strip()
        assert here == f"{local}login?token={token}&next=/share"
        _wait_up(local.rstrip("/"), proc)
        assert _get(here) == 303
        assert _get(f"{local}login?token=wrong-{token}") == 401
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=20)
    assert "GET /login" not in out + err and token not in out + err, out + err
