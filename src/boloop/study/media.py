"""Options that are pictures, sounds or videos: media files named by a column of a table.

Two ways to name them:

* a column of a CSV table of options whose every value is a file name with a media suffix
  (``.png``, ``.jpg``, ``.mp3``, ``.wav``, ``.mp4``...): the file beside the table;
* the ``media`` key of a JSON or TOML space file's inline ``candidates`` table,
  ``{column name: [one file name per row]}`` (TOML: ``media = { photo = ["a.jpg", ...] }``): the
  file beside the space file.

A name is a plain file name (no directory part, no leading dot), checked before anything is
read, so a space file cannot reach a file elsewhere. When the space file is read, the files are
read too and stored inside the space document (base64, under the table's ``media_files``), so a
study keeps its pictures in its own storage: the web page serves them from there only, never
from the disk. SVG is not accepted (it can carry scripts).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from typing import Any

from boloop.errors import InvalidInputError

__all__ = [
    "MEDIA_TYPES",
    "MAX_MEDIA_BYTES",
    "is_media_name",
    "embed_media",
    "media_index",
    "media_file",
    "media_of",
]

#: accepted suffixes and the MIME type they are served with
MEDIA_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".mp3": "audio/mpeg",
    ".wav": "audio/wav",
    ".ogg": "audio/ogg",
    ".flac": "audio/flac",
    ".mp4": "video/mp4",
    ".webm": "video/webm",
}
#: total size of the media files of one study (they live in its storage)
MAX_MEDIA_BYTES = 32 * 2**20


def is_media_name(value: Any) -> bool:
    """Whether ``value`` is a plain file name (no directory) with a media suffix."""
    if not isinstance(value, str):
        return False
    v = value.strip()
    return (
        bool(v)
        and os.path.splitext(v)[1].lower() in MEDIA_TYPES
        and "/" not in v
        and "\\" not in v
        and "\x00" not in v
        and not v.startswith(".")
    )


def _looks_like(suffix: str, data: bytes) -> bool:
    """Whether ``data`` begins as a file of ``suffix`` (a key of :data:`MEDIA_TYPES`) begins:
    its format's signature (the "magic number" every such file starts with); for a picture,
    the signature of any picture format."""
    riff = data[:4] == b"RIFF"
    checks = {
        ".png": data.startswith(b"\x89PNG\r\n\x1a\n"),
        ".jpg": data.startswith(b"\xff\xd8\xff"),
        ".jpeg": data.startswith(b"\xff\xd8\xff"),
        ".gif": data.startswith((b"GIF87a", b"GIF89a")),
        ".webp": riff and data[8:12] == b"WEBP",
        ".wav": riff and data[8:12] == b"WAVE",
        ".ogg": data.startswith(b"OggS"),
        # an ID3v2 tag before the FLAC stream is common (taggers write it; players skip it)
        ".flac": data.startswith((b"fLaC", b"ID3")),
        ".mp3": data.startswith(b"ID3") or (len(data) > 1 and data[0] == 0xFF and data[1] >= 0xE0),
        ".mp4": data[4:8] == b"ftyp",
        ".webm": data.startswith(b"\x1a\x45\xdf\xa3"),
    }
    if MEDIA_TYPES.get(suffix, "").startswith("image/"):
        # a browser shows a picture by its bytes, not its type: a PNG renamed .jpg is shown
        # (served as image/jpeg, nosniff and all); text named .png or a PNG named .mp3 is not
        return any(ok for s, ok in checks.items() if MEDIA_TYPES[s].startswith("image/"))
    return checks.get(suffix, True)


def embed_media(candidates: Mapping[str, Any], directory: str) -> dict[str, Any]:
    """``candidates`` with the bytes of its media files (read from ``directory``) added under
    ``media_files``: ``{file name: {"type": MIME, "base64": ...}}``."""
    out = dict(candidates)
    columns = out.get("media") or {}
    if not columns:
        return out
    if not isinstance(columns, Mapping):
        raise InvalidInputError("candidates 'media' must map a column name to file names")
    files: dict[str, dict[str, str]] = {}
    total = 0
    for col, names in columns.items():
        if isinstance(names, str) or not isinstance(names, list | tuple):
            raise InvalidInputError(f"media column {col!r} must be a list of file names")
        for raw in names:
            if not is_media_name(raw):  # checked before the disk is touched: no traversal
                raise InvalidInputError(
                    f"media column {col!r}: {raw!r} is not a plain file name (no directory, "
                    f"no leading dot) ending in one of {sorted(MEDIA_TYPES)}"
                )
            name = raw.strip()
            if name in files:
                continue
            path = os.path.join(directory, name)
            if not os.path.isfile(path):
                raise InvalidInputError(
                    f"media column {col!r} names {name!r}, which is not a file beside the table "
                    f"or space file (looked in {directory!r})"
                )
            with open(path, "rb") as fh:  # never more than the limit: a 5 GB video is refused
                data = fh.read(MAX_MEDIA_BYTES - total + 1)  # before it fills the memory
            total += len(data)
            if total > MAX_MEDIA_BYTES:
                raise InvalidInputError(
                    f"the media files of the table exceed {MAX_MEDIA_BYTES // 2**20} MB "
                    f"(at {name!r}, {os.path.getsize(path)} bytes)"
                )
            suffix = os.path.splitext(name)[1].lower()
            if not _looks_like(suffix, data):  # the page would show a broken picture
                start = f"begins with the bytes {data[:8].hex(' ')}" if data else "is empty"
                raise InvalidInputError(
                    f"media column {col!r}: {name!r} is not a {suffix[1:].upper()} file"
                    f"{' nor another picture' if MEDIA_TYPES[suffix].startswith('image/') else ''}"
                    " (it "
                    f"{start}); a file renamed to another suffix cannot be shown: save it in "
                    "that format"
                )
            files[name] = {
                "type": MEDIA_TYPES[suffix],
                "base64": base64.b64encode(data).decode("ascii"),
            }
    out["media_files"] = files
    return out


def check_media(candidates: Mapping[str, Any], n_rows: int) -> tuple[dict, dict] | None:
    """Validated ``(media, media_files)`` of a candidates table in normal form, or None."""
    media = candidates.get("media")
    files = candidates.get("media_files") or {}
    if not media:
        if files:
            raise InvalidInputError("candidates 'media_files' without a 'media' column")
        return None
    if not isinstance(media, Mapping):
        raise InvalidInputError("candidates 'media' must map a column name to file names")
    norm: dict[str, list[str]] = {}
    for col, names in media.items():
        if isinstance(names, str) or len(names) != n_rows:
            raise InvalidInputError(f"media column {col!r} must name one file per option")
        bad = [n for n in names if not is_media_name(n)]
        if bad:
            raise InvalidInputError(
                f"media column {col!r}: {bad[:3]} are not plain file names ending in one of "
                f"{sorted(MEDIA_TYPES)}"
            )
        norm[str(col)] = [str(n).strip() for n in names]
    if not isinstance(files, Mapping):
        raise InvalidInputError("candidates 'media_files' must be a table")
    out_files: dict[str, dict[str, str]] = {}
    for name, entry in files.items():
        if (
            not is_media_name(name)
            or not isinstance(entry, Mapping)
            or entry.get("type") not in MEDIA_TYPES.values()
            or not isinstance(entry.get("base64"), str)
        ):
            raise InvalidInputError(f"media file {name!r}: bad entry")
        out_files[str(name)] = {"type": str(entry["type"]), "base64": str(entry["base64"])}
    missing = sorted({n for names in norm.values() for n in names} - set(out_files))
    if missing:
        raise InvalidInputError(
            f"the media files {missing[:3]} are named but not stored with the space: name them "
            "in a space file (JSON, TOML or CSV) beside the files, which reads them"
        )
    return norm, out_files


def _files(config: Mapping[str, Any]) -> Mapping[str, Any]:
    space = config.get("space") or {}
    cand = space.get("candidates") or {}
    return cand.get("media_files") or {}


def media_index(config: Mapping[str, Any]) -> dict[str, str]:
    """``{file name: MIME type}`` of the media stored in a study's configuration."""
    return {name: entry["type"] for name, entry in _files(config).items()}


def media_file(config: Mapping[str, Any], name: str) -> tuple[str, bytes] | None:
    """``(MIME type, bytes)`` of one stored media file, or None if the study has no such file."""
    entry = _files(config).get(name)
    if entry is None:
        return None
    return entry["type"], base64.b64decode(entry["base64"])


def media_of(config: Mapping[str, Any]) -> dict[str, tuple[str, bytes]]:
    """Every stored media file: ``{file name: (MIME type, bytes)}``."""
    out = {}
    for name in _files(config):
        found = media_file(config, name)
        if found is not None:
            out[name] = found
    return out
