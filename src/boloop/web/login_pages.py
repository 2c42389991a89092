"""The login pages of a ``boloop serve`` app (:func:`login_routes`): the login form and its
answer (an answer refused for want of a login carried through it, :func:`after_login`'s study
page), the login link ``GET /login?token=`` (:func:`link_login`), the share page with a login
link and its QR code per address (``/share``), and the logout. A server without a token logs
every browser in: these pages then only redirect.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
from collections.abc import Sequence

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool

from boloop.errors import (
    BoloopError,
    StorageAccessError,
    StorageUnavailableError,
    UnknownIdError,
)
from boloop.web.answer_forms import _asked_id
from boloop.web.paths import _local, study_name
from boloop.web.qr import QR_PACKAGE, qr_svg
from boloop.web.server import login_link
from boloop.web.site import SESSION_COOKIE, Site, _same

__all__ = ["login_routes"]

logger = logging.getLogger("boloop")


def login_routes(site: Site, addresses: Sequence[str]) -> APIRouter:
    """``/login`` (GET: the form or a login link; POST: the form's answer), ``/share`` and
    ``/logout``. ``addresses``: the base URLs other machines reach the server at, offered by the
    share page after the one the browser used (:func:`~boloop.web.app.create_app`'s)."""
    router = APIRouter()
    # the site's parts the routes below use, by the names they use
    pool, token, session = site.pool, site.token, site.session
    render, not_stored, study_page = site.render, site.not_stored, site.study_page
    read_form, check_csrf = site.read_form, site.check_csrf
    storage_unavailable, http_error = site.storage_unavailable, site.http_error

    # -- login -------------------------------------------------------------------------------
    @router.get("/login", response_class=HTMLResponse, include_in_schema=False)
    async def login_page(request: Request, next: str = "/") -> Response:
        """The login form; with ``?token=`` a login link (:func:`link_login`)."""
        link_token = request.query_params.get("token")
        if link_token is not None:
            return await link_login(request, link_token, _local(next))
        return render(request, "login.html", next=_local(next), error=None, unsent=None)

    async def link_login(request: Request, given: str, nxt: str) -> Response:
        """``GET /login?token=T[&next=/path]``: a right token logs the browser in as the form
        does (the same cookie) and redirects (303) to ``next`` (a local path; else ``/``), so
        that the token leaves the address bar; a wrong one is the form's 401 "wrong token".
        A link followed from another site (``Sec-Fetch-Site: cross-site``) gets a page that
        goes on to ``next`` by itself (a meta refresh) instead of the 303.
        Neither response sends a Referer (``no-referrer``) nor may be cached (``no-store``):
        the token is in this request's URL."""
        private = {"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}
        if token is None:
            return RedirectResponse(nxt, status_code=303, headers=private)
        if not _same(given.strip(), token):
            await asyncio.sleep(0.2)  # slows down guessing a little, as the form
            resp: Response = render(
                request, "login.html", 401, next=nxt, error="wrong token", unsent=None
            )
            resp.headers.update(private)
            return resp
        if request.headers.get("sec-fetch-site") == "cross-site":
            # a link clicked on another site (a web mail, a chat, a wiki): a browser sends no
            # SameSite=Strict cookie on any request of that navigation, redirects included, so a
            # 303 would land on the login form; the page's own refresh is a new navigation from
            # this site, which carries the cookie
            resp = render(request, "login_link.html", next=nxt)
            resp.headers.update(private)
        else:
            resp = RedirectResponse(nxt, status_code=303, headers=private)
        set_session(resp)
        return resp

    def set_session(resp: Response) -> None:
        """The cookie of a logged-in browser (the form and the login link alike)."""
        resp.set_cookie(SESSION_COOKIE, session or "", httponly=True, samesite="strict", path="/")

    @router.post("/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        form = await read_form(request)
        check_csrf(request, form)
        nxt = _local(str(form.get("next", "/")))
        # an answer refused for want of a login (refused_login), carried through the form
        sent = {k[5:]: v for k, v in form.items() if k.startswith("sent.") and isinstance(v, str)}
        parts = nxt.split("/")
        study = study_name(parts[2]) if len(parts) == 3 and parts[1] == "studies" else None
        if token is None:
            return RedirectResponse(nxt, status_code=303)
        if not _same(str(form.get("token", "")).strip(), token):
            await asyncio.sleep(0.2)  # slows down guessing a little
            unsent = not_stored("tell", study, sent) if sent and study else None
            return render(request, "login.html", 401, next=nxt, error="wrong token", unsent=unsent)
        if sent and study:
            resp = await carried_answer_page(request, study, sent)
        else:
            resp = RedirectResponse(nxt, status_code=303)
        set_session(resp)  # the token is right: logged in, whatever the page after it says
        return resp

    async def carried_answer_page(request: Request, name: str, sent: dict[str, str]) -> Response:
        """The page after a right token that carried an answer (:func:`after_login`); where
        the study page cannot be drawn (the study does not exist, the database is down), the
        page the error would have had, saying that the browser is logged in and the answer was
        not stored (the outage page shows it, with a button to send it again). The login
        holds either way (:func:`login` sets the cookie on this page): before, the error page
        came without the cookie, and going Back sent the same login again and again."""
        request.state.unsent = not_stored("tell", name, sent)  # what the outage page shows
        qid = sent.get("query_id", "")
        head = f"Logged in, but your answer to query {qid} was NOT stored"
        try:
            return await run_in_threadpool(after_login, request, name, sent)
        except StorageUnavailableError as exc:  # its page says the answer was not stored
            return await storage_unavailable(request, exc)
        except StorageAccessError as exc:
            logger.error("POST /login (an answer to %s carried): %s", name, exc)
            return await http_error(request, HTTPException(500, f"{head}: {exc}"))
        except HTTPException as exc:  # the study does not exist (404), its log is broken (500)
            return await http_error(
                request, HTTPException(exc.status_code, f"{head}: {exc.detail}")
            )
        except BoloopError as exc:
            return await http_error(request, HTTPException(500, f"{head}: {exc}"))

    def after_login(request: Request, name: str, sent: dict[str, str]) -> Response:
        """The study page after a login that carried an answer refused for want of one: it
        says the answer was not stored and shows it; put back in the form if its query is
        still the open one (to check and store), else only shown (it was for another query)."""
        qid = sent.get("query_id", "")
        try:
            open_id = pool.run(name, _asked_id)
        except UnknownIdError as exc:
            raise HTTPException(404, str(exc)) from exc
        head = (
            f"Logged in. Your answer to query {qid} was NOT stored: it arrived while this "
            "browser was not logged in."
        )
        if open_id is not None and str(open_id) == qid:
            return study_page(
                request,
                name,
                warning=f"{head} It is back in the form below: check it and store it.",
                values={k: v for k, v in sent.items() if not k.startswith("confirm_")},
                sent=not_stored("tell", name, sent),
                signed_in=True,
            )
        now = "" if open_id is None else f"; the open query is now {open_id}"
        return study_page(
            request,
            name,
            warning=f"{head} Query {qid} is not open any more (answered or withdrawn "
            f"meanwhile{now}): what you sent is shown here, not put in the form (it was for "
            "another query).",
            sent=not_stored("tell", name, sent),
            signed_in=True,
        )

    # -- the share page: a login link and its QR code -----------------------------------------
    @router.get("/share", response_class=HTMLResponse, include_in_schema=False)
    def share(request: Request) -> Response:
        """The links others open to log in (reached only by a logged-in browser on a token
        server: the guard), with a QR code each: first the address this browser used (unless
        it is a loopback address, which another machine cannot open), then ``addresses``."""
        bases = _share_bases(request, addresses)
        links = []
        for base in bases:
            link = login_link(base, token) if token is not None else base
            svg = qr_svg(link)
            links.append({"url": link, "qr": Markup(svg) if svg is not None else None})
        resp = render(
            request,
            "share.html",
            links=links,
            qr_package=QR_PACKAGE,
            qr_missing=any(x["qr"] is None for x in links),
            needs_token=token is not None,
        )
        resp.headers["Cache-Control"] = "no-store"  # the page holds the token
        resp.headers["Referrer-Policy"] = "no-referrer"
        return resp

    @router.post("/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        form = await read_form(request)
        check_csrf(request, form)
        resp = RedirectResponse("/login" if token else "/", status_code=303)
        resp.delete_cookie(SESSION_COOKIE, path="/")
        return resp

    return router


#: a Host header as a URL may hold it: a name or IPv4 address, or [IPv6], and a port
_HOST_HEADER = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?"
)


def _share_bases(request: Request, known: Sequence[str]) -> list[str]:
    """The base URLs the share page offers, best first, without repeats: the request's own
    (its scheme and ``Host`` header, if that is a well-formed host and no loopback address),
    then ``known``; the request's own also when nothing else is known (a loopback server)."""
    own = None
    host = request.headers.get("host", "")
    if _HOST_HEADER.fullmatch(host):
        own = f"{request.url.scheme}://{host}/"
    name = (host.rsplit(":", 1)[0] if not host.endswith("]") else host).strip("[]").lower()
    bases = [own] if own is not None and not _loopback_name(name) else []
    bases += [b for b in known if b not in bases]
    if not bases and own is not None:
        bases = [own]
    return bases


def _loopback_name(name: str) -> bool:
    """Whether a Host header's name is this machine's own (``localhost``, 127.0.0.0/8,
    ``::1``), read from the text alone: no name is looked up for a page."""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
