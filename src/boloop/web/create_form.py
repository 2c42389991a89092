"""The index page's form that creates a study: the methods it offers, its options parsed
(JSON or ``key=value`` pairs), the uploaded space file and the files beside it written to a
temporary directory for :func:`boloop.study.create_study`, and the field an error is shown
next to. Used by :mod:`boloop.web.app`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any

from boloop.errors import InvalidInputError
from boloop.study import Study, create_study


def _method_choices() -> list[tuple[str, str]]:
    """``(family, method id)`` of every method, for the create form's select (a family's
    default method is marked there from :data:`FAMILY_DEFAULTS`)."""
    from boloop.algorithms import list_methods

    return sorted({(m.family, m.id) for m in list_methods()})


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
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
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
        except (ValueError, RecursionError):
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
    except InvalidInputError as exc:  # about the files: named as uploaded, not where they were
        text = str(exc)
        if tmp not in text:
            raise
        raise InvalidInputError(text.replace(tmp + os.sep, "").replace(tmp, "")) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
