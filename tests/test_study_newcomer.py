"""Issue 15: a study that feels right to a newcomer. Every bad input met by a person at the
terminal is one ``boloop: error:`` line with exit status 2 and nothing stored; ``status`` speaks
one vocabulary; labels and duels share one answer grammar. Through the CLI in a subprocess."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from boloop.errors import AnswerTypeError, InvalidInputError
from boloop.study import create_study, load_study
from cli_runner import assert_refused, run_cli


def _boloop(cwd: Path, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """The command in this process (tests/cli_runner.py), with the lab's storage."""
    env = {**os.environ, "BOLOOP_STORAGE": f"sqlite:///{cwd / 'lab.db'}"}
    return run_cli(argv, cwd=cwd, env=env, stdin=stdin)


def _events(cwd: Path) -> list[tuple]:
    db = cwd / "lab.db"
    if not db.exists():
        return []
    with sqlite3.connect(db) as con:
        return con.execute("SELECT seq, kind, query_id, payload FROM boloop_events").fetchall()


def _write(path: Path, doc: dict) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


# -- 1. every error clear, exit 2, nothing stored ---------------------------------------------
def test_bad_create_inputs_are_refused_before_anything_is_stored(tmp_path):
    cases = [
        (
            ("--problem", "preference/toy", "--option", "horizon=abc"),
            ("horizon", "'abc'", "mr-lpf"),
            "mr-lpf",
        ),
        (
            (
                "--space",
                _write(
                    tmp_path / "ls.json",
                    {"threshold": 0.5, "parameters": [{"name": "t", "low": 0, "high": 1}]},
                ),
            ),
            ("'threshold'", "levelset", "preference"),
            "mr-lpf",
        ),
        (
            (
                "--space",
                _write(
                    tmp_path / "typo.json",
                    {
                        "threshold": 0.5,
                        "parameters": [{"name": "t", "low": 0, "high": 1}],
                        "settings": {"noise_varaince": 0.1},
                    },
                ),
            ),
            ("noise_varaince", "noise_variance"),
            "randomized-straddle",
        ),
        (
            (
                "--space",
                _write(
                    tmp_path / "safe.json",
                    {
                        "monotone": "dose",
                        "h": 0.9,
                        "threshold": 0.5,
                        "parameters": [
                            {"name": "dose", "low": 0, "high": 1, "grid": 5},
                            {"name": "t", "low": 0, "high": 1, "grid": 5},
                        ],
                    },
                ),
            ),
            ("'threshold'", "'h'"),
            "m-safeopt",
        ),
    ]
    for args, words, method in cases:
        res = _boloop(tmp_path, "study", "create", "s", "--method", method, *args)
        assert_refused(res, *words)
        assert not (tmp_path / "lab.db").exists()  # nothing created, not even the database


def test_settings_the_method_reads_are_accepted(tmp_path):
    pr = _write(
        tmp_path / "pr.json",
        {
            "parameters": [{"name": "t", "low": 0, "high": 1}],
            "settings": {"budget": 12, "lam": 0.1},
        },
    )
    res = _boloop(tmp_path, "study", "create", "p", "--method", "mr-lpf", "--space", pr)
    assert res.returncode == 0, res.stderr
    res = _boloop(tmp_path, "study", "create", "c", "--method", "cobol", "--space", pr)
    assert_refused(res, "['budget', 'lam']", "cobol")


@pytest.fixture()
def lab(tmp_path):
    """A preference study with one answer, in tmp_path/lab.db."""
    study = create_study(
        "cake",
        "mr-lpf",
        problem="preference/toy",
        storage=f"sqlite:///{tmp_path / 'lab.db'}",
        seed=0,
        horizon=20,
    )
    q = study.ask()
    study.tell(q.id, "a")
    study.ask()
    return tmp_path


@pytest.mark.parametrize(
    "argv,words",
    [
        (("study", "run", "cake", "--max", "0"), ("--max", "0")),
        (("study", "run", "cake", "--max", "-1"), ("--max", "-1")),
        (("study", "status", "cake", "--last", "-1"), ("--last", "-1")),
        (("study", "export", "cake", "--out", "missing/dir/h.csv"), ("does not exist",)),
        (("study", "tell", "cake", "7", "a"), ("never asked", "the open query is 1")),
        (("study", "add", "cake", "{bad", "1"), ("PARAMS",)),
    ],
)
def test_bad_study_commands_exit_2_with_the_log_unchanged(lab, argv, words):
    before = _events(lab)
    res = _boloop(lab, *argv, stdin="a\n")
    assert_refused(res, *words)
    assert "None" not in res.stderr
    assert _events(lab) == before
    assert not (lab / "missing").exists()


def test_api_refuses_the_same_bad_values(lab):
    from boloop.cli.study import run_loop
    from boloop.study import load_study

    study = load_study("cake", storage=f"sqlite:///{lab / 'lab.db'}")
    with pytest.raises(InvalidInputError, match="last"):
        study.status(last=-1)
    with pytest.raises(InvalidInputError, match="does not exist"):
        study.export(lab / "nowhere" / "h.json")
    with pytest.raises(InvalidInputError, match="--max"):
        run_loop(study, None, None, max_answers=0)  # type: ignore[arg-type]
    with pytest.raises(AnswerTypeError):
        study.tell(study.ask().id, "maybe")


# -- 2. one status vocabulary ---------------------------------------------------------------------
def test_status_names_every_count_the_horizon_default_and_summarises_sets(tmp_path):
    recipes = tmp_path / "recipes.csv"
    recipes.write_text("name,sugar,flour\nplain,0.1,0.5\nsweet,0.9,0.5\nrich,0.5,0.9\n")
    res = _boloop(tmp_path, "study", "create", "cake", "--method", "mr-lpf", "--space",
                  str(recipes), "--seed", "0")  # fmt: skip
    assert res.returncode == 0 and "T = 300" in res.stdout and "--option horizon=T" in res.stdout
    q = json.loads(_boloop(tmp_path, "study", "ask", "cake", "--json").stdout)
    assert _boloop(tmp_path, "study", "tell", "cake", str(q["id"]), "b").returncode == 0
    out = _boloop(tmp_path, "study", "status", "cake").stdout
    assert "answers:        1 in effect (1 duel)" in out
    assert "T = 300 duels (the default" in out and "299 left" in out
    assert out.count("iteration") == 1  # one iteration number, on its own line
    assert "iteration:      1 (mr-lpf's own count" in out
    names = {"plain", "sweet", "rich"}
    rec = out.split("recommendation:")[1].splitlines()[1].strip()
    assert rec.split(" (")[0] in names and "sugar=" in rec  # the option's name and values
    assert "<" not in out and "None" not in out and "x_T" not in out
    st = json.loads(_boloop(tmp_path, "study", "status", "cake", "--json").stdout)
    assert st["counts"] == {"duels": 1} and st["horizon"]["source"] == "default"
    assert st["recommendation_label"] in names and st["settings"]["horizon"] == 300


def test_status_of_a_level_set_and_an_expert_study(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    for name, method, pid, n in (("ls", "randomized-straddle", "levelset/toy", 6),
                                 ("ex", "cobol", "expert/toy", 12)):  # fmt: skip
        opts = {"fit_hyperparameters": False} if method == "cobol" else {}
        _answered_study(name, method, pid, url, n, **opts)
    out = _boloop(tmp_path, "study", "status", "ls").stdout
    assert "answers:        6 in effect (6 evaluations)" in out
    assert "candidates estimated above the threshold 0.25" in out
    assert "bounding box x0 in [" in out and "<" not in out
    assert out.count("iteration") == 2  # the line and its label, no second number elsewhere
    st = json.loads(_boloop(tmp_path, "study", "status", "ex", "--json").stdout)
    c = st["counts"]
    assert c["labels"] + c["evaluations"] == st["answered"] == 12 and c["labels"] >= 10
    assert "evaluations" not in st["settings"] and "labels" not in st["settings"]
    assert st["options"] == {"fit_hyperparameters": False} and st["horizon"] is None


# -- 3. one answer grammar ------------------------------------------------------------------------
def test_answer_grammar_table_matches_the_docs():
    from boloop.study.answers import DUEL_WORDS, LABEL_WORDS, parse_duel, parse_label

    docs = (Path(__file__).parents[1] / "docs" / "studies.md").read_text()
    for value, words in LABEL_WORDS.items():
        for w in words:
            assert parse_label(w) is value and parse_label(f" {w.upper()} ") is value
            assert f"`{w}`" in docs
    for value, words in DUEL_WORDS.items():
        for w in words:
            assert parse_duel(w) == value and parse_duel(w.title()) == value
            assert f"`{w}`" in docs
    assert parse_duel("0") is None and parse_label("maybe") is None and parse_duel("c") is None


def test_labels_and_duels_take_the_same_words_on_the_command_line(tmp_path):
    space = _write(tmp_path / "s.json", {"family": "expert",
                   "parameters": [{"name": "t", "low": 0, "high": 1}]})  # fmt: skip
    assert _boloop(tmp_path, "study", "create", "e", "--method", "toy-random", "--space", space,
                   "--seed", "1").returncode == 0  # fmt: skip
    assert _boloop(tmp_path, "study", "ask", "e").returncode == 0
    res = _boloop(tmp_path, "study", "tell", "e", "0", "1")  # a label answered 1 = accept
    assert res.returncode == 0 and "-> accept" in res.stdout
    assert _boloop(tmp_path, "study", "create", "p", "--method", "toy-random", "--problem",
                   "preference/toy", "--seed", "1").returncode == 0  # fmt: skip
    for answer, shown in (("2", "b"), ("LEFT", "a"), ("B", "b")):
        q = json.loads(_boloop(tmp_path, "study", "ask", "p", "--json").stdout)
        res = _boloop(tmp_path, "study", "tell", "p", str(q["id"]), answer)
        assert res.returncode == 0 and f"-> {shown}" in res.stdout, res.stderr
    q = json.loads(_boloop(tmp_path, "study", "ask", "p", "--json").stdout)
    before = _events(tmp_path)
    assert_refused(_boloop(tmp_path, "study", "tell", "p", str(q["id"]), "0"), "1 = A and 2 = B")
    assert _events(tmp_path) == before


def test_run_marks_the_kind_of_answer_shows_progress_and_the_real_resume_command(tmp_path):
    space = _write(tmp_path / "s.json", {"family": "expert",
                   "parameters": [{"name": "t", "low": 0, "high": 1}]})  # fmt: skip
    assert _boloop(tmp_path, "study", "create", "my study", "--method", "toy-random", "--space",
                   space, "--seed", "1").returncode == 0  # fmt: skip
    res = _boloop(tmp_path, "study", "run", "my study", stdin="y\n0.5\nq\n")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.index("-- LABEL") < out.index("-- MEASURE") < out.rindex("-- LABEL")
    assert "progress: 1 answer (0 evaluations, 1 label); iteration" in out
    assert "progress: 2 answers (1 evaluation, 1 label)" in out
    assert 'resume with: boloop study run "my study"' in out and "NAME" not in out
    # a study in another storage than the default: the resume command names it
    other = f"sqlite:///{tmp_path / 'other.db'}"
    assert _boloop(tmp_path, "study", "create", "s2", "--method", "toy-random", "--space",
                   space, "--storage", other).returncode == 0  # fmt: skip
    res = _boloop(tmp_path, "study", "run", "s2", "--storage", other, stdin="q\n")
    assert res.returncode == 0, res.stderr
    assert f"resume with: boloop study run s2 --storage {other}" in res.stdout


# -- 4. pictures ----------------------------------------------------------------------------------
def test_plot_writes_the_web_pages_pictures_as_one_svg_or_an_html_page(lab):
    import xml.etree.ElementTree as ET

    from boloop.study import load_study
    from boloop.study.pictures import pictures

    res = _boloop(lab, "study", "plot", "cake")
    assert res.returncode == 0 and "wrote cake.svg" in res.stdout, res.stderr
    root = ET.fromstring((lab / "cake.svg").read_text())
    inner = [el for el in root if el.tag.endswith("svg")]
    assert len(inner) == 2 and float(root.get("height")) == sum(
        float(el.get("height")) for el in inner
    )
    pics = pictures(load_study("cake", storage=f"sqlite:///{lab / 'lab.db'}"))
    labels = [ET.fromstring(svg).get("aria-label") for svg in pics.values()]
    assert [el.get("aria-label") for el in inner] == labels  # the same functions as the web
    res = _boloop(lab, "study", "plot", "cake", "--out", "page.html")
    assert res.returncode == 0 and (lab / "page.html").read_text().count("<svg") >= 2
    before = sorted(p.name for p in lab.iterdir())
    assert_refused(_boloop(lab, "study", "plot", "cake", "--out", "p.png"), ".svg or .html")
    assert_refused(_boloop(lab, "study", "plot", "cake", "--out", "no/p.svg"), "does not exist")
    assert sorted(p.name for p in lab.iterdir()) == before


# -- 5. quick calls (behaviour only; the latency is in benchmarks/cli_latency.py) ------------------
def _answered_study(
    name: str,
    method: str,
    problem_id: str,
    url: str,
    n: int,
    *,
    seed: int = 0,
    after_each=None,
    **options,
):
    """A study of ``method`` on the registered problem, with ``n`` queries answered by the
    problem's own oracle (``after_each(study)`` called after every tell); returns the study, the
    problem and the oracle's generator, to answer further queries the same way."""
    from boloop.problems import get
    from boloop.simulate import oracle_rng

    study = create_study(name, method, problem=problem_id, storage=url, seed=seed, **options)
    problem, rng = get(problem_id), oracle_rng(0)
    for _ in range(n):
        q = study.ask()
        study.tell(q.id, problem.answer(q.query, rng))
        if after_each is not None:
            after_each(study)
    return study, problem, rng


def _python(cwd: Path, code: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={**base, "BOLOOP_STORAGE": f"sqlite:///{cwd / 'lab.db'}", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_the_parser_and_version_import_no_numpy_or_database(tmp_path):
    out = _python(
        tmp_path,
        "import sys\nfrom boloop.cli import build_parser\nbuild_parser().parse_args(['study', "
        "'ask', 'x'])\nprint(sorted(m for m in ('numpy', 'sqlalchemy', 'scipy', "
        "'boloop.study.core') if m in sys.modules))",
    )
    assert out.strip() == "[]"


def test_study_calls_use_one_blas_thread_unless_the_user_says_otherwise(tmp_path):
    code = (
        "import os\nfrom boloop.cli import main\nmain(['study', 'list'])\n"
        "print(os.environ['OPENBLAS_NUM_THREADS'], os.environ['OMP_NUM_THREADS'])"
    )
    assert _python(tmp_path, code).split()[-2:] == ["1", "1"]
    assert _python(tmp_path, code, OMP_NUM_THREADS="3").split()[-2:] == ["1", "3"]


def test_a_long_study_loads_from_a_snapshot_without_other_families(tmp_path, monkeypatch):
    """A cheap policy with many answers gets a snapshot, and a command-line call loads from it:
    neither the other families' algorithms nor scipy.stats are imported; verify still replays
    the whole log. Snapshots are stored once a replay costs SNAPSHOT_AFTER_SECONDS: on a fast,
    quiet machine 150 MR-LPF answers cost less, so the threshold is set to 0 here to make the
    snapshot's existence independent of the machine's speed."""
    from boloop.study import snapshots as snapshot_settings

    monkeypatch.setattr(snapshot_settings, "SNAPSHOT_AFTER_SECONDS", 0.0)

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _answered_study("pr", "mr-lpf", "preference/toy", url, 150, horizon=500)
    with sqlite3.connect(tmp_path / "lab.db") as con:
        assert con.execute("SELECT COUNT(*) FROM boloop_snapshots").fetchone()[0] == 1
    out = _python(
        tmp_path,
        "import sys\nfrom boloop.cli import main\nmain(['study', 'ask', 'pr', '--json'])\n"
        "print(sorted(m for m in ('boloop.algorithms.safe', 'boloop.algorithms.levelset', "
        "'boloop.algorithms.expert', 'boloop.problems.safe', 'scipy.stats', 'scipy.optimize', "
        "'sqlalchemy', 'boloop.study.storage') if m in sys.modules))",
    )
    assert json.loads(out.splitlines()[0])["id"] == 150
    assert out.splitlines()[-1] == "[]"
    out = _python(  # an answer too: the plain SQLite file is written without SQLAlchemy
        tmp_path,
        "import sys\nfrom boloop.cli import main\nmain(['study', 'tell', 'pr', '150', 'a'])\n"
        "print(sorted(m for m in ('sqlalchemy', 'scipy.stats', 'scipy.optimize') "
        "if m in sys.modules))",
    )
    assert out.splitlines()[-1] == "[]"
    res = _boloop(tmp_path, "study", "verify", "pr")
    assert res.returncode == 0 and "151 answers" in res.stdout


def test_importing_the_models_and_every_family_imports_no_scipy(tmp_path):
    """scipy (0.2 s of CPU at its first import) is imported by the functions that use it, not
    by importing boloop's GPs, policies, problems or metrics: a study command pays for it only
    when its step factorises, solves or fits."""
    out = _python(
        tmp_path,
        "import sys\nimport boloop.gp.exact, boloop.gp.cache, boloop.gp.preference, "
        "boloop.gp.utility_laplace, boloop.gp.likelihood_ratio, boloop.algorithms.levelset, "
        "boloop.algorithms.preference, boloop.algorithms.safe, boloop.algorithms.expert, "
        "boloop.problems, boloop.problems.preference, boloop.problems.expert, "
        "boloop.metrics.preference, boloop.study.core\n"
        "print(sorted(m for m in sys.modules if m == 'scipy' or m.startswith('scipy.')))",
    )
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    "method,problem_id,options",
    [("randomized-straddle", "levelset/toy", {}), ("mr-lpf", "preference/toy", {"horizon": 500})],
)
def test_an_ask_after_a_command_line_tell_imports_no_scipy(tmp_path, method, problem_id, options):
    """``boloop study tell`` leaves a snapshot with the answer in it, so the next ``boloop study
    ask`` (a new process) loads the policy without replaying the answer: for these families no
    factorisation is needed to answer, and scipy (linalg, special: ~0.2 s of imports) is only
    imported where it is used. The ask's query is the one the API gives on the same log."""
    from boloop.study import load_study
    from boloop.study.answers import answer_text

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study, problem, rng = _answered_study("s", method, problem_id, url, 40, **options)
    check = (
        "import sys\nfrom boloop.cli import main\nmain(sys.argv[1:])\n"
        "print(sorted(m for m in sys.modules if m == 'scipy' or m.startswith('scipy.')))"
    )
    for _ in range(2):
        q = study.ask()
        text = answer_text(q.kind, problem.answer(q.query, rng)).replace(" ", "")
        tell = f"['study', 'tell', 's', '{q.id}', '{text}']"
        _python(tmp_path, check.replace("sys.argv[1:]", tell))
        out = _python(tmp_path, check.replace("sys.argv[1:]", "['study', 'ask', 's', '--json']"))
        assert out.splitlines()[-1] == "[]", out
        asked = json.loads(out.splitlines()[0])
        study = load_study("s", storage=url, full_replay=True)
        assert asked["id"] == study.ask().id
        assert asked == json.loads(json.dumps(study.ask().to_dict()))


@pytest.mark.parametrize(
    "method,space",
    [
        ("randomized-straddle", {"threshold": 0.5, "settings": {"noise_variance": 0.01}}),
        ("mr-lpf", {"settings": {"lam": 0.1, "budget": 30}}),
        ("cobol", {"settings": {"noise_variance": 0.01, "n_initial_labels": 4}}),
        ("m-safeopt", {"monotone": "t", "h": 0.9, "settings": {"noise_f": 1e-4, "L_f": 2.0}}),
    ],
)
def test_every_family_accepts_the_settings_it_reads(tmp_path, method, space):
    params = [{"name": "t", "low": 0, "high": 1, "grid": 5}, {"name": "u", "low": 0, "high": 1}]
    doc = {**space, "parameters": params}
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    create_study("ok", method, doc, storage=url, seed=0)
    bad = {**doc, "settings": {**doc["settings"], "noise_varience": 0.1}}
    with pytest.raises(InvalidInputError, match="noise_varience") as err:
        create_study("bad", method, bad, storage=url, seed=0)
    for key in doc["settings"]:
        assert key in str(err.value).split("the settings it reads:")[1]


@pytest.mark.parametrize(
    "method,problem_id,options",
    [
        ("cobol", "expert/toy", {"n_initial_labels": 3, "n_initial": 2}),
        ("randomized-straddle", "levelset/toy", {}),
        ("mr-lpf", "preference/toy", {}),
    ],
)
def test_status_after_every_answer_leaves_the_queries_of_a_replay(
    tmp_path, method, problem_id, options
):
    """``study run`` prints a status line after every answer: computing it (recommendation,
    settings) must not change the next query, or the log would not replay."""
    from boloop.study import load_study

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study, _, _ = _answered_study(
        "s", method, problem_id, url, 8, seed=3, after_each=lambda st: st.status(last=1), **options
    )
    study.ask()
    replayed = load_study("s", storage=url, full_replay=True)  # raises if a query differs
    assert replayed.n_answered == 8


def _boloop_env(cwd: Path, env: dict, *argv: str) -> subprocess.CompletedProcess:
    return run_cli(argv, cwd=cwd, env={**os.environ, **env})


def _boloop_process(cwd: Path, env: dict, *argv: str) -> subprocess.CompletedProcess:
    """``python -m boloop.cli``, the real entry point."""
    return subprocess.run(
        [sys.executable, "-m", "boloop.cli", *argv],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("how", "value", "expected"),
    [
        ("flag", "notaurl", "neither a URL"),
        ("env", "garbage", "$BOLOOP_STORAGE"),
        ("flag", "missing/dir/lab.db", "does not exist"),
        ("flag", "sqlite:///missing/dir/lab.db", "does not exist"),
        # issue 14: PostgreSQL is supported; no server listens on the default port here
        ("flag", "postgresql://user:pw@127.0.0.1:1/lab", "cannot connect to the database server"),
        ("flag", "mysql://user:pw@localhost/lab", "'mysql' backend is not supported"),
    ],
)
def test_a_storage_that_cannot_be_right_is_refused_before_anything_is_created(
    tmp_path, how, value, expected
):
    """Issue 15: a wrong storage is one clear error line, exit 2, no file or directory made, for
    a reading command and for create alike."""
    env = {"BOLOOP_STORAGE": value if how == "env" else ""}
    flag = () if how == "env" else ("--storage", value)
    for argv in (
        ("study", "list", *flag),
        ("study", "create", "cake", "--method", "toy-random", "--problem", "levelset/toy", *flag),
    ):
        res = _boloop_env(tmp_path, env, *argv)
        assert res.returncode == 2, (argv, res.stdout, res.stderr)
        assert expected in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_bare_sqlite_file_name_still_works(tmp_path):
    res = _boloop_process(
        tmp_path,
        {"BOLOOP_STORAGE": ""},
        "study",
        "create",
        "cake",
        "--method",
        "toy-random",
        "--problem",
        "levelset/toy",
        "--storage",
        "lab.db",
    )
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "lab.db").exists()


def test_plot_of_a_safe_study_adds_the_safe_sets_growth_unless_asked_not_to(tmp_path):
    _answered_study(
        "dose", "m-safeopt", "safe/toy", f"sqlite:///{tmp_path / 'lab.db'}", 5,
        fit_hyperparameters=False,
    )  # fmt: skip
    res = _boloop(tmp_path, "study", "plot", "dose")
    assert res.returncode == 0 and "safe set growth" in res.stdout, res.stderr
    assert "certified safe share of the space" in (tmp_path / "dose.svg").read_text()
    res = _boloop(tmp_path, "study", "plot", "dose", "--no-growth", "--out", "lean.svg")
    assert res.returncode == 0 and "growth" not in res.stdout
    assert "certified safe share" not in (tmp_path / "lean.svg").read_text()


def test_a_snapshot_holds_the_gp_buffers_in_use_and_restores_them_bit_for_bit():
    """A study snapshot pickles its GPs: the buffers' spare capacity (a 300-point GP in buffers
    for 512) is not stored, and the unpickled GP and candidate cache continue bit for bit as the
    originals (same factor, same predictions, same appends)."""
    import pickle

    import numpy as np

    from boloop.gp.cache import CandidatePosterior
    from boloop.gp.exact import ExactGP
    from boloop.gp.kernels import SquaredExponential

    rng = np.random.default_rng(0)
    gp = ExactGP(SquaredExponential(lengthscale=0.3), noise_variance=1e-4)
    cands = rng.uniform(size=(400, 2))
    cache = CandidatePosterior(gp, cands)
    for _ in range(300):  # one append at a time: the buffers grow by doubling, to 512 rows
        x = rng.uniform(size=2)
        gp.condition(x, float(np.sin(5 * x).sum()))
        if gp.n % 50 == 0:
            cache.mean  # noqa: B018 - keep the cache in step, as a policy does
    data = pickle.dumps((gp, cache), protocol=pickle.HIGHEST_PROTOCOL)
    assert len(data) < 8 * (300 * 300 + 300 * 400 + 10_000)  # 512 x 512 alone is 2.1 MB
    gp2, cache2 = pickle.loads(data)
    assert cache2.gp is gp2
    x_new = rng.uniform(size=(3, 2))  # past the 300 rows in use, inside the capacity
    for g in (gp, gp2):
        g.condition(x_new, np.cos(x_new).sum(axis=1))
    assert np.array_equal(gp.cholesky_factor, gp2.cholesky_factor)
    test = rng.uniform(size=(50, 2))
    for a, b in zip(gp.predict(test), gp2.predict(test)):
        assert np.array_equal(a, b)
    assert np.array_equal(cache.mean, cache2.mean)
    assert np.array_equal(cache.variance, cache2.variance)


def test_an_expert_ask_after_a_command_line_tell_imports_no_scipy_stats(tmp_path):
    """COBOL's step draws its candidates from numpy and ranks the agreement gate's draws in
    numpy (issue 15: scipy.stats costs an ask ~0.2 s), and refits the f-GP only once its data
    grew by a tenth: of three asks after a command-line tell, at 60 answers, none imports
    scipy.stats and at most one scipy.optimize (a refit). The ask's query is the one a full
    replay gives."""
    from boloop.study import load_study
    from boloop.study.answers import answer_text

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study, problem, rng = _answered_study("e", "cobol", "expert/toy", url, 60)
    check = (
        "import sys\nfrom boloop.cli import main\nmain(sys.argv[1:])\n"
        "print(sorted(m for m in ('scipy.stats', 'scipy.optimize') if m in sys.modules))"
    )
    imported = []
    for _ in range(3):
        q = study.ask()
        text = answer_text(q.kind, problem.answer(q.query, rng)).replace(" ", "")
        _python(
            tmp_path, check.replace("sys.argv[1:]", f"['study', 'tell', 'e', '{q.id}', '{text}']")
        )
        out = _python(tmp_path, check.replace("sys.argv[1:]", "['study', 'ask', 'e', '--json']"))
        imported.append(out.splitlines()[-1])
        asked = json.loads(out.splitlines()[0])
        study = load_study("e", storage=url, full_replay=True)
        replayed = study.ask()
        assert asked["id"] == replayed.id and asked["params"] == replayed.params
    assert all("scipy.stats" not in line for line in imported), imported
    assert sum("scipy.optimize" in line for line in imported) <= 1, imported


def test_study_label_records_an_outside_label_from_the_command_line(tmp_path):
    """``boloop study label NAME PARAMS accept|reject``: the CLI counterpart of Study.label,
    for labels the expert gave outside the loop; a bad answer or a method that takes no
    labels stores nothing."""
    (tmp_path / "process.json").write_text(
        '{"parameters": [{"name": "temperature", "low": 150, "high": 250},'
        ' {"name": "pressure", "low": 1.0, "high": 5.0}]}'
    )
    res = _boloop(tmp_path, "study", "create", "p", "--method", "cobol", "--space",
                  "process.json", "--seed", "0")
    assert res.returncode == 0, res.stderr
    res = _boloop(tmp_path, "study", "label", "p", "temperature=200,pressure=2", "accept")
    assert res.returncode == 0 and "stored label accept" in res.stdout
    res = _boloop(tmp_path, "study", "label", "p", '{"temperature": 160, "pressure": 4.5}', "n")
    assert res.returncode == 0 and "stored label reject" in res.stdout
    before = _events(tmp_path)
    for argv in (("temperature=170,pressure=3", "maybe"), ("temperature=999,pressure=3", "y")):
        res = _boloop(tmp_path, "study", "label", "p", *argv)
        assert res.returncode == 2 and res.stderr
    assert _events(tmp_path) == before
    rows = load_study("p", storage=f"sqlite:///{tmp_path / 'lab.db'}").history()
    assert [(r["source"], r["answer"]) for r in rows] == [("added", True), ("added", False)]
    res = _boloop(tmp_path, "study", "create", "g", "--method", "gp-lcb", "--space",
                  "process.json")
    res = _boloop(tmp_path, "study", "label", "g", "temperature=200,pressure=2", "y")
    assert res.returncode == 2 and "labels" in res.stderr


def test_data_options_are_refused_by_a_study_with_the_way_to_give_data(tmp_path):
    """initial_labels / initial_observations as study options would be data the study's
    status, history and export never show: create refuses them, naming add / label, and
    stores nothing."""
    import pytest

    from boloop.errors import InvalidInputError

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    with pytest.raises(InvalidInputError, match="Study.add"):
        create_study("e", "cobol", problem="expert/toy", storage=url,
                     initial_observations=[[[0.5, 0.5]], [0.5]])
    with pytest.raises(InvalidInputError, match="Study.label"):
        create_study("e", "cobol", problem="expert/toy", storage=url,
                     initial_labels=[[[0.5, 0.5]], [True]])
    study = create_study("e", "cobol", problem="expert/toy", storage=url)
    assert study.n_answered == 0


def test_study_run_r_names_the_recommended_option_of_a_table(tmp_path):
    """The 'r' key of 'study run' shows the recommended option by its name, as status does."""
    recipes = tmp_path / "recipes.csv"
    recipes.write_text("name,sugar,flour\nplain,0.1,0.5\nsweet,0.9,0.5\nrich,0.5,0.9\n")
    res = _boloop(tmp_path, "study", "create", "cake", "--method", "mr-lpf", "--space",
                  str(recipes), "--seed", "0")  # fmt: skip
    assert res.returncode == 0, res.stderr
    res = _boloop(tmp_path, "study", "run", "cake", stdin="a\nr\nq\n")
    assert res.returncode == 0, res.stderr
    after = res.stdout.split("recommendation:")[1].splitlines()[1].strip()
    assert after.split(" (")[0] in {"plain", "sweet", "rich"} and "sugar=" in after


def test_a_level_set_status_says_how_many_points_are_still_undecided(tmp_path):
    """The count of candidates whose posterior mean is within 2 sd of the threshold (the light
    cells of the model picture): a person's "how far along is the map"."""
    import numpy as np

    from boloop.study import load_study

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _answered_study("ls", "randomized-straddle", "levelset/toy", url, 12)
    study = load_study("ls", storage=url)
    rec = study.status(last=0)["recommendation"]
    X = np.asarray(study.space.points)
    mean, sd = study.policy.predict(X)
    expected = int(np.sum(np.abs(mean - rec["threshold"]) < 2.0 * sd))
    assert 0 < expected < len(X)  # a map still being made: the count says something
    assert rec["n_undecided"] == expected
    out = _boloop(tmp_path, "study", "status", "ls").stdout
    assert f"{expected} still undecided: the model's value there is within 2 standard" in out


@pytest.mark.parametrize(
    ("space", "typo", "meant"),
    [
        ({"treshold": 0.5}, "treshold", "threshold"),
        ({"threshold": 0.5, "settings": {"noise_variace": 0.1}}, "noise_variace", "noise_variance"),
        ({"threshold": 0.5, "measurement": {"nme": "hardness"}}, "nme", "name"),
        ({"threshold": 0.5, "colour": "blue"}, None, None),
    ],
)
def test_a_misspelt_space_key_is_refused_naming_the_key_meant(tmp_path, space, typo, meant):
    """A newcomer typed `treshold = 40` in a space file: the refusal listed the eleven valid
    keys, while a misspelt --option names the one meant ('did you mean ...?'). The space's keys,
    its [settings] and [measurement] name it too; a key like none of them gets no guess."""
    doc = {"parameters": [{"name": "t", "low": 0, "high": 1, "grid": 5}], **space}
    with pytest.raises(InvalidInputError) as info:
        create_study("typo", "randomized-straddle", doc, storage=f"sqlite:///{tmp_path / 'l.db'}")
    if meant:
        assert f"did you mean {meant!r}" in str(info.value), str(info.value)
    else:
        assert "did you mean" not in str(info.value), str(info.value)
    assert not (tmp_path / "l.db").exists()


def test_status_calls_points_only_the_points_of_the_space(tmp_path):
    """A newcomer's preference study: `status` showed EUBO's model weights as "models 3 points,
    bounding box lengthscale in [0.2, 0.8], variance in [16, 16], weight in [...]": a list of
    the method's models read as points of the space. Points (the level set's upper set) keep
    their summary; other lists of numbers-by-name are written as they are."""
    from study_samples import make_drinks

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    make_drinks("drinks", url, answers=3)
    out = _boloop(tmp_path, "study", "status", "drinks").stdout
    (models,) = [ln for ln in out.splitlines() if ln.strip().startswith("models ")]
    assert "points" not in models and "bounding box" not in models, models
    assert "lengthscale" in models and "weight" in models, models
    space = {"threshold": 0.5, "parameters": [{"name": "t", "low": 0, "high": 1, "grid": 11}]}
    lev = create_study("lev", "randomized-straddle", space, storage=url, seed=0)
    for _ in range(3):
        q = lev.ask()
        lev.tell(q.id, q.params["t"])
    out = _boloop(tmp_path, "study", "status", "lev").stdout
    assert "upper set: " in out and "points, bounding box t in [" in out, out


def test_a_taken_name_at_the_command_line_says_how_to_go_on_with_the_study_there(tmp_path):
    """`boloop study create cure` a second time said "load it with load_study or choose another
    name": a Python function, to someone at the terminal. The refusal names the command that
    goes on with the stored study, and still the Python way."""
    space = _write(tmp_path / "s.json", {"threshold": 0.5, "parameters": [
        {"name": "t", "low": 0, "high": 1, "grid": 5}]})
    assert _boloop(tmp_path, "study", "create", "my cure", "--space", space).returncode == 0
    before = _events(tmp_path)
    r = _boloop(tmp_path, "study", "create", "my cure", "--space", space)
    assert r.returncode == 2 and _events(tmp_path) == before
    assert "boloop study ask 'my cure'" in r.stderr and "load_study" in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("settings", "meant"),
    [
        # the start of a longer key: L_g_prime, not the nearer spelling L_f (another constant)
        ({"L_g": 0.01}, "'L_g_prime'"),
        # the start of two keys: both, not one of them as if it were the only one meant
        ({"noise": 1e-4}, "'noise_f' or 'noise_g'"),
        ({"L_f": 2.0, "noise_f": 1.0, "sqrt_beta": 2.0}, "'sqrt_beta_f' or 'sqrt_beta_g'"),
    ],
)
def test_a_safe_settings_key_that_starts_longer_keys_is_pointed_at_them(settings, meant):
    """``[settings] L_g = 0.01`` was answered "did you mean 'L_f'?" (the upper bound of f's
    growth, the other constant) and ``noise = 1e-4`` "did you mean 'noise_g'?" alone."""
    doc = {
        "monotone": "dose",
        "h": 0.6,
        "parameters": [
            {"name": "dose", "low": 0.0, "high": 40.0, "grid": 5},
            {"name": "timing", "low": 0.0, "high": 24.0, "grid": 3},
        ],
        "settings": settings,
    }
    with pytest.raises(InvalidInputError) as info:
        create_study("keys", "m-safeopt", doc, storage="memory://settings-hint")
    assert f"(did you mean {meant}?)" in str(info.value), str(info.value)
    with pytest.raises(InvalidInputError) as info:  # a misspelt option says the same
        create_study("keys", "m-safeopt", {**doc, "settings": {}}, storage="memory://o", **settings)
    assert f"(did you mean {meant}?)" in str(info.value), str(info.value)
