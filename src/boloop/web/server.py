"""Binding rules and the uvicorn runner of ``boloop serve``."""

from __future__ import annotations

import importlib
import ipaddress
import logging
import re
import secrets
import socket
from typing import Any
from urllib.parse import quote

from boloop.errors import InvalidInputError

__all__ = [
    "check_bind",
    "is_loopback",
    "login_link",
    "mask_access_log",
    "missing_web_packages",
    "serve",
    "server_urls",
    "web_extra_message",
    "MIN_TOKEN_CHARS",
    "checked_token",
]

logger = logging.getLogger("boloop")

#: shortest token accepted (a generated one has 32 characters)
MIN_TOKEN_CHARS = 8


#: the packages of the 'web' extra a server cannot run without, each with the modules that provide
#: it (python-multipart is ``python_multipart``, or ``multipart.multipart`` before 0.0.13, as
#: Starlette imports it: without it the server starts and every answer from a page fails).
#: swagger-ui-bundle is not here: without it ``/docs`` lists the API as a table instead.
WEB_PACKAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("fastapi", ("fastapi",)),
    ("uvicorn", ("uvicorn",)),
    ("jinja2", ("jinja2",)),
    ("python-multipart", ("python_multipart", "multipart.multipart")),
)


def missing_web_packages() -> list[str]:
    """The packages of the ``web`` extra that cannot be imported here (empty when it is
    installed). Checked before ``boloop serve`` prints anything, so that an installation without
    the extra gets one line naming it rather than a traceback after the server's address."""
    missing = []
    for package, modules in WEB_PACKAGES:
        for module in modules:
            try:
                importlib.import_module(module)
            except ImportError:
                continue
            break
        else:
            missing.append(package)
    return missing


def web_extra_message(missing: list[str]) -> str:
    """What to install, naming the missing packages."""
    verb = "is" if len(missing) == 1 else "are"
    return (
        f"boloop serve needs the 'web' extra ({', '.join(missing)} {verb} missing): "
        "pip install 'boloop[web]'"
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None)
        except OSError:
            return False
        return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def _lan_address() -> str | None:
    """This machine's address on the network its default route leads to (no packet is sent:
    connecting a UDP socket only picks the route), or None without one."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1 (RFC 5737): never a real host
            addr = str(s.getsockname()[0])
    except OSError:
        return None
    return None if addr.startswith(("127.", "0.")) else addr


def server_urls(host: str, port: int) -> tuple[str, list[str]]:
    """``(url, others)``: the URL to open on this machine, and the URLs a colleague on another
    machine may open (none for a loopback address).

    A wildcard address (``0.0.0.0``, ``::``) is where the server listens, not an address to
    open: this machine reaches it at 127.0.0.1, others by this machine's name or address."""
    wildcard = host.strip("[]") in ("0.0.0.0", "::", "")
    if not wildcard:
        return _url(host.strip("[]"), port), [] if is_loopback(host) else [_url(host, port)]
    local = _url("::1" if ":" in host else "127.0.0.1", port)
    others = [_url(socket.gethostname(), port)]
    lan = _lan_address()
    if lan is not None:
        others.append(_url(lan, port))
    return local, others


def login_link(base: str, token: str, next: str | None = None) -> str:
    """The link that logs a browser in on the server at ``base`` (``http://labpc:8000/``):
    ``http://labpc:8000/login?token=...``, the token percent-encoded (a generated one needs no
    encoding; a token given with ``--token`` may hold ``+``, ``&`` or ``#``); ``next``: the
    local path it then opens (default ``/``)."""
    link = f"{base.rstrip('/')}/login?token={quote(token, safe='')}"
    return link if next is None else f"{link}&next={quote(next, safe='/')}"


#: a ``token=`` query parameter's value in a request line; its name also with letters
#: percent-encoded (``tok%65n=``), which the server decodes to ``token`` too
_TOKEN_IN_QUERY = re.compile(
    r"([?&]" + "".join(f"(?:{c}|%{ord(c):02x})" for c in "token") + r"=)[^&#\s\"]*",
    re.IGNORECASE,
)


class _MaskToken(logging.Filter):
    """Rewrites a record's message and arguments so that a ``token=`` query value (a login
    link's token) reads ``token=***``. Never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = _TOKEN_IN_QUERY.sub(r"\1***", record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(
                _TOKEN_IN_QUERY.sub(r"\1***", a) if isinstance(a, str) else a for a in record.args
            )
        return True


def mask_access_log() -> None:
    """Mask login links' tokens in uvicorn's access log (logger ``uvicorn.access``, which prints
    every request line with its query string): ``GET /login?token=*** HTTP/1.1``. Idempotent.

    ``boloop serve`` runs uvicorn without an access log; this covers an app of
    :func:`boloop.web.create_app` run by one's own ``uvicorn`` command (access log on by
    default). Proxies in front of the server keep their own logs (see docs/web.md)."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, _MaskToken) for f in access.filters):
        access.addFilter(_MaskToken())


def checked_token(token: str | None, name: str = "token") -> str | None:
    """``token`` without the spaces around it (a token read from a file or a variable often
    ends in a newline; a login strips what is typed the same way), or None for no token.

    Refused (naming it ``name``): a token that is no string, is shorter than
    :data:`MIN_TOKEN_CHARS` once stripped (an empty one let nobody in), or has a character
    other than printable ASCII: a script sends it in a header (``Authorization: Bearer``),
    which the server reads as Latin-1, so any other character never matches there.
    """
    if token is None:
        return None
    if not isinstance(token, str):
        raise InvalidInputError(f"{name} must be a string, got {type(token).__name__}")
    token = token.strip()
    if len(token) < MIN_TOKEN_CHARS:
        raise InvalidInputError(
            f"{name} must have at least {MIN_TOKEN_CHARS} characters, got {len(token)}"
        )
    odd = sorted({c for c in token if not " " <= c <= "~"})
    if odd:
        raise InvalidInputError(
            f"{name} may hold printable ASCII characters only (it travels in an HTTP header), "
            f"not {', '.join(repr(c) for c in odd[:3])}"
        )
    return token


def check_bind(host: str, token: str | None) -> tuple[str | None, bool]:
    """The token to serve on ``host`` with: ``(token, generated)``.

    On a loopback address the token is optional. On any other address (the lab network) a
    server without a token would let anybody on the network answer and undo: a token is then
    generated (and must be shown to the user, as Jupyter does). A given token must have at
    least :data:`MIN_TOKEN_CHARS` characters.
    """
    if token is not None:
        return checked_token(token, "--token"), False
    if is_loopback(host):
        return None, False
    return secrets.token_urlsafe(24), True


def serve(
    storage: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    log_level: str = "warning",
    **app_options: Any,
) -> None:
    """Serve the studies of ``storage`` until interrupted (blocking).

    ``token`` must already have passed :func:`check_bind` (the CLI does that and prints it).
    """
    missing = missing_web_packages()
    if missing:
        raise ImportError(web_extra_message(missing))
    import uvicorn

    from boloop.study.storage import safe_url
    from boloop.web.app import create_app

    if token is None and not is_loopback(host):
        raise InvalidInputError(f"serving on {host!r} (not loopback) needs a token")
    app_options.setdefault("addresses", server_urls(host, port)[1])
    app = create_app(storage, token, **app_options)
    logger.info("boloop serve on %s:%s over %s", host, port, safe_url(app.state.storage_url))
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False)
