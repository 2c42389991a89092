"""What every route of a ``boloop serve`` app shares (:class:`Site`, made by
:func:`boloop.web.app.create_app`): the studies it holds (:class:`~boloop.web.pool.StudyPool`),
its token and the session cookie derived from it, the pages' templates
(:func:`page_templates`), and what the routes do alike: draw a page with its CSRF token
(:meth:`Site.render`), draw a study's page (:meth:`Site.study_page`), read and check a form, call
a study for the API, and the error pages and the outage's 503
(:meth:`Site.storage_unavailable`, :meth:`Site.http_error`: the app's exception handlers).
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.exceptions import HTTPException as StarletteHTTPException

import boloop
from boloop.errors import (
    BoloopError,
    QueryStateError,
    StorageAccessError,
    StorageBusyError,
    StorageNoAnswerError,
    StorageUnavailableError,
    StudyMovedError,
    UnknownIdError,
)
from boloop.spaces import format_value, params_text
from boloop.study import Study, list_studies
from boloop.study.storage import safe_url
from boloop.web.answer_forms import _Senders, _shown, _unsent, _withdrawn_yours
from boloop.web.paths import _wants_json
from boloop.web.pool import StudyPool
from boloop.web.study_view import _field_labels, _page_context

__all__ = ["Site", "page_templates"]

logger = logging.getLogger("boloop")

SESSION_COOKIE = "boloop_session"
CSRF_COOKIE = "boloop_csrf"
#: seconds a client is told to wait (``Retry-After``) while the database cannot be reached
RETRY_AFTER_SECONDS = 5


# -- auth ---------------------------------------------------------------------------------------
def _session_value(token: str) -> str:
    """The cookie value of a logged-in browser: derived from the token, not the token itself."""
    return hmac.new(token.encode(), b"boloop-session-v1", "sha256").hexdigest()


def _same(a: str | None, b: str | None) -> bool:
    """Constant-time equality of two strings (False if either is missing)."""
    if not a or not b:
        return False
    return hmac.compare_digest(a.encode(), b.encode())


# -- templates ----------------------------------------------------------------------------------
def _when(value: Any) -> str:
    """A stored time (ISO 8601 in UTC, ``2026-11-27T09:15:06.955214Z``) as a page shows it:
    ``2026-11-27 09:15:06`` (the page says UTC; the exact value stays in the page's
    ``<time datetime>``). Anything else is shown as it is."""
    text = "" if value is None else str(value)
    if len(text) >= 19 and text[10] == "T" and text[:4].isdigit():
        return text[:19].replace("T", " ")
    return text


def page_templates() -> Environment:
    """The pages' Jinja2 templates (``web/templates``), every text escaped, with the filters
    the pages use."""
    env = Environment(
        loader=PackageLoader("boloop.web", "templates"),
        autoescape=select_autoescape(["html"], default=True),
    )
    env.filters["num"] = format_value
    env.filters["pathquote"] = lambda v: quote(str(v), safe="")  # a study name as one segment
    # a point as people read it, each value with its unit where the page gives ``units``
    env.filters["pt"] = lambda p, units=None: params_text(p or {}, units)
    env.filters["when"] = _when
    return env


# -- what every route shares --------------------------------------------------------------------
class Site:
    """The parts of one app (:func:`~boloop.web.app.create_app`) that every route uses, and
    what the routes do alike: draw a page, a study's page and the error pages, read and check a
    form, call a study. ``poll_seconds``: how often an open study page asks whether someone
    else answered (0: never); ``max_upload_bytes``: the largest form part read
    (:meth:`read_form`)."""

    def __init__(
        self,
        pool: StudyPool,
        token: str | None,
        *,
        poll_seconds: float,
        max_upload_bytes: int,
    ) -> None:
        self.pool = pool
        self.token = token
        self.poll_seconds = poll_seconds
        self.max_upload_bytes = max_upload_bytes
        self.env = page_templates()
        #: the session cookie's value of a logged-in browser (None without a token)
        self.session = _session_value(token) if token else None
        #: the key of the browsers' digests (:meth:`sender_id`) and the redirects' signed texts
        self.flash_key = secrets.token_bytes(32)
        #: which browser stored which answer through a page (by the answer's key)
        self.senders = _Senders()
        #: which browser withdrew which answer with the page's undo (by the withdrawn answer's key)
        self.undoers = _Senders()

    def sender_id(self, request: Request) -> str:
        """Which browser sent a form: a digest of its CSRF cookie (one per browser, the same
        in all its tabs; the form echoes it), never the cookie itself."""
        cookie = request.cookies.get(CSRF_COOKIE) or ""
        return hmac.new(self.flash_key, cookie.encode(), "sha256").hexdigest()[:32]

    def flash_sig(self, text: str) -> str:
        """The signature of a message a redirect carries: a link cannot put text on a page."""
        return hmac.new(self.flash_key, text.encode(), "sha256").hexdigest()[:32]

    def render(
        self,
        request: Request,
        template: str,
        status: int = 200,
        *,
        signed_in: bool | None = None,
        **ctx: Any,
    ) -> HTMLResponse:
        """``signed_in``: whether the page is for a logged-in browser (default: whether the
        request carries the session cookie; True for the page that answers a login)."""
        csrf = request.cookies.get(CSRF_COOKIE)
        new_csrf = None  # the token to set: none yet, or one too short to be ours
        if not csrf or len(csrf) < 20:
            csrf = new_csrf = secrets.token_urlsafe(32)
        if signed_in is None:
            signed_in = self.token is None or _same(
                request.cookies.get(SESSION_COOKIE), self.session
            )
        html = self.env.get_template(template).render(
            csrf=csrf,
            auth=self.token is not None,
            # a visitor who has not logged in sees neither "log out" nor where the data is
            signed_in=signed_in,
            version=boloop.__version__,
            storage=safe_url(self.pool.url),  # a PostgreSQL password never reaches a page
            **ctx,
        )
        resp = HTMLResponse(html, status_code=status)
        if new_csrf is not None:
            resp.set_cookie(CSRF_COOKIE, new_csrf, httponly=True, samesite="strict", path="/")
        return resp

    def not_stored(self, what: str, name: str, values: Mapping[str, str]) -> dict[str, Any]:
        """:func:`_unsent` with the measured values named as the study's page names them,
        where the pool holds the study."""
        loaded = self.pool.loaded(name)
        return _unsent(what, name, values, {} if loaded is None else _field_labels(loaded))

    def check_csrf(self, request: Request, form: Mapping[str, Any]) -> None:
        if not _same(str(form.get("csrf", "")), request.cookies.get(CSRF_COOKIE)):
            raise HTTPException(
                403,
                "the form's security token is missing or stale (CSRF check): reload the page "
                "and submit again",
            )

    async def read_form(self, request: Request) -> Any:
        try:
            return await request.form(max_part_size=self.max_upload_bytes)
        except Exception as exc:  # noqa: BLE001 - the multipart parser's errors vary
            raise HTTPException(400, f"cannot read the form: {exc}") from exc

    def api_call(self, name: str, fn: Callable[[Study], Any]) -> Any:
        try:
            return self.pool.run(name, fn)
        except (StorageUnavailableError, StorageAccessError):
            raise  # the handlers' 503 (the database is down) or 500 (it refuses the URL's
            # credentials): the request was not bad
        except UnknownIdError as exc:
            raise HTTPException(404, str(exc)) from exc
        except (QueryStateError, StudyMovedError) as exc:  # moved: read-only here, not bad input
            raise HTTPException(409, str(exc)) from exc
        except BoloopError as exc:
            raise HTTPException(400, str(exc)) from exc

    def study_rows(self) -> list[dict[str, Any]]:
        # from the logs, without loading (replaying) every study
        return list_studies(self.pool.ready())

    def study_page(
        self,
        request: Request,
        name: str,
        status: int = 200,
        errors: dict[str, str] | None = None,
        flash: str | None = None,
        warning: str | None = None,
        values: dict[str, str] | None = None,
        refused: bool = False,
        over_limit: str | None = None,
        unusual: str | None = None,
        sent: dict[str, Any] | None = None,
        signed_in: bool | None = None,
        since: int | None = None,
    ) -> HTMLResponse:
        """``since``: the version of the page this one replaces (its live refresh reloaded it):
        this browser's answers withdrawn since are said (:func:`_withdrawn_yours`);
        ``sent``: an answer that was not stored, shown as it was sent (:func:`_unsent`);
        ``refused``: this page's answer was not stored (the last answer is someone else's);
        ``over_limit``: the open query's answer was held back because its g is above the safety
        limit (the form then offers to store it as measured, for this query only); ``unusual``:
        held back because a value is far outside the values stored so far (a typo?), the form
        offers to store it as typed; each is the text its box confirms (:func:`confirmation_key`),
        None when not held for that reason."""
        browser = self.sender_id(request)

        def context(s: Study) -> dict[str, Any]:
            ctx = _page_context(s)
            by = self.senders.sender(name)(ctx["last_key"]) if ctx["last_key"] else None
            # whose the last answer is, as far as this server saw it stored (the undo says it)
            ctx["last_by"] = "" if by is None else "this" if by == browser else "other"
            ctx["withdrawn_yours"] = (
                []
                if since is None
                else _withdrawn_yours(
                    s, since, self.senders.sender(name), self.undoers.sender(name), browser
                )
            )
            return ctx

        try:
            ctx = self.pool.run(name, context)
        except UnknownIdError as exc:
            raise HTTPException(404, str(exc)) from exc
        except (StorageUnavailableError, StorageAccessError):
            raise
        except BoloopError as exc:  # e.g. a log that does not replay (StorageError)
            raise HTTPException(500, str(exc)) from exc
        if sent is not None and sent.get("fields") is not None:  # named as the form names them
            sent = {**sent, "shown": _shown(sent["fields"], ctx["field_labels"])}
        return self.render(
            request,
            "study.html",
            status,
            errors=errors or {},
            flash=flash,
            warning=warning,
            values=values or {},
            poll_ms=int(self.poll_seconds * 1000),
            refused=refused,
            over_limit=over_limit,
            unusual=unusual,
            sent=sent,
            signed_in=signed_in,
            **ctx,
        )

    async def storage_unavailable(self, request: Request, exc: StorageUnavailableError) -> Response:
        """Every request that needs the database while it cannot be reached: 503 with
        ``Retry-After`` (try again: nothing was stored), never the 400 of a bad request. A route
        that was storing something says what in ``request.state.unsent`` (:func:`_unsent`)."""
        # other writers kept the study busy (StorageBusyError): the same answer, a shorter wait
        busy = isinstance(exc, StorageBusyError)
        # no answer: what a request was storing may be stored after all (a commit it sent),
        # unless it sent nothing (queued behind a request that waited: StudyPool's)
        silent = isinstance(exc, StorageNoAnswerError)
        maybe_stored = isinstance(exc, StorageNoAnswerError) and exc.sent
        if busy:
            logger.warning("%s %s: %s", request.method, request.url.path, exc)
        else:  # the outage is logged once, when it begins and ends (OutageLog), not per request
            self.pool.outage.refused(f"{request.method} {request.url.path}")
        retry_after = 1 if busy else RETRY_AFTER_SECONDS
        headers = {"Retry-After": str(retry_after)}
        if _wants_json(request.url.path):
            error = "storage_busy" if busy else "storage_unavailable"
            return JSONResponse(
                {
                    "detail": str(exc),
                    "error": error,
                    "stored": None if maybe_stored and request.method == "POST" else False,
                },
                status_code=503,
                headers=headers,
            )
        resp = self.render(
            request,
            "unavailable.html",
            503,
            message=str(exc),
            unsent=getattr(request.state, "unsent", None),
            retry_after=retry_after,
            busy=busy,
            silent=silent,
            maybe_stored=maybe_stored,
        )
        resp.headers.update(headers)
        return resp

    async def storage_refused(self, request: Request, exc: StorageAccessError) -> Response:
        """The database server, reached, refused the storage URL's password, role or database
        (changed while serving): a 500 naming what to check, never the outage's 503 (waiting
        would not help). Nothing was stored."""
        logger.error("%s %s: %s", request.method, request.url.path, exc)
        return await self.http_error(request, HTTPException(500, str(exc)))

    # Starlette's HTTPException (FastAPI's is a subclass): the router raises Starlette's own for
    # an unknown path (404) or method (405), which a handler of FastAPI's class never sees: a
    # browser then got the bare JSON {"detail": "Not Found"}, a page with no title or language
    async def http_error(self, request: Request, exc: StarletteHTTPException) -> Response:
        headers = getattr(exc, "headers", None)  # a 405's Allow
        if request.url.path.startswith("/api/") or request.url.path == "/openapi.json":
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)
        message = str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":  # the router's: no such route
            message = f"There is no page at {request.url.path}."
        resp = self.render(request, "error.html", exc.status_code, message=message)
        if headers:
            resp.headers.update(headers)
        return resp
