"""A small id -> factory registry with discovery of the modules of a package (private), and the
one loader of a user's ``path/to/file.py:factory`` (problems and methods alike), which keeps the
sha256 of the bytes it executed (:func:`loaded_file_sha256`) and of the user's modules the file
imports (:mod:`boloop._user_code`: the bench names the code of a run by them)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from boloop.errors import UnknownIdError


@dataclass(frozen=True)
class Entry:
    id: str
    family: str
    description: str
    factory: Callable[..., Any]


class Registry:
    """Entries by id; the modules of ``package`` are imported once, on first lookup."""

    def __init__(self, what: str, package: str) -> None:
        self.what = what
        self.package = package
        self._entries: dict[Any, Entry] = {}
        self._discovered = False

    def register(
        self, id: str, family: str, description: str
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def deco(factory: Callable[..., Any]) -> Callable[..., Any]:
            self._entries[id] = Entry(id, family, description, factory)
            return factory

        return deco

    def discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True  # set first: a module may look itself up while it is imported
        try:
            pkg = importlib.import_module(self.package)
            for info in pkgutil.iter_modules(pkg.__path__):
                if not info.name.startswith("_") and info.name != "registry":
                    importlib.import_module(f"{self.package}.{info.name}")
        except BaseException:
            # a module that fails to import fails every lookup (not a silently partial registry)
            self._discovered = False
            raise

    def get(self, id: str) -> Entry:
        self.discover()
        if id not in self._entries:
            valid = ", ".join(sorted(self._entries))
            raise UnknownIdError(f"unknown {self.what} id {id!r}; valid ids: {valid}")
        return self._entries[id]

    def entries(self, family: str | None = None) -> list[Entry]:
        self.discover()
        return [e for _, e in sorted(self._entries.items()) if family in (None, e.family)]


def _parse_number(text: str) -> int | float | None:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return None


def parse_id_value(text: str) -> Any:
    """A value in an id (``name?key=value``) read as a literal: int, float, ``true``/``false``,
    ``none``/``null`` (None, as JSON's ``null`` in ``boloop study create --option``), numbers
    separated by commas (a list, for an option that takes a sequence: ``variances=1,4``), else
    the text."""
    if text.lower() in ("none", "null"):
        return None
    number = _parse_number(text)
    if number is not None:
        return number
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if "," in text:
        numbers = [_parse_number(part) for part in text.split(",")]
        if all(n is not None for n in numbers):
            return numbers
    return text


def split_id(text: str, what: str) -> tuple[str, dict[str, str]]:
    """Split ``"name?a=-2&b=x"`` into ``("name", {"a": "-2", "b": "x"})``, the values as written;
    ``what`` (``"problem"``, ``"method"``) names the id in the error for an option without ``=``
    or a name."""
    from boloop.errors import InvalidInputError

    name, _, query = text.partition("?")
    raw: dict[str, str] = {}
    if query:
        for part in query.split("&"):
            key, sep, value = part.partition("=")
            if not sep or not key:
                raise InvalidInputError(f"bad option {part!r} in {what} id {text!r}")
            raw[key] = value
    return name, raw


def check_new_id(text: str, what: str) -> None:
    """Refuse an id given for a new run or study whose options :func:`split_id` reads but a
    person did not mean: a ``?`` with nothing after it (``name?`` was a problem of its own,
    its runs made again beside those of ``name``) and an option given twice (the last value
    won). Ids already stored (a study's log, a results.csv) are read as they are."""
    from boloop.errors import InvalidInputError

    _, mark, query = text.partition("?")
    if mark and not query:
        raise InvalidInputError(f"{what} id {text!r} has a '?' and no option after it")
    keys = [part.partition("=")[0] for part in query.split("&")] if query else []
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise InvalidInputError(f"option {twice[0]!r} is given twice in {what} id {text!r}")


def is_file_id(text: str) -> bool:
    """Whether ``text`` (options after ``?`` aside) names a function in a Python file:
    ``path/to/file.py:name``."""
    name = text.partition("?")[0]
    path, sep, attr = name.rpartition(":")
    return bool(sep) and path.endswith(".py") and attr.isidentifier()


def file_module_name(path: str) -> str:
    """The module name under which the file at ``path`` is imported (one per absolute path)."""
    import hashlib

    resolved = Path(path).expanduser().resolve()
    return "boloop_user_" + hashlib.sha1(str(resolved).encode()).hexdigest()[:12]


def file_sha256(path: str | Path) -> str:
    """The sha256 (hex) of the bytes of the file at ``path`` now (what ``sha256sum`` prints)."""
    import hashlib

    return hashlib.sha256(Path(path).expanduser().read_bytes()).hexdigest()


def loaded_file_sha256(path: str | Path) -> str | None:
    """The sha256 (hex) of the bytes from which :func:`load_file_attribute` executed the file at
    ``path`` in this process (the code that runs when its factory is called), or None when this
    process has not imported it through that loader (nor as a module of a user's file, see
    :func:`boloop._user_code.recording_imports`)."""
    from boloop._user_code import executed_sha256

    return executed_sha256(path)


def error_place(exc: BaseException, path: str | Path | None = None, shown: str = "") -> str:
    """``"SyntaxError at file.py line 37: invalid syntax"``, ``"ValueError at ring.py line 41:
    ..."``: an exception raised by a user's code in one line, at the place in the user's own code
    (the last frame of its traceback in a user's file, :func:`boloop._user_code.is_user_file`,
    else its last frame), the file at ``path`` shown as ``shown``. The whole traceback stays
    on the exception (``boloop -v`` prints it)."""
    import traceback

    from boloop._user_code import is_user_file

    where: tuple[str, int | None] | None = None
    if isinstance(exc, SyntaxError) and exc.filename:
        where = (exc.filename, exc.lineno)
        message = exc.msg
    else:
        frames = traceback.extract_tb(exc.__traceback__)
        own = [f for f in frames if not f.filename.startswith("<") and is_user_file(f.filename)]
        if own or frames:
            frame = (own or frames)[-1]
            where = (frame.filename, frame.lineno)
        message = str(exc)
    place = ""
    if where is not None:
        file = where[0]
        if path is not None and Path(file).resolve() == Path(path).expanduser().resolve():
            file = shown or str(path)
        place = f" at {file}" + (f" line {where[1]}" if where[1] else "")
    return f"{type(exc).__name__}{place}: {message}"


def load_file_attribute(name: str, what: str) -> Callable[..., Any]:
    """The function ``attr`` of the Python file ``path`` in ``"path.py:attr"`` (options after
    ``?`` are ignored here); the file is imported once per process as a module named after its
    absolute path (:func:`file_module_name`), from bytes read once, whose sha256 is kept
    (:func:`loaded_file_sha256`); the modules of the user's own that it imports are recorded so
    too (:func:`boloop._user_code.recording_imports`); the file's folder is appended to
    ``sys.path`` (its helper modules import from any working directory). ``what`` (``"problem"``,
    ``"method"``) names the
    file in the errors: a file that does not exist, and a name that is not a function of it,
    are an :class:`~boloop.errors.InvalidInputError`, and so is an error the file raises while it
    is imported (a syntax error, an exception: one line with its place, :func:`error_place`; the
    exception is its ``__cause__``); boloop's own refusals raised by the file (an id registered
    twice) propagate as they are."""
    import importlib.util
    import sys

    from boloop._user_code import record_executed, recording_imports
    from boloop.errors import BoloopError, InvalidInputError

    path_text, _, attr = name.partition("?")[0].rpartition(":")
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise InvalidInputError(f"{what} file {path_text!r} does not exist")
    module_name = file_module_name(str(path))
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise InvalidInputError(f"cannot import {what} file {path_text!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        # the file's own folder is importable, as for `python path.py`: a helper module beside
        # it (`from helpers import kernel`) is found from any working directory, in every
        # process that loads the file (workers of --jobs, Dask). Appended, not first: a name
        # that resolves already keeps resolving as before.
        folder = str(path.parent)
        if folder not in sys.path:
            sys.path.append(folder)
        try:
            # the bytes hashed are the bytes executed (the file may change while it is read)
            source = path.read_bytes()
            with recording_imports():
                exec(compile(source, str(path), "exec", dont_inherit=True), module.__dict__)
        except BoloopError:  # boloop's own refusal (an id registered twice): one line already
            del sys.modules[module_name]
            raise
        except Exception as exc:  # the file's syntax error or exception: one line, not its trace
            del sys.modules[module_name]
            raise InvalidInputError(
                f"{what} file {path_text!r} does not import: {error_place(exc, path, path_text)}"
            ) from exc
        except BaseException:
            del sys.modules[module_name]
            raise
        record_executed(path, source)
    factory = getattr(module, attr, None)
    if not callable(factory):
        public = [n for n in vars(module) if not n.startswith("_") and callable(vars(module)[n])]
        found = f"its functions: {', '.join(public)}" if public else "it defines no function"
        raise InvalidInputError(f"{path_text!r} has no function {attr!r}; {found}")
    return factory
