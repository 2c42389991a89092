"""``boloop study ...``: the study API on the command line (Optuna's ``ask``/``tell`` CLI style).

:func:`register` adds the ``study`` subcommand tree to the ``boloop`` parser; every subcommand
sets ``func(args) -> exit code``. ``python -m boloop.cli.study`` runs the tree on its own.

Exit codes (those of ``boloop``): 0 success, 2 bad input or state (the message names what is wrong; nothing stored
changes), 130 interrupted by Ctrl-C (everything answered so far is stored).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from boloop.errors import BoloopError, InvalidInputError, NoMoreQueriesError, QueryStateError

if TYPE_CHECKING:  # the study machinery (numpy, SQLAlchemy, the policies) loads on first use,
    # so `boloop --version`, `boloop --help` and argument errors stay instant
    from boloop.study.core import Study
    from boloop.study.parameters import StudyQuery


def load_study(name: str, storage: str | None = None, *, full_replay: bool = False) -> Study:
    from boloop.study.create import load_study as load

    return load(name, storage=storage, full_replay=full_replay)


__all__ = ["register", "main"]


def _option(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--option needs key=value, got {text!r}")
    try:
        parsed: Any = json.loads(value)
    except (ValueError, RecursionError):  # RecursionError: JSON nested too deeply to read
        low = value.strip().lower()
        parsed = {"true": True, "false": False}.get(low, value)
    return key.strip(), parsed


def _note_argument(p: argparse.ArgumentParser) -> None:
    """``--note TEXT`` of the commands that store an answer (tell, add, label)."""
    p.add_argument(
        "--note",
        default=None,
        metavar="TEXT",
        help="free text stored with it (who answered, what was seen); in the history and the "
        "export, never given to the method",
    )


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``study`` (create, try, ask, tell, undo, add, status, verify, list, export, plot, run,
    migrate) to ``subparsers``."""
    study = subparsers.add_parser(
        "study",
        help="persistent studies for real experiments (ask, tell, undo, run...)",
        description="Persistent studies: every query and answer is stored; resume at any time. "
        "Storage: --storage URL, else $BOLOOP_STORAGE, else sqlite:///boloop.db.",
    )
    sub = study.add_subparsers(dest="study_command", metavar="COMMAND")
    study.set_defaults(func=lambda args: (study.print_help(), 0)[1])

    def add(name: str, help: str, func: Any, needs_name: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        if needs_name:
            p.add_argument("name", metavar="NAME", help="study name")
        p.add_argument(
            "--storage",
            default=None,
            help="storage URL (default $BOLOOP_STORAGE or sqlite:///boloop.db)",
        )
        p.set_defaults(func=_in_lasting_storage(func), interrupt_message=_INTERRUPTED)
        return p

    p = add("create", "create a study", _create)
    p.description = (
        "Create a study: --space FILE (your experiment) or --problem ID. With --from OLD, "
        "continue the stored study OLD with all its answers (for instance one that no longer "
        "replays with this boloop version): OLD's method, space or problem, options and seed "
        "unless given here, and every answer in effect recorded as the new study's own data "
        "(measurements as with `add`, expert labels as outside labels). OLD is read, never "
        "replayed, and left as it is; a study of duels (the preference family) cannot be "
        "continued this way and is refused with nothing stored."
    )
    p.add_argument(
        "--method",
        default=None,
        help="method id, e.g. randomized-straddle, mr-lpf (default: the family's default method: "
        "cobol (expert), eubo-regret (preference), randomized-straddle (a space with a "
        "threshold), m-safeopt (a space with monotone and h); with --from: OLD's method)",
    )
    g = p.add_mutually_exclusive_group(required=False)
    g.add_argument("--problem", help="a registered problem id (answers come from you)")
    g.add_argument("--space", help="your experiment: a .json, .toml or .csv space file")
    p.add_argument(
        "--from",
        dest="from_study",
        default=None,
        metavar="OLD",
        help="continue study OLD with all its answers as this study's data (OLD's method, "
        "space, options and seed unless given)",
    )
    p.add_argument(
        "--from-storage",
        default=None,
        metavar="URL",
        help="with --from: the storage holding OLD, when not --storage",
    )
    p.add_argument(
        "--seed", type=int, default=None, help="policy seed (random if omitted; with --from: OLD's)"
    )
    p.add_argument("--family", default=None, help="family, when the method id is in several")
    _option_argument(p, "method option")

    p = add(
        "try",
        "what the study would do with other options, from its answers so far (nothing stored)",
        _try,
    )
    p.description = (
        "Try options (or another method) on a study's answers without storing anything: the "
        "study that `create NEW --from NAME --option ...` would make is built in memory, asked "
        "once and thrown away. Prints the query it would ask first and its recommendation "
        "(a safe study: how far it certifies) beside the study's own, and the command that "
        "continues the study so. Check an option a warning suggests before you spend "
        "measurements on it."
    )
    p.add_argument("--method", default=None, help="another method id (default: the study's)")
    _option_argument(p, "method option to try")
    p.add_argument(
        "--find-floor",
        action="store_true",
        help=(
            "a stuck safe study: find the smallest min_lengthscale_g (0.05 ... 1) under which "
            "it would certify more with its answers, with g's model as it is and without its "
            "trend (trend_g=false); each value is tried as --option tries it"
        ),
    )
    p.add_argument("--json", action="store_true", help="print JSON")

    p = add("ask", "print the open query (the same one until it is answered)", _ask)
    p.add_argument("--json", action="store_true", help="print JSON")

    p = add("tell", "answer a query", _tell)
    p.add_argument("query_id", metavar="QUERY_ID", help="the query id printed by ask")
    p.add_argument(
        "answer",
        metavar="ANSWER",
        help="a number, named numbers (f=1.2,g=0.3), accept/reject, a/b, or JSON",
    )
    _note_argument(p)

    add("undo", "withdraw the last answer", _undo)

    p = add("add", "record a measurement you made on your own", _add)
    p.add_argument(
        "params", metavar="PARAMS", help="named values: temperature=35,ratio=0.4 or JSON"
    )
    p.add_argument("value", metavar="VALUE", help="the measured value(s)")
    _note_argument(p)

    p = add("label", "record an expert's accept/reject given outside the loop", _label)
    p.add_argument(
        "params", metavar="PARAMS", help="named values: temperature=35,ratio=0.4 or JSON"
    )
    p.add_argument("answer", metavar="ANSWER", help="accept or reject (y / n)")
    _note_argument(p)

    p = add("status", "counts, the recommendation and the last answers", _status)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--last", type=int, default=5, help="how many recent answers to show")

    add("verify", "replay the whole log through a fresh policy (no snapshot) and check it", _verify)

    p = add("list", "list the studies in a storage", _list, needs_name=False)
    p.add_argument("--json", action="store_true", help="print JSON")

    p = add("export", "write the history to CSV or JSON", _export)
    p.add_argument(
        "--out", required=True, help="output file (.csv or .json); an existing one needs --force"
    )
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument(
        "--withdrawn",
        action="store_true",
        help="include the answers an undo withdrew, with their notes, and a withdrawn_at "
        "column (empty for answers in effect): an audit of everything that was answered",
    )

    p = add("plot", "draw the study's progress and model pictures (SVG or an HTML page)", _plot)
    p.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="FILE.svg (both pictures, one above the other) or FILE.html; default NAME.svg; "
        "an existing one needs --force",
    )
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument(
        "--no-growth",
        action="store_true",
        help="safe studies: leave out the safe set's growth (it replays the log: minutes for "
        "hundreds of answers of a method that refits its hyperparameters at every answer)",
    )

    p = add(
        "run", "answer queries interactively at a prompt (Ctrl-C or q to stop, resume later)", _run
    )
    p.add_argument("--max", type=int, default=None, help="stop after this many answers")

    help_ = "move studies with their full logs to another storage (SQLite <-> PostgreSQL)"
    p = sub.add_parser(
        "migrate",
        help=help_,
        description=help_ + ". Stop every server and script writing to the source first. Each "
        "copied study is marked as moved at the source, which then refuses every write to it "
        "(reads go on). --undo undoes a mistaken migrate: it removes the copies from the "
        "target (only if nothing was written there since) and clears the marks.",
    )
    p.add_argument("--from", dest="source", required=True, metavar="URL", help="source storage")
    p.add_argument("--to", dest="target", required=True, metavar="URL", help="target storage")
    p.add_argument(
        "--study",
        action="append",
        default=[],
        metavar="NAME",
        help="copy only this study (repeatable; default: all). A study that exists at the "
        "target is refused, never merged",
    )
    p.add_argument(
        "--undo",
        action="store_true",
        help="undo a migrate from --from to --to: remove the copies from --to (refused for a "
        "copy written to since) and make the studies writable at --from again",
    )
    p.set_defaults(func=_migrate, interrupt_message=_INTERRUPTED)
    return study


# -- commands ----------------------------------------------------------------------------------
# boloop.cli.main turns a BoloopError into exit 2 and Ctrl-C into exit 130 with this message
_INTERRUPTED = "\ninterrupted; everything answered so far is stored"


#: create's own arguments, which ``--option`` (a method option) cannot set: the flag that does
#: (the keywords of :func:`boloop.study.create.create_study` besides the method's options)
_CREATE_FLAGS = {
    "name": "the NAME argument",
    "method": "--method",
    "space": "--space",
    "problem": "--problem",
    "storage": "--storage",
    "seed": "--seed",
    "family": "--family",
    "from_study": "--from",
    "from_storage": "--from-storage",
}


def _in_lasting_storage(func: Any) -> Any:
    """``func`` run only when ``--storage`` (and ``--from-storage``) name a storage that outlives
    the command: a SQLite database without a file (``sqlite://``, ``sqlite:///:memory:``) ends
    with the command, so ``create`` said "created" of a study no later command could find.
    (``memory://NAME``, the in-process store, is asked for by name: programs that run these
    commands in their own process, such as the tests, use it.)"""

    def run(args: argparse.Namespace) -> int:
        for option in ("storage", "from_storage"):
            given = getattr(args, option, None)
            if option == "from_storage" and given is None:
                continue
            named = given if given is not None else os.environ.get("BOLOOP_STORAGE")
            if named is None or not _may_be_in_memory(named):
                continue  # (storage.py, and SQLAlchemy with it, not imported: the quick path)
            from boloop.study.storage import resolve_storage, sqlite_in_memory

            url = resolve_storage(given)
            if sqlite_in_memory(url):
                where = f"--{option.replace('_', '-')}" if given else "$BOLOOP_STORAGE"
                raise InvalidInputError(
                    f"storage {url!r} (from {where}) is a SQLite database without a file: it "
                    "lives in one process's memory, and each "
                    "boloop study command is a process of its own: nothing stored there would "
                    "outlive the command; give a database file (sqlite:///lab.db, or lab.db) or "
                    "a server (postgresql+psycopg://user@host/db)"
                )
        return int(func(args) or 0)

    return run


def _may_be_in_memory(url: str) -> bool:
    """Whether ``url`` could be a SQLite database without a file, read from its text alone (the
    full check, :func:`~boloop.study.storage.sqlite_in_memory`, parses it with SQLAlchemy, which
    ``boloop study ask/tell`` on a SQLite file never imports)."""
    text = url.strip().lower()
    scheme, sep, rest = text.partition("://")
    if not sep or not scheme.startswith("sqlite"):
        return False
    return (
        rest.split("?", 1)[0] in ("", "/")
        or ":memory:" in rest
        or "mode=memory" in rest
        or "%" in rest  # SQLAlchemy decodes it: mode=%6Demory is mode=memory
    )


def _option_argument(p: argparse.ArgumentParser, what: str) -> None:
    """``--option KEY=VALUE``, repeatable (``create`` and ``try``)."""
    p.add_argument(
        "--option",
        action="append",
        type=_option,
        default=[],
        metavar="KEY=VALUE",
        help=f"{what} (repeatable); values are read as JSON when they parse",
    )


def _method_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--option KEY=VALUE`` as a dict; a key that is create's own argument is refused."""
    options = dict(args.option)
    for key in options:
        if key in _CREATE_FLAGS:
            raise InvalidInputError(
                f"--option {key}=... is not a method option: {key!r} is create's own argument, "
                f"given by {_CREATE_FLAGS[key]}"
            )
        if key == "load_if_exists":
            raise InvalidInputError(
                "--option load_if_exists=... is not a method option (create_study's keyword in "
                "Python); on the command line an existing name is refused: `boloop study status "
                "NAME` shows that study"
            )
    return options


def _create(args: argparse.Namespace) -> int:
    options = _method_options(args)
    if args.from_storage is not None and args.from_study is None:
        raise InvalidInputError("--from-storage is the storage of --from OLD: give --from too")
    if args.from_study is None and args.space is None and args.problem is None:
        raise InvalidInputError(
            "create needs --space FILE (your experiment) or --problem ID, or --from OLD to "
            "continue a stored study"
        )
    from boloop.study.create import create_study
    from boloop.study.storage import safe_url

    extra = {}
    if args.from_study is not None:
        extra = {"from_study": args.from_study, "from_storage": args.from_storage}
    study = create_study(
        args.name,
        args.method,
        args.space,
        problem=args.problem,
        storage=args.storage,
        seed=args.seed,
        family=args.family,
        **extra,
        **options,
    )
    print(
        f"created study {study.name!r}: method {study.method} ({study.family}), seed {study.seed}, "
        f"parameters {study.names}, storage {safe_url(study.storage_url)}"
    )
    if args.from_study is not None:
        from boloop.study.replay import storage_option

        c = study.status(last=0)["counts"]
        kinds = ", ".join(f"{v} {k if v != 1 else k[:-1]}" for k, v in c.items() if k != "added")
        print(
            f"continued from study {args.from_study!r}: {_n(study.n_answered, 'answer')} in "
            f"effect carried as this study's own data ({kinds or 'none'}); {args.from_study!r} "
            f"is unchanged. Next: boloop study ask {_quote(study.name)}"
            f"{storage_option(study.storage_url)}"
        )
    hz = study.status(last=0)["horizon"]
    if hz and hz["source"] == "default":
        print(
            f"note: {study.method} plans for a horizon of T = {hz['value']} answers (the default) "
            "and asks nothing after them; to choose T, create the study with --option horizon=T"
        )
    return 0


def _try(args: argparse.Namespace) -> int:
    options = _method_options(args)
    if args.find_floor:
        if options or args.method is not None:
            raise InvalidInputError(
                "--find-floor tries min_lengthscale_g (and trend_g) itself: give it alone, "
                "without --option or --method"
            )
        from boloop.cli.find_floor import find_floor

        return find_floor(args.name, args.storage, args.json)
    if not options and args.method is None:
        raise InvalidInputError(
            "try needs what to try: --option KEY=VALUE (repeatable) and/or --method ID"
        )
    from boloop.spaces import params_text

    study = load_study(args.name, storage=args.storage)
    found = study.try_options(args.method, **options)
    if args.json:
        print(json.dumps(found, default=str))
        return 0
    what = [f"method {args.method}"] if args.method else []
    what += [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in options.items()]
    labels = getattr(study.problem, "labels", None)
    units = study.units()
    q = found["next_query"]
    asked = _KIND_WORD.get(q.get("kind"), str(q.get("kind")))
    if q.get("params"):
        asked += f" at {params_text(q['params'], units)}"
    lines = [
        f"study {study.name!r} tried with {', '.join(what)}: nothing was stored "
        f"({study.name!r} is unchanged)",
        f"  answers carried: {found['answers']}",
        f"  it would ask:    {asked}",
        "  its recommendation:",
        *("    " + ln for ln in _recommendation_lines(found["recommendation"], labels, units)),
        "  the study's own now:",
        *("    " + ln for ln in _recommendation_lines(found["now"], labels, units)),
        f"  to go on so:     {found['continue_command']}",
    ]
    print("\n".join(lines))
    return 0


def _ask(args: argparse.Namespace) -> int:
    study = load_study(args.name, storage=args.storage)
    try:
        q = study.ask()
    except NoMoreQueriesError as exc:  # one line and exit 2: no query to print
        raise QueryStateError(f"study {study.name!r} is complete: {exc}") from exc
    if args.json:
        print(json.dumps(q.to_dict()))
    else:
        if study.description:
            print(study.description)
        print(q.prompt())
        for line in _measure_lines(study, q):
            print(f"  {line}")
        print(
            f"answer with: boloop study tell {_quote(study.name)} {q.id} {_answer_hint(q, False)}"
        )
    return 0


def _measure_lines(study: Study, q: Any) -> list[str]:
    """What the person measuring must know (:mod:`boloop.study.measured`): a level set's
    question, the better direction, the safe family's limit beside ``g``."""
    from boloop.study.measured import goal_sentence, output_hints

    if q.kind != "evaluate":
        return []
    quantities = study.measured()
    settings = getattr(study.problem, "settings", {}) or {}
    goal = goal_sentence(study.family, study.method, quantities, settings)
    hints = output_hints(study.family, quantities, settings)
    lines = [goal] if goal else []
    said = [f"{m.label()}: {hints[m.output]}" for m in quantities if m.output in hints]
    if said:
        lines.append("; ".join(said))
    return lines


def _tell(args: argparse.Namespace) -> int:
    study = load_study(args.name, storage=args.storage)
    alarms = len(study.over_limit_alarms())
    # read before storing (after, the value is one of those it is compared with)
    measured = _is_measurement(study, args.query_id)
    unusual = study.unusual_values(args.answer) if measured else []
    try:
        study.tell(args.query_id, args.answer, note=args.note)
    except QueryStateError as exc:
        said = _not_stored(study, args.query_id, str(args.answer), args.note, in_loop=False)
        if said is None:
            raise
        # still one line and exit 2, but saying what stands (a colleague's answer, an undo)
        raise QueryStateError(
            f"study {study.name!r}: {said} `boloop study ask {_in_command(study)}` shows the "
            "open query"
        ) from exc
    study.save_snapshot()  # the next call (a new process) loads the answer without a replay
    row = study.history(last=1)[-1]
    print(
        f"stored: query {row['query_id']} -> {row['answer_text']} "
        f"({_n(study.n_answered, 'answer')})"
    )
    _print_new_alarms(study, alarms)
    _print_unusual(study, unusual)
    stuck = study.status(last=0, keep_policy=False).get("stuck")
    if stuck:  # the method's stall, which status and the page show (a newcomer's trial)
        print(f"NOTICE: {stuck}")
    return 0


def _is_measurement(study: Study, query_id: Any) -> bool:
    """Whether ``query_id`` is the open query and asks for a measured value."""
    pending = study.policy.pending
    if pending is None:
        return False
    return str(pending.id) == str(query_id).strip() and pending.kind == "evaluate"


def _in_command(study: Study) -> str:
    """The study as a command line names it: its name for a shell and ``--storage URL`` when
    the storage is not the default one."""
    from boloop.study.replay import storage_option

    return shlex.quote(study.name) + storage_option(study.storage_url)


def _print_unusual(study: Study, questions: list[str], again: str = "answer again") -> None:
    """A value far outside the stored ones is said when it is stored, with how to withdraw it
    and what to do then, ``again`` (the page asks before storing)."""
    for text in questions:
        print(
            f"WARNING: {text} It is stored as typed; if it is a typo, withdraw it with "
            f"`boloop study undo {_in_command(study)}` and {again}."
        )


def _print_new_alarms(study: Study, before: int) -> None:
    """A measured value above the safety limit is said when it is stored, not only by the next
    ``status`` (the page asks before storing one)."""
    for text in study.over_limit_alarms()[before:]:
        print(f"WARNING: {text}")


def _undo(args: argparse.Namespace) -> int:
    study = load_study(args.name, storage=args.storage)
    row = study.undo()
    if row["query_id"] is not None:
        print(f"withdrawn: query {row['query_id']} -> {row['answer_text']}; open query now "
              f"{study.ask().id}")  # fmt: skip
        return 0
    # a measurement added by hand: no query is opened, so the right value can be added at once
    # (an open query refuses add; a newcomer's trial was told to add again and was refused)
    name = _in_command(study)
    print(
        f"withdrawn: measurement -> {row['answer_text']}; add the right value with "
        f"`boloop study add {name} PARAMS VALUE`, or ask the next query with "
        f"`boloop study ask {name}`"
    )
    return 0


def _params(text: str) -> dict[str, Any]:
    """PARAMS of ``add`` / ``label``: ``temperature=35,ratio=0.4`` or a JSON object."""
    from boloop.study.answers import parse_measurement, read_json

    text = text.strip()
    try:
        params = (
            read_json(text)
            if text.startswith("{")
            else parse_measurement(text, "PARAMS", measured=False)
        )
    except ValueError as exc:  # bad JSON; BoloopErrors are ValueErrors too
        raise InvalidInputError(f"cannot read PARAMS {text!r}: {exc}") from exc
    if not isinstance(params, dict):
        raise InvalidInputError(
            f"PARAMS must be named values, e.g. temperature=35,ratio=0.4, got {text!r}"
        )
    return params


def _add(args: argparse.Namespace) -> int:
    study = load_study(args.name, storage=args.storage)
    params = _params(args.params)
    alarms = len(study.over_limit_alarms())
    unusual = study.unusual_values(args.value, params)
    study.add(params, args.value, note=args.note)
    study.save_snapshot()  # as after a tell: the next call loads it without a replay
    count = _n(study.n_answered, "answer")
    print(f"stored measurement at {_stored_point(study, params)} ({count})")
    _print_new_alarms(study, alarms)
    _print_unusual(study, unusual, "add it again")  # undo withdraws the added row, no query
    return 0


def _stored_point(study: Study, params: dict[str, Any]) -> str:
    """The point ``params`` as ``add``/``label`` stored it (the space's parameter order, numbers),
    written as the page and ``status`` write it, each value with its unit; a grid point's values
    as a refusal suggests them (:func:`boloop.spaces.written_params`: typed back, the same
    point)."""
    from boloop.spaces import CandidateSet, SafeSpace, written_params
    from boloop.study.space_file import params_to_point, point_to_params

    x = params_to_point(study.space, params)
    units = study.units()
    if isinstance(study.space, CandidateSet | SafeSpace):
        return ", ".join(
            f"{k}={v}" + (f" {units[k]}" if units.get(k) else "")
            for k, v in written_params(study.space, x).items()
        )
    return _fmt_point(point_to_params(study.space, x), units)


def _label(args: argparse.Namespace) -> int:
    from boloop.study.answers import LABEL_HINT, parse_label

    study = load_study(args.name, storage=args.storage)
    params = _params(args.params)
    accepted = parse_label(args.answer)
    if accepted is None:
        raise InvalidInputError(
            f"ANSWER must be {LABEL_HINT}, got {args.answer!r}"
        )
    study.label(params, accepted, note=args.note)
    study.save_snapshot()
    verdict = "accept" if accepted else "reject"
    count = _n(study.n_answered, "answer")
    print(f"stored label {verdict} at {_stored_point(study, params)} ({count})")
    return 0


def _status(args: argparse.Namespace) -> int:
    if args.last < 0:
        raise InvalidInputError(f"--last must be 0 or more answers, got {args.last}")
    study = load_study(args.name, storage=args.storage)
    # one process per call: a copy of the policy would be read once and thrown away
    st = study.status(last=args.last, keep_policy=False)
    if args.json:
        print(json.dumps(st, default=str))
        return 0
    labels = getattr(study.problem, "labels", None)
    per_x = safe_x_settings(study)
    print("\n".join(status_lines(st, labels, study.units(), study.names, per_x)))
    return 0


def status_lines(
    st: dict[str, Any],
    labels: Sequence[str] | None = None,
    units: Mapping[str, str] | None = None,
    names: Sequence[str] | None = None,
    per_x: SafeXSettings | None = None,
) -> list[str]:
    """The text of ``boloop study status`` from :meth:`Study.status` (one vocabulary: answers,
    evaluations, labels, duels, the method's iteration; sets as counts and a bounding box);
    ``units``: each parameter's unit (:meth:`Study.units`), written after its values as the
    question and the page write them (``dose=5 mg``); a study without units reads as always.
    ``names``: the space's parameter names, so that only lists of its points are summarised as
    points (a method's list of models by lengthscale and weight is not). ``per_x``: a safe
    study's settings of x (:func:`safe_x_settings`), so that the recommendation's per-x lists
    say which x each value belongs to."""
    c = st["counts"]
    parts = [f"{v} {k if v != 1 else k[:-1]}" for k, v in c.items() if k != "added"]
    if c.get("added"):
        parts.append(f"of which {c['added']} added as your own data")
    lines = [
        f"study {st['name']!r}: method {st['method']} ({st['family']} family), seed {st['seed']}",
        *([f"  description:    {st['description']}"] if st.get("description") else []),
        *(
            [
                f"  continued as:   {', '.join(map(repr, st['continued_as']))}, which took all "
                "its answers: answer there (answers given here now are not carried over)"
            ]
            if st.get("continued_as")
            else []
        ),
        *(
            [
                f"  MOVED:          to {st['moved']['to']} on "
                f"{_utc(st['moved']['at'])} by boloop study migrate: this "
                "copy is read-only, answer there"
            ]
            if st.get("moved")
            else []
        ),
        f"  storage:        {st['storage']}",
        f"  answers:        {st['answered']} in effect ({', '.join(parts) or 'none yet'}); "
        f"{st['withdrawn']} withdrawn",
        f"  iteration:      {st['iteration']} ({st['method']}'s own count; {st['iteration_meaning']})",
    ]
    lines[1:1] = [f"  WARNING: {w}" for w in st.get("warnings") or []] + (
        [f"  {st['over_limit_next']}"] if st.get("over_limit_next") else []
    )
    hz = st.get("horizon")
    if hz:
        where = {
            "option": "set at create",
            "settings": "the 'budget' of the space's or problem's settings",
            "default": "the default, as none was given: choose it with --option horizon=T",
        }[hz["source"]]
        unit = _answer_unit(st["family"])
        lines.append(
            f"  horizon:        T = {hz['value']} {unit} ({where}); {hz['left']} left: the method "
            f"plans its rounds for exactly T {unit} and asks nothing after them"
        )
    opts = ", ".join(f"{k}={json.dumps(v)}" for k, v in st["options"].items())
    lines.append(f"  options:        {opts or 'none given (defaults below)'}")
    if st["settings"]:
        lines.append("  method settings and state (defaults included):")
        width = max(len(k) for k in st["settings"])
        for k, v in st["settings"].items():
            lines.append(f"    {k:<{width}}  {_short(v, units=units, names=names)}")
    oq = st["open_query"]
    done = st.get("asks_no_more")
    if oq:
        lines.append(f"  open query:     {oq['id']} ({_KIND_WORD[oq['kind']]})")
    elif done:
        lines.append(f"  open query:     none ({done})")
    else:
        lines.append(f"  open query:     none (boloop study ask {_quote(st['name'])} issues one)")
    lines.append(f"  recommendation: {st.get('recommendation_meaning') or 'the current best'}")
    lines += ["    " + ln for ln in _named_recommendation_lines(st, labels, units, per_x)]
    if st["last_answers"]:
        lines.append("  last answers:")
        for row in st["last_answers"]:
            lines.append(f"    {_row_text(row, units)}")
    return lines


_KIND_WORD = {"evaluate": "evaluation", "label": "label", "compare": "duel"}


def _fmt_point(p: dict[str, Any] | None, units: Mapping[str, str] | None = None) -> str:
    """A point in parameter names as the web page and the messages write it
    (:func:`boloop.spaces.params_text`: ``temperature=35.2 °C, ratio=0.4``, a value with its
    unit where ``units`` gives one)."""
    from boloop.spaces import params_text

    return params_text(p or {}, units)


class SafeXSettings(NamedTuple):
    """A safe study's settings of x in the order of its recommendation's per-x lists
    (``best_s``, ``boundary_s``): ``s_name`` the monotone parameter, ``settings`` each x as a
    point by name."""

    s_name: str
    settings: list[dict[str, float]]


def safe_x_settings(study: Any) -> SafeXSettings | None:
    """The settings of x of a study over a :class:`~boloop.spaces.SafeSpace`, else None."""
    from boloop.spaces import SafeSpace

    space = getattr(study, "space", None)
    if not isinstance(space, SafeSpace):
        return None
    x_names = list(space.names[1:])
    settings = [dict(zip(x_names, map(float, row))) for row in space.x_points]
    return SafeXSettings(space.names[0], settings)


def _per_x_line(
    key: str, values: list[Any], per_x: SafeXSettings, units: Mapping[str, str] | None
) -> str:
    """A per-x list as one line: with one x parameter each value after its x
    (``best_s per timing: timing=0 h: 6 mg; timing=2 h: 4 mg``), with several what the list is
    indexed by and its summary."""
    from boloop.spaces import format_value

    units = units or {}
    s_unit = f" {units[per_x.s_name]}" if units.get(per_x.s_name) else ""
    x_names = list(per_x.settings[0])
    if len(x_names) == 1:
        pairs = "; ".join(
            f"{_fmt_point(x, units)}: {format_value(v)}{s_unit}"
            for x, v in zip(per_x.settings, values)
        )
        return f"{key} per {x_names[0]}: {pairs}"
    return (
        f"{key}, one {per_x.s_name} per setting of ({', '.join(x_names)}) in the space's order of "
        f"those settings: {_short(values, units=units)}"
    )


def _is_point(v: Any, names: Sequence[str] | None = None) -> bool:
    """``v`` is a point: numbers by name, and by the space's parameter ``names`` where given."""
    return (
        isinstance(v, dict)
        and bool(v)
        and all(isinstance(x, int | float) and not isinstance(x, bool) for x in v.values())
        and (names is None or set(v) <= set(names))
    )


def _short(
    v: Any,
    first: int = 3,
    units: Mapping[str, str] | None = None,
    names: Sequence[str] | None = None,
) -> str:
    """A value in one line: numbers to 4 digits, long lists as their count, range, first items;
    a point's values with their ``units``; with ``names`` (the space's parameters) only dicts
    of those names are points."""
    if isinstance(v, float):
        return f"{v:.4g}"
    if _is_point(v, names):
        return _fmt_point(v, units)
    if isinstance(v, list):
        if v and all(_is_point(p, names) for p in v):
            return _points_summary(v, first, units)
        nums = [x for x in v if isinstance(x, int | float) and not isinstance(x, bool)]
        if len(v) > 2 * first and len(nums) == len(v):
            return f"{len(v)} values in [{min(nums):.4g}, {max(nums):.4g}]; first " + ", ".join(
                f"{x:.4g}" for x in v[:first]
            )
        if len(v) > 2 * first:
            return f"{len(v)} values; first " + ", ".join(
                _short(x, units=units, names=names) for x in v[:first]
            )
        return "[" + ", ".join(_short(x, units=units, names=names) for x in v) + "]"
    if isinstance(v, dict):
        return (
            "{"
            + ", ".join(f"{k}: {_short(x, units=units, names=names)}" for k, x in v.items())
            + "}"
        )
    return str(v)


def _points_summary(
    points: list[dict[str, Any]], first: int = 3, units: Mapping[str, str] | None = None
) -> str:
    """Points as their count, bounding box (``temperature in [150, 200] °C``) and first few."""
    units = units or {}
    names = list(points[0])
    box = ", ".join(
        f"{n} in [{min(p[n] for p in points):.4g}, {max(p[n] for p in points):.4g}]"
        + (f" {units[n]}" if units.get(n) else "")
        for n in names
    )
    head = "; ".join(f"({_fmt_point(p, units)})" for p in points[:first])
    more = f"; first {first}: {head}" if len(points) > first else f": {head}"
    return f"{len(points)} points, bounding box {box}{more}"


def _named_recommendation_lines(
    st: dict[str, Any],
    labels: Sequence[str] | None,
    units: Mapping[str, str] | None = None,
    per_x: SafeXSettings | None = None,
) -> list[str]:
    """The recommendation of a status ``st`` as lines, the first led by the option's name when
    it is an option of a table (``recommendation_label``); a point's values with their
    ``units``; a safe study's per-x lists with the x they belong to (``per_x``)."""
    lines = _recommendation_lines(
        st["recommendation"], labels, units, asks_no_more=bool(st.get("asks_no_more")), per_x=per_x
    )
    if st.get("recommendation_label") and lines:
        lines[0] = f"{st['recommendation_label']} ({lines[0]})"
    return lines


def _recommendation_lines(
    rec: Any,
    labels: Sequence[str] | None,
    units: Mapping[str, str] | None = None,
    asks_no_more: bool = False,
    per_x: SafeXSettings | None = None,
) -> list[str]:
    """A recommendation (``Study.recommend()``'s, a status's) as lines; ``asks_no_more``: the
    method asks nothing more (a level set's undecided candidates are then not settled by more
    answers of the study); ``per_x``: a safe study's settings of x, which its per-x lists
    (``best_s``, ``boundary_s``: one level of s per x) are written with."""
    if isinstance(rec, str):
        return [rec]
    if rec is None:
        return ["none yet"]
    if _is_point(rec):
        return [_fmt_point(rec, units)]
    if isinstance(rec, dict):
        if "upper" in rec and "threshold" in rec:
            out = [
                f"{rec.get('n_upper', len(rec['upper']))} of {rec.get('n_candidates', '?')} "
                f"candidates estimated above the threshold {rec['threshold']:g}"
            ]
            if rec.get("n_undecided") is not None:
                from boloop.study.status import undecided_text

                out.append(undecided_text(rec["n_undecided"], asks_no_more))
            if rec["upper"]:
                out.append("upper set: " + _points_summary(rec["upper"], units=units))
            return out
        out = []
        for k, v in rec.items():
            if k == "index" or k.endswith("_index"):
                continue  # positions in the candidate list: the points themselves are shown
            if per_x is not None and isinstance(v, list) and len(v) == len(per_x.settings) > 1:
                out.append(_per_x_line(k, v, per_x, units))
                continue
            out.append(f"{k}: {_short(v, units=units)}")
        return out
    return [_short(rec, units=units)]


def _verify(args: argparse.Namespace) -> int:
    import time

    t0 = time.perf_counter()
    study = load_study(args.name, storage=args.storage, full_replay=True)
    n_asked = sum(1 for e in study.events() if e["kind"] == "asked")
    print(
        f"ok: study {study.name!r} replays to the stored queries ({_n(study.n_answered, 'answer')} "
        f"in effect, {n_asked} {'query' if n_asked == 1 else 'queries'} issued, {time.perf_counter() - t0:.1f} s)"
    )
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from boloop.study.storage import resolve_storage, safe_url
    from boloop.study.storage_migrate import migrate_studies, undo_migration

    source, target = safe_url(resolve_storage(args.source)), safe_url(resolve_storage(args.target))
    if args.undo:
        undone = undo_migration(args.source, args.target, args.study or None)
        for name, n_events in undone:
            gone = f"its copy ({_n(n_events, 'event')}) removed" if n_events else "no copy left"
            print(f"undid the move of study {name!r}: {gone} at {target}; writable at {source}")
        return 0
    copied = migrate_studies(args.source, args.target, args.study or None)
    for name, n_events in copied:
        print(f"copied study {name!r}: {_n(n_events, 'event')}")
    print(
        f"{len(copied)} {'study' if len(copied) == 1 else 'studies'} copied to {target} and "
        f"marked as moved in {source}, which refuses answers to them from now on: point every "
        "server and script at the new storage"
    )
    return 0


def _list(args: argparse.Namespace) -> int:
    from boloop.study.listing import list_studies

    rows = list_studies(args.storage)
    if args.json:
        print(json.dumps(rows))
        return 0
    if not rows:
        print("no studies")
        return 0
    for r in rows:
        if r.get("unreadable"):
            print(f"{r['name']}\tcannot be read: {r['unreadable']}\tcreated {r['created_at']}")
            continue
        print(
            f"{r['name']}\t{r['family']}\t{r['method']}\t{r['problem']}\t{_n(r['answered'], 'answer')}"
            f"\tcreated {r['created_at']}"
            + (f"\tcontinued as {', '.join(r['continued_as'])}" if r.get("continued_as") else "")
            + (f"\tmoved to {r['moved_to']}" if r.get("moved_to") else "")
        )
    return 0


def _refuse_to_overwrite(out: str, force: bool) -> None:
    """An existing ``--out`` (a space file, last week's export, a page of notes...) is replaced
    only with ``--force``: a newcomer exported over their space file."""
    if os.path.exists(out) and not force:
        raise InvalidInputError(
            f"{out!r} exists: nothing written (give --force to replace it, or another --out)"
        )


def _export(args: argparse.Namespace) -> int:
    _refuse_to_overwrite(args.out, args.force)
    study = load_study(args.name, storage=args.storage)
    study.export(args.out, withdrawn=args.withdrawn)
    also = ""
    if args.withdrawn:
        undone = sum(1 for r in study.history(withdrawn=True) if r["withdrawn_at"])
        also = f" and {undone} withdrawn"
    print(f"wrote {_n(study.n_answered, 'answer')}{also} to {args.out}")
    return 0


def _plot(args: argparse.Namespace) -> int:
    out = args.out
    if out is None:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in args.name)
        out = f"{safe.strip('.') or 'study'}.svg"
    ext = os.path.splitext(out)[1].lower()
    if ext not in (".svg", ".html"):
        raise InvalidInputError(f"--out must end in .svg or .html, got {out!r}")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise InvalidInputError(f"cannot write {out!r}: the directory {folder!r} does not exist")
    _refuse_to_overwrite(out, args.force)
    study = load_study(args.name, storage=args.storage)
    from boloop.algorithms.families import family_traits

    growth = family_traits(study.family).growth_picture and not args.no_growth
    text = plot_document(study, html=ext == ".html", growth=growth)
    try:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise InvalidInputError(f"cannot write {out!r}: {exc.strerror or exc}") from exc
    what = "progress, model and safe set growth" if growth else "progress and model"
    print(f"wrote {out}: {what} of study {study.name!r} ({_n(study.n_answered, 'answer')})")
    return 0


def plot_document(study: Study, html: bool = False, growth: bool = True) -> str:
    """The study's pictures (:func:`boloop.study.pictures.pictures`, the web page's) as one SVG,
    progress above model (above the safe set's growth unless ``growth=False``), or as a small
    self-contained HTML page."""
    import re
    from xml.sax.saxutils import escape

    from boloop.study.pictures import pictures

    pics = pictures(study, growth=growth)
    title = f"study {study.name} ({study.method}, {_n(study.n_answered, 'answer')})"
    if html:
        body = "\n".join(f"<figure>{svg}</figure>" for svg in pics.values())
        return (
            '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(title)}</title></head>"
            f'<body style="font-family:sans-serif"><h1>{escape(title)}</h1>\n{body}\n</body></html>\n'
        )
    parts, y, width = [], 0.0, 0.0
    for svg in pics.values():
        m = re.match(r'<svg[^>]*\swidth="([\d.]+)"[^>]*\sheight="([\d.]+)"', svg)
        w, h = (float(m.group(1)), float(m.group(2))) if m else (560.0, 240.0)
        parts.append(svg.replace("<svg ", f'<svg x="0" y="{y:.0f}" ', 1))
        y += h
        width = max(width, w)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{y:.0f}" '
        f'viewBox="0 0 {width:.0f} {y:.0f}"><title>{escape(title)}</title>{"".join(parts)}</svg>\n'
    )


def _answer_unit(family: str) -> str:
    """What one answer of a ``family`` study is called in counts: ``duels`` for a family whose
    data are duels (it declares ``duel_model``), ``answers`` otherwise."""
    from boloop.algorithms.families import family_traits

    return "duels" if family_traits(family).duel_model else "answers"


def _run(args: argparse.Namespace) -> int:
    if args.max is not None and args.max < 1:
        raise InvalidInputError(f"--max must be a positive number of answers, got {args.max}")
    study = load_study(args.name, storage=args.storage)
    from boloop.study.replay import storage_option

    resume = f"boloop study run {_quote(study.name)}{storage_option(study.storage_url)}"
    return run_loop(study, sys.stdin, sys.stdout, max_answers=args.max, resume=resume)


# -- the interactive loop -----------------------------------------------------------------------
_HELP = "keys: u undo, r recommendation, s status, q quit (Ctrl-C also stops; resume any time)"


def run_loop(
    study: Study,
    stdin: TextIO,
    stdout: TextIO,
    max_answers: int | None = None,
    resume: str | None = None,
) -> int:
    """Ask, read the answer at a prompt, tell, until ``q``, end of input or ``max_answers``.

    Each query is announced by the kind of answer it needs (``LABEL``, ``DUEL``, ``MEASURE``:
    the expert family interleaves labels and measurements). Label and duel queries take single
    keys (``y``/``n``, ``a``/``b``, ``1``/``2``; on a terminal without Enter; the grammar of
    :mod:`boloop.study.answers`); measurements are typed numbers (``3.2``, ``f=1.2,g=0.3`` or
    ``1.2 0.3``). After each answer a progress line shows the counts, the method's iteration
    and the recommendation. A rejected answer is reported and asked again; nothing is stored
    for it. ``resume`` is the command that continues the loop later (printed on stopping).
    """
    if max_answers is not None and (
        isinstance(max_answers, bool) or not isinstance(max_answers, int) or max_answers < 1
    ):
        raise InvalidInputError(f"--max must be a positive number of answers, got {max_answers!r}")
    out = stdout
    resume = resume or f"boloop study run {_quote(study.name)}"
    print(
        f"study {study.name!r} ({study.method}); {_n(study.n_answered, 'answer')} so far. {_HELP}",
        file=out,
    )
    told = 0
    # a method's stall (a safe method repeating itself, a level-set map that stopped changing):
    # said once when it appears (a newcomer's trial saw it only in status and on the page)
    shown_stuck = False
    while max_answers is None or told < max_answers:
        try:
            q = study.ask()
        except NoMoreQueriesError as exc:  # the method asks no more: the study is done
            st = study.status(last=0)
            print(f"\nstudy {study.name!r} is complete: {exc}.", file=out)
            print(f"recommendation: {st['recommendation_meaning']}", file=out)
            for line in _named_recommendation_lines(
                st, None, study.units(), safe_x_settings(study)
            ):
                print(f"  {line}", file=out)
            return 0
        print("", file=out)
        print(f"-- {_NEXT[q.kind]} --", file=out)
        print(q.prompt(), file=out)
        print(f"  [{_answer_hint(q)}] > ", end="", file=out, flush=True)
        text = _read(stdin, single_key=q.kind in ("label", "compare"))
        if text is None:
            print(f"\nend of input; stopped (resume with: {resume})", file=out)
            return 0
        key = text.strip().lower()
        if key in ("q", "quit", "exit"):
            print(f"stopped (resume with: {resume})", file=out)
            return 0
        if key in ("u", "undo"):
            try:
                row = study.undo()
                what = f"query {row['query_id']}" if row["query_id"] is not None else "measurement"
                print(f"withdrawn: {what} -> {row['answer_text']}", file=out)
                told = max(0, told - 1)
            except BoloopError as exc:
                print(f"error: {exc}", file=out)
            continue
        if key in ("r", "recommend"):
            st = study.status(last=0)
            print(f"recommendation: {st['recommendation_meaning']}", file=out)
            for line in _named_recommendation_lines(
                st, None, study.units(), safe_x_settings(study)
            ):
                print(f"  {line}", file=out)
            continue
        if key in ("s", "status"):
            lines = status_lines(
                study.status(last=3), None, study.units(), study.names, safe_x_settings(study)
            )
            print("\n".join(lines), file=out)
            continue
        if key in ("", "?", "h", "help"):
            print(_HELP, file=out)
            continue
        questions = study.unusual_values(text.strip()) if q.kind == "evaluate" else []
        if questions:  # a typo? ask before storing, as the page does
            print("\n".join(questions), file=out)
            print("  store it as typed? [y/N] > ", end="", file=out, flush=True)
            sure = _read(stdin, single_key=False)
            if sure is None or sure.strip().lower() not in ("y", "yes"):
                print("not stored; type the value again", file=out)
                continue
        try:
            study.tell(q.id, text.strip())
        except QueryStateError as exc:  # answered, or withdrawn, elsewhere since it was asked
            said = _not_stored(study, q.id, text)
            pending = study.policy.pending
            which = "next query" if pending is None else f"open query ({pending.id})"
            print(f"{said} The {which} is asked below." if said else f"error: {exc}", file=out)
            continue
        except BoloopError as exc:
            print(f"error: {exc}", file=out)
            continue
        told += 1
        st = study.status(last=0)
        print(progress_line(st, study.units()), file=out)
        stuck = st.get("stuck")
        if stuck and not shown_stuck:  # said when it appears, not after every answer
            print(f"NOTICE: {stuck}", file=out)
        shown_stuck = bool(stuck)
    return 0


def _not_stored(
    study: Study, query_id: Any, typed: str, note: str | None = None, *, in_loop: bool = True
) -> str | None:
    """What to say when an answer typed for query ``query_id`` was refused because that query is
    no longer open, as the web page says it: the typed answer was NOT stored, and what stands
    instead: another answer (its value, when, its note), the same answer (nothing is stored
    twice), or an undo elsewhere that took the study back before the query. ``in_loop``: the
    refusal came in ``study run``, whose loop did not answer the query itself, so the other
    answer was given elsewhere; a ``study tell`` cannot tell (the person may have answered it
    earlier) and says how to replace it. None when ``query_id`` names no query of the study."""
    try:
        qid = int(str(query_id).strip())
    except ValueError:
        return None
    events = study.events()
    asked = [e for e in events if e["kind"] == "asked" and e["query_id"] == qid]
    if not asked:
        return None
    rows = [r for r in study.history() if r["query_id"] == qid]
    yours = f"your answer to query {qid} ({typed.strip()})"
    if rows:
        row = rows[-1]
        if _same_as_stored(asked[-1]["payload"], row, typed):
            lost = " Your note was NOT stored." if note and note != row.get("note") else ""
            return (
                f"not stored again: query {qid} already holds the same answer as yours "
                f"({_stored_words(row)}); nothing is stored twice.{lost}"
            )
        if not in_loop:
            return (
                f"NOT STORED: {yours} was not stored: query {qid} was already answered (earlier "
                f"by you, or elsewhere). Stored: {_stored_words(row)}. If that answer is the "
                f"wrong one and the last given, `boloop study undo {_in_command(study)}` "
                "withdraws it and the query is asked again."
            )
        return (
            f"NOT STORED: {yours} was not stored: query {qid} was answered first elsewhere "
            f"(another person, page or program). Stored instead: {_stored_words(row)}."
        )
    # the undo that closed it: one after it was (last) asked that withdrew an answer given
    # before it was asked (an undo of its own answer opens it again instead)
    undo = next(
        (
            e
            for e in events
            if e["kind"] == "withdrawn"
            and e["seq"] > asked[-1]["seq"]
            and (e["payload"] or {}).get("withdraws", asked[-1]["seq"]) < asked[-1]["seq"]
        ),
        None,
    )
    why = (
        f"an undo elsewhere withdrew an answer at {_utc(undo['created_at'])} and the study went "
        "back to an earlier query"
        if undo is not None
        else "the study changed elsewhere"
    )
    return f"NOT STORED: {yours} was not stored: query {qid} is no longer open ({why})."


def _utc(stamp: str) -> str:
    """``2026-11-27T19:17:29.892809Z`` as a person reads it: ``2026-11-27 19:17:29 UTC``."""
    from boloop.study.log import utc_words

    return utc_words(stamp)


def _stored_words(row: dict[str, Any]) -> str:
    """A stored answer in words: its value, when it was given and its note (cut at 80
    characters)."""
    note = row.get("note")
    if note and len(note) > 80:
        note = note[:79] + "\u2026"
    said = f"{row['answer_text']}, given {_utc(str(row['told_at']))}"
    return f"{said}, note {note!r}" if note else said


def _same_as_stored(asked: dict[str, Any], row: dict[str, Any], typed: str) -> bool:
    """Whether ``typed``, read as an answer to the query of the ``asked`` event's payload, is
    the answer ``row`` holds."""
    from boloop.queries import query_from_dict
    from boloop.study.answers import parse_answer

    try:
        return bool(parse_answer(query_from_dict(asked["query"]), typed) == row["answer"])
    except (BoloopError, KeyError, TypeError):
        return False


#: how the loop announces the next query: which kind of answer it needs
_NEXT = {
    "label": "LABEL: accept or reject (y / n)",
    "compare": "DUEL: which of two is better (a / b)",
    "evaluate": "MEASURE: type the measured value",
}


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def progress_line(st: dict[str, Any], units: Mapping[str, str] | None = None) -> str:
    """One line after each answer: counts, the method's iteration (of its horizon) and the
    recommendation, from :meth:`Study.status`; a point's values with their ``units``."""
    c = st["counts"]
    kinds = ", ".join(f"{v} {k if v != 1 else k[:-1]}" for k, v in c.items() if k != "added")
    it = f"iteration {st['iteration']}"
    if st.get("horizon"):
        it += f" of T = {st['horizon']['value']}"
    rec = _named_recommendation_lines(st, None, units)[0]
    levels = isinstance(st.get("recommendation"), dict) and "threshold" in st["recommendation"]
    said = "map" if levels else "best"  # a level set's estimate is a map, not a best point
    return f"stored. progress: {_n(st['answered'], 'answer')} ({kinds}); {it}; {said}: {rec}"


def _read(stdin: TextIO, single_key: bool) -> str | None:
    """One answer: a single key on an interactive terminal, else one line; None at end of input."""
    if single_key and stdin.isatty():
        try:
            import termios
            import tty
        except ImportError:  # pragma: no cover - Windows
            pass
        else:
            fd = stdin.fileno()
            old = termios.tcgetattr(fd)
            try:
                tty.setcbreak(fd, termios.TCSANOW)  # TCSAFLUSH would drop keys typed early
                ch = os.read(fd, 1).decode(errors="replace")
            finally:
                termios.tcsetattr(fd, termios.TCSADRAIN, old)
            if ch in ("", "\x04"):
                return None
            if ch == "\x03":
                raise KeyboardInterrupt
            print(ch)
            return ch
    line = stdin.readline()
    if line == "":
        return None
    return line.rstrip("\n")


def _answer_hint(q: StudyQuery, keys: bool = True) -> str:
    """What to type: keys at the interactive prompt, else the ANSWER of ``boloop study tell``."""
    if q.kind == "label":
        return "y accept / n reject" if keys else "accept|reject"
    if q.kind == "compare":  # words that no option of the duel is named
        from boloop.study.answers import free_duel_words

        a, b = free_duel_words(q.a_label, q.b_label, one_key=keys)
        return f"{' or '.join(a[:2])} / {' or '.join(b[:2])}" if keys else f"{a[0]}|{b[0]}"
    if q.outputs:
        return ",".join(f"{o}=VALUE" for o in q.outputs)
    return "VALUE"


def _quote(name: str) -> str:
    return name if name.replace("-", "").replace("_", "").isalnum() else json.dumps(name)


def _row_text(row: dict[str, Any], units: Mapping[str, str] | None = None) -> str:
    """One history row of ``status``'s last answers; a point's values with their ``units``."""

    def named(p: dict[str, float] | None, label: str | None) -> str:
        return f"{label} ({_fmt_point(p, units)})" if label else _fmt_point(p, units)

    if row["query_id"] is None:
        who = "added label" if row["kind"] == "label" else "added measurement"
    else:
        who = f"query {row['query_id']} [{_KIND_WORD.get(row['kind'], row['kind'])}]"
    if row["a"] is not None:
        where = (
            f"A: {named(row['a'], row.get('a_label'))} vs B: {named(row['b'], row.get('b_label'))}"
        )
    else:
        where = named(row["params"], row.get("label"))
    return f"{who} {where} -> {row['answer_text']}  ({row['told_at']})"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m boloop.cli.study ...``: the same as ``boloop study ...``."""
    from boloop.cli import main as boloop_main

    return boloop_main(["study", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
