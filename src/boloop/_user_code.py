"""The code of a user's ``path/to/file.py`` beyond boloop (private): the file and the modules of
the user's own that it imports, transitively, named by one sha256 (:func:`fingerprint`).

*Which modules.* A module is the user's when the file it is loaded from lies outside the standard
library, outside ``site-packages``/``dist-packages`` (and the install paths of ``sys.prefix`` and
``sys.base_prefix``, :func:`sysconfig.get_paths`) and outside boloop's package (:func:`is_user_file`).
The modules of a file are read from its import statements (:func:`import_statements`: ``import
a.b``, ``from a import b``, relative ones in packages; at module level or inside functions, ``if``
and ``try`` blocks alike), resolved by the finders of ``sys.meta_path`` as the import system
resolves them but without importing anything, and followed through the user's modules so
found. The set so depends on the text of the code and on ``sys.path``, not on what a process
happened to import before (a worker that ran another problem's file first, the parent that
imported the problem's helper before the method's): every process computes the same set.
Imports by computed names (``importlib.import_module(name)``, ``__import__``, plugins) are not
seen, and the modules reached only through an installed package are not followed.

*Which bytes.* A module imported while :func:`recording_imports` is active (the import of a
user's file by :func:`boloop._registry.load_file_attribute`, a sweep's planning and runs) is
compiled from bytes read once, whose sha256 is kept (:func:`executed_sha256`): the bytes the
process executed, as for the named file. Any other module is hashed as it is on disk when the
fingerprint is taken (a module imported by the user's own code before, one not imported yet);
one already imported is then pinned, so that a later edit within the same process is seen as
stale (:attr:`Fingerprint.stale`).

*The value.* The named file's sha256 when it imports no module of the user's (what ``sha256sum
file.py`` prints, the value of the rows stored before modules were followed); otherwise the sha256
of the listing ``sha256sum`` prints for the file and its modules, one ``"<sha256>  <path>\\n"``
line per file, the path relative to the named file's folder (``/``-separated), lines sorted by
path: ``cd folder && sha256sum file.py helper.py pkg/__init__.py | LC_ALL=C sort -k 2 | sha256sum``.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.abc
import importlib.machinery
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

#: an import statement: (module as written, level of a relative import, names after ``import``
#: of a ``from`` import: submodules or attributes)
ImportStatement = tuple[str, int, tuple[str, ...]]

#: by resolved path: the sha256 of the bytes a user file or module was executed from in this
#: process and the import statements of those bytes (a forked process inherits it)
_EXECUTED: dict[str, tuple[str, tuple[ImportStatement, ...]]] = {}

#: by sha256 of a file's bytes: its import statements (disk reads parse each version once)
_PARSED: dict[str, tuple[ImportStatement, ...]] = {}


def import_statements(source: bytes, filename: str = "<file>") -> tuple[ImportStatement, ...]:
    """Every import statement of the Python ``source``, wherever it stands (module level, a
    function's body, an ``if`` or ``try`` block), in the order of the text; none when the text is
    no valid Python (a module never imported, say)."""
    try:
        tree = ast.parse(source, filename=filename)
    except (SyntaxError, ValueError):
        return ()
    found: list[ImportStatement] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, 0, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = tuple(a.name for a in node.names if a.name != "*")
            found.append((node.module or "", node.level, names))
    return tuple(found)


def record_executed(path: str | Path, source: bytes) -> str:
    """Note that this process executed the file at ``path`` from ``source``; its sha256."""
    sha = hashlib.sha256(source).hexdigest()
    _EXECUTED[str(Path(path).resolve())] = (sha, _parse(sha, source, str(path)))
    return sha


def executed_sha256(path: str | Path) -> str | None:
    """The sha256 of the bytes this process executed the file at ``path`` from (through
    :func:`record_executed`), or None."""
    entry = _EXECUTED.get(str(Path(path).expanduser().resolve()))
    return entry[0] if entry is not None else None


def _parse(sha: str, source: bytes, filename: str) -> tuple[ImportStatement, ...]:
    if sha not in _PARSED:
        _PARSED[sha] = import_statements(source, filename)
    return _PARSED[sha]


# -- which files are the user's ---------------------------------------------------------------------
@lru_cache(maxsize=1)
def _excluded_roots() -> tuple[Path, ...]:
    """The folders whose modules are not the user's: the standard library and the installed
    packages of this interpreter (its prefixes), the user's site-packages, boloop's package."""
    import site
    import sysconfig

    import boloop

    roots: set[str] = set()
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        base = {"base": prefix, "platbase": prefix}
        paths = sysconfig.get_paths(vars={**base, "installed_base": prefix,
                                          "installed_platbase": prefix})  # fmt: skip
        roots.update(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib"))
    with contextlib.suppress(Exception):  # absent in some embedded interpreters
        roots.update(site.getsitepackages())
    with contextlib.suppress(Exception):
        roots.add(site.getusersitepackages())
    roots.add(str(Path(boloop.__file__).parent))
    return tuple(Path(r).resolve() for r in roots if r)


def is_user_file(path: str | Path) -> bool:
    """Whether the module file at ``path`` is the user's own code: outside the standard library,
    the installed packages (any ``site-packages`` or ``dist-packages`` folder too) and boloop."""
    resolved = Path(path).resolve()
    if {"site-packages", "dist-packages"} & set(resolved.parts):
        return False
    return not any(resolved.is_relative_to(root) for root in _excluded_roots())


# -- recording the bytes executed -------------------------------------------------------------------
class _RecordingLoader(importlib.machinery.SourceFileLoader):
    """A source loader that compiles the bytes it read once, and records their sha256 (no
    bytecode cache: what runs is what was hashed)."""

    def get_code(self, fullname: str) -> Any:
        path = self.get_filename(fullname)
        source = self.get_data(path)
        record_executed(path, source)
        return self.source_to_code(source, path)


class _RecordingFinder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path`` while :func:`recording_imports` is active: asks the other
    finders, and gives a user's source module a :class:`_RecordingLoader`."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        spec = _find_spec(fullname, path, target)
        if (
            spec is not None
            and type(spec.loader) is importlib.machinery.SourceFileLoader
            and spec.origin
            and is_user_file(spec.origin)
        ):
            spec.loader = _RecordingLoader(fullname, spec.origin)
        return spec


_FINDER = _RecordingFinder()
_HOOK_LOCK = threading.Lock()
_HOOK_DEPTH = 0


@contextlib.contextmanager
def recording_imports() -> Iterator[None]:
    """While active (in any thread), a module of the user's own imported for the first time is
    compiled from bytes whose sha256 is kept (:func:`executed_sha256`). Reentrant; other
    modules import as usual."""
    global _HOOK_DEPTH
    _excluded_roots()  # its imports first: the finder must not import while it finds
    with _HOOK_LOCK:
        if _HOOK_DEPTH == 0:
            sys.meta_path.insert(0, _FINDER)
        _HOOK_DEPTH += 1
    try:
        yield
    finally:
        with _HOOK_LOCK:
            _HOOK_DEPTH -= 1
            if _HOOK_DEPTH == 0:
                with contextlib.suppress(ValueError):
                    sys.meta_path.remove(_FINDER)


def _find_spec(fullname: str, path: Any, target: Any = None) -> Any:
    """The spec the finders of ``sys.meta_path`` (but :data:`_FINDER`) give ``fullname``, as the
    import system asks them; nothing is imported."""
    for finder in list(sys.meta_path):
        find = getattr(finder, "find_spec", None)
        if finder is _FINDER or find is None:
            continue
        spec = find(fullname, path, target)
        if spec is not None:
            return spec
    return None


# -- the modules of a file --------------------------------------------------------------------------
@dataclass(frozen=True)
class _Found:
    #: the file the module is loaded from (None: built in, frozen, a namespace package)
    origin: str | None
    #: where its submodules are found (None: not a package)
    locations: list[str] | None


class _Resolver:
    """Module names to files, as this process would import them, without importing anything:
    a module already imported is the one the process has; another is what the finders give."""

    def __init__(self) -> None:
        self._found: dict[str, _Found | None] = {}

    def find(self, name: str) -> _Found | None:
        if name not in self._found:
            self._found[name] = self._find(name)
        return self._found[name]

    def _find(self, name: str) -> _Found | None:
        module = sys.modules.get(name)
        if module is not None:
            origin = getattr(module, "__file__", None)
            locations = getattr(module, "__path__", None)
            return _Found(
                str(origin) if origin else None,
                list(locations) if locations is not None else None,
            )
        parent, _, _ = name.rpartition(".")
        search = None
        if parent:
            found = self.find(parent)
            if found is None or found.locations is None:
                return None
            search = found.locations
        try:
            spec = _find_spec(name, search)
        except (ImportError, ValueError, AttributeError):
            return None
        if spec is None:
            return None
        origin = spec.origin if spec.has_location else None
        locations = spec.submodule_search_locations
        return _Found(origin, list(locations) if locations is not None else None)


def _imported_names(
    statement: ImportStatement, module: str | None, is_package: bool, resolver: _Resolver
) -> list[str]:
    """The modules an import statement of ``module`` executes: every package on the way to the
    module it names, and the names after ``from ... import`` that are submodules."""
    name, level, names = statement
    if level:
        if not module:  # a relative import in a file imported as a top-level module
            return []
        parts = module.split(".") if is_package else module.split(".")[:-1]
        if level - 1 > len(parts) - 1 or not parts:
            return []
        base = parts[: len(parts) - (level - 1)]
        name = ".".join([*base, name] if name else base)
    if not name:
        return []
    parts = name.split(".")
    out = [".".join(parts[: i + 1]) for i in range(len(parts))]
    found = resolver.find(name)
    if found is not None and found.locations is not None:
        out += [f"{name}.{sub}" for sub in names if resolver.find(f"{name}.{sub}") is not None]
    return out


@dataclass(frozen=True)
class Fingerprint:
    """The code of a user's file as this process runs it (see the module's docstring)."""

    #: the named file's sha256 when it imports no module of the user's, else the sha256 of the
    #: ``sha256sum`` listing of it and its modules; empty when the file cannot be read
    value: str
    #: the named file's sha256 alone (executed bytes, or on disk)
    file_sha256: str
    #: the user's modules it imports, by path relative to its folder, sorted
    modules: tuple[str, ...]
    #: the files among these (the named file's name too) that this process executed, or had
    #: imported, from other bytes than those on disk now
    stale: tuple[str, ...]


def fingerprint(path: str | Path) -> Fingerprint:
    """The :class:`Fingerprint` of the user's file at ``path`` and of the modules of the user's
    own it imports, transitively."""
    root = Path(path).expanduser().resolve()
    folder = root.parent
    resolver = _Resolver()
    hashes: dict[str, str] = {}
    stale: list[str] = []

    def rel(file: Path) -> str:
        try:
            return Path(os.path.relpath(file, folder)).as_posix()
        except ValueError:  # another drive (Windows): no relative path
            return file.as_posix()

    def read(file: Path, imported: bool) -> tuple[str, tuple[ImportStatement, ...]] | None:
        """(sha256, import statements) of the bytes the process runs of ``file``."""
        key = str(file)
        try:
            source = file.read_bytes()
        except OSError:
            source = None
        now = hashlib.sha256(source).hexdigest() if source is not None else None
        if key in _EXECUTED:
            sha, statements = _EXECUTED[key]
            if now != sha:
                stale.append(rel(file))
            return sha, statements
        if source is None or now is None:
            return None
        statements = _parse(now, source, key)
        if imported:  # the module the process has: a later edit within it is stale
            _EXECUTED[key] = (now, statements)
        return now, statements

    first = read(root, imported=False)
    if first is None:
        return Fingerprint("", "", (), ())
    queue: list[tuple[str | None, bool, tuple[ImportStatement, ...]]] = [(None, False, first[1])]
    seen: set[str] = set()
    while queue:
        module, is_package, statements = queue.pop()
        for statement in statements:
            for name in _imported_names(statement, module, is_package, resolver):
                if name in seen:
                    continue
                seen.add(name)
                found = resolver.find(name)
                if found is None or not found.origin or not os.path.isfile(found.origin):
                    continue
                file = Path(found.origin).resolve()
                if file == root or not is_user_file(file) or str(file) in hashes:
                    continue
                got = read(file, imported=name in sys.modules)
                if got is None:
                    continue
                hashes[str(file)] = got[0]
                if file.suffix == ".py":
                    queue.append((name, found.locations is not None, got[1]))
    modules = tuple(sorted(rel(Path(f)) for f in hashes))
    if not modules:
        return Fingerprint(first[0], first[0], (), tuple(stale))
    pairs = sorted([(root.name, first[0]), *((rel(Path(f)), s) for f, s in hashes.items())])
    listing = "".join(f"{sha}  {name}\n" for name, sha in pairs)
    value = hashlib.sha256(listing.encode()).hexdigest()
    return Fingerprint(value, first[0], modules, tuple(stale))
