"""Pictures of a study as SVG text, drawn in pure Python (no plotting library, no network).

Shared by ``boloop serve`` (inline in the study page) and ``boloop study plot`` (files).
Public API, stable:

* :func:`progress_svg` -- how the study went, answer by answer: the running best value
  (``expert``: minimisation of f, the recommendation of COBOL's Alg. 1 is the evaluated point of
  lowest posterior mean), the measurements against the threshold ``h`` (``levelset``: how many
  measured points lie above the level, the F-score proxy a person can read without the truth),
  ``f`` and ``g`` against the safety limit (``safe``), and the cumulative wins of the options
  that won most, each in a colour it keeps from one drawing to the next (``preference``).
* :func:`model_svg` -- the current model over the space and the recommendation: a 1-D curve with
  its ``mean +- 2 std`` band, a 2-D heat map, or 1-D slices for more dimensions (through the
  recommendation; a level set's, a map, through the measurement nearest its threshold);
  evaluated points and labels; the level set's classes (``H_t``, ``L_t`` of eq. 3.1 of the
  randomized-straddle paper, and the points still undecided); the certified safe set of
  M-SafeOpt (Alg. 1, eq. 14) with its boundary; the preference options' win rates with 95 %
  Wilson intervals.
* :func:`pictures` -- ``{"progress": svg, "model": svg}``.

Everything is read through the study's public API (``history()``, ``recommend()``, ``space``,
``problem.settings``) and the policy's public read-only methods (``predict(X)`` of the level-set
policies, ``state()`` of the safe policies); a policy without them is drawn from its data alone.
Every text is XML-escaped, so a parameter named ``<script>`` is drawn as text.

The package's modules, each importing only those listed before it: ``svg`` (widths, layout,
number formats, ticks, colours, cells, the document and its ``<desc>``), ``panel`` (a plotting
area, its marks and key), ``reading`` (what is read of a study), ``growth`` (the safe set's
growth), ``preference`` (the preference family's progress and model), ``progress`` (the
progress picture), ``classes`` (a level-set map's classes), ``expert`` (the expert's g panel),
``safe`` (the safe set's model picture) and ``model`` (the model picture).
"""

from __future__ import annotations

from typing import Any

from boloop.algorithms.families import family_traits
from boloop.study.pictures.growth import growth_numbers, growth_svg, safe_growth
from boloop.study.pictures.model import model_svg
from boloop.study.pictures.progress import _progress_lead as _progress_lead
from boloop.study.pictures.progress import progress_svg
from boloop.study.pictures.reading import YLABEL_CHARS as YLABEL_CHARS
from boloop.study.pictures.svg import PANEL_H as PANEL_H
from boloop.study.pictures.svg import PHONE_WIDTH
from boloop.study.pictures.svg import WIDTH as WIDTH
from boloop.study.pictures.svg import _describe as _describe

__all__ = [
    "progress_svg",
    "model_svg",
    "growth_svg",
    "growth_numbers",
    "safe_growth",
    "pictures",
    "PHONE_WIDTH",
]


def pictures(study: Any, growth: bool = True, width: int = WIDTH) -> dict[str, str]:
    """``{"progress": progress_svg(study), "model": model_svg(study)}`` and, for the safe
    family unless ``growth=False``, ``"growth"``: :func:`growth_svg` (its first drawing replays
    the log, seconds for a long study whose method refits hyperparameters at every answer);
    all ``width`` units wide."""
    out = {"progress": progress_svg(study, width), "model": model_svg(study, width)}
    grows = growth and family_traits(study.family).growth_picture
    svg = growth_svg(study, width=width) if grows else None
    if svg is not None:
        out["growth"] = svg
    return out
