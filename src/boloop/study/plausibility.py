"""Is a typed value far outside the values stored so far? (a question, never a refusal)

A person typing measurements makes one mistake more than any other: a misplaced decimal point
or a dropped digit (``7234`` for ``723.4``); then one keystroke of the digits: one typed twice,
left out, swapped with its neighbour, or a wrong key. The model would take such a value at its
word and bend around it until someone undoes it. Before a value is stored, the study page (and,
after storing, ``boloop study tell``) asks whether it is meant when it is far outside what was
stored before for the same output:

* at least :data:`MIN_ANSWERS` earlier values of the output, not all equal (without a spread
  there is no yardstick for how far is far: a safe study's g often reads the same at every
  setting of the lowest level, and its next level's value is not a typo; but a slip that gives
  exactly that value is asked about: **equal values**, below);
* where the earlier values and the new one all have the same sign (most measurements), the
  value is farther beyond their range on a log scale than a factor :data:`RATIO` and than
  :data:`SPREADS` times the range's own log width: hardnesses of 512-798 HV question 7234 and
  72.34 (a factor of ten) but not 2000; values that already span 1 to 1000 question nothing here;
  a value near zero is not questioned when the values come within their own spread of zero;
  a value a few times beyond the range (a safe study's g one level up, as a rule) is not asked
  about, but growth is no exception: g near 0.011 at the lowest level and 0.1 one level up
  (a factor 8) is asked about;
* with mixed signs (the new value zero or of the other sign included), the value lies more than :data:`SPREADS` times their spread (max - min)
  beyond their range.

The question names the range, the factor and, where dividing or multiplying by a power of ten
brings the value into the range, that value ("723.4 would be inside it"); where the setting is
known (below) and a slip brings the value near the prediction there, that slip instead (a digit
typed twice: ``10067.7`` is ``1067.7``, not ``1006.77``). Nothing is refused: a value the person
confirms is stored as typed.

**Where the value was measured.** Where values span decades or cross zero, a slipped decimal
point lands inside the range. When the caller also gives the setting of each earlier value and
of the new one (``at``, ``earlier_at``; the study passes its parameters) and the new setting
lies within the earlier ones on every axis (between their least and largest; a setting beyond
all of them, a safe study's next level of dose, has no yardstick), a value the range rule lets
through is also asked about when both

* it is far from what the earlier values predict at its setting: a GP regression (Matern-5/2,
  Rasmussen and Williams 2006, eq. 4.17; constant mean) on the earlier values of the output,
  of ``log10 |y|`` when they and the new value share a sign, the settings scaled to the unit
  cube per axis over the earlier ones; its lengthscale and noise ratio are chosen from
  :data:`LENGTHSCALES` x :data:`NOISE_RATIOS` by the leave-one-out predictive likelihood, and
  its signal variance is the one that makes the leave-one-out standardized residuals have mean
  square one (closed forms: Rasmussen and Williams 2006, Sec. 5.4.2, eq. 5.10-5.12), so the
  residual of the new value, ``z`` (in predictive standard deviations, the noise included),
  is calibrated on the earlier values themselves; far is ``|z|`` beyond the one-sided
  :data:`TAIL` quantile of Student's t with ``n - 1`` degrees of freedom (``n`` earlier
  values: 7.0 with 10 values, 4.5 with 40, towards 4.0), which keeps a model fitted on few
  values from asking on every answer;
* a slip explains it: a correction of the value lies within :data:`NEAR` predictive standard
  deviations of the prediction. The corrections (:data:`SLIPS`) are the value times ten or
  divided by ten (a misplaced decimal point; a shift of one on the log scale), with mixed
  signs the value with the other sign, and every single keystroke undone on the number as
  the person typed it (``typed``: the study passes the text, so ``0.50`` keeps the digit
  that ``0.5`` has lost and ``723,4`` its decimal comma; a number alone is edited as its
  shortest text): one digit deleted (a digit typed twice, or an extra digit), two adjacent
  different digits swapped, one digit replaced by another (a wrong key, any key: ``5.435``
  for ``0.435``), one digit inserted anywhere (a digit left out). The sign, the decimal mark
  and an exponent are left as typed (the decimal point is the first slip's business).

The question then names the prediction, ``z`` and the most probable correction, as the person
would type it ("a wrong key? 0.435 would be close to it"). Most probable: each slip of
:data:`SLIPS` is taken as likely as another, and each of its corrections as likely as another
(a sign slip has one correction, a decimal point two, a wrong key nine per digit), and the
predictive density at a correction (``exp(-z**2 / 2)``, ``z`` its distance from the prediction
in predictive standard deviations) weighs them; corrections giving the same value add up.
Several corrections of one keystroke land near the prediction by chance (``-0.2226`` typed for
``-2.226``: a wrong key gives ``-2.2226``), and the nearest one is then often not the value
meant; a correction at least half as probable as the first is named too ("...; or a wrong
key? -2.2226"). A digit left out is the exception: which digit cannot be told (ten digits fit
at each place), so it is named only when no other correction comes near, with the prediction
("a digit left out? about 0.436 would be expected here").

**Equal values.** Where the earlier values all read the same value ``c`` (a safe study's g at
its baseline, 0.05 at every setting, or a reading at a detection floor), no spread says how far
is far, and a value a few times ``c`` at a new setting may be real growth. The two rules above
are then silent; they are the limits of this one. The prediction rule's predictive standard
deviation goes to zero with the spread: every other value is far, and a correction is near
only when it is ``c`` itself. So a value is asked about when a slip turns it into exactly ``c``
("0.5 for g differs from the 8 values stored so far for it, which all read 0.05. Check the
measurement (a misplaced decimal point? 0.05 would match them)."), with the slips each rule
would use:

* at least :data:`MIN_ANSWERS` earlier values measured at the value's own setting all read
  ``c`` (a baseline measured again and again): every slip of :data:`SLIPS`, and the range
  rule with those repeats as its range (a factor beyond :data:`RATIO`: ``5`` after eighteen
  readings of ``0.05`` there), since at one setting no growth explains a step; this comes
  before the rules above (whatever the values at other settings);
* every earlier value reads ``c`` and the setting lies within the earlier ones on every axis
  (the prediction rule's domain): every slip of :data:`SLIPS`;
* every earlier value reads ``c`` and the setting lies beyond them (a safe study's next level)
  or is unknown: the decimal point and the sign only, the range rule's own hint: a tenfold
  step past values that lie close together is asked about (growth is no exception, above),
  a keystroke's step within a factor of a few is not (``0.06`` one level up is growth).

``c = 0`` asks nothing: no decimal point or sign gives zero, a wrong key turns every one-digit
value into it, and a reading of zero is often a floor (nothing detected). The question names
the first slip in the order of :data:`SLIPS` that gives ``c``, a digit left out too (the digit
is known: ``c``'s). (A newcomer's trial stored ``g = 0.5`` among eighteen readings of 0.05
at one setting with no question; a warning then read the slip as measurement noise.) Its cost:
readings rounded so coarsely that repeats agree exactly flip now and then, and a flip by one in
the last digit is a wrong key onto the others (``benchmarks/typo_catch.py``'s ``floor`` group,
two-digit readings at a detection limit: 1 clean answer of 840 newly asked about, 0.22 read
eight times and then 0.21; none on the library problems or the GP draws).

**What more corrections cost.** Each correction is one more way for a value that is truly far
from the prediction (a surprising measurement, not a typo) to look like a slip. The rule only
asks about values already far by ``z``; of those, it asks about the ones that some correction
brings near. A wrong key or a digit left out can land anywhere in a decade at the value's
leading digits, so a far value whose prediction lies within a factor of ten of it is often
explained: ``benchmarks/typo_catch.py --kinds`` counts the clean values far from the
prediction and how many of them each slip explains (on the library problems 30 of 36 were
asked about, 11 with the decimal point and sign alone: false questions 0.9% of the answers
instead of 0.3%; docs/studies.md gives the numbers). The slips add no threshold: the far test
and :data:`NEAR` are those chosen for the decimal point. At most
:data:`MAX_POINTS` earlier values nearest the setting are used (the check runs on every typed
value: about 1 ms of CPU with 40 earlier values, 9 ms with 150 or more, one thread). Measured with
``benchmarks/typo_catch.py`` (docs/studies.md gives the numbers).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

from boloop.errors import InvalidInputError
from boloop.gp.leave_one_out import fit_leave_one_out

__all__ = [
    "LENGTHSCALES",
    "MAX_POINTS",
    "MIN_ANSWERS",
    "NEAR",
    "NOISE_RATIOS",
    "RATIO",
    "SPREADS",
    "TAIL",
    "unusual_value",
]

#: earlier values of an output needed before a value is questioned
MIN_ANSWERS = 5
#: how many spreads (max - min of the earlier values; of their log10 magnitudes when they share
#: a sign) beyond their range makes a value far
SPREADS = 3.0
#: with one sign throughout, the least factor beyond the largest (or below the smallest)
#: magnitude that makes a value far
RATIO = 5.0
#: one-sided tail probability of Student's t beyond which a value is far from the prediction
TAIL = 3e-5
#: how close (predictive standard deviations) a slip's correction must come to the prediction
NEAR = 2.0
#: lengthscales tried, on the settings scaled to the unit cube per axis
LENGTHSCALES = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
#: noise variances tried, as fractions of the signal variance
NOISE_RATIOS = (1e-4, 1e-3, 1e-2, 0.1, 0.3)
#: earlier values (the nearest to the new value's setting) the prediction uses at most
MAX_POINTS = 150


def unusual_value(
    value: float,
    earlier: Sequence[float],
    output: str = "the value",
    *,
    at: Sequence[float] | None = None,
    earlier_at: Sequence[Sequence[float]] | None = None,
    typed: str | None = None,
) -> str | None:
    """The question to ask before storing ``value`` for ``output``, or None when it is not far
    outside the ``earlier`` values of that output (module docstring: the rule).

    ``at``: the setting the value was measured at, ``earlier_at``: one setting per earlier
    value (numbers, in the same order of axes); with both, a value far from what the earlier
    values predict at ``at`` is asked about too when a slip explains it (module docstring).
    ``typed``: the text the person typed for ``value`` (``"0.50"``, ``"723,4"``), whose
    keystrokes the slips edit; ignored unless it reads as ``value``, and without it the
    shortest text of ``value``."""
    v = float(value)
    every = np.asarray([float(e) for e in earlier], dtype=np.float64)
    prev = every[np.isfinite(every)]
    if not math.isfinite(v) or prev.size < MIN_ANSWERS:
        return None
    question = _outside_range(v, prev, output)
    setting = _known_settings(every, at, earlier_at)
    if setting is not None:
        # repeats at this very setting that all read the same (module docstring: equal values)
        x, points, known = setting
        repeated = _equal_repeats(v, every[known], points[known], x, output, typed)
        if repeated is not None:
            return repeated
    if question is None and prev.min() == prev.max():
        # every earlier value the same: a slip that gives exactly it explains the value; a
        # keystroke only where the setting lies within the earlier ones (module docstring)
        inside = setting is not None and _inside(setting[0], setting[1][setting[2]])
        slips = SLIPS if inside else tuple(s for s in SLIPS if s in ("point", "sign"))
        return _onto_equal(v, float(prev[0]), prev.size, output, typed, slips, "for it")
    if setting is None:
        return question
    x, points, known = setting
    if question is None:
        return _far_from_prediction(v, every[known], points[known], x, output, typed)
    # far outside the range: the prediction at the setting names the slip where one fits (a
    # power of ten into the range is the wrong value for a digit typed twice: 10067.7 is not
    # 1006.77 but 1067.7; a newcomer's trial)
    hint = _far_from_prediction(v, every[known], points[known], x, output, typed, hint_only=True)
    if hint is None:
        return question
    head = question.split(" (a misplaced decimal point?")[0].removesuffix(".")
    return f"{head} ({hint})."


def _known_settings(
    every: np.ndarray,
    at: Sequence[float] | None,
    earlier_at: Sequence[Sequence[float]] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(x, points, known)``: the new value's setting (d,), the earlier values' settings
    (n, d) and which earlier values have both a value and a setting (n,), or None where the
    setting is not given, has other axes or NaN, or fewer than :data:`MIN_ANSWERS` earlier
    values are known with theirs. Raises :class:`InvalidInputError` when ``earlier_at`` does
    not give one setting per earlier value."""
    if at is None or earlier_at is None:
        return None
    x = np.asarray(at, dtype=np.float64).reshape(-1)
    points = np.asarray(earlier_at, dtype=np.float64)
    if points.shape[:1] != every.shape:
        raise InvalidInputError(
            f"earlier_at needs one setting per earlier value ({every.size}), got {len(points)}"
        )
    points = points.reshape(every.size, -1)
    if points.shape[1] != x.size or not np.all(np.isfinite(x)):
        return None
    known = np.isfinite(every) & np.all(np.isfinite(points), axis=1)
    if np.count_nonzero(known) < MIN_ANSWERS:
        return None
    return x, points, known


def _inside(x: np.ndarray, points: np.ndarray) -> bool:
    """Does setting ``x`` (d,) lie within the ``points`` (n, d) on every axis (between their
    least and largest), at least one axis of which varies? (Beyond them, a safe study's next
    level, the earlier values are no yardstick; module docstring.)"""
    lo, hi = points.min(axis=0), points.max(axis=0)
    slack = 1e-9 * np.maximum(np.abs(lo), np.abs(hi))
    return bool(np.any(hi > lo) and np.all(x >= lo - slack) and np.all(x <= hi + slack))


def _equal_repeats(
    v: float,
    prev: np.ndarray,
    points: np.ndarray,
    x: np.ndarray,
    output: str,
    typed: str | None,
) -> str | None:
    """The question when at least :data:`MIN_ANSWERS` earlier values were measured at setting
    ``x`` itself, all of them the same value, and ``v`` differs from it: a slip of
    :data:`SLIPS` that gives exactly that value, or a factor beyond :data:`RATIO` (the range
    rule with the repeats as its range: at one setting no growth explains a step); else None
    (module docstring: equal values)."""
    same = np.all(np.isclose(points, x[None, :], rtol=1e-9, atol=0.0), axis=1)
    here = prev[same]
    if here.size < MIN_ANSWERS or here.min() != here.max() or v == here[0]:
        return None
    c = float(here[0])
    slip = _onto_equal(v, c, here.size, output, typed, SLIPS, "at this setting")
    if slip is not None or not c * v > 0.0:
        return slip
    step = math.log10(abs(v / c))
    if abs(step) <= math.log10(RATIO):
        return None
    how = f"{10**step:.3g} times" if step > 0 else f"{10**-step:.3g} times smaller than"
    return (
        f"{_typed_text(v, typed) or f'{v:g}'} for {output} is {how} what the {here.size} "
        f"values stored so far at this setting all read ({c:g}). Check the measurement."
    )


def _onto_equal(
    v: float, c: float, n: int, output: str, typed: str | None, slips: Sequence[str], where: str
) -> str | None:
    """The question when a correction of ``v`` by one of ``slips`` is exactly ``c``, the value
    all ``n`` earlier values (``where``: "at this setting", "for it") read; None when none is
    (or ``c`` is zero: a wrong key turns any one-digit value into 0, and a reading of zero is
    often a floor, nothing detected). Of several, the first slip in the order of
    :data:`SLIPS`."""
    if c == 0.0 or v == c:
        return None
    fits = [
        (SLIPS.index(slip), slip, text)
        for slip, w, text in _corrections(v, typed, slips)
        if math.isclose(w, c, rel_tol=1e-9, abs_tol=0.0)
    ]
    if not fits:
        return None
    _, slip, text = min(fits)
    return (
        f"{_typed_text(v, typed) or f'{v:g}'} for {output} differs from the {n} values stored "
        f"so far {where}, which all read {c:g}. Check the measurement ({_NAMES[slip]}? "
        f"{text} would match them)."
    )


def _outside_range(v: float, prev: np.ndarray, output: str) -> str | None:
    """The range rule's question (module docstring), or None."""
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


#: the slips whose corrections may explain a value far from the prediction, in the order a tie
#: (two slips giving the same corrected value) is named in (module docstring)
SLIPS = ("point", "sign", "twice", "swapped", "key", "extra", "dropped")
#: how each slip is named in the question
_NAMES = {
    "point": "a misplaced decimal point",
    "sign": "a sign slip",
    "twice": "a digit typed twice",
    "swapped": "two digits swapped",
    "key": "a wrong key",
    "extra": "an extra digit",
    "dropped": "a digit left out",
}
#: a number as typed: sign, digits with one decimal mark (point or comma), an exponent
_NUMBER = re.compile(r"([+-]?)(\d*[.,]?\d*)([eE][+-]?\d+)?")
#: longest mantissa edited (a longer text is no number a person typed)
_MAX_DIGITS = 24


def _typed_text(v: float, typed: str | None) -> str | None:
    """``typed``, stripped, when it reads as ``v`` (a decimal comma read as a point), else
    None: the text the person typed for ``v``, where the caller has it."""
    if typed is None:
        return None
    text = typed.strip()
    try:
        return text if float(text.replace(",", ".")) == v else None
    except ValueError:
        return None


def _as_typed(v: float, typed: str | None) -> str:
    """The text ``v`` was typed as (:func:`_typed_text`), else the shortest text that reads as
    ``v`` (``repr``, without a trailing ``.0``)."""
    text = _typed_text(v, typed)
    if text is not None:
        return text
    text = repr(v)
    return text[:-2] if text.endswith(".0") else text


def _shortest(w: float, like: str) -> str:
    """The shortest text that reads as ``w`` (every digit, not ``%g``'s six) written as ``like``
    is: with its decimal comma, and with an exponent only where it has one (``1,5e-05`` is no
    number :func:`~boloop.study.answers.read_number` reads)."""
    if "e" in like.lower():
        text = repr(w)
        text = text[:-2] if text.endswith(".0") else text
    else:
        text = np.format_float_positional(w, unique=True, trim="-")
    return text.replace(".", ",") if "," in like else text


def _tidy(mantissa: str) -> str:
    """An edited mantissa as a person writes it: no leading zeros, ``0`` before a bare mark."""
    m = mantissa.lstrip("0")
    return "0" + m if not m or m[0] in ".," else m


def _keystroke_edits(text: str) -> list[tuple[str, str]]:
    """The single-keystroke corrections of the number ``text`` (module docstring), as
    (slip, corrected text): each digit of the mantissa deleted (``twice`` when a neighbour is the
    same digit, else ``extra``), two adjacent different digits swapped (``swapped``), each digit
    replaced by another (``key``), and each digit inserted at each place (``dropped``); the sign,
    the decimal mark and an exponent are kept. Empty for a text that is no plain number."""
    match = _NUMBER.fullmatch(text)
    if match is None or not any(c.isdigit() for c in match.group(2)):
        return []
    sign, m, exp = match.group(1), match.group(2), match.group(3) or ""
    if len(m) > _MAX_DIGITS:
        return []
    digits = [i for i, c in enumerate(m) if c.isdigit()]
    out: list[tuple[str, str]] = []
    for i in digits:
        twice = any(0 <= j < len(m) and m[j] == m[i] for j in (i - 1, i + 1))
        out.append(("twice" if twice else "extra", m[:i] + m[i + 1 :]))
        if i + 1 < len(m) and m[i + 1].isdigit() and m[i + 1] != m[i]:
            out.append(("swapped", m[:i] + m[i + 1] + m[i] + m[i + 2 :]))
        out.extend(("key", m[:i] + d + m[i + 1 :]) for d in "0123456789" if d != m[i])
    for g in range(len(m) + 1):
        out.extend(("dropped", m[:g] + d + m[g:]) for d in "0123456789")
    return [
        (slip, sign + _tidy(edited) + exp)
        for slip, edited in out
        if any(c.isdigit() for c in edited)
    ]


def _corrections(v: float, typed: str | None, slips: Sequence[str]) -> list[tuple[str, float, str]]:
    """The corrections of ``v`` by the ``slips`` (module docstring), as (slip, corrected value,
    its text): ten times and a tenth of it (``point``), the other sign (``sign``), and the
    single-keystroke edits of the text it was typed as (``typed`` where the caller has it)."""
    out: list[tuple[str, float, str]] = []
    text = _as_typed(v, typed)
    # the text as typed: the decimal point's and the sign's corrections keep its every digit
    # and its decimal mark; a number alone is named as ever (``%g``)
    given = _typed_text(v, typed) is not None
    if "point" in slips:
        # (rounding away the binary error of the shift: 7234 * 0.1 = 723.4000000000001)
        for w in (v / 10.0, v * 10.0):
            w = float(f"{w:.12g}")
            out.append(("point", w, _shortest(w, text) if given else f"{w:g}"))
    if "sign" in slips:
        flipped = text[1:] if text[:1] == "-" else "-" + text.lstrip("+")
        out.append(("sign", -v, flipped if given else f"{-v:g}"))
    for slip, edited in _keystroke_edits(text):
        if slip in slips:
            w = float(edited.replace(",", "."))
            if w != v:
                out.append((slip, w, edited))
    return out


def _about(value: float) -> str:
    """``value`` to three significant digits as a person reads it: without an exponent between
    1e-4 and 1e7 (a prediction of 1099.6 HV is "1100", not "1.1e+03"), ``%g``'s beyond."""
    if 1e-4 <= abs(value) < 1e7:
        return str(
            np.format_float_positional(value, precision=3, unique=False, fractional=False, trim="-")
        )
    return f"{value:.3g}"


def _t_quantile(p: float, dof: int) -> float:
    """The upper ``p`` quantile of Student's t with ``dof`` degrees of freedom."""
    from scipy.special import stdtrit

    return float(stdtrit(dof, 1.0 - p))


def _far_from_prediction(
    v: float,
    prev: np.ndarray,
    points: np.ndarray,
    x: np.ndarray,
    output: str,
    typed: str | None = None,
    *,
    hint_only: bool = False,
) -> str | None:
    """The question when ``v`` is far from the GP prediction of the earlier values at ``x`` and
    a slip explains it (module docstring), or None. ``points``: (n, d), ``x``: (d,).
    ``hint_only``: the value is known to be far (outside the range): no test of ``z``, and only
    the hint is returned ("at this setting the values stored so far predict about 1070: a
    digit typed twice? 1067.7 would be close to it"), None when no slip fits."""
    one_sign = bool(np.all(prev > 0) and v > 0) or bool(np.all(prev < 0) and v < 0)
    if one_sign:
        t = np.log10(np.abs(prev))
        tv = math.log10(abs(v))
    else:
        t, tv = prev, v
    lo, hi = points.min(axis=0), points.max(axis=0)
    slack = 1e-9 * np.maximum(np.abs(lo), np.abs(hi))
    if np.any(x < lo - slack) or np.any(x > hi + slack):
        return None  # a setting beyond every earlier one (a safe study's next level): no yardstick
    axes = hi > lo
    if not np.any(axes):
        return None  # one setting throughout: the range rule is all there is
    U = (points[:, axes] - lo[axes]) / (hi[axes] - lo[axes])
    u = (x[axes] - lo[axes]) / (hi[axes] - lo[axes])
    used = f"{U.shape[0]}"
    if U.shape[0] > MAX_POINTS:
        nearest = np.argsort(((U - u) ** 2).sum(axis=1), kind="stable")[:MAX_POINTS]
        U, t = U[nearest], t[nearest]
        used = f"{MAX_POINTS} nearest of the {prev.size}"
    gp = fit_leave_one_out(U, t, LENGTHSCALES, NOISE_RATIOS)
    if gp is None:
        return None
    expected, pred_sd = gp.predict(u)
    n = t.size
    z = (tv - expected) / pred_sd
    if not hint_only and abs(z) <= _t_quantile(TAIL, n - 1):
        return None
    # the corrections that come close to the prediction: (slip, value, text, weight), the
    # weight the predictive density there over the slip's number of corrections (module
    # docstring: each slip as likely as another, each of its corrections as likely as another)
    corrections = _corrections(v, typed, SLIPS)
    per_slip = Counter(slip for slip, _, _ in corrections)
    near = []
    for slip, w, text in corrections:
        if one_sign and not w * v > 0.0:
            continue  # (modelled on log10 |y|: a correction must keep the sign, and not be 0)
        zw = abs(((math.log10(abs(w)) if one_sign else w) - expected) / pred_sd)
        if zw < NEAR:
            near.append((slip, w, text, math.exp(-0.5 * zw * zw) / per_slip[slip]))
    if not near:
        return None
    if one_sign:
        expected = math.copysign(10.0**expected, v)
    head = (
        f"{_typed_text(v, typed) or f'{v:g}'} for {output} is far from what "
        f"the {used} values stored so far predict at this setting (about {_about(expected)}; "
        f"{abs(z):.3g} standard deviations off). "
    )
    named = [c for c in near if c[0] != "dropped"]
    context = f"at this setting the values stored so far predict about {_about(expected)}: "
    if not named:
        # which digit was left out cannot be told: the prediction is what can be said
        if hint_only:
            return context + f"{_NAMES['dropped']}?"
        return head + (
            f"Check the measurement ({_NAMES['dropped']}? about {_about(expected)} would be "
            "expected here)."
        )
    # the corrections' values by probability (corrections giving the same value add up), each
    # named by the first of its slips in the order of SLIPS
    weight: dict[float, float] = defaultdict(float)
    first_slip: dict[float, tuple[int, str, str]] = {}
    for slip, w, text, p in named:
        weight[w] += p
        key = (SLIPS.index(slip), slip, text)
        first_slip[w] = min(first_slip.get(w, key), key)
    values = sorted(weight, key=lambda w: (-weight[w], first_slip[w]))
    _, slip, text = first_slip[values[0]]
    said = f"{_NAMES[slip]}? {text} would be close to it"
    if len(values) > 1 and weight[values[1]] >= 0.5 * weight[values[0]]:
        _, slip, text = first_slip[values[1]]
        said += f"; or {_NAMES[slip]}? {text}"
    if hint_only:
        return context + said
    return head + f"Check the measurement ({said})."
