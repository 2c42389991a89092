"""boloop as a user outside the project has it: a wheel, not the source tree.

An editable install or ``PYTHONPATH=src`` hides what only an installed package shows: a template
or static file left out of the wheel, a module that reads a file relative to the repository, an
optional package imported eagerly, a command that needs an extra and ends in a traceback. The
wheel is built offline from a copy of the sources (``pip wheel --no-deps --no-build-isolation``:
no stale ``build/`` directory, no network), and what the package reads at run time is derived
from the source tree, never listed here.
"""

from __future__ import annotations

import csv
import email
import importlib.util
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import boloop
from boloop.bench.demo import DemoEntry, run_demo
from boloop.cli import main

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "boloop"

#: the import names of every optional dependency of pyproject's extras that a module of boloop
#: could import (the web, plot, dask, postgres, threads and toml extras, and the test oracles)
OPTIONAL_MODULES = (
    "fastapi",
    "starlette",
    "uvicorn",
    "jinja2",
    "python_multipart",
    "multipart",
    "swagger_ui_bundle",
    "matplotlib",
    "distributed",
    "dask",
    "psycopg",
    "threadpoolctl",
    "tomli",
    "sklearn",
    "cvxpy",
    "torch",
    "botorch",
)

pytestmark = pytest.mark.xdist_group("wheel")  # the wheel is built once per worker that runs these


def _package_files() -> set[str]:
    """Every file of the package in the source tree, as the wheel names it (``boloop/...``):
    modules, templates, static files, ``py.typed``. Caches of the interpreter are left out."""
    out = set()
    for path in PACKAGE.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            out.add(path.relative_to(PACKAGE.parent).as_posix())
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a clean copy of the sources (offline, the test environment's own
    setuptools)."""
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not installed: cannot build the wheel offline")
    tmp = tmp_path_factory.mktemp("wheel")
    tree = tmp / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, tree / name)
    shutil.copytree(
        ROOT / "src",
        tree / "src",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"),
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--quiet",
            "-w",
            str(tmp / "dist"),
            str(tree),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (whl,) = (tmp / "dist").glob("boloop-*.whl")
    return whl


def _metadata(whl: Path) -> email.message.Message:
    with zipfile.ZipFile(whl) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(z.read(name))


def test_the_wheel_holds_every_file_of_the_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    expected = _package_files()
    # the files read at run time besides the modules: templates, static files, py.typed
    data = {n for n in expected if not n.endswith(".py")}
    assert "boloop/py.typed" in data and any(n.startswith("boloop/web/templates/") for n in data)
    assert sorted(expected - names) == []
    # and nothing else: no tests, benchmarks or docs installed as top-level packages
    outside = {n for n in names if not n.startswith(("boloop/", "boloop-"))}
    assert sorted(outside) == []
    # the license the metadata names travels with the code
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE")
               for n in names), sorted(n for n in names if "dist-info" in n)  # fmt: skip


def test_the_wheel_metadata_names_the_command_the_extras_and_the_core(wheel: Path) -> None:
    meta = _metadata(wheel)
    assert meta["Name"] == "boloop" and meta["Version"] == boloop.__version__
    with zipfile.ZipFile(wheel) as z:
        entry = z.read(next(n for n in z.namelist() if n.endswith("entry_points.txt"))).decode()
    assert re.search(r"^boloop = boloop\.cli:main$", entry, re.M)
    core = sorted(
        re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].lower()
        for r in meta.get_all("Requires-Dist")
        if "extra ==" not in r
    )
    assert core == ["numpy", "scipy", "sqlalchemy"]
    # every extra a message of the package tells a user to install exists in the wheel
    extras = set(meta.get_all("Provides-Extra"))
    named = set()
    for path in PACKAGE.rglob("*.py"):
        for group in re.findall(r"boloop\[([a-z0-9_,-]+)\]", path.read_text()):
            named.update(group.split(","))
    assert {"web", "plot", "dask", "postgres"} <= named
    assert sorted(named - extras) == []


def test_the_unpacked_wheel_serves_every_page_from_its_own_files(
    wheel: Path, tmp_path: Path
) -> None:
    """The web pages (templates through Jinja's PackageLoader, /static, /docs) and a study's
    picture, from the wheel's files in a directory outside the repository."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    work = tmp_path / "work"
    work.mkdir()
    script = f"""
import sys
import boloop
assert boloop.__file__.startswith({str(site)!r}), boloop.__file__
from fastapi.testclient import TestClient
from boloop.study import create_study
from boloop.web import create_app
url = "sqlite:///{(work / "lab.db").as_posix()}"
space = {{"threshold": 0.5, "parameters": [{{"name": "t", "low": 0.0, "high": 1.0, "grid": 11}}]}}
study = create_study("coating", "randomized-straddle", space, storage=url, seed=0)
q = study.ask()
study.tell(q.id, 0.7)
client = TestClient(create_app(url))
for path in ("/", "/studies/coating", "/static/style.css", "/static/app.js",
             "/static/favicon.svg", "/docs", "/openapi.json", "/api/studies/coating"):
    r = client.get(path)
    print(path, r.status_code, len(r.content))
for path in ("/studies/coating/pictures/model.svg", "/studies/coating/pictures/progress.svg",
             "/studies/coating/export.csv"):
    r = client.get(path)
    print(path, r.status_code, len(r.content))
"""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=work,
        env={**_env_without_pythonpath(), "PYTHONPATH": str(site), "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    rows = [line.rsplit(" ", 2) for line in proc.stdout.splitlines()]
    assert len(rows) == 11
    assert [(path, code) for path, code, _ in rows if code != "200"] == []
    assert all(int(size) > 0 for _, _, size in rows)


def _env_without_pythonpath() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_importing_the_package_and_its_commands_imports_no_optional_package() -> None:
    """Every module but the web application itself (``web.app``, the studies it holds,
    ``web.pool``, what its routes share, ``web.site``, and its routes, ``web.login_pages``,
    ``web.study_pages``, ``web.json_api``: their job is FastAPI) imports without the extras: an
    extra is imported by the function that needs it."""
    script = f"""
import importlib, pkgutil, sys
import boloop
print("after import boloop:", sorted(m for m in {OPTIONAL_MODULES!r} if m in sys.modules))
for info in pkgutil.walk_packages(boloop.__path__, "boloop."):
    if info.name in ("boloop.__main__", "boloop.cli.__main__", "boloop.web.app",
                     "boloop.web.pool", "boloop.web.site", "boloop.web.login_pages",
                     "boloop.web.study_pages", "boloop.web.json_api"):
        continue
    importlib.import_module(info.name)
print("after every module:", sorted(m for m in {OPTIONAL_MODULES!r} if m in sys.modules))
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["after import boloop: []", "after every module: []"]


def test_python_dash_m_boloop_is_the_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "boloop", "--version"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"boloop {boloop.__version__}"


@pytest.mark.parametrize(
    "hidden, package",
    [
        (("uvicorn",), "uvicorn"),
        (("fastapi",), "fastapi"),
        (("python_multipart", "multipart", "multipart.multipart"), "python-multipart"),
    ],
)
def test_serve_without_the_web_extra_says_which_extra_in_one_line(
    hidden: tuple[str, ...],
    package: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import boloop.web.server

    def no_server(*args: object, **kwargs: object) -> None:
        raise AssertionError("the server was started without the web extra")

    monkeypatch.setattr(boloop.web.server, "serve", no_server)  # never bind a port here
    for name in hidden:  # as if the package were not installed
        monkeypatch.setitem(sys.modules, name, None)
    code = main(["serve", "--host", "0.0.0.0", "--port", "8799"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    # one line, before the address and a generated token would be printed
    assert len(err.strip().splitlines()) == 1, err
    assert package in err and "pip install 'boloop[web]'" in err
    assert "http://" not in err


def test_demo_without_matplotlib_prints_its_table_and_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # the core install: no plot extra
    entry = DemoEntry("levelset", "levelset/toy", ("toy-random",), 4, seeds="2", toy=True)
    text = run_demo(tmp_path / "demo", entries=[entry], jobs=1)
    assert "### levelset/toy" in text and "| toy-random | 2 | 4 |" in text
    assert "no plots" in text and "pip install 'boloop[plot]'" in text
    assert list((tmp_path / "demo").glob("*.png")) == []
    with open(tmp_path / "demo" / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 4
