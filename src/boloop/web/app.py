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
``Retry-After`` (one exception handler, :meth:`Site.storage_unavailable`): the API a
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

This module wires the application (:func:`create_app`: the lifespan, the guard middleware, the
exception handlers, the routers in the order they are matched). The parts: what every route
shares (:mod:`boloop.web.site`: drawing a page, the error pages, forms, calls to a study), the
routes, one ``APIRouter`` each (:mod:`boloop.web.login_pages`, :mod:`boloop.web.study_pages`,
:mod:`boloop.web.json_api`), and what they work out under a study's lock, without FastAPI
(:mod:`boloop.web.study_view`, :mod:`boloop.web.answer_forms`, :mod:`boloop.web.create_form`;
study names in paths: :mod:`boloop.web.paths`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

import boloop
from boloop.errors import StorageAccessError, StorageUnavailableError
from boloop.web.json_api import api_routes
from boloop.web.json_api import jsonable as jsonable  # see __all__
from boloop.web.login_pages import login_routes
from boloop.web.outage import (
    ANSWER_SECONDS,
    REMIND_SECONDS,
    STORAGE_CHECK_SECONDS,
    check_storage_periodically,
    checked_answer_limit,
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
from boloop.web.server import checked_token, mask_access_log
from boloop.web.site import CSRF_COOKIE, SESSION_COOKIE, Site, _same
from boloop.web.study_pages import study_routes
from boloop.web.study_view import _picture_numbers as _picture_numbers  # see __all__
from boloop.web.study_view import checked_poll_seconds

__all__ = ["create_app"]
# also imported from here, where they were before they moved: jsonable (tests/test_web.py),
# StudyPool (benchmarks/storage_check_cost.py), _picture_numbers (benchmarks/a11y_cost.py)

logger = logging.getLogger("boloop")

#: largest request body (uploads of a space file, a table and its media), bytes
MAX_UPLOAD_BYTES = 32 * 2**20
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "connect-src 'self'"
)


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
        ``Authorization: Bearer <token>``; compared in constant time. Spaces around it are
        dropped; fewer than 8 characters, or one that is not printable ASCII, is refused
        (:func:`~boloop.web.server.checked_token`).
    poll_seconds:
        How often an open study page asks whether someone else answered, in seconds (0: never;
        at most a day; anything else, NaN included, is refused).
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
    token = checked_token(token)  # before anything is opened
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
    site = Site(
        pool,
        token,
        poll_seconds=checked_poll_seconds(poll_seconds),
        max_upload_bytes=max_upload_bytes,
    )
    # the site's parts the guard and the docs page use, by the names they use
    session, render, not_stored = site.session, site.render, site.not_stored
    static_dir = Path(__file__).with_name("static")
    app.mount("/static", StaticFiles(directory=static_dir), name="static")
    swagger_dir = _swagger_dir()
    if swagger_dir is not None:
        app.mount("/swagger-ui", StaticFiles(directory=swagger_dir), name="swagger")
    mask_access_log()  # a login link's token never reaches uvicorn's access log

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

    # the outage's 503 (try again: nothing stored), a database that refuses the storage URL
    # (a 500 naming what to check), and the error pages of pages and the API (Site's)
    app.exception_handler(StorageUnavailableError)(site.storage_unavailable)
    app.exception_handler(StorageAccessError)(site.storage_refused)
    app.exception_handler(StarletteHTTPException)(site.http_error)

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

    # -- the routes, in the order they are matched -------------------------------------------
    app.include_router(login_routes(site, addresses))  # /login, /share, /logout

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

    app.include_router(study_routes(site))  # /, /studies, /studies/{name}/...
    app.include_router(api_routes(site))  # /api/studies/...

    app.add_middleware(EncodedStudyNames)  # outermost: routes see names with "/" still encoded
    return app


# -- helpers -----------------------------------------------------------------------------------
def _plain(text: str, status: int) -> Response:
    return Response(text, status_code=status, media_type="text/plain; charset=utf-8")


def _swagger_dir() -> str | None:
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    path = getattr(swagger_ui_bundle, "swagger_ui_path", None)
    return str(path) if path and os.path.isdir(path) else None
