"""The JSON API of a ``boloop serve`` app (:func:`api_routes`): ``/api/studies`` (the list),
``/api/studies/{name}`` (a study's status) and its ``ask``, ``tell``, ``undo`` and ``history``,
mirroring :class:`boloop.study.Study`; documented in the app's OpenAPI document (``/docs``). A
token server needs ``Authorization: Bearer <token>`` (the app's guard checks it). Every answer
is plain JSON (:func:`jsonable`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from boloop.errors import AnswerTypeError, NoMoreQueriesError, QueryStateError
from boloop.study import Study
from boloop.study.answers import read_json
from boloop.web.answer_forms import _tell_conflict
from boloop.web.paths import study_name
from boloop.web.site import Site
from boloop.web.study_view import _query_json

__all__ = ["api_routes", "jsonable"]


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
    """An answer through the API. A key it does not know is refused (a 400 naming it): a
    client's ``notes`` for ``note`` was dropped silently, the answer stored without it."""

    model_config = ConfigDict(extra="forbid")

    query_id: int = Field(description="the id of the open query (from ask)")
    answer: Any = Field(
        description="accept/reject or true/false (label), a/b or 0/1 (compare), a number or "
        '{"f": 1.2, "g": 0.3} (evaluate); the same grammar as the CLI'
    )
    note: str | None = Field(
        default=None, description="free text stored with the answer, never read by the method"
    )


async def _no_key_twice(request: Request) -> None:
    """Refuse (400) a JSON body that names a key twice (``{"answer": 0.1, "answer": 0.9}``, or
    twice in the answer's own object): JSON's readers keep the last value silently, and it was
    stored, as a typed answer naming an output twice no longer is
    (:func:`boloop.study.answers.read_json`). A body that is no JSON is FastAPI's own 422."""
    try:
        read_json((await request.body()).decode("utf-8"))
    except AnswerTypeError as exc:
        raise HTTPException(400, f"the request's JSON: {exc}; nothing was stored") from None
    except ValueError:  # no JSON (or not UTF-8): FastAPI says so
        pass


def api_routes(site: Site) -> APIRouter:
    """The API's routes, each documented in the OpenAPI document."""
    router = APIRouter()
    # the site's parts the routes below use, by the names they use
    api_call, study_rows = site.api_call, site.study_rows

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

    @router.get("/api/studies", **api, summary="List the studies")
    def api_list() -> JSONResponse:
        return _json(study_rows())

    @router.get("/api/studies/{name}", **api, summary="Status of a study")
    def api_status(name: str) -> JSONResponse:
        name = study_name(name)
        return _json(api_call(name, lambda s: s.status()))

    @router.post(
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

    @router.post(
        "/api/studies/{name}/tell",
        **{
            **api,
            "dependencies": [*api["dependencies"], Depends(_no_key_twice)],
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

    @router.post("/api/studies/{name}/undo", **api, summary="Withdraw the last answer")
    def api_undo(name: str) -> JSONResponse:
        name = study_name(name)
        return _json(api_call(name, lambda s: {"withdrawn": s.undo()}))

    @router.get("/api/studies/{name}/history", **api, summary="Answers in effect")
    def api_history(name: str) -> JSONResponse:
        name = study_name(name)
        return _json(api_call(name, lambda s: s.history()))

    return router
