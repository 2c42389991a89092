"""The pages of a ``boloop serve`` app's studies (:func:`study_routes`): the list of studies
with the form that creates one (``/``, ``POST /studies``), a study's page with its answer and
undo forms and the state its live refresh polls (``/studies/{name}``, ``.../tell``,
``.../undo``, ``.../state``), its pictures, exports and media files. What the page shows and the
forms do is worked out under the study's lock (:mod:`boloop.web.study_view`,
:mod:`boloop.web.answer_forms`); the page itself is drawn by :meth:`Site.study_page`.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from boloop.algorithms.families import family_traits
from boloop.algorithms.registry import FAMILY_DEFAULTS
from boloop.errors import (
    BoloopError,
    QueryStateError,
    StorageAccessError,
    StorageUnavailableError,
    StudyMovedError,
    UnknownIdError,
)
from boloop.study import Study
from boloop.study.media import media_file
from boloop.study.pictures import (
    PHONE_WIDTH,
    WIDTH,
    growth_numbers,
    growth_svg,
    model_svg,
    progress_svg,
)
from boloop.web.answer_forms import _refusal, _tell_form, _undo_form, _withdrawn_yours
from boloop.web.create_form import _create_field, _create_from_form, _method_choices
from boloop.web.json_api import _json
from boloop.web.paths import study_name
from boloop.web.site import Site, _same
from boloop.web.study_view import _answer_description, _answer_key, _answer_text, _state

__all__ = ["study_routes"]


def study_routes(site: Site) -> APIRouter:
    """``/`` and ``POST /studies`` (the list of studies, a new one), and ``/studies/{name}``
    with its forms, its poll, pictures, exports and media files."""
    router = APIRouter()
    # the site's parts the routes below use, by the names they use
    pool, senders, undoers = site.pool, site.senders, site.undoers
    render, study_page, study_rows = site.render, site.study_page, site.study_rows
    read_form, check_csrf, not_stored = site.read_form, site.check_csrf, site.not_stored
    sender_id, flash_sig, api_call = site.sender_id, site.flash_sig, site.api_call

    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
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

    @router.post("/studies", include_in_schema=False)
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

    @router.get("/studies/{name}", response_class=HTMLResponse, include_in_schema=False)
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

    @router.post("/studies/{name}/tell", include_in_schema=False)
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

    @router.get("/studies/{name}/tell", include_in_schema=False)
    @router.get("/studies/{name}/undo", include_in_schema=False)
    def study_form_get(name: str) -> Response:
        """A form's POST address asked with GET (a bookmark; the address of a refused answer's
        page in a browser without JavaScript, opened again): the study's page."""
        return RedirectResponse(f"/studies/{quote(study_name(name), safe='')}", status_code=303)

    @router.post("/studies/{name}/undo", include_in_schema=False)
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

    @router.get("/studies/{name}/state", include_in_schema=False)
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

    @router.get("/studies/{name}/pictures/growth-numbers", include_in_schema=False)
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

    @router.get("/studies/{name}/pictures/{which}.svg", include_in_schema=False)
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

    @router.get("/studies/{name}/export.{ext}", include_in_schema=False)
    def study_export(name: str, ext: str, withdrawn: bool = False) -> Response:
        """The history as a file; ``?withdrawn=1`` adds the withdrawn answers (an audit)."""
        name = study_name(name)
        if ext not in ("csv", "json"):
            raise HTTPException(404, "export as .csv or .json")
        text = api_call(name, lambda s: _export_text(s, ext, withdrawn))
        media = "text/csv" if ext == "csv" else "application/json"
        return Response(
            text,
            media_type=f"{media}; charset=utf-8",
            headers={"Content-Disposition": _attachment(name, ext)},
        )

    @router.get("/studies/{name}/media/{filename}", include_in_schema=False)
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

    return router


def _export_text(study: Study, ext: str, withdrawn: bool = False) -> str:
    with tempfile.TemporaryDirectory(prefix="boloop-export-") as tmp:
        path = os.path.join(tmp, f"history.{ext}")
        study.export(path, withdrawn=withdrawn)
        with open(path, encoding="utf-8", newline="") as fh:  # the file's bytes, as written
            return fh.read()


def _attachment(name: str, ext: str) -> str:
    """The ``Content-Disposition`` of a study's export: the study's name as the file's name,
    in ASCII for every browser (other letters as ``_``) and whole in RFC 6266's ``filename*``
    (UTF-8, percent-encoded), which browsers prefer. The header is Latin-1: a name such as
    ``Härte`` or ``硬度`` put in it as is made the export a 500."""
    ascii_name = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in name)
    if not ascii_name.strip("_"):
        ascii_name = "study"
    return (
        f'attachment; filename="{ascii_name}.{ext}"; '
        f"filename*=UTF-8''{quote(name, safe='')}.{ext}"
    )
