"""The FastAPI application of ``boloop serve``: HTML pages and the JSON API over studies.

Pages (server-rendered, usable without JavaScript): ``/`` (studies, create form),
``/studies/{name}`` (the open query, answer form, undo, pictures, history), exports and media.
API: ``/api/studies`` ... (see :func:`create_app`), OpenAPI at ``/openapi.json``, Swagger UI at
``/docs`` from the package's own copy (``swagger-ui-bundle``), never a CDN.

Safety of the data: every answer goes through :meth:`Study.tell` (the same parsing and
validation as the Python API and the CLI); a refused answer stores nothing and is shown next
to its field; of two people answering the same query exactly one is stored (the study's
per-query check inside one storage transaction, serialised per study in this process); every
form carries a CSRF token (double-submit cookie, ``SameSite=Strict``); Jinja2 escapes every
text; uploads are limited in size.

While the database cannot be reached (:class:`~boloop.errors.StorageUnavailableError`: a
PostgreSQL server stopped or cut off), every page and API call answers 503 with
``Retry-After`` (one exception handler, :func:`create_app`'s ``storage_unavailable``): the API a
JSON ``{"detail", "error": "storage_unavailable"}``, pages a page that says nothing was stored and
to repeat it when the server is reachable (an answer form's page shows what was typed, with a
button to send it again), and an open study page's poll shows a notice until the database is
back. The same holds from the start when the database cannot be reached then (:class:`StudyPool`
keeps trying at every request and sets the storage up once it can). The server's log says when
an outage begins and when it ends, not once per request (:class:`~boloop.web.outage.OutageLog`,
told of every attempt to reach the database), also with no request at all: while the app runs
(its lifespan), the server reads a PostgreSQL storage itself whenever nothing has for
``storage_check_seconds`` (:meth:`StudyPool.check_storage`). A server that is reached but
refuses the URL's password, role or database (:class:`~boloop.errors.StorageAccessError`) is no
outage: a start refuses it, and later it is a 500 that says what to check.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import math
import os
import re
import secrets
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.security import HTTPBearer
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

import boloop
from boloop.algorithms.families import family_traits
from boloop.algorithms.registry import FAMILY_DEFAULTS
from boloop.errors import (
    BoloopError,
    NoMoreQueriesError,
    QueryStateError,
    StorageAccessError,
    StorageBusyError,
    StorageUnavailableError,
    StudyMovedError,
    UnknownIdError,
)
from boloop.spaces import format_value, params_text
from boloop.study import Study, list_studies
from boloop.study.media import media_file
from boloop.study.pictures import (
    PHONE_WIDTH,
    WIDTH,
    growth_numbers,
    growth_svg,
    model_svg,
    progress_svg,
)
from boloop.study.storage import (
    safe_url,
)
from boloop.web.answer_forms import (
    _asked_id,
    _refusal,
    _Senders,
    _shown,
    _tell_conflict,
    _tell_form,
    _undo_form,
    _unsent,
    _withdrawn_yours,
)
from boloop.web.create_form import _create_field, _create_from_form, _method_choices
from boloop.web.outage import (
    REMIND_SECONDS,
    STORAGE_CHECK_SECONDS,
    check_storage_periodically,
    checked_interval,
)
from boloop.web.paths import (
    EncodedStudyNames,
    _local,
    _study_form_path,
    _wants_json,
    study_name,
)
from boloop.web.pool import StudyPool
from boloop.web.qr import QR_PACKAGE, qr_svg
from boloop.web.server import login_link, mask_access_log
from boloop.web.study_view import (
    _answer_description,
    _answer_key,
    _answer_text,
    _field_labels,
    _page_context,
    _picture_numbers,  # noqa: F401 - imported from here by benchmarks/a11y_cost.py
    _query_json,
    _state,
)

__all__ = ["create_app"]

logger = logging.getLogger("boloop")

SESSION_COOKIE = "boloop_session"
CSRF_COOKIE = "boloop_csrf"
#: largest request body (uploads of a space file, a table and its media), bytes
MAX_UPLOAD_BYTES = 32 * 2**20
#: seconds a client is told to wait (``Retry-After``) while the database cannot be reached
RETRY_AFTER_SECONDS = 5
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "connect-src 'self'"
)


# -- JSON ---------------------------------------------------------------------------------------
def jsonable(obj: Any) -> Any:
    """Plain JSON values: numpy to Python, non-finite floats to None, unknown objects to str."""
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, bool | int | str):
        return obj
    return str(obj)


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(jsonable(data), status_code=status)


class TellBody(BaseModel):
    """An answer through the API."""

    query_id: int = Field(description="the id of the open query (from ask)")
    answer: Any = Field(
        description="accept/reject or true/false (label), a/b or 0/1 (compare), a number or "
        '{"f": 1.2, "g": 0.3} (evaluate); the same grammar as the CLI'
    )
    note: str | None = Field(
        default=None, description="free text stored with the answer, never read by the method"
    )


# -- auth ---------------------------------------------------------------------------------------
def _session_value(token: str) -> str:
    """The cookie value of a logged-in browser: derived from the token, not the token itself."""
    return hmac.new(token.encode(), b"boloop-session-v1", "sha256").hexdigest()


def _same(a: str | None, b: str | None) -> bool:
    """Constant-time equality of two strings (False if either is missing)."""
    if not a or not b:
        return False
    return hmac.compare_digest(a.encode(), b.encode())


# -- the app ------------------------------------------------------------------------------------
def create_app(
    storage: str | None = None,
    token: str | None = None,
    *,
    poll_seconds: float = 2.0,
    max_upload_bytes: int = MAX_UPLOAD_BYTES,
    addresses: Sequence[str] = (),
    outage_reminder_seconds: float = REMIND_SECONDS,
    storage_check_seconds: float = STORAGE_CHECK_SECONDS,
) -> FastAPI:
    """The application over the studies in ``storage``.

    Parameters
    ----------
    storage:
        Storage URL (default ``$BOLOOP_STORAGE`` or ``sqlite:///boloop.db``); created if missing.
    token:
        If given, every page needs a login with it (a cookie) and every API call the header
        ``Authorization: Bearer <token>``; compared in constant time.
    poll_seconds:
        How often an open study page asks whether someone else answered (0: never).
    max_upload_bytes:
        Largest request body accepted (413 beyond).
    addresses:
        Base URLs other machines reach the server at (``http://labpc:8000/``; ``boloop serve``
        gives :func:`~boloop.web.server.server_urls`' others): the share page (``/share``)
        offers their login links after the one of the address the browser used.
    outage_reminder_seconds:
        While the database cannot be reached, the server's log says so when the outage
        begins, reminds every this many seconds (10 minutes by default) and says when it ends
        (:mod:`boloop.web.outage`).
    storage_check_seconds:
        While the app runs (its lifespan: uvicorn, ``boloop serve``, a ``TestClient`` used as
        a context manager), the server reads its database itself whenever nothing has tried to
        for this many seconds (30 by default; 0: never), so that the log above shows an outage
        no request met, when it begins and when it ends. Only a storage in a database server
        (PostgreSQL) is checked: a SQLite file has no server to lose.

    A token server also logs a browser in by a login link, ``GET /login?token=<token>``
    (what ``boloop serve`` prints and ``/share`` shows as a QR code).
    """
    pool = StudyPool(storage, outage_reminder_seconds, checked_interval(storage_check_seconds))

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        """The server's periodic check of its database (:meth:`StudyPool.check_storage`) runs
        while the app serves, and stops with it (a check under way is waited for)."""
        if not pool.check_seconds:
            yield
            return
        task = asyncio.create_task(
            check_storage_periodically(pool.check_storage, pool.outage, pool.check_seconds)
        )
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    app = FastAPI(
        lifespan=lifespan,
        title="boloop",
        version=boloop.__version__,
        description="Studies with people in the loop: ask, tell, undo, history. "
        "With a token, send `Authorization: Bearer <token>`.",
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    # the Swagger UI shipped by swagger-ui-bundle (4.x) reads OpenAPI 3.0 documents only; the
    # API's schemas are plain enough to be read as 3.0 (``note`` is the only nullable field)
    app.openapi_version = "3.0.3"
    app.state.storage_url = pool.url
    app.state.pool = pool
    env = Environment(
        loader=PackageLoader("boloop.web", "templates"),
        autoescape=select_autoescape(["html"], default=True),
    )
    env.filters["num"] = format_value
    env.filters["pathquote"] = lambda v: quote(str(v), safe="")  # a study name as one segment
    # a point as people read it, each value with its unit where the page gives ``units``
    env.filters["pt"] = lambda p, units=None: params_text(p or {}, units)
    env.filters["when"] = _when
    static_dir = Path(__file__).with_name("static")
    app.mount("/static", StaticFiles(directory=static_dir), name="static")
    swagger_dir = _swagger_dir()
    if swagger_dir is not None:
        app.mount("/swagger-ui", StaticFiles(directory=swagger_dir), name="swagger")
    session = _session_value(token) if token else None
    mask_access_log()  # a login link's token never reaches uvicorn's access log
    flash_key = secrets.token_bytes(32)

    senders = _Senders()
    #: which browser withdrew which answer with the page's undo (by the withdrawn answer's key)
    undoers = _Senders()

    def sender_id(request: Request) -> str:
        """Which browser sent a form: a digest of its CSRF cookie (one per browser, the same
        in all its tabs; the form echoes it), never the cookie itself."""
        cookie = request.cookies.get(CSRF_COOKIE) or ""
        return hmac.new(flash_key, cookie.encode(), "sha256").hexdigest()[:32]

    def flash_sig(text: str) -> str:
        """The signature of a message a redirect carries: a link cannot put text on a page."""
        return hmac.new(flash_key, text.encode(), "sha256").hexdigest()[:32]

    # -- middleware: size limit, auth, security headers ------------------------------------------
    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Response:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > max_upload_bytes:
            return _plain(
                f"request body of {int(length)} bytes is larger than the limit of "
                f"{max_upload_bytes} bytes",
                413,
            )
        if request.method == "POST" and length is None:
            ctype = request.headers.get("content-type", "")
            if ctype.startswith("multipart/"):
                return _plain("uploads need a Content-Length header", 411)
        path = request.url.path
        if token is not None and not (
            path.startswith(("/static/", "/swagger-ui/")) or path == "/login"
        ):
            bearer = request.headers.get("authorization", "")
            ok = bearer.lower().startswith("bearer ") and _same(bearer[7:].strip(), token)
            if not ok and not path.startswith("/api/"):
                ok = _same(request.cookies.get(SESSION_COOKIE), session)
            if not ok:
                if path.startswith("/api/") or path == "/openapi.json":
                    return JSONResponse(
                        {"detail": "this server needs a token: Authorization: Bearer <token>"},
                        status_code=401,
                        headers={"WWW-Authenticate": "Bearer"},
                    )
                if _wants_json(path):  # an open study page's poll: it says "log in again"
                    return JSONResponse(
                        {
                            "detail": "this browser is not logged in (the server may have been "
                            "restarted with a new token): log in again",
                            "error": "login_required",
                        },
                        status_code=401,
                    )
                study_path = _study_form_path(path) if request.method == "POST" else None
                if study_path is not None:  # an answer or undo: said not done, never dropped
                    return await refused_login(request, study_path)
                nxt = quote(path if request.method == "GET" else "/", safe="/")
                return RedirectResponse(f"/login?next={nxt}", status_code=303)
        response: Response = await call_next(request)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        if path != "/docs":
            response.headers.setdefault("Content-Security-Policy", _CSP)
            response.headers.setdefault("X-Frame-Options", "DENY")
        return response

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        msgs = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            msgs.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
        return JSONResponse({"detail": "; ".join(msgs) or "bad request"}, status_code=400)

    # -- rendering helpers -------------------------------------------------------------------
    def render(
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
            signed_in = token is None or _same(request.cookies.get(SESSION_COOKIE), session)
        html = env.get_template(template).render(
            csrf=csrf,
            auth=token is not None,
            # a visitor who has not logged in sees neither "log out" nor where the data is
            signed_in=signed_in,
            version=boloop.__version__,
            storage=safe_url(pool.url),  # a PostgreSQL password never reaches a page
            **ctx,
        )
        resp = HTMLResponse(html, status_code=status)
        if new_csrf is not None:
            resp.set_cookie(CSRF_COOKIE, new_csrf, httponly=True, samesite="strict", path="/")
        return resp

    def not_stored(what: str, name: str, values: Mapping[str, str]) -> dict[str, Any]:
        """:func:`_unsent` with the measured values named as the study's page names them,
        where the pool holds the study."""
        loaded = pool.loaded(name)
        return _unsent(what, name, values, {} if loaded is None else _field_labels(loaded))

    async def refused_login(request: Request, where: tuple[str, str]) -> Response:
        """A study form (``where``: the study page's path and ``"tell"`` or ``"undo"``) sent by
        a browser that is not logged in (the server restarted with a new token, a logout in
        another tab): nothing is stored or withdrawn; the login page (401) says so, shows an
        answer's values as they were sent and carries them through the login
        (``sent.<field>``, :func:`login`), and goes back to the study page after it. The
        values are echoed only for a form of this site (its CSRF token matches)."""
        page, what = where
        name = study_name(page.split("/")[2])
        unsent = not_stored(what, name, {})
        if what == "tell":
            try:
                form = await request.form()
            except Exception:  # noqa: BLE001 - an unreadable body: nothing to echo
                form = None
            if form is not None and _same(
                str(form.get("csrf", "")), request.cookies.get(CSRF_COOKIE)
            ):
                values = {k: v for k, v in form.items() if isinstance(v, str) and k != "csrf"}
                unsent = not_stored("tell", name, values)
        logger.warning(
            "POST %s from a browser that is not logged in: nothing stored", request.url.path
        )
        return render(request, "login.html", 401, next=_local(page), error=None, unsent=unsent)

    def check_csrf(request: Request, form: Mapping[str, Any]) -> None:
        if not _same(str(form.get("csrf", "")), request.cookies.get(CSRF_COOKIE)):
            raise HTTPException(
                403,
                "the form's security token is missing or stale (CSRF check): reload the page "
                "and submit again",
            )

    async def read_form(request: Request) -> Any:
        try:
            return await request.form(max_part_size=max_upload_bytes)
        except Exception as exc:  # noqa: BLE001 - the multipart parser's errors vary
            raise HTTPException(400, f"cannot read the form: {exc}") from exc

    def api_call(name: str, fn: Callable[[Study], Any]) -> Any:
        try:
            return pool.run(name, fn)
        except (StorageUnavailableError, StorageAccessError):
            raise  # the handlers' 503 (the database is down) or 500 (it refuses the URL's
            # credentials): the request was not bad
        except UnknownIdError as exc:
            raise HTTPException(404, str(exc)) from exc
        except (QueryStateError, StudyMovedError) as exc:  # moved: read-only here, not bad input
            raise HTTPException(409, str(exc)) from exc
        except BoloopError as exc:
            raise HTTPException(400, str(exc)) from exc

    @app.exception_handler(StorageUnavailableError)
    async def storage_unavailable(request: Request, exc: StorageUnavailableError) -> Response:
        """Every request that needs the database while it cannot be reached: 503 with
        ``Retry-After`` (try again: nothing was stored), never the 400 of a bad request. A route
        that was storing something says what in ``request.state.unsent`` (:func:`_unsent`)."""
        # other writers kept the study busy (StorageBusyError): the same answer, a shorter wait
        busy = isinstance(exc, StorageBusyError)
        if busy:
            logger.warning("%s %s: %s", request.method, request.url.path, exc)
        else:  # the outage is logged once, when it begins and ends (OutageLog), not per request
            pool.outage.refused(f"{request.method} {request.url.path}")
        retry_after = 1 if busy else RETRY_AFTER_SECONDS
        headers = {"Retry-After": str(retry_after)}
        if _wants_json(request.url.path):
            error = "storage_busy" if busy else "storage_unavailable"
            return JSONResponse(
                {"detail": str(exc), "error": error, "stored": False},
                status_code=503,
                headers=headers,
            )
        resp = render(
            request,
            "unavailable.html",
            503,
            message=str(exc),
            unsent=getattr(request.state, "unsent", None),
            retry_after=retry_after,
            busy=busy,
        )
        resp.headers.update(headers)
        return resp

    @app.exception_handler(StorageAccessError)
    async def storage_refused(request: Request, exc: StorageAccessError) -> Response:
        """The database server, reached, refused the storage URL's password, role or database
        (changed while serving): a 500 naming what to check, never the outage's 503 (waiting
        would not help). Nothing was stored."""
        logger.error("%s %s: %s", request.method, request.url.path, exc)
        return await http_error(request, HTTPException(500, str(exc)))

    # Starlette's HTTPException (FastAPI's is a subclass): the router raises Starlette's own for
    # an unknown path (404) or method (405), which a handler of FastAPI's class never sees: a
    # browser then got the bare JSON {"detail": "Not Found"}, a page with no title or language
    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        headers = getattr(exc, "headers", None)  # a 405's Allow
        if request.url.path.startswith("/api/") or request.url.path == "/openapi.json":
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)
        message = str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":  # the router's: no such route
            message = f"There is no page at {request.url.path}."
        resp = render(request, "error.html", exc.status_code, message=message)
        if headers:
            resp.headers.update(headers)
        return resp

    # -- login -------------------------------------------------------------------------------
    @app.get("/login", response_class=HTMLResponse, include_in_schema=False)
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

    @app.post("/login", include_in_schema=False)
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
    @app.get("/share", response_class=HTMLResponse, include_in_schema=False)
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

    @app.post("/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        form = await read_form(request)
        check_csrf(request, form)
        resp = RedirectResponse("/login" if token else "/", status_code=303)
        resp.delete_cookie(SESSION_COOKIE, path="/")
        return resp

    # -- docs (offline Swagger UI) -----------------------------------------------------------
    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def docs(request: Request) -> Response:
        if swagger_dir is None:
            return render(request, "apidocs.html", spec=app.openapi())
        from fastapi.openapi.docs import get_swagger_ui_html

        page = get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="boloop API",
            swagger_js_url="/swagger-ui/swagger-ui-bundle.js",
            swagger_css_url="/swagger-ui/swagger-ui.css",
            swagger_favicon_url="/static/favicon.svg",
            # without deep links an operation's path is text, not a link inside its toggle
            # button (axe: nested-interactive, and a 19 px target-size)
            swagger_ui_parameters={"deepLinking": False},
        )
        # the page's language, which FastAPI's template leaves out (WCAG 3.1.1, axe's
        # html-has-lang); what axe still finds, Swagger UI's own colours, is listed in
        # docs/web.md (third party: no setting of it changes them)
        html = bytes(page.body).decode("utf-8").replace("<html>", '<html lang="en">', 1)
        return HTMLResponse(html, status_code=page.status_code)

    # -- pages -------------------------------------------------------------------------------
    def study_rows() -> list[dict[str, Any]]:
        # from the logs, without loading (replaying) every study
        return list_studies(pool.ready())

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request, created: str | None = None) -> HTMLResponse:
        return render(
            request,
            "index.html",
            studies=study_rows(),
            methods=_method_choices(),
            defaults=FAMILY_DEFAULTS,
            form={},
            errors={},
            flash=f"created study {created}" if created else None,
        )

    @app.post("/studies", include_in_schema=False)
    async def create(request: Request) -> Response:
        form = await read_form(request)
        check_csrf(request, form)
        values = {
            k: str(form.get(k, "") or "").strip()
            for k in ("name", "method", "family", "seed", "options", "problem")
        }
        uploads = [f for f in form.getlist("files") if getattr(f, "filename", "")]
        space = form.get("space")
        if getattr(space, "filename", ""):  # an uploaded file (None has no filename)
            uploads.insert(0, space)
        else:
            space = None
        contents = [(u.filename, await u.read()) for u in uploads]
        request.state.unsent = not_stored("create", values["name"], {})
        try:
            study = await run_in_threadpool(
                lambda: _create_from_form(pool.ready(), values, contents)
            )
        except (StorageUnavailableError, StorageAccessError):
            raise
        except BoloopError as exc:
            return render(
                request,
                "index.html",
                400,
                studies=study_rows(),
                methods=_method_choices(),
                defaults=FAMILY_DEFAULTS,
                form=values,
                errors={_create_field(str(exc)): str(exc)},
                flash=None,
            )
        pool.add(study)
        return RedirectResponse(f"/studies/{quote(study.name, safe='')}", status_code=303)

    def study_page(
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
        browser = sender_id(request)

        def context(s: Study) -> dict[str, Any]:
            ctx = _page_context(s)
            by = senders.sender(name)(ctx["last_key"]) if ctx["last_key"] else None
            # whose the last answer is, as far as this server saw it stored (the undo says it)
            ctx["last_by"] = "" if by is None else "this" if by == browser else "other"
            ctx["withdrawn_yours"] = (
                []
                if since is None
                else _withdrawn_yours(
                    s, since, senders.sender(name), undoers.sender(name), browser
                )
            )
            return ctx

        try:
            ctx = pool.run(name, context)
        except UnknownIdError as exc:
            raise HTTPException(404, str(exc)) from exc
        except (StorageUnavailableError, StorageAccessError):
            raise
        except BoloopError as exc:  # e.g. a log that does not replay (StorageError)
            raise HTTPException(500, str(exc)) from exc
        if sent is not None and sent.get("fields") is not None:  # named as the form names them
            sent = {**sent, "shown": _shown(sent["fields"], ctx["field_labels"])}
        return render(
            request,
            "study.html",
            status,
            errors=errors or {},
            flash=flash,
            warning=warning,
            values=values or {},
            poll_ms=int(poll_seconds * 1000),
            refused=refused,
            over_limit=over_limit,
            unusual=unusual,
            sent=sent,
            signed_in=signed_in,
            **ctx,
        )

    @app.get("/studies/{name}", response_class=HTMLResponse, include_in_schema=False)
    def study_get(
        request: Request,
        name: str,
        done: str | None = None,
        w: str | None = None,
        sig: str | None = None,
        since: int | None = None,
    ) -> HTMLResponse:
        """The study's page; ``since``: the version of the page the live refresh replaces
        (this browser's answers withdrawn since then are said)."""
        name = study_name(name)
        flash = {"told": "answer stored", "undone": "last answer withdrawn"}.get(done or "")
        if flash and w and _same(sig, flash_sig(w)):  # only a text this server wrote
            flash = f"{flash}: {w}"  # what was stored or withdrawn (a newcomer's trial)
        return study_page(request, name, flash=flash, since=since)

    @app.post("/studies/{name}/tell", include_in_schema=False)
    async def study_tell(request: Request, name: str) -> Response:
        name = study_name(name)
        form = await read_form(request)
        check_csrf(request, form)
        values = {k: str(v) for k, v in form.items() if isinstance(v, str) and k != "csrf"}
        request.state.unsent = not_stored("tell", name, values)
        browser = sender_id(request)

        stored: list[str] = []  # what was stored, said on the next page

        def tell(s: Study) -> tuple[dict[str, str], str | None, tuple[str, str] | None]:
            out = _tell_form(s, form)
            if not out[0] and not out[1]:  # stored: remember which browser sent it
                last = s.history(last=1)
                if last:
                    senders.remember(name, _answer_key(last[0]), browser)
                    stored.append(f"query {last[0]['query_id']}: {_answer_text(last[0])}")
            return out

        try:
            errors, warning, held = await run_in_threadpool(pool.run, name, tell)
        except UnknownIdError as exc:  # removed since the page was drawn (migrate --undo)
            return render(
                request, "error.html", 404, message=str(exc), sent=request.state.unsent
            )
        except StudyMovedError as exc:  # a page opened before the migrate: nothing stored
            return study_page(request, name, 409, warning=str(exc), sent=request.state.unsent)
        except QueryStateError:
            text, refused = await run_in_threadpool(
                pool.run, name, lambda s: _refusal(s, form, senders.sender(name), browser)
            )
            return study_page(
                request,
                name,
                409,
                warning=text,
                refused=refused,
                sent=request.state.unsent,  # shown back, never put in the new query's form
            )
        if errors or warning:  # a warning of _tell_form holds this query's answer back
            return study_page(
                request,
                name,
                400,
                errors=errors,
                warning=warning,
                values=values,
                # a box's value: the text it confirms (confirmation_key)
                over_limit=held[1] if held and held[0] == "over_limit" else None,
                unusual=held[1] if held and held[0] == "unusual" else None,
            )
        said = f"&w={quote(stored[0], safe='')}&sig={flash_sig(stored[0])}" if stored else ""
        return RedirectResponse(f"/studies/{quote(name, safe='')}?done=told{said}", status_code=303)

    @app.get("/studies/{name}/tell", include_in_schema=False)
    @app.get("/studies/{name}/undo", include_in_schema=False)
    def study_form_get(name: str) -> Response:
        """A form's POST address asked with GET (a bookmark; the address of a refused answer's
        page in a browser without JavaScript, opened again): the study's page."""
        return RedirectResponse(f"/studies/{quote(study_name(name), safe='')}", status_code=303)

    @app.post("/studies/{name}/undo", include_in_schema=False)
    async def study_undo(request: Request, name: str) -> Response:
        name = study_name(name)
        form = await read_form(request)
        check_csrf(request, form)
        expected = str(form.get("last", "") or "")
        request.state.unsent = not_stored("undo", name, {})
        try:
            row = await run_in_threadpool(pool.run, name, lambda s: _undo_form(s, expected))
        except UnknownIdError as exc:
            raise HTTPException(404, str(exc)) from exc
        except (QueryStateError, StudyMovedError) as exc:
            return study_page(request, name, 409, warning=str(exc))
        undoers.remember(name, _answer_key(row), sender_id(request))  # whose undo it was
        what = _answer_description(row)
        return RedirectResponse(
            f"/studies/{quote(name, safe='')}?done=undone&w={quote(what, safe='')}"
            f"&sig={flash_sig(what)}",
            status_code=303,
        )

    @app.get("/studies/{name}/state", include_in_schema=False)
    def study_state(request: Request, name: str, since: int | None = None) -> JSONResponse:
        """What a page polls (:func:`_state`): it reloads when ``version`` or ``continued_as``
        changes. ``since``: the page's version; then ``withdrawn_yours`` says which of this
        browser's answers an undo withdrew since (:func:`_withdrawn_yours`), for the page to say
        so instead of showing their queries open again without a word."""
        name = study_name(name)
        browser = sender_id(request)

        def state(s: Study) -> dict[str, Any]:
            events = s.events()  # one walk of the log serves both
            out = _state(s, events)
            if since is not None and out["version"] > since:
                out["withdrawn_yours"] = _withdrawn_yours(
                    s, since, senders.sender(name), undoers.sender(name), browser, events
                )
            return out

        return _json(api_call(name, state))

    @app.get("/studies/{name}/pictures/growth-numbers", include_in_schema=False)
    def study_growth_numbers(request: Request, name: str) -> Response:
        """The safe set's growth in numbers (a page): what its picture, an ``<img>`` whose
        texts no screen reader reaches, shows, as the page's other pictures have it in their
        table "the numbers". A page of its own because the growth is a replay of the log
        (seconds for a long study, the first time): the study page never waits for it; its
        table opens this page (or, with JavaScript, shows its table in place)."""
        name = study_name(name)
        hist = api_call(name, lambda s: s.history())  # replayed outside the study's lock
        study = pool.get(name)[0]
        if not family_traits(study.family).growth_picture:
            raise HTTPException(404, "the safe set's growth is drawn for safe studies only")
        lead, rows = growth_numbers(study, hist)
        return render(
            request, "growth_numbers.html", name=name, quoted=quote(name, safe=""), lead=lead,
            rows=rows,
        )  # fmt: skip

    @app.get("/studies/{name}/pictures/{which}.svg", include_in_schema=False)
    def study_picture(name: str, which: str, phone: bool = False) -> Response:
        """A picture as an SVG file; ``?phone=1``: drawn for a phone's width (PHONE_WIDTH)."""
        name = study_name(name)
        width = PHONE_WIDTH if phone else WIDTH
        if which == "growth":  # replayed outside the study's lock: answers never wait for it
            hist = api_call(name, lambda s: s.history())
            svg = growth_svg(pool.get(name)[0], hist, width=width)
            if svg is None:
                raise HTTPException(404, "the safe set's growth is drawn for safe studies only")
            return Response(svg, media_type="image/svg+xml")
        draw = {"progress": progress_svg, "model": model_svg}.get(which)
        if draw is None:
            api_call(name, lambda s: None)  # an unknown study is said first
            raise HTTPException(404, f"no picture {which!r}; pictures: ['model', 'progress']")
        return Response(api_call(name, lambda s: draw(s, width)), media_type="image/svg+xml")

    @app.get("/studies/{name}/export.{ext}", include_in_schema=False)
    def study_export(name: str, ext: str, withdrawn: bool = False) -> Response:
        """The history as a file; ``?withdrawn=1`` adds the withdrawn answers (an audit)."""
        name = study_name(name)
        if ext not in ("csv", "json"):
            raise HTTPException(404, "export as .csv or .json")
        text = api_call(name, lambda s: _export_text(s, ext, withdrawn))
        media = "text/csv" if ext == "csv" else "application/json"
        fname = "".join(c if c.isalnum() or c in "-_" else "_" for c in name) or "study"
        return Response(
            text,
            media_type=f"{media}; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{fname}.{ext}"'},
        )

    @app.get("/studies/{name}/media/{filename}", include_in_schema=False)
    def study_media(name: str, filename: str) -> Response:
        """A media file stored with the study (never read from disk: no path traversal)."""
        name = study_name(name)
        found = api_call(name, lambda s: media_file(s.config, filename))
        if found is None:
            raise HTTPException(404, f"study {name!r} has no media file {filename!r}")
        mime, data = found
        return Response(
            data,
            media_type=mime,
            headers={
                "Content-Security-Policy": "default-src 'none'; sandbox",
                "Cache-Control": "private, max-age=3600",
            },
        )

    # -- the JSON API --------------------------------------------------------------------------
    # documents the bearer token (Swagger UI's "Authorize"); the middleware enforces it
    unavailable = {
        503: {
            "description": "the database cannot be reached: nothing stored or read; try again "
            "after Retry-After seconds (`error`: `storage_unavailable`)"
        }
    }
    api: dict[str, Any] = {
        "tags": ["studies"],
        "dependencies": [Depends(HTTPBearer(auto_error=False))],
        "responses": unavailable,
    }

    @app.get("/api/studies", **api, summary="List the studies")
    def api_list() -> JSONResponse:
        return _json(study_rows())

    @app.get("/api/studies/{name}", **api, summary="Status of a study")
    def api_status(name: str) -> JSONResponse:
        name = study_name(name)
        return _json(api_call(name, lambda s: s.status()))

    @app.post(
        "/api/studies/{name}/ask",
        **{
            **api,
            "responses": {
                200: {
                    "description": "the open query: `id`, `kind` (`evaluate`, `label`, "
                    "`compare`), `params` (or `a` and `b`), `outputs` (an evaluation), "
                    "`label` (an option of a table), `calibration`, `media`, `limit` (a safe "
                    "study) and `rejected_before`: why an evaluation at a setting the expert "
                    "rejected is measured anyway, in one sentence (null when there is none)"
                },
                409: {
                    "description": "no query to give: the method asks no more (MR-LPF after "
                    "its horizon of T duels, a level-set method with allow_repeats=false once "
                    "every candidate is measured): `error` is `asks_no_more` and `detail` the "
                    "sentence of the status's `asks_no_more` (its recommendation is final; an "
                    "undo makes it ask again); or the study was moved to another storage"
                },
                **unavailable,
            },
        },
        summary="The open query (the same one again while it is unanswered)",
    )
    def api_ask(name: str) -> JSONResponse:
        name = study_name(name)

        def ask(s: Study) -> tuple[int, dict[str, Any]]:
            try:
                return 200, _query_json(s, s.ask())
            except NoMoreQueriesError as exc:
                return 409, {"detail": str(exc), "error": "asks_no_more"}

        status, out = api_call(name, ask)
        return _json(out, status)

    @app.post(
        "/api/studies/{name}/tell",
        **{
            **api,
            "responses": {
                200: {
                    "description": "stored: `stored`, `query_id`, `answered` (answers in "
                    "effect) and `unusual`, the typo question for every measured value far "
                    "from what the study expects (empty when none; the value is stored as "
                    "sent: `undo` withdraws it)"
                },
                400: {"description": "bad answer: nothing stored"},
                409: {
                    "description": "not the open query (e.g. answered already, by this "
                    "caller or someone else), or the study was moved to another storage "
                    "(boloop study migrate); besides `detail`, `error` (`query_answered`, "
                    "`query_not_open`), `query_id`, `open_query` and `stored_answer` (the "
                    "answer in effect for `query_id`: `answer`, `answer_text`, `note`, "
                    "`told_at`, or null) let a client compare it with what it sent"
                },
                **unavailable,
            },
        },
        summary="Answer the open query",
    )
    def api_tell(name: str, body: TellBody) -> JSONResponse:
        name = study_name(name)

        def tell(s: Study) -> tuple[int, dict[str, Any]]:
            pending = s.policy.pending
            # read before storing (after, the value is one of those it is compared with)
            asked = pending is not None and pending.id == body.query_id
            unusual = s.unusual_values(body.answer) if asked else []
            try:
                s.tell(body.query_id, body.answer, note=body.note)
            except QueryStateError as exc:  # read under the same lock as the refusal
                return 409, {"detail": str(exc), **_tell_conflict(s, body.query_id)}
            return 200, {
                "stored": True,
                "query_id": body.query_id,
                "answered": s.n_answered,
                "unusual": unusual,
            }

        status, out = api_call(name, tell)
        return _json(out, status)

    @app.post("/api/studies/{name}/undo", **api, summary="Withdraw the last answer")
    def api_undo(name: str) -> JSONResponse:
        name = study_name(name)
        return _json(api_call(name, lambda s: {"withdrawn": s.undo()}))

    @app.get("/api/studies/{name}/history", **api, summary="Answers in effect")
    def api_history(name: str) -> JSONResponse:
        name = study_name(name)
        return _json(api_call(name, lambda s: s.history()))

    app.add_middleware(EncodedStudyNames)  # outermost: routes see names with "/" still encoded
    return app


# -- helpers -----------------------------------------------------------------------------------
def _when(value: Any) -> str:
    """A stored time (ISO 8601 in UTC, ``2026-11-27T09:15:06.955214Z``) as a page shows it:
    ``2026-11-27 09:15:06`` (the page says UTC; the exact value stays in the page's
    ``<time datetime>``). Anything else is shown as it is."""
    text = "" if value is None else str(value)
    if len(text) >= 19 and text[10] == "T" and text[:4].isdigit():
        return text[:19].replace("T", " ")
    return text


def _plain(text: str, status: int) -> Response:
    return Response(text, status_code=status, media_type="text/plain; charset=utf-8")


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


def _swagger_dir() -> str | None:
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    path = getattr(swagger_ui_bundle, "swagger_ui_path", None)
    return str(path) if path and os.path.isdir(path) else None


def _export_text(study: Study, ext: str, withdrawn: bool = False) -> str:
    with tempfile.TemporaryDirectory(prefix="boloop-export-") as tmp:
        path = os.path.join(tmp, f"history.{ext}")
        study.export(path, withdrawn=withdrawn)
        with open(path, encoding="utf-8", newline="") as fh:  # the file's bytes, as written
            return fh.read()
