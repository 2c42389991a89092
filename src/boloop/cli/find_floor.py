"""``boloop study try NAME --find-floor``: the smallest ``min_lengthscale_g`` under which a
stuck safe study would certify more with its answers (:meth:`Study.find_floor_g
<boloop.study.core.Study.find_floor_g>`, :mod:`boloop.study.floor_search`), in words: each
trial on stderr as it ends (a trial replays the answers: about a second at 40 of them), then
per model of g what it finds and the command that goes on with it."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from boloop.study.core import Study

__all__ = ["find_floor", "floor_in_units"]


def find_floor(name: str, storage: str | None, as_json: bool) -> int:
    """Run the search on study ``name`` of ``storage`` and print it (``as_json``: its dict)."""
    from boloop.cli.study import load_study
    from boloop.study.floor_search import monotone_axis

    study = load_study(name, storage=storage)
    units = study.units()
    axis = monotone_axis(study)
    unit = f" {units[axis]}" if units.get(axis) else ""
    last = [time.perf_counter()]

    def said(options: Mapping[str, Any], more: bool, rec: Mapping[str, Any]) -> None:
        words = ", ".join(f"{k}={json.dumps(v)}" for k, v in options.items())
        verdict = (
            f"certifies {axis} up to {_highest(rec)}{unit}" if more else "certifies nothing more"
        )
        now = time.perf_counter()
        print(f"  tried {words}: {verdict} ({now - last[0]:.1f} s)", file=sys.stderr, flush=True)
        last[0] = now

    print(
        f"study {study.name!r}: trying min_lengthscale_g on copies of its {study.n_answered} "
        "answers (nothing stored)...",
        file=sys.stderr,
        flush=True,
    )
    found = study.find_floor_g(progress=said)
    if as_json:
        print(json.dumps(found, default=str))
        return 0
    now = found["now"]
    lines = [
        f"study {study.name!r}, {found['answers']} answers, certifies {axis} up to "
        f"{_highest(now)}{unit} now. Nothing was stored.",
    ]
    own = found["own_floor"]
    if own is not None:
        lines.append(
            f"  its own min_lengthscale_g {_floor_words(study, own)} is kept wherever it is "
            "larger than the value tried"
        )
    continued = study.continued_as()
    if continued:
        lines.append(
            f"  it was continued already as {', '.join(map(repr, continued))}: the commands "
            "below make another continuation"
        )
    for model in found["models"]:
        label = (
            f"without g's trend along {axis} (trend_g=false)"
            if model["options"].get("trend_g") is False
            else "g's model as the study has it"
        )
        hit = model["found"]
        if hit is None:
            lines.append(f"  {label}: no min_lengthscale_g up to 1 certifies more")
            continue
        rec = hit["recommendation"]
        rows = sum(
            float(a) > float(b) for a, b in zip(rec["boundary_s"], now["boundary_s"], strict=True)
        )
        value = hit["options"].get("min_lengthscale_g")
        floor = (
            ("with its own min_lengthscale_g" if own is not None else "without a floor")
            if model["floor"] is None
            else f"with min_lengthscale_g {_floor_words(study, value)}"
        )
        lines += [
            f"  {label}, {floor}: certifies {axis} up to {_highest(rec)}{unit} "
            f"(higher on {rows} of {len(rec['boundary_s'])} rows)",
            f"    to go on so: {hit['continue_command']}",
        ]
    lines.append(
        "A floor is an assumption about g that the answers do not show: where g changes faster "
        "than over that fraction of a parameter's range, the method can propose settings above "
        "the limit. Use it only if you know g is that smooth."
    )
    print("\n".join(lines))
    return 0


def _floor_words(study: Study, value: float | Sequence[float]) -> str:
    """``= 0.4 (16 mg of dose, 9.6 h of timing)`` for a floor (one value, or one per axis)."""
    shown = f"{value:g}" if isinstance(value, int | float) else ", ".join(f"{v:g}" for v in value)
    return f"= {shown}{floor_in_units(study, value)}"


def floor_in_units(study: Study, value: float | Sequence[float]) -> str:
    """A ``min_lengthscale_g`` as the lengths it means on each parameter of the study's space
    file (`` (16 mg of dose, 9.6 h of timing)``); ``value``: one fraction for every parameter,
    or one per axis in the method's order (the monotone parameter first); "" where the space
    gives no ranges."""
    params = {
        str(p["name"]): p
        for p in (study.config.get("space") or {}).get("parameters") or []
        if isinstance(p, Mapping) and "low" in p and "high" in p
    }
    space = getattr(study.policy, "space", None)
    names = list(getattr(space, "names", None) or params)  # the method's axes, monotone first
    units = study.units()
    parts = []
    for j, pname in enumerate(names):
        p = params.get(pname)
        if p is None:
            continue
        frac = float(value) if isinstance(value, int | float) else float(value[j])
        length = frac * (float(p["high"]) - float(p["low"]))
        unit = f" {units[pname]}" if units.get(pname) else ""
        parts.append(f"{length:.3g}{unit} of {pname}")
    return f" ({', '.join(parts)})" if parts else ""


def _highest(rec: Mapping[str, Any]) -> str:
    """The highest certified level of a safe recommendation, as values are printed."""
    return f"{max(float(v) for v in rec['boundary_s']):g}"
