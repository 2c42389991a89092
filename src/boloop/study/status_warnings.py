"""What a study's status warns about, in words: a measured value over a safety limit (and what
the method does next), repeated measurements that contradict a fixed noise variance (and the one
answer that makes most of their scatter), a method that is stuck; and the one command that
continues the study with every option these warnings suggest (:meth:`Study.status
<boloop.study.core.Study.status>`'s ``warnings``, ``over_limit_next``, ``noise``, ``stuck``,
``continue_command``).

:class:`StudyWarnings` is a mixin of :class:`~boloop.study.core.Study`, as
:class:`~boloop.study.replay.StudyReplay` and :class:`~boloop.study.snapshots.StudySnapshots`
are: it works on the study's own state and reads, never changes, it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from boloop.errors import BoloopError
from boloop.spaces import SafeSpace, Space, format_value, params_text
from boloop.study.log import utc_words
from boloop.study.measured import Measured, limit_label
from boloop.study.replay import continue_command

if TYPE_CHECKING:
    from boloop.queries import BasePolicy
    from boloop.study.sqlite_log import SQLiteLog
    from boloop.study.storage import StorageBackend

__all__ = ["StudyWarnings"]


def _suggested(options: Mapping[str, float]) -> str:
    """Options a warning suggests as a command's ``--option KEY=VALUE`` words."""
    return "".join(f" --option {k}={v:g}" for k, v in options.items())


def _as_typed(v: Any) -> str:
    """A parameter value for a command line: as people write it (``100``, not ``100.0``) where
    that is the same number, else every digit (a grid value such as 183.333333333333)."""
    short = format_value(v)
    try:
        return short if float(short) == float(v) else repr(float(v))
    except (TypeError, ValueError):
        return str(v)


class StudyWarnings:
    """The warnings of :class:`~boloop.study.core.Study`'s status, in words (a mixin: it works on
    the study's own state). What it needs from the study is declared below (annotations only: no
    attribute is created here)."""

    # set by Study.__init__ and Study._set_problem
    name: str
    space: Space
    _storage: StorageBackend | SQLiteLog
    # the live policy (StudyReplay)
    _policy: BasePolicy
    # hooks of the host: Study (parameter names, units, what is measured, the history's rows)
    _named: Callable[[Any], Any]
    _params: Callable[[Any], dict[str, float]]
    _rows_in_effect: Callable[[], list[dict[str, Any]]]
    units: Callable[[], dict[str, str]]
    measured: Callable[[], list[Measured]]

    if TYPE_CHECKING:  # declared for the checker only, as the annotations above

        @property
        def storage_url(self) -> str:
            """Study's property: the storage's URL."""
            ...

        @property
        def n_answered(self) -> int:
            """Study's property: answers and measurements in effect."""
            ...

    def over_limit_alarms(self) -> list[str]:
        """Every measured value above the safety limit so far, in the words of
        :meth:`status`'s warnings, read from the live policy (no copy, no replay): what
        ``boloop study tell`` and ``add`` print when an answer adds one. ``[]`` for a method
        without a safety limit."""
        alarms = self._policy.over_limit()
        return self._over_limit({"over_limit": alarms}) if alarms else []

    def _over_limit(self, described: Mapping[str, Any]) -> list[str]:
        """Measured values over a safety limit that the method reported
        (``describe()["over_limit"]``, issue 18), each with its parameters: the alarms of a
        status's ``warnings`` (a stuck method, :meth:`_stuck`, is the other kind). An answer to
        one of the method's queries means the model had certified a setting that was not safe;
        a measurement the user added (:meth:`add`; the policy's entry has no query, id -1, as
        every measurement it did not propose) was never certified, and is said to be theirs."""
        out = []
        lowest = None
        if isinstance(self.space, SafeSpace):
            lowest = float(self.space.s_values[0])
        g = limit_label(self.measured())  # "toxicity (g, AU)" where the space names g
        for e in described.get("over_limit") or []:
            point = np.asarray(e["point"], dtype=np.float64)
            named = self._named(point)
            where = params_text(named, self.units()) if isinstance(named, dict) else named
            ours = e["query"] is None or int(e["query"]) < 0
            said = (
                f"your measurement at {where}: {g} = {e['g']:.4g} is above the limit "
                f"h = {e['h']:.4g}"
                if ours
                else f"query {e['query']}: measured {g} = {e['g']:.4g} above the limit "
                f"h = {e['h']:.4g} at {where}"
            )
            if lowest is not None and float(point[0]) == lowest:
                # the paper's S_0: the lowest level is assumed safe, so it stays allowed
                out.append(
                    f"{said}, the lowest {self.space.names[0]}, which the safe methods assume "
                    "safe (they start there): the method may still propose settings at that "
                    "level; check the process and the limit before going on"
                )
            elif ours:
                out.append(
                    f"{said}; the model now takes it into account and no longer certifies that "
                    "setting or higher ones"
                )
            else:
                out.append(
                    f"{said}: the model had certified it (or the process drifted); the method no "
                    "longer certifies that setting or higher ones and has become more cautious"
                )
        return out

    def _after_over_limit(self, described: Mapping[str, Any]) -> str | None:
        """What the method does after a measured g above the limit and what to check before
        measuring again, in words (a status's ``over_limit_next``); None when no value is over.
        Only says what the method does (M-SafeOpt's certified set, eq. 14: a setting whose
        measured g exceeds h, and every higher level of the monotone parameter at its other
        values, is no longer certified); it changes nothing."""
        entries = described.get("over_limit") or []
        if not entries:
            return None
        mono = self.space.names[0] if isinstance(self.space, SafeSpace) else None
        lowest = float(self.space.s_values[0]) if isinstance(self.space, SafeSpace) else None
        others = ", ".join(self.space.names[1:])
        higher = f", nor a higher {mono} with the same {others}" if mono else ", nor higher ones"
        check = (
            "Before you measure it, check that value (typed right? the instrument? did the "
            "process change?) and that the limit is the right one; if the value was a mistake "
            "and is the last answer, undo it and store the right one."
        )
        if lowest is not None and all(
            float(np.asarray(e["point"], dtype=np.float64)[0]) == lowest for e in entries
        ):
            return (
                f"What happens next: the method assumes the lowest {mono} is safe and may still "
                f"propose settings there. {check}"
            )
        return (
            "What happens next: the next query is a setting the model now believes is below "
            f"the limit; the method will not propose that setting again{higher}. " + check
        )

    def _suggested_options(
        self, described: Mapping[str, Any], continued: Sequence[str] = ()
    ) -> dict[str, float]:
        """The options the status's warnings suggest going on with: for a stuck method of a
        study not continued yet, ``min_lengthscale_g``
        (:meth:`_stuck`), and each fixed noise variance that repeated measurements contradict
        (its value at two significant digits, :meth:`_noise_warnings`)."""
        out: dict[str, float] = {}
        stall = described.get("stall")
        if isinstance(stall, Mapping) and stall.get("message") and not continued:
            floor = stall.get("suggested_min_lengthscale_g")
            if floor is not None:
                out["min_lengthscale_g"] = float(floor)
        for output, c in sorted((described.get("noise_check") or {}).items()):
            if isinstance(c, Mapping):
                out[str(c.get("option") or f"noise_{output}")] = float(f"{c['suggested']:.2g}")
        return out

    def _continue_with(self, options: Mapping[str, float]) -> str:
        """The command that continues the study with all its answers and ``options``."""
        return f"{continue_command(self.name, self._storage)}{_suggested(options)}"

    def _try_with(self, options: Mapping[str, float]) -> str:
        """The command that tries ``options`` on the study's answers, storing nothing
        (:meth:`try_options`)."""
        return self._try_command(_suggested(options))

    def _find_floor_command(self) -> str:
        """The command that searches the smallest ``min_lengthscale_g`` certifying more with the
        study's answers (:meth:`find_floor_g`), storing nothing."""
        return self._try_command(" --find-floor")

    def _try_command(self, words: str) -> str:
        """``boloop study try NAME`` with the storage option where needed, then ``words``."""
        import shlex

        from boloop.study.replay import storage_option

        where = storage_option(self.storage_url)
        return f"boloop study try {shlex.quote(self.name)}{where}{words}"

    def _also(self, own: str, suggested: Mapping[str, float] | None) -> str:
        """What the one command carries besides a warning's own option ``own``, in words ("" when
        it carries that option alone)."""
        others = [k for k in suggested or {} if k != own]
        if not others:
            return ""
        said = ", ".join(
            f"{k} = {suggested[k]:g}, from "  # type: ignore[index]
            + ("the warning that the certified set no longer grows" if k == "min_lengthscale_g" else
               "the warning about repeated measurements")
            for k in others
        )  # fmt: skip
        return (
            "one command for every option the warnings here suggest, so that no advice is lost "
            f"whichever you follow: it also sets {said}"
        )

    def _noise_outliers(self, described: Mapping[str, Any]) -> dict[str, Any]:
        """Per output whose repeated measurements contradict its fixed noise variance
        (``describe()["noise_check"]``), the one answer that makes most of that scatter
        (:func:`boloop.study.scatter.one_answer_scatter`), where one does."""
        from boloop.study.scatter import one_answer_scatter

        checked = sorted((described.get("noise_check") or {}).items())
        if not checked:
            return {}
        rows = self._rows_in_effect()
        out = {}
        for output, c in checked:
            if isinstance(c, Mapping):
                one = one_answer_scatter(rows, output, float(c["assumed"]), int(c["df"]))
                if one is not None:
                    out[output] = one
        return out

    def _noise_warnings(
        self,
        described: Mapping[str, Any],
        suggested: Mapping[str, float] | None = None,
        together: str | None = None,
        outliers: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """A fixed noise variance that repeated measurements contradict
        (``describe()["noise_check"]``, :mod:`boloop.gp.repeats`), in words, with the command
        that continues the study with the variance the repeats support: ``together`` (the
        command of :meth:`status` carrying every option ``suggested`` by its warnings) when
        given, else one with this option alone. Where one answer makes most of the scatter
        (``outliers``, :meth:`_noise_outliers`; a slip among readings that agree), the warning
        names it and says to check it, and undo it if it was a mistake, before the noise."""
        out = []
        checked = sorted((described.get("noise_check") or {}).items())
        if outliers is None:
            outliers = self._noise_outliers(described)
        # the space file's names (the side effect, the hardness) where it gives them
        measured = {m.output or "value": m for m in self.measured()} if checked else {}
        for output, c in checked:
            if not isinstance(c, Mapping):
                continue
            option = str(c.get("option") or f"noise_{output}")
            m = measured.get(output)
            what = m.noun() if m is not None else output
            if what == "the value":
                what = "the measured value"
            value = float(f"{c['suggested']:.2g}")
            cost = f" ({c['cost']})" if c.get("cost") else ""
            command = together or self._continue_with({option: value})
            text = (
                f"Repeated measurements of {what} at the same setting scatter more than "
                f"{option} = {c['assumed']:.3g} allows (a standard "
                f"deviation of {math.sqrt(c['assumed']):.3g}): at {c['settings']} setting"
                f"{'s' if c['settings'] != 1 else ''} measured more than once their standard "
                f"deviation is {math.sqrt(c['variance']):.3g} ({c['df']} repeats; so much scatter "
                "has a chance below 1 in 1,000 under the assumed noise). "
            )
            one = outliers.get(output)
            trusts = f"the model trusts each measurement of {what} too much{cost}"
            if one is None:
                text += f"{trusts[0].upper()}{trusts[1:]}. Measure"
            elif one.fits_without is False:  # (None: the others alone cannot be tested)
                text += self._one_answer_words(one, what, m, option)
                text += f"Either way {trusts}: measure"
            else:
                text += self._one_answer_words(one, what, m, option)
                text += f"If that answer is right, {trusts}: measure"
            text += (
                f" the noise and set {option}; the repeats"
                f"{' (that answer included)' if one is not None else ''} support about "
                f"{value:g} (the upper end of its 95% interval). A study keeps its options: run "
                f"{command}" + (f" ({also})" if (also := self._also(option, suggested)) else "")
            )
            out.append(text)
        return out

    def _one_answer_words(
        self, one: Any, what: str, measured: Measured | None, option: str
    ) -> str:
        """The sentences of a noise warning that name the answer making most of the scatter
        (:class:`boloop.study.scatter.OneAnswerScatter`) and say to check it first, and how to
        undo it (``undo`` withdraws from the last answer back)."""
        import shlex

        from boloop.study.replay import storage_option
        from boloop.study.scatter import others_read

        def amount(v: float) -> str:
            return measured.amount(v) if measured is not None else f"{v:g}"

        row = one.row
        who = (
            f"query {row['query_id']}"
            if row.get("query_id") is not None
            else f"the measurement added at {utc_words(str(row.get('told_at')))}"
        )
        read = others_read(one.others, amount)
        undo = f"boloop study undo {shlex.quote(self.name)}{storage_option(self.storage_url)}"
        if one.after == 0:
            how = f"it is the last answer: undo it ({undo}) and store the right value"
        else:
            later = f"{one.after} answer{'s' if one.after != 1 else ''}"
            how = (
                f"{undo} withdraws the last answer first, so undoing it withdraws the {later} "
                "given after it too (the log keeps them): give those again after the right value"
            )
        rest = (
            f"; without it the other repeats scatter no more than {option} allows"
            if one.fits_without
            else f"; without it the other repeats still scatter more than {option} allows"
            if one.fits_without is False
            else ""  # too few others to test
        )
        return (
            f"One answer makes {math.floor(100 * one.share + 1e-9)}% of that scatter: {who}, "
            f"where {what} read "
            f"{amount(one.value)} at {params_text(row.get('params') or {}, self.units())} and "
            f"the {len(one.others)} other measurements there {read}{rest}. Check that answer "
            "before you change the noise (typed right? a misplaced decimal point? the "
            f"instrument?): if it was a mistake, {how}. A larger {option} would carry the "
            "mistake into a new study as noise. "
        )

    def _stuck(
        self,
        described: Mapping[str, Any],
        continued: Sequence[str] = (),
        suggested: Mapping[str, float] | None = None,
        together: str | None = None,
    ) -> str | None:
        """A method that stopped making progress (``describe()["stall"]``), in words: a safe
        method that cannot certify more, with the
        command that continues the study with the option that may help (``together``, the one
        command of :meth:`status` carrying every option ``suggested`` by its warnings, when
        given), or, once the study was continued, the name of the study that continues it; None
        otherwise. The method's message is used as it stands: its count of answers without
        growth is the method's own (answers and added measurements since its certified set
        last grew, the same whether a query is open or not). A level-set method whose estimated
        map stopped changing (:meth:`LevelSetPolicy.stall`) is said with the setting farthest
        from every measurement in parameter names and the command that adds a measurement
        there (:meth:`_farthest_in_words`)."""
        stall = described.get("stall")
        if isinstance(stall, Mapping) and stall.get("message"):
            text = str(stall["message"])
            unit = self.units().get(str(stall.get("axis")))
            if unit:  # the stall axis's values with their unit (BasePolicy.stall_message)
                text = self._policy.stall_message(stall, unit)
            far = stall.get("farthest")
            floor = stall.get("suggested_min_lengthscale_g")
            if far is not None and stall.get("finding"):
                text = self._farthest_in_words(str(stall["finding"]), far) or text
            if continued:
                text += f" This study was continued as {', '.join(map(repr, continued))}."
            elif floor is not None:  # a study's options are fixed: a new study carries the answers
                n = self.n_answered
                also = self._also("min_lengthscale_g", suggested) if together else ""
                text += (
                    f" A study keeps the options it was created with: to go on with "
                    f"min_lengthscale_g = {floor:g} and all {n} answers, run "
                    f"{together or self._continue_with({'min_lengthscale_g': floor})} ("
                    + (f"{also}; or give them" if also else "or give it")
                    + " in a new space file's [settings]). See first what it would certify "
                    "with these answers, storing nothing: "
                    + self._try_with(
                        suggested if together and suggested else {"min_lengthscale_g": floor}
                    )
                    + " (the assumption may not be enough: "
                    + self._find_floor_command()
                    + " finds the smallest min_lengthscale_g that certifies more with these "
                    "answers, with g's model as it is and without its trend, trend_g=false)"
                )
            return text
        return None

    def _farthest_in_words(self, finding: str, point: Sequence[float]) -> str | None:
        """A level-set stall in words (``describe()["stall"]``): the method's ``finding`` and
        its advice (:data:`~boloop.algorithms.levelset.stall.FARTHEST_ADVICE`) with the
        candidate farthest from every measurement in parameter names, each value with its unit
        (:meth:`units`: ``the farthest is temperature=180 °C``; the method knows no units), and
        the command that records a measurement made there (values as typed, no units); None
        when the point has no parameter names."""
        import shlex

        from boloop.algorithms.levelset.stall import FARTHEST_ADVICE
        from boloop.study.replay import storage_option

        try:
            named = self._params(np.asarray(point, dtype=np.float64))
        except BoloopError:
            return None
        given = ",".join(f"{k}={_as_typed(v)}" for k, v in named.items())
        first = (
            "answer the open query with the study's pages closed (an open page asks the next "
            "query at once, and add waits for no open query), then "
            if self._policy.pending is not None
            else "with the study's pages closed (an open page asks the next query at once), "
        )
        return (
            f"{finding} {FARTHEST_ADVICE.format(where=params_text(named, self.units()))}"
            f" To add a measurement of your own, {first}run boloop study add "
            f"{shlex.quote(self.name)} {shlex.quote(given)} VALUE"
            f"{storage_option(self.storage_url)}: a value the map does not expect changes the "
            "model, and the method looks again. If the map is what you expected, more answers "
            "will mostly re-measure its boundary: you may stop here."
        )
