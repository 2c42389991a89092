"""A text file written whole or not at all (:func:`replaced_when_written`)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from typing import IO

__all__ = ["replaced_when_written"]


@contextlib.contextmanager
def replaced_when_written(
    path: str | os.PathLike[str], newline: str | None = ""
) -> Iterator[IO[str]]:
    """A UTF-8 text file to write ``path``'s new content to: written beside it and renamed onto
    it when the block ends without an error, so that a write that fails (a full disk, a text
    that cannot be encoded) leaves no half-written file and a file that was there stays as it
    was. A link is written through (the file it names is replaced, the link stays), and a file
    that was there keeps its permissions (a new one gets the usual ones). ``newline`` as for
    :func:`open` (``""``: the ``csv`` module's own line ends)."""
    target = os.path.realpath(path)
    part = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{os.getpid()}.part")
    try:
        with open(part, "w", encoding="utf-8", newline=newline) as fh:
            yield fh
        if os.path.exists(target):
            shutil.copymode(target, part)
        os.replace(part, target)
    finally:
        if os.path.exists(part):
            os.unlink(part)
