"""The layers of docs/architecture.md hold: every import inside ``boloop`` (module-level or lazy)
goes to the same layer or one above it, so there is no import cycle between layers and nothing
under ``algorithms/`` can reach a benchmark problem."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "boloop"

#: top to bottom; a module may import only from its own layer or the ones before it
LAYERS = [
    {"errors", "_validation", "_registry", "_user_code", "_blas", "_files", "__init__"},
    {"gp"},
    {"confidence"},
    {"spaces"},
    {"queries", "recommendations"},  # the policy contract
    {"algorithms"},
    {"metrics"},  # pure functions of values and masks: they import no problem
    {"problems"},
    {"simulate"},
    {"bench", "study"},
    {"web"},
    {"cli"},  # the cli/ package: the boloop command (bench, study, serve)
]


def _layer_of(parts: tuple[str, ...]) -> int:
    name = "cli" if parts[-1] == "cli" else parts[0]
    for i, layer in enumerate(LAYERS):
        if name in layer:
            return i
    raise AssertionError(f"boloop.{'.'.join(parts)} is in no layer; add it to LAYERS")


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
            out += [f"{node.module}.{a.name}" for a in node.names if node.module == "boloop"]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return [m for m in out if m.startswith("boloop.")]


def test_no_module_imports_a_layer_below_it() -> None:
    bad = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).with_suffix("").parts
        if rel == ("__init__",) or rel == ("__main__",):
            continue  # the package's lazy attribute table names every layer on purpose
        mine = _layer_of(rel)
        for mod in _imports(path):
            target = tuple(mod.split(".")[1:])
            if target and _layer_of(target) > mine:
                bad.append(f"{'/'.join(rel)}.py imports {mod}")
    assert not bad, "\n".join(sorted(bad))
