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
import json
import logging
import math
import os
import re
import secrets
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

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
    InvalidInputError,
    NoMoreQueriesError,
    QueryStateError,
    StorageAccessError,
    StorageBusyError,
    StorageNoAnswerError,
    StorageUnavailableError,
    StudyMovedError,
    UnknownIdError,
)
from boloop.spaces import format_value, params_text
from boloop.study import Study, create_study, list_studies
from boloop.study.answers import NumberTextError, parse_measurement
from boloop.study.core import undecided_text
from boloop.study.log import utc_words
from boloop.study.measured import goal_sentence, limit_label, output_hints, what_to_measure
from boloop.study.media import media_file, media_index
from boloop.study.pictures import (
    PHONE_WIDTH,
    WIDTH,
    growth_numbers,
    growth_svg,
    model_svg,
    pictures,
    progress_svg,
)
from boloop.study.scatter import others_read
from boloop.study.storage import (
    safe_url,
)
from boloop.web.outage import (
    ANSWER_SECONDS,
    REMIND_SECONDS,
    STORAGE_CHECK_SECONDS,
    check_storage_periodically,
    checked_answer_limit,
    checked_interval,
)
from boloop.web.pool import StudyPool
from boloop.web.qr import QR_PACKAGE, qr_svg
from boloop.web.server import login_link, mask_access_log

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
    storage_answer_seconds: float = ANSWER_SECONDS,
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
    storage_answer_seconds:
        A PostgreSQL storage: the longest wait for the database's answer (10 s by default;
        0: as long as the operating system keeps the connection). A request whose read or
        write has had no answer for that long (a frozen server, a paused virtual machine, a
        network that drops everything) answers 503 with ``Retry-After``, as while the
        database cannot be reached, and the log above says the database does not answer
        (:func:`~boloop.study.storage.limit_answers`).

    A token server also logs a browser in by a login link, ``GET /login?token=<token>``
    (what ``boloop serve`` prints and ``/share`` shows as a QR code).
    """
    pool = StudyPool(
        storage,
        outage_reminder_seconds,
        checked_interval(storage_check_seconds),
        checked_answer_limit(storage_answer_seconds),
    )

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        """The server's periodic check of its database (:meth:`StudyPool.check_storage`) runs
        while the app serves, and stops with it (a check under way is waited for)."""
        if not pool.check_seconds:
            yield
            return
        task = asyncio.create_task(  # a check's wait is cut by the pool's answer limit, if any
            check_storage_periodically(
                pool.check_storage,
                pool.outage,
                pool.check_seconds,
                None if pool.answer_seconds else ANSWER_SECONDS,
            )
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
        # no answer: what a request was storing may be stored after all (a commit it sent)
        silent = isinstance(exc, StorageNoAnswerError)
        if busy:
            logger.warning("%s %s: %s", request.method, request.url.path, exc)
        else:  # the outage is logged once, when it begins and ends (OutageLog), not per request
            pool.outage.refused(f"{request.method} {request.url.path}")
        retry_after = 1 if busy else RETRY_AFTER_SECONDS
        headers = {"Retry-After": str(retry_after)}
        if _wants_json(request.url.path):
            error = "storage_busy" if busy else "storage_unavailable"
            return JSONResponse(
                {
                    "detail": str(exc),
                    "error": error,
                    "stored": None if silent and request.method == "POST" else False,
                },
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
            silent=silent,
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


# -- study names in paths ----------------------------------------------------------------------
#: paths whose next segment is a study's name, and that segment's index in ``path.split("/")``
_NAME_SEGMENT = (("/studies/", 2), ("/api/studies/", 3))


def study_name(segment: str) -> str:
    """The study name of a path segment that :class:`EncodedStudyNames` kept percent-encoded."""
    return unquote(segment)


class EncodedStudyNames:
    """ASGI wrapper: the study-name segment of ``/studies/{name}/...`` and
    ``/api/studies/{name}/...`` reaches the router still percent-encoded.

    The server decodes ``%2F`` to ``/`` before routing, so a study named ``lab/run 1`` (linked
    as ``/studies/lab%2Frun%201``) would match no route, or the wrong one. The router sees the
    segment as the client sent it (from ``raw_path``) and every handler decodes it with
    :func:`study_name`; every other segment is decoded as usual.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") in ("http", "websocket"):
            scope = _encoded_name_scope(scope)
        await self.app(scope, receive, send)


def _encoded_name_scope(scope: dict[str, Any]) -> dict[str, Any]:
    path = scope.get("path", "")
    k = next((k for prefix, k in _NAME_SEGMENT if path.startswith(prefix)), None)
    if k is None:
        return scope
    raw = scope.get("raw_path")
    if raw:
        segments = raw.decode("latin-1").split("?", 1)[0].split("/")
        new = [seg if i == k else unquote(seg) for i, seg in enumerate(segments)]
    else:  # no raw path (not given by every server): a name with "/" cannot be told apart
        new = path.split("/")
        if len(new) > k:
            new[k] = quote(new[k], safe="")
    return {**scope, "path": "/".join(new)}


# -- helpers (run under the study's lock) -------------------------------------------------------
def _wants_json(path: str) -> bool:
    """The API, the OpenAPI document and a study page's poll (``/studies/{name}/state``) answer
    in JSON; every other path is a page."""
    if path.startswith("/api/") or path == "/openapi.json":
        return True
    parts = path.split("/")  # the name segment is still percent-encoded (EncodedStudyNames)
    return len(parts) == 4 and parts[1] == "studies" and parts[3] == "state"


def _when(value: Any) -> str:
    """A stored time (ISO 8601 in UTC, ``2026-11-27T09:15:06.955214Z``) as a page shows it:
    ``2026-11-27 09:15:06`` (the page says UTC; the exact value stays in the page's
    ``<time datetime>``). Anything else is shown as it is."""
    text = "" if value is None else str(value)
    if len(text) >= 19 and text[10] == "T" and text[:4].isdigit():
        return text[:19].replace("T", " ")
    return text


def _unsent(
    what: str, name: str, values: Mapping[str, str], labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """What a form was storing when it was not stored, for the page that says so (the 503
    page while the database cannot be reached, the login page of a browser not logged in, a
    refused answer's study page): ``what`` ("tell", "undo", "create"), the study, the fields
    as sent (a button to send them again) and the ones a person typed or chose, as
    ``(field, value)`` rows (:func:`_shown`: a measured value by the name the space file
    gives it, ``labels``)."""
    return {
        "what": what,
        "name": name,
        "quoted": quote(name, safe=""),
        "query_id": values.get("query_id", ""),
        "fields": dict(values),
        "shown": _shown(values, labels or {}),
    }


def _shown(values: Mapping[str, str], labels: Mapping[str, str]) -> list[tuple[str, str]]:
    """The fields of an answer a person typed or chose, as ``(field, value)`` rows: a measured
    value by its label (``labels``, the page's field labels: "toxicity (g, AU)", "hardness
    (HV)"; the output's name, "g" or "value", where the space names none), a duel's choice as
    "A is better"/"B is better", the note where one was typed."""
    choice = {"a": "A is better", "b": "B is better"}
    rows = []
    for k, v in values.items():
        if k in ("query_id", "confirm_over_limit", "confirm_unusual") or (
            k == "note" and not v.strip()
        ):
            continue
        field = k[4:] if k.startswith("out.") else k
        shown = labels.get(field, field) if k.startswith("out.") or k == "value" else field
        rows.append((shown, choice.get(v, v) if k == "answer" else v))
    return rows


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


def _local(path: str) -> str:
    """A same-site path to go to after login (never another host). A path with a control
    character is refused too: a browser's URL parser removes tabs and newlines before it reads
    a URL (WHATWG URL standard), so ``/<TAB>/evil.example`` in the login link page's meta
    refresh would go to ``//evil.example``, another host. (A space stays: a study's name may
    have one, and the parser keeps it, percent-encoded.)"""
    if (
        not path.startswith("/")
        or path.startswith("//")
        or "\\" in path
        or any(ord(c) < 0x20 or ord(c) == 0x7F for c in path)
    ):
        return "/"
    return path


def _swagger_dir() -> str | None:
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    path = getattr(swagger_ui_bundle, "swagger_ui_path", None)
    return str(path) if path and os.path.isdir(path) else None


def _method_choices() -> list[tuple[str, str]]:
    """``(family, method id)`` of every method, for the create form's select (a family's
    default method is marked there from :data:`FAMILY_DEFAULTS`)."""
    from boloop.algorithms import list_methods

    return sorted({(m.family, m.id) for m in list_methods()})


def _open_id(study: Study) -> int | None:
    pending = study.policy.pending
    return None if pending is None else int(pending.id)


def _state(study: Study, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What an open page polls: ``version`` (the last event's seq: the page reloads when it
    changes), ``answered``, ``open_query``, ``moved`` (where a migrate moved the study, or None)
    and ``continued_as`` (the studies that continue it: a continuation writes nothing to this
    study's log, so the version does not show it; one read of the storage's list of studies,
    whose continuations are read again only when it changes). ``events``: the study's
    :meth:`~boloop.study.core.Study.events`, if the caller has them."""
    if events is None:
        events = study.events()
    moved = study.moved
    return {
        "version": events[-1]["seq"],
        "answered": study.n_answered,
        "open_query": _open_id(study),
        "moved": None if moved is None else moved["to"],  # a migrate made this copy read-only
        "continued_as": study.continued_as(),
    }


def _query_json(study: Study, q: Any) -> dict[str, Any]:
    d = q.to_dict()
    media = _query_media(study, q)
    if media:
        d["media"] = media
    if family_traits(study.family).safety_limit:
        d["limit"] = _limit(study)
    return d


def _limit(study: Study) -> dict[str, Any] | None:
    settings = getattr(study.problem, "settings", {}) or {}
    h = settings.get("h", settings.get("threshold"))
    if h is None:
        return None
    return {"output": "g", "h": float(h)}


def _picture_numbers(svg: str) -> list[tuple[str, str]]:
    """What a picture's marks say on hover or tap (their SVG ``<title>`` tooltips), in drawing
    order, each split at its first ": " into what it is and its value: the page's table "the
    numbers" under the picture, for whoever cannot see the picture or hover over it
    (WCAG 1.1.1)."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(svg)
    except ET.ParseError:  # drawn by this package: never, but a table is no reason to fail
        return []
    rows = []
    for el in root.iter("{http://www.w3.org/2000/svg}title"):
        text = " ".join((el.text or "").split())
        if text:
            what, sep, value = text.partition(": ")
            rows.append((what, value) if sep else (text, ""))
    return rows


def _query_media(study: Study, q: Any) -> dict[str, list[dict[str, str]]]:
    """``{"x"|"a"|"b": [{"column", "file", "type", "url"}]}`` for options with media files."""
    cand = (study.config.get("space") or {}).get("candidates") or {}
    columns = cand.get("media") or {}
    if not columns:
        return {}
    files = media_index(study.config)
    query = q.query
    sides = {"a": query.a_index, "b": query.b_index} if q.kind == "compare" else {"x": query.index}
    out: dict[str, list[dict[str, str]]] = {}
    base = f"/studies/{quote(study.name, safe='')}/media/"
    for side, index in sides.items():
        if index is None:
            continue
        items = []
        for col, names in columns.items():
            if 0 <= index < len(names) and names[index] in files:
                fname = names[index]
                items.append(
                    {
                        "column": col,
                        "file": fname,
                        "type": files[fname].split("/")[0],
                        "url": base + quote(fname, safe=""),
                    }
                )
        if items:
            out[side] = items
    return out


def _page_context(study: Study) -> dict[str, Any]:
    query = None
    ask_error = None
    complete = None  # the method asks no more: said in place of the answer form
    try:
        query = study.ask()
    except (StorageUnavailableError, StorageAccessError):
        raise
    except NoMoreQueriesError as exc:
        complete = _sentence(str(exc))
    except BoloopError as exc:
        ask_error = str(exc)
    hist = study.history()
    with study.readout():  # one copy of the policy for the model picture and the status
        pics = pictures(study, growth=False)  # the growth is an image of its own (a replay)
        # and for a phone (the page's CSS shows one): the same text in a narrower picture
        pics_phone = pictures(study, growth=False, width=PHONE_WIDTH)
        st = study.status(last=0)
    events = study.events()
    units = study.units()
    ctx: dict[str, Any] = {
        "study": study,
        "name": study.name,
        "names": study.names,
        "units": units,
        "query": query,
        "ask_error": ask_error,
        "complete": complete,
        "media": _query_media(study, query) if query is not None else {},
        "limit": _limit(study) if family_traits(study.family).safety_limit else None,
        "growth_picture": family_traits(study.family).growth_picture,
        "history": list(reversed(hist[-30:])),
        "n_history": len(hist),
        "pictures": pics,
        "pictures_phone": pics_phone,
        "picture_numbers": {k: _picture_numbers(v) for k, v in pics.items()},
        "state_version": events[-1]["seq"],
        "quoted": quote(study.name, safe=""),
        "has_notes": any(r.get("note") for r in hist),
        "last_key": _answer_key(hist[-1]) if hist else "",
        "last_desc": _answer_description(hist[-1]) if hist else "",
        "recommendation": _recommendation_view(study, st, units, len(hist)),
        # what a person must not miss (a measured g above the safety limit...), while it holds
        "study_warnings": [
            w
            for w in st.get("warnings") or []
            if w != st.get("stuck") and w not in (st.get("noise") or [])
        ],
        # repeated measurements that contradict the assumed noise: a notice with the owner's part
        # collapsed, as the stuck notice (the person answering cannot change an option)
        "study_noise": st.get("noise") or [],
        # ... and where one answer makes most of that scatter (a slip?), it, in plain words
        "noise_outliers": _noise_outlier_words(study, st),
        # a method that no longer makes progress: a notice, not the alarm above
        "study_stuck": st.get("stuck"),
        # a level-set map that stopped changing is as often finished as stuck (its notice)
        "stuck_map": family_traits(study.family).level_threshold,
        "continued_as": st.get("continued_as") or [],
        "moved": st.get("moved"),  # boloop study migrate moved it: a notice instead of the form
        "over_limit_next": st.get("over_limit_next"),
        **_measurement_words(study),
    }
    return ctx


def _sentence(clause: str) -> str:
    """``clause`` as a sentence: a capital first letter and a full stop."""
    clause = clause.strip()
    return clause[:1].upper() + clause[1:] + ("" if clause.endswith(".") else ".")


def _noise_outlier_words(study: Study, st: Mapping[str, Any]) -> list[str]:
    """Per output, the answer that makes most of the scatter of repeated measurements
    (``status()["noise_outliers"]``) as the page's plain notice says it: which answer, what
    it read where, what the others read there, and to check it first (the owner's details
    say how to undo it)."""
    measured = {m.output or "value": m for m in study.measured()}
    units = study.units()
    out = []
    for output, one in sorted((st.get("noise_outliers") or {}).items()):
        m = measured.get(output)
        name = (m.name or m.output or "the value") if m is not None else output

        def amount(v: float, m: Any = m) -> str:
            return m.amount(v) if m is not None else f"{v:g}"

        who = "an added measurement" if one["query_id"] is None else f"query {one['query_id']}"
        others = one["others"]
        read = others_read(others, amount)
        out.append(
            f"One answer makes most of it: {who}, {name} {amount(one['value'])} at "
            f"{params_text(one['params'], units)}, where the {len(others)} other measurements "
            f"{read}. Check that answer first (a typing slip?): a mistake is undone, not taken "
            "as noise."
        )
    return out


def _field_labels(study: Study) -> dict[str, str]:
    """Each answer field's label ("value" or an output's name: "toxicity (g, AU)", "hardness
    (HV)"; "g", "value" where the space file names nothing; :meth:`Measured.label`)."""
    return {q.output or "value": q.label() for q in study.measured()}


def _measurement_words(study: Study) -> dict[str, Any]:
    """What the page says about what to measure (:mod:`boloop.study.measured`): the space's
    ``description``; the heading's ``measure_what`` ("the hardness (HV)", "efficacy and side
    effect"; "the value", "f and g" when the space names nothing); each field's label
    (``field_labels``: "value" or an output's name) and hint (``field_hints``: "must stay at
    most 1.5"); ``goal_text``, the level set's question or the better direction."""
    quantities = study.measured()
    settings = getattr(study.problem, "settings", {}) or {}
    outputs = [q for q in quantities if q.output]
    return {
        "description": study.description,
        "measure_what": what_to_measure(quantities, labelled=False),
        "field_labels": _field_labels(study),
        "field_hints": output_hints(study.family, quantities, settings),
        "goal_text": goal_sentence(study.family, study.method, quantities, settings),
        "limit_label": limit_label(study.measured()),
        "limit_noun": next((str(q.name) for q in outputs if q.output == "g" and q.named), "g"),
    }


def _recommendation_view(
    study: Study, st: Mapping[str, Any], units: Mapping[str, str], answered: int
) -> dict[str, str] | None:
    """The recommendation as the page says it (``Study.status()``'s ``recommendation``,
    ``recommendation_label`` and ``recommendation_meaning``): ``{"text", "meaning"}``, the text
    being the option's name and its parameters, or "none yet" (always before the first answer:
    a method's favourite before any data is no recommendation); for a level set, how many
    candidates are estimated above the threshold and how many are still undecided (its picture
    shows where); None for anything else. ``st``: ``study.status(last=0)``."""
    rec = st["recommendation"]
    if isinstance(rec, dict) and "n_upper" in rec and answered:  # a level set's estimate
        text = (
            f"{rec['n_upper']} of {rec['n_candidates']} candidates estimated above the "
            f"threshold {rec['threshold']:g}"
        )
        if rec.get("n_undecided") is not None:
            text += "; " + undecided_text(rec["n_undecided"], bool(st.get("asks_no_more")))
        return {"text": text, "meaning": str(st.get("recommendation_meaning") or "")}
    if isinstance(rec, dict) and isinstance(rec.get("point"), dict):
        rec = rec["point"]  # e.g. the safe family's {"point", "index", "best_s", ...}
    point = rec if isinstance(rec, dict) and list(rec) == list(study.names) else None
    if point is None and rec is not None and not isinstance(rec, str):
        return None
    if answered == 0:
        text = "none yet (no answers yet)"
    elif point is None:  # None or "not available yet (...)"
        text = "none yet"
    else:
        text = params_text(point, units)
        if st.get("recommendation_label"):
            text = f"{st['recommendation_label']} ({text})"
    return {"text": text, "meaning": str(st.get("recommendation_meaning") or "")}


def _answer_key(row: Mapping[str, Any]) -> str:
    """What names one history row for an undo form: its query id and the time it was given
    (an answer withdrawn and given again has a new time)."""
    qid = "added" if row.get("query_id") is None else str(row["query_id"])
    return f"{qid}@{row.get('told_at')}"


def _answer_text(row: Mapping[str, Any]) -> str:
    """A history row's answer as a person reads it: ``1094.6``, ``accept``, ``B is better``."""
    text = str(row.get("answer_text", row.get("answer")))
    if row.get("kind") == "compare":
        text = {"a": "A is better", "b": "B is better"}.get(text, text)
    return text


#: characters of an answer's note said with it (a note is up to 2000; the rest is cut)
_NOTE_SHOWN = 60


def _answer_description(row: Mapping[str, Any]) -> str:
    """One history row as a person reads it: ``query 14: B is better, given 2026-11-27
    03:05:41 UTC``, and its note (``, note "bob"``; cut after :data:`_NOTE_SHOWN` characters):
    which of two colleagues' answers it is (a newcomer's trial)."""
    text = _answer_text(row)
    told = str(row.get("told_at") or "")
    when = f", given {_utc(told)}" if told else ""
    note = " ".join(str(row.get("note") or "").split())
    if note:
        cut = note if len(note) <= _NOTE_SHOWN else note[: _NOTE_SHOWN - 1] + "\u2026"
        when += f', note "{cut}"'
    if row.get("query_id") is None:
        return f"the {'label' if row.get('kind') == 'label' else 'measurement'} added: {text}{when}"
    return f"query {row['query_id']}: {text}{when}"


def _utc(stamp: str) -> str:
    """``2026-11-27T03:05:41.123456Z`` as a person reads it: ``2026-11-27 03:05:41 UTC``."""
    return utc_words(stamp)


def _withdrawn_yours(
    study: Study,
    since: int,
    stored_by: Callable[[str], str | None],
    withdrawn_by: Callable[[str], str | None],
    browser: str,
    events: list[dict[str, Any]] | None = None,
) -> list[str]:
    """What a page of ``browser`` must be told of the answers this browser stored
    (``stored_by``, :class:`_Senders`) that an undo withdrew after event ``since`` (the page's
    version): whose undo it was (``withdrawn_by``: this browser, another one, or none this
    server saw: the command line, the API, a program, another server), when, and what is open
    now. Without it the page would show the query open again and say nothing (a newcomer's
    trial: a colleague's undo withdrew bob's answer, and bob did not know to measure again).
    Only what this server remembers since it started (:class:`_Senders`). ``events``: the
    study's :meth:`~boloop.study.core.Study.events`, if the caller has them (a poll does)."""
    if events is None:
        events = study.events()
    mine = []  # (the undo, the key of the answer it withdrew) of this browser's answers
    for undo in (e for e in _after(events, since) if e["kind"] == "withdrawn"):
        gone = _at(events, undo["payload"].get("withdraws"))
        if gone is not None:
            key = f"{'added' if gone['query_id'] is None else gone['query_id']}@{gone['created_at']}"
            if stored_by(key) == browser:
                mine.append((undo, key))
    if not mine:  # the usual case: no history is read
        return []
    rows = {_answer_key(r): r for r in study.history(withdrawn=True)}
    open_id = _open_id(study)
    in_effect = {r["query_id"]: r for r in study.history() if r.get("query_id") is not None}
    out = []
    for undo, key in mine:
        if key not in rows:
            continue
        qid = rows[key].get("query_id")
        desc = _answer_description(rows[key])
        who = withdrawn_by(key)
        by = (
            "from this browser (another tab or window)"
            if who == browser
            else "from another browser"
            if who is not None
            else "made elsewhere (not on this server's pages: the command line, the API or a "
            "program)"
        )
        if qid is None:
            now = "it is no longer in effect"
        elif open_id == qid:
            now = f"query {qid} is open again: answer it again if your answer stands"
        elif qid in in_effect:
            now = f"query {qid} was answered again since ({_answer_description(in_effect[qid])})"
        else:
            now = f"query {qid} is not open now" + (
                f" (the open query is {open_id})" if open_id is not None else ""
            )
        out.append(
            f"Your answer, stored from this browser ({desc}), was withdrawn by an undo {by} at "
            f"{_utc(undo['created_at'])}: {now}. The withdrawn answer stays in the log (export "
            "with the withdrawn answers)."
        )
    return out


def _after(events: list[dict[str, Any]], since: int) -> list[dict[str, Any]]:
    """The events of a log (:meth:`~boloop.study.core.Study.events`, seq 0 first) after seq
    ``since``, without walking the ones before."""
    start = max(since + 1, 0)
    if _at(events, start) is None and start < len(events):  # not numbered from 0: look at all
        return [e for e in events if e["seq"] > since]
    return events[start:]


def _at(events: list[dict[str, Any]], seq: Any) -> dict[str, Any] | None:
    """The event ``seq`` of a log (:meth:`~boloop.study.core.Study.events`), or None."""
    if not isinstance(seq, int) or not 0 <= seq < len(events):
        return None
    ev = events[seq]
    return ev if ev["seq"] == seq else next((e for e in events if e["seq"] == seq), None)


def _undo_form(study: Study, expected: str) -> dict[str, Any]:
    """Withdraw the last answer if it is the one the page named (``expected``, an
    :func:`answer_key`; empty: whatever is last, as the API's undo)."""
    last = study.history(last=1)
    if expected and (not last or _answer_key(last[0]) != expected):
        qid = expected.split("@", 1)[0]
        shown = "an added measurement" if qid == "added" else f"the answer to query {qid}"
        now = _answer_description(last[0]) if last else "none"
        raise QueryStateError(
            f"Nothing was withdrawn: the page showed {shown} as the last, "
            f"but the last answer is now {now} (someone answered or withdrew in the meantime). "
            "Check it and undo again if you mean it."
        )
    return study.undo()


def _tell_conflict(study: Study, query_id: int) -> dict[str, Any]:
    """The machine-readable part of the API's 409 for a ``tell`` to a query that is not open:
    the answer in effect for ``query_id`` (``stored_answer``: ``answer``, ``answer_text``,
    ``note``, ``told_at``, ``kind``), or None when it has none (withdrawn, never asked), and the
    open query. A client that repeats a ``tell`` whose response it never got (the connection
    dropped) compares ``stored_answer`` with what it sent: its own answer stored, or another."""
    rows = [r for r in study.history() if r.get("query_id") == query_id]
    row = rows[-1] if rows else None
    stored = (
        None
        if row is None
        else {k: row.get(k) for k in ("answer", "answer_text", "note", "told_at", "kind")}
    )
    return {
        "error": "query_answered" if row is not None else "query_not_open",
        "query_id": query_id,
        "open_query": _open_id(study),
        "stored_answer": stored,
    }


def _same_answer(study: Study, form: Any) -> dict[str, Any] | None:
    """The history row of the form's query if it holds the very answer the form sends (the
    same form sent twice: a double click, Back and send, a resend after an outage), else None
    (not answered, withdrawn, or answered differently)."""
    raw_id = str(form.get("query_id", "")).strip()
    rows = [r for r in study.history() if str(r.get("query_id")) == raw_id]
    if not rows:
        return None
    row = rows[-1]
    stored = row.get("answer")
    try:
        if row.get("kind") == "label":
            sent: Any = {"accept": True, "reject": False}.get(str(form.get("answer", "")))
        elif row.get("kind") == "compare":
            sent = {"a": 0, "b": 1}.get(str(form.get("answer", "")))
        elif isinstance(stored, Mapping):
            sent = {k: parse_measurement(str(form.get(f"out.{k}", "")), k) for k in stored}
        else:
            sent = parse_measurement(str(form.get("value", "")), "the value")
    except BoloopError:
        return None
    return row if sent is not None and sent == stored else None


class _Senders:
    """Which browser (:func:`create_app`'s ``sender_id``) stored which answer through a page,
    by study and :func:`_answer_key`, in this server's memory: a refusal can then say whether
    the answer that stands came from the same browser (sent twice) or another one. Forgotten
    at a restart, and the oldest beyond :attr:`LIMIT`; an answer given by the API, the CLI or
    Python has no browser."""

    LIMIT = 10_000

    def __init__(self) -> None:
        self._by: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def remember(self, study: str, key: str, browser: str) -> None:
        with self._lock:
            self._by[(study, key)] = browser
            while len(self._by) > self.LIMIT:
                del self._by[next(iter(self._by))]

    def sender(self, study: str) -> Callable[[str], str | None]:
        """The browser that stored an answer of ``study`` (by its key), or None if unknown."""

        def get(key: str) -> str | None:
            with self._lock:
                return self._by.get((study, key))

        return get


def _asked_id(study: Study) -> int | None:
    """The id of the open query as the study page shows it (asked if none is open), or None
    when the method cannot ask one."""
    try:
        return int(study.ask().id)
    except (StorageUnavailableError, StorageAccessError):
        raise
    except BoloopError:
        return None


def _refusal(
    study: Study, form: Any, sender: Callable[[str], str | None], browser: str
) -> tuple[str, bool]:
    """What the page says when the form's answer was refused because its query is not open
    (:class:`QueryStateError`), and whether the answer that stands is someone else's (the
    undo then says so). Told apart, from the history, the note and which browser stored the
    answer (``sender``, :class:`_Senders`; ``browser``: this form's): the query withdrawn; the
    same answer sent twice from this browser (or from one unknown, with the same note);
    the same values from another browser or with another note (the note sent is said to be
    not stored); another answer. Each names the query open now."""
    raw_id = str(form.get("query_id", "")).strip()
    note = str(form.get("note", "") or "").strip()
    rows = [r for r in study.history() if str(r.get("query_id")) == raw_id]
    open_id = _asked_id(study)
    now = (
        "There is no open query now."
        if open_id is None
        else f"The open query is now {open_id} (below)."
    )
    kept = "What you sent is shown below, not in the form (that is for another query)."
    if not rows:
        return (
            f"Your answer was not stored: query {raw_id} was withdrawn (undone) before your "
            f"answer arrived. {kept} {now}",
            True,
        )
    row = rows[-1]
    desc = _answer_description(row)
    by = sender(_answer_key(row))
    mine, other = by is not None and by == browser, by is not None and by != browser
    same_note = (row.get("note") or "") == note
    lost_note = "" if same_note or not note else " Your note was NOT stored either."
    if _same_answer(study, form) is not None:
        if mine:
            again = "" if same_note else " The note you sent this time differs: it was NOT stored."
            return (
                f"Your answer was not stored again: this browser had stored it already "
                f"({desc}): it was sent twice (a double click, or Back and send). Nothing is "
                f"stored twice.{again} {now}",
                False,
            )
        if not other and same_note:
            return (
                f"Your answer was not stored again: query {raw_id} was answered already with "
                f"the same answer ({desc}); nothing is stored twice. {now}",
                False,
            )
        who = (
            "first from another browser, with the same values as yours"
            if other
            else "already with the same values as yours but another note, by someone else or "
            "from another page"
        )
        return (
            f"Your answer was not stored: query {raw_id} was answered {who} ({desc})."
            f"{lost_note} {kept} {now}",
            True,
        )
    who = "from this browser (another tab, or before Back)" if mine else "by someone else"
    return (
        f"Your answer was not stored: query {raw_id} was answered first {who} ({desc}). "
        f"{kept} {now}",
        True,
    )


def _study_form_path(path: str) -> tuple[str, str] | None:
    """``("/studies/<name>", "tell" | "undo")`` for the path of a study page's answer or undo
    form (the name still percent-encoded, :class:`EncodedStudyNames`), else None."""
    parts = path.split("/")
    if len(parts) == 4 and parts[1] == "studies" and parts[2] and parts[3] in ("tell", "undo"):
        return "/".join(parts[:3]), parts[3]
    return None


def _typed_fields(query: Any) -> tuple[str, ...]:
    """The form fields a measurement query's answer is typed in: ``value``, or ``out.f``,
    ``out.g``, ... for several outputs."""
    outputs = tuple(getattr(query, "outputs", ()) or ())
    return tuple(f"out.{o}" for o in outputs) if outputs else ("value",)


def confirmation_key(values: Mapping[str, Any], *fields: str) -> str:
    """What a "store it as typed" box confirms: the text of ``fields`` as typed, joined. A box
    holds it as its value, so a confirmation given for one value does not store another typed
    after it (the box ticked, then the value changed)."""
    return "|".join(str(values.get(f, "")).strip() for f in fields)


def _tell_form(
    study: Study, form: Any
) -> tuple[dict[str, str], str | None, tuple[str, str] | None]:
    """Answer from the study page's form. Returns ``(errors by field, warning, held)``: all
    empty when the answer was stored; ``held`` is ``(why, key)`` for a valid answer held back
    for the person to confirm (``"over_limit"``: g above the safety limit; ``"unusual"``: a
    value far outside the values stored so far, :meth:`Study.unusual_values`), ``key`` the
    :func:`confirmation_key` its box must send back; the question is in ``warning``. Raises
    QueryStateError when the query is not the open one."""
    raw_id = str(form.get("query_id", "")).strip()
    note = str(form.get("note", "") or "")
    study.refresh()
    pending = study.policy.pending
    if pending is None or raw_id != str(pending.id):
        now_open = "" if pending is None else f"; the open query is {pending.id}"
        raise QueryStateError(
            f"query {raw_id} is not open any more (it was answered or withdrawn{now_open})"
        )
    kind = pending.kind
    errors: dict[str, str] = {}
    typed: dict[str, str] = {}  # several outputs: each as typed, for the typo question
    if kind in ("label", "compare"):
        answer: Any = str(form.get("answer", ""))
    else:
        outputs = tuple(getattr(pending, "outputs", ()) or ())
        if not outputs:
            answer = str(form.get("value", ""))
            try:
                v = parse_measurement(answer, "the value")
                if not isinstance(v, float):
                    errors["value"] = f"the value must be a number, got {answer.strip()!r}"
                elif not math.isfinite(v):
                    errors["value"] = f"the value must be a finite number, got {answer.strip()!r}"
            except NumberTextError as exc:  # a comma that does not say what it is: say why
                errors["value"] = str(exc)
            except BoloopError:
                errors["value"] = f"the value must be a number, got {answer.strip()!r}"
        else:
            answer = {}
            for out in outputs:
                text = typed[out] = str(form.get(f"out.{out}", ""))
                try:
                    v = parse_measurement(text, out)
                except NumberTextError as exc:
                    errors[f"out.{out}"] = f"{out}: {exc}"
                    continue
                except BoloopError:
                    v = None
                if not isinstance(v, float):
                    errors[f"out.{out}"] = f"{out} must be a number, got {text.strip()!r}"
                elif not math.isfinite(v):
                    errors[f"out.{out}"] = f"{out} must be a finite number, got {text.strip()!r}"
                else:
                    answer[out] = v
            limit = _limit(study) if family_traits(study.family).safety_limit else None
            key = None if limit is None else confirmation_key(form, f"out.{limit['output']}")
            if (
                not errors
                and limit is not None
                and key is not None  # (set exactly when limit is)
                and answer.get(limit["output"], -math.inf) > limit["h"]
                and form.get("confirm_over_limit") != key
            ):
                g = answer[limit["output"]]
                return (
                    {},
                    f"{limit_label(study.measured())} = {g:g} is above the safety limit "
                    f"h = {limit['h']:g}. "
                    "Check the measurement; tick the box and submit again to store it as it is.",
                    ("over_limit", key),
                )
    if errors:
        return errors, None, None
    key = confirmation_key(form, *_typed_fields(pending)) if kind == "evaluate" else None
    if key is not None and form.get("confirm_unusual") != key:
        questions = study.unusual_values(typed or answer)
        if questions:
            return (
                {},
                " ".join(questions)
                + " Correct it, or tick the box and submit again to store it as typed.",
                ("unusual", key),
            )
    try:
        study.tell(pending.id, answer, note=note)
    except (QueryStateError, StudyMovedError, StorageUnavailableError, StorageAccessError):
        raise
    except BoloopError as exc:
        field = "value" if kind == "evaluate" and not getattr(pending, "outputs", ()) else "answer"
        for out in getattr(pending, "outputs", ()) or ():
            if f"'{out}'" in str(exc) or f"{out}=" in str(exc):
                field = f"out.{out}"
        if "note" in str(exc).split(":")[0]:
            field = "note"
        return {field: str(exc)}, None, None
    return {}, None, None


def _export_text(study: Study, ext: str, withdrawn: bool = False) -> str:
    with tempfile.TemporaryDirectory(prefix="boloop-export-") as tmp:
        path = os.path.join(tmp, f"history.{ext}")
        study.export(path, withdrawn=withdrawn)
        with open(path, encoding="utf-8", newline="") as fh:  # the file's bytes, as written
            return fh.read()


def _create_field(message: str) -> str:
    low = message.lower()
    for key, words in (
        ("name", ("name must", "already exists", "study name")),
        ("method", ("method",)),
        ("seed", ("seed",)),
        ("options", ("option",)),
        ("space", ("space", "csv", "candidates", "parameter", "toml", "json", "threshold")),
    ):
        if any(w in low for w in words):
            return key
    return "space"


def _parse_options(text: str) -> dict[str, Any]:

    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            opts = json.loads(text)
        except ValueError as exc:
            raise InvalidInputError(f"options are not valid JSON: {exc}") from exc
        if not isinstance(opts, dict):
            raise InvalidInputError("options must be a JSON object or key=value pairs")
        return opts
    out: dict[str, Any] = {}
    for part in text.replace("\n", ",").split(","):
        if not part.strip():
            continue
        key, sep, val = part.partition("=")
        if not sep or not key.strip():
            raise InvalidInputError(f"options: expected key=value, got {part.strip()!r}")
        try:
            out[key.strip()] = json.loads(val)
        except ValueError:
            low = val.strip().lower()
            out[key.strip()] = {"true": True, "false": False}.get(low, val.strip())
    return out


def _safe_filename(name: str) -> str:

    base = os.path.basename(name.replace("\\", "/"))
    if not base or base in (".", "..") or base.startswith(".") or "\x00" in base:
        raise InvalidInputError(f"bad upload file name {name!r}")
    return base


def _create_from_form(url: str, values: dict[str, str], uploads: list[tuple[str, bytes]]) -> Study:

    seed: int | None = None
    if values.get("seed"):
        try:
            seed = int(values["seed"])
        except ValueError as exc:
            raise InvalidInputError(f"seed must be an integer, got {values['seed']!r}") from exc
    options = _parse_options(values.get("options", ""))
    family = values.get("family") or None
    method = values.get("method", "")
    if "/" in method:  # the form's choices are "family/method" (a method id may be in several)
        fam, _, method = method.partition("/")
        if family is not None and family != fam:
            raise InvalidInputError(
                f"method {method!r} of family {fam!r} given with family {family!r}"
            )
        family = fam
    if not method:
        raise InvalidInputError("choose a method")
    problem = values.get("problem") or None
    if uploads and problem:
        raise InvalidInputError("give a space file or a problem id, not both")
    if not uploads and not problem:
        raise InvalidInputError("upload a space file (JSON, TOML or CSV) or give a problem id")
    if problem:
        return create_study(
            values.get("name", ""),
            method,
            problem=problem,
            storage=url,
            seed=seed,
            family=family,
            **options,
        )
    tmp = tempfile.mkdtemp(prefix="boloop-upload-")
    try:
        paths = []
        for fname, data in uploads:
            path = os.path.join(tmp, _safe_filename(fname))
            with open(path, "wb") as fh:
                fh.write(data)
            paths.append(path)
        space = paths[0]
        if os.path.splitext(space)[1].lower() not in (".json", ".toml", ".csv"):
            raise InvalidInputError(
                f"the space file must end in .json, .toml or .csv, got {os.path.basename(space)!r}"
            )
        # the files beside the space file (a table, its media) are read now and stored with
        # the study: the temporary directory is removed afterwards
        return create_study(
            values.get("name", ""),
            method,
            space,
            storage=url,
            seed=seed,
            family=family,
            **options,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
