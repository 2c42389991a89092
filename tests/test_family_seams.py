"""Studies, their pictures, the web pages and the command name no family: what differs per family
is declared in ``boloop.algorithms.families`` (``docs/architecture.md``, "What a family
declares"), so that a new family need not edit ``study/``, ``web/`` or ``cli/``. This walks their
code and templates for a comparison of a family with one of the families' names."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import boloop
from boloop.algorithms.families import FAMILY_TRAITS

SRC = Path(boloop.__file__).resolve().parent
LAYERS = ("study", "web", "cli")


def _names(node: ast.AST) -> set[str]:
    """The family names a comparison's side holds: a string, or a tuple/list/set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & set(FAMILY_TRAITS)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return set().union(*(_names(e) for e in node.elts)) if node.elts else set()
    return set()


def _branches_on_a_family(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        named = set().union(*(_names(s) for s in sides))
        says_family = any(
            (isinstance(s, ast.Attribute) and s.attr == "family")
            or (isinstance(s, ast.Name) and s.id in ("family", "fam"))
            or (isinstance(s, ast.Subscript) and ast.unparse(s.slice) == "'family'")
            for s in sides
        )
        if named and says_family:
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_walk_finds_a_branch_on_a_family_name():
    code = 'if study.family == "levelset": pass\nif st["family"] in ("safe",): pass\n'
    assert [line for line, _ in _branches_on_a_family(ast.parse(code))] == [1, 2]
    assert _branches_on_a_family(ast.parse('if study.family == given: pass\n')) == []


def test_study_web_and_cli_code_names_no_family():
    found = []
    for layer in LAYERS:
        for path in sorted((SRC / layer).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            found += [f"{path.relative_to(SRC)}:{n}: {t}" for n, t in _branches_on_a_family(tree)]
    assert found == [], "declare it in algorithms/families.py instead:\n" + "\n".join(found)


def test_the_web_templates_name_no_family():
    names = "|".join(map(re.escape, FAMILY_TRAITS))
    pattern = re.compile(rf"family\s*(==|!=|in)\s*[\(\[]?\s*['\"]({names})['\"]")
    found = [
        f"{path.name}: {m.group(0)}"
        for path in sorted((SRC / "web" / "templates").glob("*.html"))
        for m in pattern.finditer(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def _contract_members() -> set[str]:
    """The public names of the policy contract (``BasePolicy``), optional members included."""
    from boloop.queries import BasePolicy

    class Nothing(BasePolicy):
        def _propose(self):  # type: ignore[no-untyped-def]
            raise NotImplementedError

        def _observe(self, query, answer):  # type: ignore[no-untyped-def]
            raise NotImplementedError

        def recommend(self):  # type: ignore[no-untyped-def]
            return None

    built = vars(Nothing(0))  # the instance attributes __init__ sets
    return {n for n in set(dir(BasePolicy)) | set(built) if not n.startswith("_")}


def _duck_typed_reads(tree: ast.AST, members: set[str]) -> list[tuple[int, str]]:
    """``getattr(x, "name", ...)`` / ``hasattr(x, "name")`` of a contract member's name."""
    return [
        (node.lineno, ast.unparse(node))
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value in members
    ]


def test_the_walk_finds_a_duck_typed_read_of_a_contract_member():
    members = _contract_members()
    assert {"predict", "horizon", "certified", "over_limit", "add_labels"} <= members
    code = 'h = getattr(policy, "horizon", None)\nok = hasattr(p, "certified")\nx = getattr(q, "x")\n'
    assert [line for line, _ in _duck_typed_reads(ast.parse(code), members)] == [1, 2]


def test_study_web_and_cli_read_the_policy_through_its_contract():
    """What a study reads of a method is a declared member of ``BasePolicy`` (with a neutral
    default), never a name guessed with getattr/hasattr: a new family overrides members."""
    members = _contract_members()
    found = []
    for layer in LAYERS:
        for path in sorted((SRC / layer).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            found += [f"{path.relative_to(SRC)}:{n}: {t}" for n, t in _duck_typed_reads(tree, members)]
    assert found == [], "read it as a member of BasePolicy instead:\n" + "\n".join(found)
