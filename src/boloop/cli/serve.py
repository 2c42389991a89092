"""``boloop serve``: the command (its ``register(subparsers)`` is called by :mod:`boloop.cli`)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

__all__ = ["register"]


def _port(text: str) -> int:
    """``--port``: an integer 0-65535 (0: any free port); else argparse's one-line error (it
    was an OverflowError traceback from the socket's bind)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535, got {port}")
    return port


def _poll_seconds(text: str) -> float:
    """``--poll``: 0 (off) or seconds up to
    :data:`boloop.web.study_view.MAX_POLL_SECONDS`. NaN and infinity made
    every study page a 500 (the page's milliseconds are an int); a wait past the browser's
    setTimeout limit has every open page ask the server again at once, without end; a negative
    one was taken silently as off (0 is how to say it)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    from boloop.web.study_view import MAX_POLL_SECONDS

    if not 0.0 <= seconds <= MAX_POLL_SECONDS:  # NaN fails both comparisons
        raise argparse.ArgumentTypeError(
            f"seconds between checks must be 0 (off) to {MAX_POLL_SECONDS:g}, got {text!r}"
        )
    return seconds


def _cmd_serve(args: argparse.Namespace) -> int:
    from boloop.errors import MissingExtraError
    from boloop.web.server import (
        check_bind,
        login_link,
        missing_web_packages,
        serve,
        server_urls,
        web_extra_message,
    )

    missing = missing_web_packages()
    if missing:  # one line naming the extra, before the address and the token are printed
        raise MissingExtraError(web_extra_message(missing))
    if args.storage_check is not None:  # refused before the address is printed, not after
        from boloop.web.outage import checked_interval

        checked_interval(args.storage_check)
    if args.storage_answer is not None:
        from boloop.web.outage import checked_answer_limit

        checked_answer_limit(args.storage_answer)
    token = args.token if args.token is not None else os.environ.get("BOLOOP_TOKEN") or None
    token, generated = check_bind(args.host, token)
    url, others = server_urls(args.host, args.port)
    line = f"boloop serve: {url}"
    if others and others != [url]:
        line += f" on this machine; from another machine: {' or '.join(others)}"
    elif others:
        line += " (from this and other machines)"
    print(line, file=sys.stderr)
    if generated and token is not None:  # (a generated token is never None)
        print(
            f"boloop serve: {args.host} is not a loopback address, so every page and API call "
            f"needs this token (log in with it; API: 'Authorization: Bearer <token>'; a new one "
            f"is generated at every start: --token or $BOLOOP_TOKEN keeps one):\n"
            f"    {token}",
            file=sys.stderr,
        )
        if others:
            # as Jupyter does: links that log a browser in, for a colleague or a phone
            print(
                "boloop serve: or open a login link (it holds the token):\n"
                + "\n".join(f"    {login_link(o, token)}" for o in others)
                + "\nboloop serve: the share page shows it as a QR code for a phone's camera; "
                "open on this machine:\n"
                f"    {login_link(url, token, next='/share')}",
                file=sys.stderr,
            )
    elif token is not None:
        print(
            "boloop serve: every page and API call needs the token you gave (once logged in, "
            f"{url}share shows a login link and its QR code for a phone)",
            file=sys.stderr,
        )
    sys.stderr.flush()
    # -v logs everything; without it a server's warnings are still its log
    handler = None if args.verbose else _warnings_to_stderr()
    try:
        serve(
            args.storage,
            args.host,
            args.port,
            token,
            log_level="info" if args.verbose else "warning",
            poll_seconds=args.poll,
            **({} if args.storage_check is None else {"storage_check_seconds": args.storage_check}),
            **(
                {}
                if args.storage_answer is None
                else {"storage_answer_seconds": args.storage_answer}
            ),
        )
    finally:
        if handler is not None:
            logging.getLogger("boloop").removeHandler(handler)
    return 0


def _warnings_to_stderr() -> logging.Handler:
    """boloop's warnings on stderr while the server runs (the library is silent by default): a
    storage that cannot be reached at the start or later, one line per request that needed it."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger("boloop").addHandler(handler)
    return handler


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``serve`` to the ``boloop`` parser."""
    p = subparsers.add_parser(
        "serve",
        help="web pages where people answer the studies' queries, and a JSON API",
        description="Serve the studies of a storage: a page per study that shows the open query "
        "and takes the answer (click or key), and a JSON API (/api/studies, docs at /docs). "
        "Binds 127.0.0.1 by default; any other address needs a token (one is generated and "
        "printed if you give none). Needs the 'web' extra: pip install 'boloop[web]'.",
    )
    p.add_argument(
        "--storage",
        default=None,
        help="storage URL (default $BOLOOP_STORAGE or sqlite:///boloop.db)",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8000, help="port (default 8000)")
    p.add_argument(
        "--token",
        default=None,
        help="require this token for every page and API call (default $BOLOOP_TOKEN; generated "
        "when binding a non-loopback address)",
    )
    p.add_argument(
        "--poll",
        type=_poll_seconds,
        default=2.0,
        help="seconds between a page's checks for answers given elsewhere (default 2; 0: off)",
    )
    p.add_argument(
        "--storage-check",
        type=float,
        default=None,  # the app's (boloop.web.outage.STORAGE_CHECK_SECONDS, not imported here)
        metavar="SECONDS",
        help="a PostgreSQL storage: read it when nothing has for this many seconds, so that "
        "the log says when an outage begins and ends even with no page open (default 30; "
        "0: off)",
    )
    p.add_argument(
        "--storage-answer",
        type=float,
        default=None,  # the app's (boloop.web.outage.ANSWER_SECONDS, not imported here)
        metavar="SECONDS",
        help="a PostgreSQL storage: the longest wait for the database's answer; a page or API "
        "call whose read or write has had none for this long (a frozen server, a network that "
        "drops everything) answers 503 instead of waiting (default 10; 0: no limit)",
    )
    p.set_defaults(func=_cmd_serve, interrupt_message="boloop serve: stopped")
    return p
