"""``boloop serve``: web pages where people answer a study's queries, and a JSON API.

Server-rendered HTML (works without JavaScript; a little plain JS adds keyboard shortcuts, the
safety-limit warning and live refresh) and a JSON API mirroring :class:`boloop.study.Study`.
Every asset is served by the package itself: the pages work offline, with no CDN.

.. code-block:: python

    from boloop.web import create_app
    app = create_app("sqlite:///lab.db", token="lab-s3cret-2026")  # an ASGI app (FastAPI)

Needs the ``web`` extra (``pip install 'boloop[web]'``: FastAPI, uvicorn, Jinja2,
python-multipart, swagger-ui-bundle; segno draws the share page's QR code, which the page does
without). The web layer knows no algorithm: it calls the study's
public API only (``ask``, ``tell``, ``undo``, ``history``, ``status``, ``export``) and
:mod:`boloop.study.pictures`. See ``docs/web.md``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app", "serve", "check_bind"]


def _missing(exc: ImportError) -> ImportError:
    return ImportError(
        f"boloop serve needs the 'web' extra ({exc.name} is missing): pip install 'boloop[web]'"
    )


def create_app(storage: str | None = None, token: str | None = None, **kwargs: Any) -> Any:
    """The ASGI application over the studies of ``storage`` (see :func:`boloop.web.app.create_app`)."""
    try:
        from boloop.web.app import create_app as _create
    except ImportError as exc:  # pragma: no cover - depends on the environment
        if exc.name and exc.name.split(".")[0] in ("fastapi", "starlette", "jinja2", "multipart"):
            raise _missing(exc) from exc
        raise
    return _create(storage, token, **kwargs)


def check_bind(host: str, token: str | None) -> tuple[str | None, bool]:
    """``(token, generated)`` for serving on ``host`` (see :func:`boloop.web.server.check_bind`)."""
    from boloop.web.server import check_bind as _check

    return _check(host, token)


def serve(*args: Any, **kwargs: Any) -> None:
    """Run the server (see :func:`boloop.web.server.serve`)."""
    from boloop.web.server import serve as _serve

    _serve(*args, **kwargs)
