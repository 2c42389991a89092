"""Is a typed value far outside the values stored so far? (a question, never a refusal)

A person typing measurements makes one mistake more than any other: a misplaced decimal point
or a dropped digit (``7234`` for ``723.4``). The model would take such a value at its word and
bend around it until someone undoes it. Before a value is stored, the study page (and, after
storing, ``boloop study tell``) asks whether it is meant when it is far outside what was stored
before for the same output:

* at least :data:`MIN_ANSWERS` earlier values of the output, not all equal (without a spread
  there is no yardstick: a safe study's g often reads the same at every setting of the lowest
  level, and its next level's value is not a typo);
* where the earlier values and the new one all have the same sign (most measurements), the
  value is farther beyond their range on a log scale than a factor :data:`RATIO` and than
  :data:`SPREADS` times the range's own log width: hardnesses of 512-798 HV question 7234 and
  72.34 (a factor of ten) but not 2000; values that already span 1 to 1000 question nothing;
  a value near zero is not questioned when the values come within their own spread of zero;
  a value a few times beyond the range (a safe study's g one level up, as a rule) is not asked
  about, but growth is no exception: g near 0.011 at the lowest level and 0.1 one level up
  (a factor 8) is asked about;
* with mixed signs (the new value zero or of the other sign included), the value lies more than :data:`SPREADS` times their spread (max - min)
  beyond their range.

The question names the range, the factor and, where dividing or multiplying by a power of ten
brings the value into the range, that value ("723.4 would be inside it"). Nothing is refused:
a value the person confirms is stored as typed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["MIN_ANSWERS", "RATIO", "SPREADS", "unusual_value"]

#: earlier values of an output needed before a value is questioned
MIN_ANSWERS = 5
#: how many spreads (max - min of the earlier values; of their log10 magnitudes when they share
#: a sign) beyond their range makes a value far
SPREADS = 3.0
#: with one sign throughout, the least factor beyond the largest (or below the smallest)
#: magnitude that makes a value far
RATIO = 5.0


def unusual_value(value: float, earlier: Sequence[float], output: str = "the value") -> str | None:
    """The question to ask before storing ``value`` for ``output``, or None when it is not far
    outside the ``earlier`` values of that output (module docstring: the rule)."""
    v = float(value)
    prev = np.asarray([float(e) for e in earlier], dtype=np.float64)
    prev = prev[np.isfinite(prev)]
    if not math.isfinite(v) or prev.size < MIN_ANSWERS:
        return None
    lo, hi = float(prev.min()), float(prev.max())
    spread = hi - lo
    if spread <= 0.0:
        return None
    one_sign = bool(np.all(prev > 0) and v > 0) or bool(np.all(prev < 0) and v < 0)
    if one_sign:
        # on a log scale: a factor of RATIO beyond the range, or SPREADS times the range's own
        # (log) width where the values already span more than that
        mags = np.log10(np.abs(prev))
        m_lo, m_hi, m = float(mags.min()), float(mags.max()), math.log10(abs(v))
        reach = max(math.log10(RATIO), SPREADS * (m_hi - m_lo))
        if m > m_hi + reach:
            how = f"{10 ** (m - m_hi):.3g} times the largest"
        elif m < m_lo - reach and min(abs(lo), abs(hi)) > spread:
            # (values that come within their own spread of zero may well reach it: a value
            # near zero is then no slip)
            how = f"{10 ** (m_lo - m):.3g} times smaller than the smallest"
        else:
            return None
    elif lo - SPREADS * spread <= v <= hi + SPREADS * spread:
        return None
    else:
        side = "above" if v > hi else "below"
        how = f"{abs(v - (hi if v > hi else lo)) / spread:.3g} times their spread {side} them"
    text = (
        f"{v:g} for {output} is far outside the {prev.size} values stored so far for it "
        f"({lo:g} to {hi:g}): {how}. Check the measurement"
    )
    shifted = _power_of_ten_inside(v, lo, hi)
    if shifted is not None:
        text += f" (a misplaced decimal point? {shifted:g} would be inside that range)"
    return text + "."


def _power_of_ten_inside(v: float, lo: float, hi: float) -> float | None:
    """``v`` times the power of ten (``10**k``, ``k`` in -6..6, not 0) that brings it into
    ``[lo, hi]``, the smallest shift first; None if none does."""
    for k in sorted(range(-6, 7), key=abs):
        if k == 0:
            continue
        w = v * 10.0**k
        # round away the binary error of the shift (7234 * 0.1 = 723.4000000000001)
        w = float(f"{w:.12g}")
        if lo <= w <= hi:
            return w
    return None
