"""What the web app reads from a request's path: the study's name in it (kept percent-encoded
for the router by :class:`EncodedStudyNames`, decoded by :func:`study_name`), whether it answers
in JSON, whether it is a study page's answer or undo form, and a same-site path to go to after a
login. No FastAPI here: the ASGI wrapper is plain ASGI. Used by :mod:`boloop.web.app`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

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


def _wants_json(path: str) -> bool:
    """The API, the OpenAPI document and a study page's poll (``/studies/{name}/state``) answer
    in JSON; every other path is a page."""
    if path.startswith("/api/") or path == "/openapi.json":
        return True
    parts = path.split("/")  # the name segment is still percent-encoded (EncodedStudyNames)
    return len(parts) == 4 and parts[1] == "studies" and parts[3] == "state"


def _study_form_path(path: str) -> tuple[str, str] | None:
    """``("/studies/<name>", "tell" | "undo")`` for the path of a study page's answer or undo
    form (the name still percent-encoded, :class:`EncodedStudyNames`), else None."""
    parts = path.split("/")
    if len(parts) == 4 and parts[1] == "studies" and parts[2] and parts[3] in ("tell", "undo"):
        return "/".join(parts[:3]), parts[3]
    return None


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
