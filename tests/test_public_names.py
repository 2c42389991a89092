"""Every name a module of boloop lists in ``__all__`` is there, so ``from module import *``
works (``boloop.algorithms.levelset`` listed ``LevelSetEstimate`` without importing it, and its
star import raised AttributeError). Run in a fresh interpreter: importing every module here
would hide the lazy imports other tests check."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import importlib, json, pkgutil
import boloop
found = {}
for info in pkgutil.walk_packages(boloop.__path__, "boloop."):
    if info.name.endswith("__main__"):
        continue
    module = importlib.import_module(info.name)
    listed = getattr(module, "__all__", None)
    if listed is not None:
        found[info.name] = {
            "missing": [n for n in listed if not hasattr(module, n)],
            "twice": sorted({n for n in listed if list(listed).count(n) > 1}),
        }
print(json.dumps(found))
"""


def test_every_name_a_module_lists_in_all_is_defined() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert "boloop.algorithms.levelset" in found and len(found) >= 10
    wrong = {name: v for name, v in found.items() if v["missing"] or v["twice"]}
    assert wrong == {}
