"""SVG pictures of studies: well-formed, escaped, and drawing what the study holds."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from boloop.study import create_study
from boloop.study.pictures import (
    PANEL_H,
    PHONE_WIDTH,
    WIDTH,
    model_svg,
    pictures,
    progress_svg,
)
from study_samples import EDGE_VALUES, SPACES, answer_for, make_drinks, make_edge, make_study

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'pics.db'}"


def _texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


@pytest.mark.parametrize("name", sorted(SPACES))
def test_every_family_draws_well_formed_svg(url, name):
    study = make_study(name, url, answers=8)
    pics = pictures(study)
    assert set(pics) == {"progress", "model"} | ({"growth"} if name == "safe" else set())
    for svg in pics.values():
        _texts(svg)  # parses as XML
        assert "<script" not in svg and "http://" not in svg.replace(
            'xmlns="http://www.w3.org/2000/svg"', ""
        )
    n_marks = progress_svg(study).count("<title>answer ")
    if name != "pref":  # one mark per answer (labels and evaluations alike); safe: f and g
        assert n_marks == study.n_answered * (2 if name == "safe" else 1)


def test_empty_study_says_so(url):
    study = make_study("lev1", url, answers=0)
    assert "no answers yet" in " ".join(_texts(progress_svg(study)))
    assert "no answers yet" in " ".join(_texts(model_svg(study)))


def test_names_are_escaped(url):
    space = {
        "parameters": [{"name": "<script>alert(1)</script>", "low": 0, "high": 1, "grid": 11}],
        "threshold": 0.5,
    }
    study = create_study("x<&>", "straddle", space, storage=url, seed=0)
    for _ in range(4):
        q = study.ask()
        study.tell(q.id, 1.0)
    for svg in pictures(study).values():
        assert "<script>" not in svg
        texts = _texts(svg)
    assert "<script>alert(1)</script>" in texts  # the axis label, as text


def test_levelset_classes_follow_the_estimate(url):
    """The 1-D class strip colours each grid point as the method's estimate classifies it."""
    study = make_study("lev1", url, answers=10)
    est = study.policy.recommend()
    n_upper = int(est.upper.sum())
    svg = model_svg(study)
    strip = [s for s in svg.split("<rect") if 'fill="#e07b28"' in s or 'fill="#f5c9a3"' in s]
    # one cell per candidate of H_t, plus one legend swatch per orange colour
    assert len(strip) == n_upper + 2


@pytest.mark.parametrize("sample", ["pref", "drinks"])
def test_a_preference_model_before_any_answer_names_no_recommendation(url, sample):
    """Before the first duel the method's favourite is no recommendation (the methods'
    recommend() still names one; Study.recommend() says None): the picture says only that
    there are no answers yet."""
    study = make_study("pref", url) if sample == "pref" else make_drinks("drinks", url, 0)
    with study.readout() as r:
        assert r.recommend() is not None  # the method (a copy of it) has a favourite
    assert study.recommend() is None
    assert _texts(model_svg(study)) == ["no answers yet"]


def test_preference_bars_count_wins(url):
    study = make_study("pref", url, answers=9)
    hist = study.history()
    svg = model_svg(study)
    for label in {r["a_label"] for r in hist} | {r["b_label"] for r in hist}:
        won = sum(1 for r in hist if (r["a_label"] if r["answer"] == 0 else r["b_label"]) == label)
        played = sum(1 for r in hist if label in (r["a_label"], r["b_label"]))
        assert f"<title>{label}: won {won} of {played}</title>" in svg


def test_preference_shows_a_recommendation_never_in_a_duel_with_readable_names(url):
    """EUBO-regret recommends after two duels an option that was in none (a newcomer's trial:
    the caption said "(gold)" and nothing was gold). It gets a row of its own, said to have no
    duel yet; names are cut between parameters, never inside a number; the caption wraps."""
    study = make_drinks("drinks", url)
    rec = study.recommend()
    duelled = [r[s] for r in study.history() for s in ("a", "b")]
    assert rec not in duelled  # what this test is about
    svg = model_svg(study)
    root = ET.fromstring(svg)
    names = {}
    for t in root.iter(f"{SVG}text"):
        spans = [s.text or "" for s in t.iter(f"{SVG}tspan")]
        if spans:
            names[" ".join(spans)] = t.get("font-weight") == "bold"
    short = ", ".join(f"{k}={v:.3g}" for k, v in rec.items())
    assert names[short] is True  # the recommendation's row, in bold (its mark is gold)
    assert "not in a duel yet: no win rate" in _texts(svg)
    for name in names:  # every value whole: 0.316, never "0."
        for part in name.split(", "):
            key, _, value = part.partition("=")
            assert key in study.names and float(value) == float(f"{float(value):.3g}"), name
    caption = [t.text or "" for t in root.iter(f"{SVG}text") if t.get("x") == "8"]
    assert " ".join(caption).startswith(
        f"recommendation of eubo-regret: {short} (gold; it has not been in a duel yet)."
    )
    assert len(caption) > 1 and all(len(t) <= 92 for t in caption)  # wrapped in the picture


def test_safe_marks_measurements_against_h(url):
    study = make_study("safe", url, answers=6)
    g = [r["answer"]["g"] for r in study.history()]
    svg = progress_svg(study)
    assert svg.count("g=") == len(g)
    model = model_svg(study)
    assert "certified safe" in model


def test_levelset_progress_tells_above_from_below_by_shape(url):
    """WCAG 1.4.1: a measurement above the threshold is a triangle, one below a dot (they were
    an orange and a blue dot)."""
    study = make_study("lev1", url, answers=8, fast=True)
    y = [r["answer"] for r in study.history()]
    assert any(v > 0.3 for v in y) and any(v <= 0.3 for v in y)  # both kinds drawn
    svg = progress_svg(study)
    for n, v in enumerate(y, start=1):
        shape = "path" if v > 0.3 else "circle"
        assert re.search(rf"<{shape} [^>]*><title>answer {n}: ", svg), (n, v)


def test_expert_g_map_draws_its_sign_boundary(url):
    """WCAG 1.4.1: the expert's g map (red where g > 0, green where g <= 0) draws a dark line
    exactly between each pair of neighbouring cells of different sign, so the boundary is seen
    without telling red from green."""
    study = make_study("expert", url, answers=16, fast=True)
    root = ET.fromstring(model_svg(study))
    ns = "{http://www.w3.org/2000/svg}"
    (line,) = [
        e for e in root.iter(f"{ns}path") if (e.findtext(f"{ns}title") or "").startswith("g = 0")
    ]
    # the g panel's cells (below the first panel), their sign read from their colour
    cells = {}
    for e in root.iter(f"{ns}rect"):
        fill = e.get("fill", "")
        if float(e.get("y", 0)) > 220 and len(fill) == 7 and e.get("height") not in (None, "10"):
            r, g = int(fill[1:3], 16), int(fill[3:5], 16)
            cells[(round(float(e.get("x")), 1), round(float(e.get("y")), 1))] = r > g
    xs = sorted({x for x, _ in cells})
    ys = sorted({y for _, y in cells})
    assert len(xs) * len(ys) == len(cells) and len(xs) > 10
    pairs = sum(
        cells[(xs[i], ys[j])] != cells[(xs[i + 1], ys[j])]
        for i in range(len(xs) - 1)
        for j in range(len(ys))
    ) + sum(
        cells[(xs[i], ys[j])] != cells[(xs[i], ys[j + 1])]
        for i in range(len(xs))
        for j in range(len(ys) - 1)
    )
    segments = re.findall(r"M([\d.]+),([\d.]+)([VH])([\d.]+)", line.get("d"))
    assert pairs > 0 and len(segments) == pairs
    for x, y, kind, to in segments:  # each on the shared edge of two cells of different sign
        x, y, to = float(x), float(y), float(to)
        if kind == "V":
            left = max(cx for cx in xs if cx < x)
            right = min(cx for cx in xs if cx >= x - 0.05)
            row = min(ys, key=lambda cy: abs(cy - min(y, to)))
            assert cells[(left, row)] != cells[(right, row)], (x, y)
        else:
            col = min(xs, key=lambda cx: abs(cx - x))
            above = max(cy for cy in ys if cy < y)
            below = min(cy for cy in ys if cy >= y - 0.05)
            assert cells[(col, above)] != cells[(col, below)], (x, y)


def _luminance(hex_colour: str) -> float:
    rgb = [int(hex_colour[k : k + 2], 16) / 255 for k in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_safe_pictures_say_unsafe_without_colour(url):
    """WCAG 1.4.1: a measured g above h is a cross (a safe one a dot), a likely-unsafe cell is
    hatched and much darker than a certified one, and no title names a colour."""
    from study_samples import answer_for

    study = make_study("safe", url, answers=3, fast=True)
    for _ in range(7):  # g far above h = 0.8 ...
        q = study.ask()
        study.tell(q.id, {"f": 0.5, "g": 5.0})
    for weight in (0, 0.5, 1):  # ... also above the lowest dose: the model is sure it is unsafe
        study.add({"dose": 0.6, "weight": weight}, {"f": 0.5, "g": 5.0})
    q = study.ask()
    study.tell(q.id, answer_for(q))
    over = {i + 1 for i, r in enumerate(study.history()) if r["answer"]["g"] > 0.8}
    under = {i + 1 for i, r in enumerate(study.history()) if r["answer"]["g"] <= 0.8}
    progress = progress_svg(study)
    for shape, answers in (("path", over), ("circle", under)):
        for n in answers:
            for out in ("f", "g"):
                assert re.search(rf"<{shape} [^>]*><title>answer {n}: {out}=", progress), (n, out)
    root = ET.fromstring(model_svg(study))
    ns = "{http://www.w3.org/2000/svg}"
    texts = " ".join("".join(t.itertext()) for t in root.iter(f"{ns}text")).lower()
    assert not re.search(r"\b(green|red|orange|blue|yellow)\b", texts), texts
    crosses = [e for e in root.iter(f"{ns}path") if (e.findtext(f"{ns}title") or "").startswith("g=5")]
    assert len(crosses) == 10
    cells = [e for e in root.iter(f"{ns}rect") if e.find(f"{ns}title") is not None]
    fills = {e.get("fill") for e in cells}
    unsafe = [e for e in cells if e.get("fill") not in ("#a8dbb5", "#eeeeee")]
    assert unsafe, fills  # this study's model is sure of some unsafe settings
    (unsafe_fill,) = {e.get("fill") for e in unsafe}
    assert _luminance("#a8dbb5") - _luminance(unsafe_fill) > 0.2
    # each unsafe cell has its hatch drawn right after it, and no other cell has one
    children = list(root)
    hatched = [
        children[k]
        for k in range(len(children) - 1)
        if children[k].tag == f"{ns}rect"
        and children[k].find(f"{ns}title") is not None
        and children[k + 1].tag == f"{ns}path"
        and children[k + 1].find(f"{ns}title") is None
    ]
    assert hatched == unsafe
    # and a screen reader, which reads none of an image's texts, gets them in its description
    desc = ET.fromstring(progress_svg(study)).findtext(f"{ns}desc")
    listed = ", ".join(map(str, sorted(over)))
    assert f"{len(over)} measured g above the limit h = 0.8: answers {listed}." in desc
    assert "Shown: f (maximised); g (limit h = 0.8)." in desc
    assert desc.endswith("Key: best safe f so far, g <= h, g > h (unsafe).")
    desc = root.findtext(f"{ns}desc")
    assert "likely unsafe (hatched)" in desc and "measured g > h" in desc


@pytest.mark.parametrize("name", sorted(SPACES))
def test_drawing_and_recommending_never_change_the_next_query(url, name):
    """Pictures and status between answers leave the live policy as a replay of the log has it
    (the expert family fits lazily inside recommend, drawing random numbers)."""
    from boloop.study import load_study
    from study_samples import answer_for

    study = make_study(name, url, answers=1)
    for _ in range(4):
        pictures(study)
        study.status()
        q = study.ask()
        study.tell(q.id, answer_for(q))
    live = study.ask()
    replayed = load_study(name, storage=url, full_replay=True).ask()
    assert replayed.query == live.query


@pytest.mark.parametrize("name", sorted(SPACES))
def test_status_and_model_picture_follow_every_change_of_the_study(url, name):
    """Read again while nothing changed, the status, recommendation and model picture are the
    same; after an answer, an undo, an answer another process gave, and a query asked through
    ``.policy``, they are what a study loaded afresh from the same log shows (nothing read
    from an earlier state is shown)."""
    from boloop.study import load_study
    from study_samples import answer_for

    study = make_study(name, url, answers=2)
    other = load_study(name, storage=url)  # another process on the same storage

    def shown(s):
        return s.status(), model_svg(s), s.recommend()

    def check():
        now = shown(study)
        assert shown(study) == now
        assert now == shown(load_study(name, storage=url, full_replay=True))

    check()
    for _ in range(2):
        q = study.ask()
        study.tell(q.id, answer_for(q))
        check()
    study.undo()
    check()
    q = other.ask()
    other.tell(q.id, answer_for(q))
    check()
    shown(study)
    study.policy.ask()  # asked through the policy (not logged): the live policy moved on
    fresh = load_study(name, storage=url, full_replay=True)
    fresh.policy.ask()
    assert shown(study) == shown(fresh)
    study.ask()  # now logged
    check()


@pytest.mark.parametrize("name", sorted(SPACES))
def test_no_copy_of_the_policy_outlives_a_status_or_a_picture(url, name):
    """What is kept for an unchanged study is what was read, not the copy it was read from (a
    large policy's matrices; a level-set estimate's ``classify`` calls into its policy)."""
    import gc

    study = make_study(name, url, answers=3)
    kind = type(study.policy)

    def alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if type(o) is kind)

    before = alive()
    study.status()
    pictures(study, growth=False)  # (the growth's replay is kept by design: one per study)
    study.recommend()
    assert alive() == before


@pytest.mark.parametrize("grid,outline", [(6, False), (25, True)])
def test_safe_with_several_x_parameters_draws_the_certified_level_per_setting(url, grid, outline):
    space = {
        "monotone": "dose",
        "h": 0.9,
        "parameters": [
            {"name": "dose", "low": 0, "high": 1, "grid": 5},
            {"name": "u", "low": 0, "high": 1, "grid": grid},
            {"name": "v", "low": 0, "high": 1, "grid": 20},
        ],
    }
    study = create_study(
        "multi", "m-safeopt", space, storage=url, seed=0, fit_hyperparameters=False
    )
    for _ in range(3):
        q = study.ask()
        study.tell(q.id, {"f": q.params["u"], "g": 0.1 + 0.2 * q.params["dose"]})
    svg = model_svg(study)
    texts = _texts(svg)
    assert f"certified safe dose for each of the {grid * 20} settings of u, v" in texts
    n_cells = svg.count("safe up to dose=")
    assert n_cells == (0 if outline else grid * 20)
    assert len(svg) < 200_000


# -- the safe set's growth (issue 16) -------------------------------------------------------------
def _safe_toy(url, n):
    import copy

    from boloop.problems import get
    from boloop.simulate import oracle_rng

    problem, rng = get("safe/toy"), oracle_rng(0)
    study = create_study(
        "grow", "m-safeopt", problem="safe/toy", storage=url, seed=0, fit_hyperparameters=False
    )
    live = []  # the certified boundary the live method holds after each answer
    for _ in range(n):
        q = study.ask()
        study.tell(q.id, problem.answer(q.query, rng))
        study.ask()  # as a study page does: the next query, proposed under the certified set
        live.append(copy.deepcopy(study.policy.certified))
    return study, problem, rng, live


def test_safe_growth_replays_the_certified_set_the_live_study_had_after_each_answer(url):
    import numpy as np

    from boloop.study.pictures import growth_svg, safe_growth

    study, problem, rng, live = _safe_toy(url, 14)
    s_values = np.asarray(study.space.s_values)
    growth = safe_growth(study)
    assert len(growth) == 14
    checked = 0
    for boundary, seen in zip(growth, live):
        np.testing.assert_array_equal(s_values[boundary], s_values[seen])
        checked += 1
    assert checked == 14
    B = np.vstack(growth)
    assert np.all(np.diff(B, axis=0) >= 0) and B[-1].sum() > B[0].sum()  # the union grows
    # continued from the cache after more answers, restarted after an undo
    for _ in range(3):
        q = study.ask()
        study.tell(q.id, problem.answer(q.query, rng))
    assert len(safe_growth(study)) == 17
    assert [b.tolist() for b in safe_growth(study)[:14]] == [b.tolist() for b in growth]
    study.undo()
    assert len(safe_growth(study)) == 16
    svg = growth_svg(study)
    texts = _texts(svg)
    assert "certified safe share of the space" in texts
    assert any(t.startswith("certified x0 per x1") for t in texts)
    assert "growth" in pictures(study) and "growth" not in pictures(study, growth=False)


def test_growth_shows_what_the_method_certified_not_the_unfitted_posterior_of_its_seeds(url):
    """Learned hyperparameters and an initial design of several seeds at the lowest level (the
    trial's reactor): while the seeds are measured the method certifies nothing above the lowest
    level (``certified_fraction`` = 1/n_s), so neither may the picture; after each answer the
    picture's set is the method's own certified set, as ``Study.status()`` reports it."""

    import numpy as np

    from boloop.study.pictures import safe_growth
    from study_samples import reactor_space, reactor_truth

    study = create_study("reactor", "m-safeopt", reactor_space(30, 20), storage=url, seed=0)
    n_s = 30
    assert study.policy.n_initial > 2  # several safe seeds before the first fit
    live, fractions = [], []
    for _ in range(8):
        q = study.ask()
        study.tell(q.id, reactor_truth(*map(float, q.query.x)))
        study.ask()  # the page's open query
        live.append(study.policy.certified.copy())
        fractions.append(study.status()["settings"]["certified_fraction"])
    growth = safe_growth(study)
    assert len(growth) == 8
    for k, (boundary, seen, frac) in enumerate(zip(growth, live, fractions)):
        np.testing.assert_array_equal(boundary, seen, err_msg=f"after answer {k + 1}")
        assert float(np.mean((boundary + 1) / n_s)) == pytest.approx(frac)
    assert fractions[0] == pytest.approx(1 / n_s)  # a seed answer certifies nothing new
    B = np.vstack(growth)
    assert np.all(np.diff(B, axis=0) >= 0)  # no g above h here: certified stays certified


def test_growth_is_drawn_for_the_safe_family_only(url):
    from boloop.study.pictures import growth_svg

    assert growth_svg(make_study("pref", url, answers=2)) is None
    svg = growth_svg(make_study("safe", url, answers=0))
    assert "no answers yet" in svg


def test_expert_model_draws_the_experts_latent_g_with_the_labels(url):
    """COBOL's estimate of the expert's g (its predict) as a second panel, the labels on it;
    a method without an expert model (gp-lcb) draws f only."""
    study = make_study("expert", url, answers=14)
    svg = model_svg(study)
    texts = _texts(svg)
    assert any(t.startswith("expert model: latent g") for t in texts)
    n_labels = sum(1 for r in study.history() if r["kind"] == "label")
    assert svg.count("accepted</title>") + svg.count("rejected</title>") == 2 * n_labels
    plain = make_study("lcb", url, answers=8, key="expert4")
    assert not any("latent g" in t for t in _texts(model_svg(plain)))


def _growth_keys(svg: str) -> tuple[list[str], dict[str, str]]:
    """The growth picture's heat-map cells (their fills, in drawing order) and its colour key
    (colour -> text), read from the SVG: cells are the rects without a stroke, keys the small
    squares with one, each followed by its text."""
    root = ET.fromstring(svg)
    elems = list(root)
    cells = [
        e.get("fill")
        for e in elems
        if e.tag == f"{SVG}rect" and e.get("stroke") is None and e.get("width") != "100%"
    ]
    keys = {}
    for e, nxt in zip(elems, elems[1:]):
        if e.tag == f"{SVG}rect" and e.get("width") == "10" and e.get("stroke") == "#222":
            keys[e.get("fill")] = "".join(nxt.itertext())
    return cells, keys


def test_growth_key_names_exactly_the_colours_of_the_cells_and_their_level(url):
    """Every colour drawn in the growth heat-map is in its key, every key colour is drawn, and
    the key's text is the certified level of the cell (read from safe_growth)."""
    import numpy as np

    from boloop.study.pictures import growth_svg, safe_growth

    study, *_ = _safe_toy(url, 14)
    svg = growth_svg(study)
    cells, keys = _growth_keys(svg)
    B = np.vstack(safe_growth(study))
    assert len(cells) == B.size  # one cell per answer and x (small: no thinning)
    assert set(cells) == set(keys) and len(keys) >= 3  # the set grew through several levels
    s_values = np.asarray(study.space.s_values)
    for fill, level in zip(cells, s_values[B.ravel()]):  # drawn row by row, x by x
        assert keys[fill].startswith(f"x0 up to {level:.4g}"), (keys[fill], level)
    assert "no growth" not in " ".join(_texts(svg))


def test_growth_of_a_set_that_never_grew_says_so_and_keys_its_one_colour(url):
    """A safe study stuck at the lowest dose (the trial's: every cell the same level, so the old
    ramp drew one dark colour under a green and yellow key): one colour, keyed, in words."""
    import numpy as np

    from boloop.study.pictures import growth_svg, safe_growth

    study = make_study("safe", url, answers=10)
    B = np.vstack(safe_growth(study))
    assert np.all(B == 0)  # precondition: this study certifies only the lowest dose
    svg = growth_svg(study)
    cells, keys = _growth_keys(svg)
    assert len(set(cells)) == 1 and set(keys) == set(cells)
    assert list(keys.values()) == ["dose up to 0"]
    texts = _texts(svg)
    assert "certified dose per weight after each answer: up to 0 throughout" in texts
    assert any(t.startswith("no growth: only the lowest dose (0)") for t in texts)


# -- the preference progress: an option's style --------------------------------------------------
def _option_lines(svg: str) -> tuple[dict[str, tuple[str, str]], list[tuple[str, str]], list[str]]:
    """The progress picture's key (option -> (colour, dash) of its line sample), the styles of
    the lines drawn, and the key's notes (what is not drawn)."""
    elems = list(ET.fromstring(svg))
    keys = {}
    for e, nxt in zip(elems, elems[1:]):
        if e.tag == f"{SVG}line" and e.get("stroke-width") == "2":
            keys["".join(nxt.itertext())] = (e.get("stroke"), e.get("stroke-dasharray") or "")
        elif e.tag == f"{SVG}rect" and e.get("width") == "10":  # a colour square
            keys["".join(nxt.itertext())] = (e.get("fill"), "")
    drawn = [
        (e.get("stroke"), e.get("stroke-dasharray") or "")
        for e in elems
        if e.tag == f"{SVG}polyline"
    ]
    texts = ["".join(e.itertext()) for e in elems if e.tag == f"{SVG}text"]
    notes = [t for t in texts if t.startswith("not drawn") or " more" in t]
    return keys, drawn, notes


def test_an_option_keeps_its_colour_when_another_answer_changes_the_ranking(url):
    """The trial's cake study: an option was navy in one drawing and another colour in the
    next, as colours followed the rank of the moment. Here each option keeps one style over
    every drawing after one more answer, options drawn together never share one, the options
    that won most are drawn, those without a win are not (no flat line at zero) but named, and
    the ranking does change on the way."""
    import numpy as np

    study = make_study("pref", url, answers=0)
    rng = np.random.default_rng(1)  # a taster who picks either: wins spread, ranks move
    style: dict[str, tuple[str, str]] = {}
    orders = []
    for n in range(1, 15):
        q = study.ask()
        study.tell(q.id, "a" if rng.random() < 0.5 else "b")
        wins: dict[str, int] = {}
        for r in study.history():
            for side in ("a_label", "b_label"):
                wins.setdefault(r[side], 0)
            wins[r["a_label"] if r["answer"] == 0 else r["b_label"]] += 1
        keys, drawn, notes = _option_lines(progress_svg(study))
        won = [nm for nm, w in wins.items() if w > 0]
        assert set(keys) <= set(won) and len(keys) == min(5, len(won))
        assert min(wins[nm] for nm in keys) >= max([wins[nm] for nm in won if nm not in keys] + [0])
        if n > 1:  # (one answer: no line yet)
            assert sorted(drawn) == sorted(keys.values())  # the key's samples are the lines
        assert len(set(keys.values())) == len(keys)  # distinguishable
        for nm, st in keys.items():
            assert style.setdefault(nm, st) == st, f"{nm} changed style after answer {n}"
        never = [nm for nm, w in wins.items() if w == 0]
        said = [t for t in notes if t.startswith("not drawn")]
        if never:
            (note,) = said
            named = [nm for nm in never if f" {nm}," in f" {note[22:]},"]
            more = int(note.split(" and ")[1].split()[0]) if " and " in note else 0
            assert named and len(named) + more == len(never), (never, note)
        else:
            assert not said
        orders.append(sorted(keys, key=lambda nm: -wins[nm]))
    assert any(a[:2] != b[:2] for a, b in zip(orders, orders[1:]))  # the leaders changed
    assert len(style) >= 3


def _recipes(n: int):
    import numpy as np

    from boloop.spaces import CandidateSet

    return CandidateSet(np.arange(n, dtype=float)[:, None], names=["recipe"])


def _taste(study, answers: int, rank) -> None:
    """Answers ``answers`` duels of ``study``: the recipe of higher ``rank(row)`` wins."""
    for _ in range(answers):
        q = study.ask()
        a, b = int(q.a["recipe"]), int(q.b["recipe"])
        study.tell(q.id, "a" if rank(a) >= rank(b) else "b")


def test_options_whose_rows_share_a_style_are_drawn_apart(url):
    """The review's case: in a table of 30 recipes, rows 1 and 29 are 28 apart (7 colours x 4
    dashes) and both won most; they were drawn alike (orange, solid). Now the option of the
    lower row keeps its own style and the other takes another one, the same in every drawing
    of the same study."""
    study = create_study("sweet", "random", _recipes(30), family="preference", storage=url, seed=0)
    _taste(study, 150, lambda r: {1: 100, 29: 99}.get(r, r % 7))
    keys, drawn, _ = _option_lines(progress_svg(study))
    assert {"recipe=1", "recipe=29"} <= set(keys)
    assert len(set(drawn)) == len(drawn) == 5
    assert keys["recipe=1"] == ("#d55e00", "")  # row 1's own style
    assert keys["recipe=29"] != keys["recipe=1"]
    assert _option_lines(progress_svg(study))[0] == keys


def test_styles_of_options_drawn_together_stay_distinct_and_follow_the_set_drawn(url):
    """A large table (60 recipes: rows k and k + 28 share a style of their own), a taster who
    picks either: in every drawing the lines differ, an option whose own style no other drawn
    option shares has it (its row's), and whenever the same options are drawn they have the
    same styles, whatever their ranking. The run meets such a clash on the way."""
    import numpy as np

    study = create_study("sweet", "random", _recipes(60), family="preference", storage=url, seed=2)
    rng = np.random.default_rng(5)
    colours = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000")
    dashes = ("", "7 3", "2 2", "8 3 2 3")
    by_set: dict[frozenset[str], dict[str, tuple[str, str]]] = {}
    clashes = 0
    for _ in range(90):
        q = study.ask()
        study.tell(q.id, "a" if rng.random() < 0.5 else "b")
        keys, drawn, _ = _option_lines(progress_svg(study))
        assert len(set(keys.values())) == len(keys)
        rows = {nm: int(float(nm.split("=")[1])) for nm in keys}
        for nm, r in rows.items():
            if not any(o != nm and (o_r - r) % 28 == 0 for o, o_r in rows.items()):
                assert keys[nm] == (colours[r % 7], dashes[(r % 28) // 7]), nm
        clashes += len(rows) - len({r % 28 for r in rows.values()})
        assert by_set.setdefault(frozenset(keys), keys) == keys
    assert clashes > 0


def test_the_key_counts_the_options_not_drawn_truthfully_when_the_cut_falls_in_a_tie(url):
    """The review's case: five options drawn with 3 wins each, and recipe=45 also with 3 wins
    was counted among "30 more with fewer wins". Now the note says how many are not drawn and
    at most how many wins each has, in every drawing of a run with ties at the cut."""
    study = create_study("sweet", "random", _recipes(60), family="preference", storage=url, seed=0)
    fav = {3: 5, 31: 4, 10: 3}
    ties = 0
    for _ in range(60):
        _taste(study, 1, lambda r: fav.get(r, 0))
        wins: dict[str, int] = {}
        for r in study.history():
            for side in ("a", "b"):
                wins.setdefault(f"recipe={r[side]['recipe']:g}", 0)
            wins[f"recipe={(r['a'] if r['answer'] == 0 else r['b'])['recipe']:g}"] += 1
        svg = progress_svg(study)
        keys, _, _ = _option_lines(svg)
        rest = [w for nm, w in wins.items() if w > 0 and nm not in keys]
        notes = [t for t in _texts(svg) if " more" in t and not t.startswith("not drawn")]
        if not rest:
            assert notes == []
            continue
        most = max(rest)
        count = f"{most} win" + ("" if most == 1 else "s")
        each = " each" if len(rest) > 1 else ""
        if min(rest) == most:
            assert notes == [f"{len(rest)} more with {count}{each}"]
        else:
            assert notes == [f"{len(rest)} more, at most {count}{each}"]
        ties += most == min(wins[nm] for nm in keys)
    assert ties > 0


@pytest.mark.parametrize("name", sorted(SPACES))
def test_a_phone_width_draws_every_picture_narrower_with_the_same_marks(url, name):
    """``width=PHONE_WIDTH``: every picture is that many units wide (its viewBox too), the
    same marks are drawn (one title per point, bar or area) and the same words are written
    (wrapped into more lines; numbers aside: fewer ticks); the default width draws as always, 560 units, and a model
    picture kept for one width is never served for the other."""
    study = make_study(name, url, answers=8)
    wide, narrow = pictures(study), pictures(study, width=PHONE_WIDTH)
    assert set(wide) == set(narrow)
    for key in wide:
        for svg, w in ((wide[key], 560), (narrow[key], PHONE_WIDTH)):
            root = ET.fromstring(svg)
            assert root.get("width") == str(w) and root.get("viewBox").startswith(f"0 0 {w} ")
        titles = [ET.fromstring(d).iter(f"{SVG}title") for d in (wide[key], narrow[key])]
        assert [t.text for t in titles[0]] == [t.text for t in titles[1]]

        def words(svg):  # its words, a line broken after a hyphen joined again
            lines = [e.text for e in ET.fromstring(svg).iter() if e.text and e.text.strip()]
            text = " ".join(x.strip() for x in lines).replace("- ", "-")
            return {w for w in text.split() if any(c.isalpha() for c in w)}  # ticks aside

        if name != "pref" or key != "progress":  # the key of options not drawn: their number
            assert words(wide[key]) == words(narrow[key]), key
    assert model_svg(study) == wide["model"] and model_svg(study, PHONE_WIDTH) == narrow["model"]
    with pytest.raises(ValueError, match="at least 200 units"):
        progress_svg(study, width=120)


def test_a_narrow_picture_keeps_its_x_tick_labels_apart(url):
    """On a phone's narrow axis, tick labels that would touch are thinned: between the
    centres of two neighbouring labels there is room for the longer label and a character
    (a pressure of 10000-11000: five labels of up to nine characters, 1.025e+04, at the wide
    picture's step). The wide picture keeps its ticks."""
    space = {
        "parameters": [{"name": "pressure", "low": 10000, "high": 11000, "grid": 21}],
        "threshold": 0.3,
    }
    study = create_study("thin", "randomized-straddle", space, storage=url, seed=0)
    for _ in range(5):
        q = study.ask()
        study.tell(q.id, (q.params["pressure"] - 10400) / 1000)

    def tick_rows(svg):  # the x tick labels of each axis, by their baseline
        ticks: dict[str | None, list[tuple[float, str]]] = {}
        for t in ET.fromstring(svg).iter(f"{SVG}text"):
            if t.get("text-anchor") == "middle" and t.get("transform") is None and t.text:
                if re.fullmatch(r"-?[0-9.]+(e[+-][0-9]+)?", t.text):
                    ticks.setdefault(t.get("y"), []).append((float(t.get("x")), t.text))
        return [sorted(r) for r in ticks.values() if len(r) > 1]

    wide, narrow = model_svg(study), model_svg(study, PHONE_WIDTH)
    assert [t for _, t in tick_rows(wide)[0]] == [
        "1e+04",
        "1.025e+04",
        "1.05e+04",
        "1.075e+04",
        "1.1e+04",
    ]
    assert 2 <= len(tick_rows(narrow)[0]) < 6
    for svg in (narrow, progress_svg(study, PHONE_WIDTH)):
        for row in tick_rows(svg):
            for (x0, a), (x1, b) in zip(row, row[1:]):
                assert x1 - x0 >= 6.5 * (max(len(a), len(b)) + 1)


def test_the_y_axis_names_the_measured_value_from_the_space_file():
    from boloop.study import create_study
    from boloop.study.pictures import YLABEL_CHARS, model_svg, progress_svg

    def study(name: str) -> object:
        space = {
            "parameters": [{"name": "temperature", "low": 100, "high": 200, "grid": 21}],
            "threshold": 0.5,
            "measurement": {"name": name, "unit": "µm"},
        }
        s = create_study(name, "randomized-straddle", space, storage=f"memory://{name}", seed=1)
        for _ in range(8):
            q = s.ask()
            s.tell(q.id, float(np.sin(q.params["temperature"] / 20.0)) * 0.5 + 0.5)
        return s

    named = study("coating thickness")
    for svg in (progress_svg(named), model_svg(named)):
        assert ">coating thickness (µm)</text>" in svg and ">f</text>" not in svg
    long = progress_svg(study("thickness of the coating after the second firing"))
    cut = "thickness of the coating after the second firing (µm)"[: YLABEL_CHARS - 1] + "…"
    assert f">{cut}</text>" in long


def _axis_labels(svg: str) -> tuple[list[str], list[str]]:
    """The texts under the x axes and along the y axes (rotated) of a picture, ticks aside."""
    xs, ys = [], []
    for t in ET.fromstring(svg).iter(f"{SVG}text"):
        text = "".join(t.itertext())
        if "rotate(-90" in (t.get("transform") or ""):
            ys.append(text)
        elif t.get("text-anchor") == "middle" and not re.fullmatch(r"[-\d.e]+", text):
            xs.append(text)
    return xs, ys


def _with_units(name: str, units: dict[str, str]) -> tuple[str, dict]:
    """The sample study ``name`` (:data:`study_samples.SPACES`) with ``units`` on its
    parameters."""
    method, space = SPACES[name]
    params = [
        {**p, "unit": units[p["name"]]} if p["name"] in units else p for p in space["parameters"]
    ]
    return method, {**space, "parameters": params}


@pytest.mark.parametrize(
    ("name", "units", "model_x", "model_y"),
    [
        ("lev1", {"temperature": "°C"}, ["temperature (°C)"], []),
        ("lev2", {"temperature": "°C", "ratio": "mol"}, ["temperature (°C)"], ["ratio (mol)"]),
        ("expert", {"a": "mm", "b": "kPa"}, ["a (mm)", "a (mm)"], ["b (kPa)", "b (kPa)"]),
        ("safe", {"dose": "mg", "weight": "kg"}, ["weight (kg)"], ["dose (mg)"]),
    ],
)
def test_a_parameter_s_axis_and_tooltips_give_its_unit(url, name, units, model_x, model_y):
    """(A newcomer's trial.) The axes of a parameter with a unit read ``dose (mg)`` (the
    measured value's axis already read ``hardness (HV)``), and the marks' tooltips (the page's
    table of numbers) write its values with it: ``dose=0.4 mg``; the expert's g panel and the
    safe set's growth alike."""
    method, space = _with_units(name, units)
    study = create_study(name, method, space, storage=url, seed=3)
    for _ in range(16 if name == "expert" else 10):
        q = study.ask()
        study.tell(q.id, answer_for(q))
    pics = pictures(study)
    xs, ys = _axis_labels(pics["model"])
    assert [x for x in xs if x != "answers"] == model_x
    assert [y for y in ys if y not in ("f", "g", "value")] == model_y
    tips = re.findall(r"<title>([^<]*)</title>", pics["model"])
    at = [t.split(": ")[0] for t in tips if t.split("=")[0] in units]  # a point's settings
    assert at
    for where in at:
        for part in where.split(", "):
            nm = part.split("=")[0]
            assert re.fullmatch(rf"{nm}=[-\d.e]+ {re.escape(units[nm])}", part), where
    if name == "safe":
        gx, _ = _axis_labels(pics["growth"])
        assert "weight (kg)" in gx
        assert "dose up to 0 mg" in _texts(pics["growth"])
    # the same study without units draws its bare names
    plain = create_study(name + "-plain", *SPACES[name], storage=url, seed=3)
    q = plain.ask()
    plain.tell(q.id, answer_for(q))
    for svg in pictures(plain).values():
        assert not any(f"({u})" in t for t in _texts(svg) for u in units.values())


def test_a_long_name_with_its_unit_is_cut_as_the_measured_value_s_is():
    from boloop.study.pictures import YLABEL_CHARS

    space = {
        "parameters": [
            {"name": "t", "low": 0, "high": 1, "grid": 9, "unit": "s"},
            {"name": "concentration of the second reagent", "low": 0, "high": 1, "grid": 9,
             "unit": "mmol/l"},
        ],
        "threshold": 0.5,
    }  # fmt: skip
    study = create_study("long", "straddle", space, storage="memory://long", seed=0)
    for _ in range(4):
        q = study.ask()
        study.tell(q.id, 0.3)
    xs, ys = _axis_labels(model_svg(study))
    assert xs == ["t (s)"]
    assert ys == ["concentration of the second reagent (mmol/l)"[: YLABEL_CHARS - 1] + "…"]


#: a level set over three parameters (drawn as slices), its made-up measured value
LEV3 = {
    "parameters": [
        {"name": "temperature", "low": 0, "high": 2, "grid": 9, "unit": "°C"},
        {"name": "ratio", "low": 0, "high": 1, "grid": 5},
        {"name": "speed", "low": 0, "high": 1, "grid": 5, "unit": "mm/s"},
    ],
    "threshold": 0.3,
    "measurement": {"name": "hardness", "unit": "HV"},
}


def _lev3_value(p: dict[str, float]) -> float:
    return float(np.sin(3 * p["temperature"]) + 0.5 * np.cos(2 * p["ratio"]) - p["speed"])


def _lev3(url: str, name: str = "lev3", space: dict | None = None, answers: int = 10):
    study = create_study(name, "straddle", space or LEV3, storage=url, seed=3)
    for _ in range(answers):
        q = study.ask()
        study.tell(q.id, _lev3_value(q.params))
    return study


@pytest.mark.parametrize("width", [None, PHONE_WIDTH])
def test_the_slices_y_axis_names_the_measured_value(url, width):
    """The slices (three or more parameters) labelled their y axis ``f`` where the space names
    the measured value, as the 1-D and 2-D pictures do: ``hardness (HV)``; ``f`` without."""
    kw = {} if width is None else {"width": width}
    _, ys = _axis_labels(model_svg(_lev3(url), **kw))
    assert ys and set(ys) == {"hardness (HV)"}
    plain = {k: v for k, v in LEV3.items() if k != "measurement"}
    _, ys = _axis_labels(model_svg(_lev3(url, "plain", plain), **kw))
    assert ys and set(ys) == {"f"}


def _slice_stars(svg: str) -> tuple[str, list[tuple[float, str]], list[tuple[float, float]]]:
    """The slices picture's title, each panel's star (the x of its top tip, its tooltip) and
    each panel's frame (x, width), panel by panel."""
    root = ET.fromstring(svg)
    title = next(
        " ".join(" ".join(t.itertext()).split())  # its lines (<tspan>) joined as words
        for t in root.iter(f"{SVG}text")
        if t.get("class") == "title"
    )
    stars = [
        (float(e.get("points").split(",")[0]), e.findtext(f"{SVG}title"))
        for e in root.iter(f"{SVG}polygon")
        if e.get("fill") == "#ffd700"
    ]
    frames = [
        (float(e.get("x")), float(e.get("width")))
        for e in root.iter(f"{SVG}rect")
        if e.get("fill") == "none" and e.get("stroke") == "#444"
    ]
    return title, stars, frames


def _check_stars_at(svg: str, names, bounds, point: dict[str, float], words: str, at: str) -> None:
    """Each slice's star stands at ``point``'s value of its parameter (``bounds``: each
    parameter's (low, high), the panel's x range); its tooltip and the title say ``words``."""
    title, stars, frames = _slice_stars(svg)
    assert title == f"slices through {words} (star)"
    assert len(stars) == len(frames) == len(names)
    for (X, tip), (x0, w), name, (lo, hi) in zip(stars, frames, names, bounds):
        assert abs(X - (x0 + (point[name] - lo) / (hi - lo) * w)) < 0.11, name
        assert tip == f"{words}: {at}"
    desc = ET.fromstring(svg).findtext(f"{SVG}desc")
    assert f"Slices through {words}: {at}." in desc


def test_level_set_slices_go_through_the_measurement_nearest_the_threshold(url):
    """A level set's recommendation is a map, not a point: its slices were taken through the
    lowest measured point and titled so, a goal the family does not have (the lowest point lies
    deep below the threshold, where a slice may never reach it). They go through the
    measurement nearest the threshold, a point by the boundary being mapped, and say so: the
    title, each star's place and tooltip, the description."""
    study = _lev3(url)
    rows = study.history()
    y = np.array([r["answer"] for r in rows])
    nearest = rows[int(np.argmin(np.abs(y - LEV3["threshold"])))]["params"]
    assert nearest != rows[int(np.argmin(y))]["params"]  # not the lowest measured point
    names = [p["name"] for p in LEV3["parameters"]]
    bounds = [(p["low"], p["high"]) for p in LEV3["parameters"]]
    units = {"temperature": " °C", "ratio": "", "speed": " mm/s"}
    at = ", ".join(f"{n}={nearest[n]:.4g}{units[n]}" for n in names)
    for svg in (model_svg(study), model_svg(study, width=PHONE_WIDTH)):
        _check_stars_at(svg, names, bounds, nearest, "the measurement nearest the threshold", at)
        assert "lowest" not in svg and "recommendation" not in svg


def test_expert_slices_go_through_the_recommendation_or_the_centre_before_any_measurement(url):
    """The expert family's slices go through its recommendation (a point), as they said; with
    labels only (COBOL's first answers), through the centre of the space, which they called
    the lowest measured point."""
    lcb = make_study("lcb", url, answers=8, key="expert4")
    rec = lcb.recommend()
    at = ", ".join(f"{n}={v:.4g}" for n, v in rec.items())
    _check_stars_at(model_svg(lcb), "wxyz", [(0, 1)] * 4, rec, "the recommendation", at)
    space = {"parameters": [{"name": n, "low": 0, "high": 1} for n in "abc"]}
    cobol = create_study("c3", "cobol", space, storage=url, seed=3)
    for _ in range(3):
        q = cobol.ask()
        assert q.kind == "label"
        cobol.tell(q.id, answer_for(q))
    centre = dict.fromkeys("abc", 0.5)
    svg = model_svg(cobol)
    _check_stars_at(svg, "abc", [(0, 1)] * 3, centre, "the centre of the space", "a=0.5, b=0.5, c=0.5")
    assert "measured point" not in svg


# -- the level-set class maps without colour, and the pictures' numbers ------------------------
def _class_grid(root):
    """The 2-D class map's cells (their tooltips name position and class): {(x, y, w, h):
    (above, undecided)}, and the counts of each class name."""
    ns = SVG
    cells = {}
    for e in root.iter(f"{ns}rect"):
        tip = e.findtext(f"{ns}title") or ""
        m = re.match(r"temperature=[^,]+, ratio=[^:]+: (above|below)(, within 2 std|[^,]*),", tip)
        if m:
            box = tuple(float(e.get(k)) for k in ("x", "y", "width", "height"))
            cells[box] = (m.group(1) == "above", m.group(2) == ", within 2 std")
    return cells


def _cell_at(cells, X, Y):
    found = [c for (x, y, w, h), c in cells.items() if x <= X <= x + w - 0.3 and y <= Y <= y + h - 0.3]
    assert len(found) == 1, (X, Y, found)
    return found[0]


def test_level_set_class_map_says_each_class_by_a_mark_and_lines(url):
    """WCAG 1.4.1: the 2-D class map (orange above, blue below, lighter within 2 std) says the
    classes without colour: a plus on decided cells above, a minus on decided cells below, none
    on undecided ones; a solid line on exactly the edges between an above and a below cell, a
    dashed one on exactly the edges between a decided and an undecided cell; its description
    and its key's tooltips count the cells of each class."""
    study = make_study("lev2", url, answers=8)
    root = ET.fromstring(model_svg(study))
    cells = _class_grid(root)
    assert len(cells) == 15 * 11
    kinds = set(cells.values())
    assert len(kinds) >= 3, kinds  # this study has decided and undecided cells
    xs = sorted({b[0] for b in cells})
    ys = sorted({b[1] for b in cells})
    grid = {(xs.index(b[0]), ys.index(b[1])): c for b, c in cells.items()}
    pairs = {"above": 0, "unsure": 0}
    for (i, j), (up, un) in grid.items():
        for nb in ((i + 1, j), (i, j + 1)):
            if nb in grid:
                pairs["above"] += grid[nb][0] != up
                pairs["unsure"] += grid[nb][1] != un
    paths = [e for e in root.iter(f"{SVG}path") if e.find(f"{SVG}title") is None]
    solid = [e for e in paths if e.get("stroke-width") == "1.6"]
    dashed = [e for e in paths if e.get("stroke-dasharray") == "3 2"]
    assert len(solid) == 1 and len(dashed) == 1
    for line, n in ((solid[0], pairs["above"]), (dashed[0], pairs["unsure"])):
        segments = re.findall(r"M([\d.]+),([\d.]+)([VH])([\d.]+)", line.get("d"))
        assert n > 0 and len(segments) == n
        for x, y, kind, to in segments:  # on the shared edge of two cells that differ
            x, y, to = float(x), float(y), float(to)
            if kind == "V":
                a, b = _cell_at(cells, x - 1, (y + to) / 2), _cell_at(cells, x + 1, (y + to) / 2)
            else:
                a, b = _cell_at(cells, (x + to) / 2, y - 1), _cell_at(cells, (x + to) / 2, y + 1)
            assert a[0] != b[0] if line is solid[0] else a[1] != b[1]
    glyphs = [e for e in paths if e.get("stroke-width") == "1.3" and len(e.get("d")) > 200]
    assert len(glyphs) == 1
    marks = re.findall(r"M([\d.]+),([\d.]+)h([\d.]+)(M([\d.]+),([\d.]+)v)?", glyphs[0].get("d"))
    assert len(marks) > 50
    signs = set()
    for x, y, w, plus, *_ in marks:
        up, un = _cell_at(cells, float(x) + float(w) / 2, float(y))
        assert not un and up == bool(plus)
        signs.add(up)
    assert signs == {True, False}
    counts = {name: sum(1 for c in cells.values() if c == key) for key, name in (
        ((True, False), "above (H)"), ((True, True), "above, within 2 std"),
        ((False, False), "below (L)"), ((False, True), "below, within 2 std"),
    )}  # fmt: skip
    desc = root.findtext(f"{SVG}desc")
    assert "Of the 165 grid points drawn: " + "; ".join(
        f"{n} {name}" for name, n in counts.items()
    ) + "." in desc
    tips = {e.findtext(f"{SVG}title") for e in root.iter(f"{SVG}rect")}
    for name, n in counts.items():
        assert f"{n} of 165 grid points" in tips, name
    assert "above | below" in desc and "edge of within 2 std" in desc


def test_level_set_strip_marks_follow_the_estimate(url):
    """The 1-D class strip: its plus and minus marks stand on cells the estimate classifies
    above and below (H_t of the method's own recommendation), its counts are the estimate's."""
    study = make_study("lev1", url, answers=10)
    est = study.policy.recommend()
    root = ET.fromstring(model_svg(study))
    desc = root.findtext(f"{SVG}desc")
    n_above = re.search(r"Of the 41 grid points drawn: (\d+) above \(H\); (\d+) above, within", desc)
    assert n_above and int(n_above.group(1)) + int(n_above.group(2)) == int(est.upper.sum())
    strip = [
        e for e in root.iter(f"{SVG}rect")
        if e.get("fill") in ("#e07b28", "#f5c9a3", "#3b6fb6", "#aac3e6") and e.get("height") != "10"
    ]  # fmt: skip
    assert len(strip) == 41
    glyphs = [
        e for e in root.iter(f"{SVG}path")
        if e.get("stroke-width") == "1.3" and e.find(f"{SVG}title") is None and len(e.get("d")) > 60
    ]  # fmt: skip
    (marks,) = glyphs
    plus_minus = r"M([\d.]+),([\d.]+)h([\d.]+)(M[\d.]+,[\d.]+v)?"
    for x, _y, w, plus in re.findall(plus_minus, marks.get("d")):
        X = float(x) + float(w) / 2
        (cell,) = [
            e for e in strip
            if float(e.get("x")) <= X <= float(e.get("x")) + float(e.get("width")) - 0.3
        ]  # fmt: skip
        assert cell.get("fill") == ("#e07b28" if plus else "#3b6fb6")


_CLASS_FILLS = ("#e07b28", "#f5c9a3", "#3b6fb6", "#aac3e6")


def _frames(root) -> list[tuple[float, float, float, float]]:
    """Each panel's frame: (x, y, width, height)."""
    return [
        tuple(float(e.get(k)) for k in ("x", "y", "width", "height"))
        for e in root.iter(f"{SVG}rect")
        if e.get("fill") == "none" and e.get("stroke") == "#444"
    ]


def _strip(root) -> list[tuple[float, float, str]]:
    """The 1-D model's class strip, left to right: each cell's (left, right, fill)."""
    cells = [
        (float(e.get("x")), float(e.get("x")) + float(e.get("width")), e.get("fill"))
        for e in root.iter(f"{SVG}rect")
        if e.get("fill") in _CLASS_FILLS and e.get("height") != "10"  # the key's are 10 high
    ]
    return sorted(cells)


@pytest.mark.parametrize("width", [None, PHONE_WIDTH])
def test_the_level_set_strip_ends_at_the_panel_s_frame(url, width):
    """The 1-D class strip's end cells were centred on the end candidates, so half of each
    stuck out of the panel (docs/web/web-levelset.png): the strip now starts and ends at the
    frame, its end cells half as wide as the others, and its cells meet without a gap."""
    study = make_study("lev1", url, answers=10)
    root = ET.fromstring(model_svg(study, **({} if width is None else {"width": width})))
    ((fx, _fy, fw, _fh),) = _frames(root)
    strip = _strip(root)
    assert len(strip) == 41
    assert abs(strip[0][0] - fx) <= 0.11 and abs(strip[-1][1] - (fx + fw)) <= 0.11
    assert all(a >= fx - 0.11 and b <= fx + fw + 0.11 for a, b, _ in strip)
    for (_, b, _c), (a, _, _d) in zip(strip, strip[1:]):
        assert a <= b + 0.05  # no gap
    inner = fw / 40  # 41 candidates over the axis: 40 steps
    assert abs((strip[0][1] - strip[0][0]) - (inner / 2 + 0.3)) <= 0.15
    assert abs((strip[-1][1] - strip[-1][0]) - inner / 2) <= 0.15
    assert abs((strip[20][1] - strip[20][0]) - (inner + 0.3)) <= 0.15


def test_the_strip_of_an_uneven_grid_meets_its_neighbours_and_its_lines(url):
    """A 1-D level set over a table of uneven values (0.1 ... 5) gave every cell the width of
    the first step, so the strip was mostly gaps: each cell reaches halfway to its neighbours,
    and the line where above meets below stands on the edge between an above and a below
    cell."""
    values = [0.1, 0.2, 0.5, 1.0, 2.0, 3.0, 5.0]
    space = {"candidates": {"columns": ["dose"], "rows": [[v] for v in values]}, "threshold": 0.5}
    study = create_study("uneven", "straddle", space, storage=url, seed=1)
    for _ in range(5):
        q = study.ask()
        study.tell(q.id, q.params["dose"] / 5)  # above the threshold from a dose of 2.5
    root = ET.fromstring(model_svg(study))
    ((fx, _fy, fw, _fh),) = _frames(root)
    strip = _strip(root)
    assert len(strip) == len(values)
    assert abs(strip[0][0] - fx) <= 0.11 and abs(strip[-1][1] - (fx + fw)) <= 0.11
    lo, hi = values[0], values[-1]
    for k, (a, b, _) in enumerate(strip[:-1]):
        edge = fx + ((values[k] + values[k + 1]) / 2 - lo) / (hi - lo) * fw
        assert abs(a - strip[k + 1][0] + (b - a)) <= 0.41  # meets the next (0.3 over it)
        assert abs(strip[k + 1][0] - edge) <= 0.11
    (solid,) = [e for e in root.iter(f"{SVG}path") if e.get("stroke-width") == "1.6"]
    xs = [float(x) for x in re.findall(r"M([\d.]+),", solid.get("d"))]
    sides = [c in ("#e07b28", "#f5c9a3") for _, _, c in strip]
    assert xs and len(xs) == sum(a != b for a, b in zip(sides, sides[1:]))
    for X in xs:
        (k,) = [k for k in range(len(strip) - 1) if abs(strip[k + 1][0] - X) <= 0.11]
        assert sides[k] != sides[k + 1]


@pytest.mark.parametrize("name", ["lev1", "lev2", "safe"])
def test_no_cell_of_a_map_is_drawn_past_its_panel(url, name):
    """A map's cells (the level set's classes, the safe set, its growth) end at their panel's
    frame: the 2-D maps' outer cells stood 0.3 units past it (the overlap that closes the
    seams between cells), the 1-D strip's end cells half a cell."""
    study = make_study(name, url, answers=10)
    for width in (WIDTH, PHONE_WIDTH):
        pics = pictures(study, width=width)
        for kind, svg in pics.items():
            root = ET.fromstring(svg)
            frames = _frames(root)
            n = 0
            for e in root.iter(f"{SVG}rect"):
                if e.get("x") is None or e.get("fill") == "none":
                    continue  # the background, the frames
                x, y, w, h = (float(e.get(k)) for k in ("x", "y", "width", "height"))
                inside = [
                    f for f in frames
                    if f[0] <= x + w / 2 <= f[0] + f[2] and f[1] <= y + h / 2 <= f[1] + f[3]
                ]  # fmt: skip
                if not inside:
                    continue  # the key's squares
                (fx, fy, fw, fh), n = inside[0], n + 1
                assert x >= fx - 0.11 and x + w <= fx + fw + 0.11, (name, x, w, fx, fw)
                assert y >= fy - 0.11 and y + h <= fy + fh + 0.11, (name, y, h, fy, fh)
            assert n if kind != "progress" else not n  # the maps' cells were all checked


def test_model_descriptions_give_the_numbers(url):
    """Each model picture's <desc> starts with its numbers, read from the study: the safe set's
    certified share, the preference recommendation's wins, the expert's lowest f."""
    safe = make_study("safe", url, answers=8, fast=True)
    g = [r["answer"]["g"] for r in safe.history()]
    desc = ET.fromstring(model_svg(safe)).findtext(f"{SVG}desc")
    assert desc.startswith(f"{len(g)} measurements, {sum(v > 0.8 for v in g)} with g above the")
    _, sets = safe.policy.state()  # public and read-only (drawn from a copy in the same state)
    prefix = np.asarray(sets.prefix)
    assert f"Certified safe: {int(prefix.sum())} of the {prefix.size} grid points" in desc
    pref = make_study("pref", url, answers=6)
    desc = ET.fromstring(model_svg(pref)).findtext(f"{SVG}desc")
    rec = re.search(r"The recommendation of maxminlcb: (.+), won (\d+) of (\d+) duels\.", desc)
    assert rec, desc
    assert f"<title>{rec.group(1)}: won {rec.group(2)} of {rec.group(3)}</title>" in model_svg(pref)
    lcb = make_study("lcb", url, answers=8, key="expert4")
    y = [r["answer"] for r in lcb.history()]
    desc = ET.fromstring(model_svg(lcb)).findtext(f"{SVG}desc")
    assert desc.startswith(f"8 evaluations, the lowest f {min(y):.4g} at ")


def test_growth_numbers_are_the_replayed_sets(url):
    """The growth picture's numbers (the page's table): a row per answer whose share and levels
    are those of safe_growth, each x in exactly one run; the picture's <desc> says the same."""
    from boloop.study.pictures import growth_numbers, growth_svg, safe_growth

    study, *_ = _safe_toy(url, 12)
    growth = safe_growth(study)
    lead, rows = growth_numbers(study)
    s_values = np.asarray(study.space.s_values)
    x = np.asarray(study.space.x_points)[:, 0]
    assert [w for w, _ in rows] == [f"after answer {k}" for k in range(1, 13)]
    for (_, value), b in zip(rows, growth):
        share, runs = value.split(" certified safe; ")
        assert share == f"{np.mean((b + 1) / s_values.size):.0%}"
        level = {}
        for run in runs.split("; "):
            m = re.fullmatch(r"x0 up to ([-\d.e]+) at x1(?:=([-\d.e]+)| ([-\d.e]+) to ([-\d.e]+))", run)
            assert m, run
            lo, hi = (m.group(2), m.group(2)) if m.group(2) else (m.group(3), m.group(4))
            for i in np.flatnonzero((x >= float(lo) - 1e-9) & (x <= float(hi) + 1e-9)):
                assert i not in level
                level[i] = float(m.group(1))
        assert sorted(level) == list(range(x.size))
        np.testing.assert_allclose([level[i] for i in range(x.size)], s_values[b], atol=1e-3)
    assert lead.startswith("12 answers. Certified safe share of the space: ")
    assert ET.fromstring(growth_svg(study)).findtext(f"{SVG}desc").startswith(lead)
    assert growth_numbers(make_study("pref", url, answers=1)) == ("", [])


def test_a_measured_value_s_tooltip_tells_which_side_of_the_threshold_it_is(url):
    """(A newcomer's trial.) Hardnesses of 1099.9 and 1100.3 against a threshold of 1100 both
    read "1100" in the pictures' tooltips (4 digits); the tooltip writes the value as the
    history does."""
    space = {"threshold": 1100.0, "parameters": [{"name": "t", "low": 0.0, "high": 1.0, "grid": 11}]}
    study = create_study("hv", "randomized-straddle", space, storage=url, seed=0)
    typed = [1099.9, 1100.3, 987.25, 1212.5, 1050.0, 1149.75]
    for v in typed:
        q = study.ask()
        study.tell(q.id, v)
    svg = " ".join(pictures(study, growth=False).values())
    for v in typed:
        assert re.search(rf"<title>[^<]*: {re.escape(f'{v:g}')}</title>", svg), v


# -- a line's label keeps off the measured points -----------------------------------------------
#: a text's box about its baseline (11-unit sans-serif: capitals and digits 8 units tall, a
#: descender's 2.5) and the advance of a character, at most (the pictures' _CHAR_W)
_ASCENT, _DESCENT, _ADVANCE = 9.0, 3.0, 6.5


def _boxes_of_marks(root) -> list[tuple[float, float, float, float]]:
    """The boxes of the marks that carry a tooltip (circles; triangles and crosses, paths of
    absolute moves and lines)."""
    boxes = []
    for e in root.iter():
        if e.find(f"{SVG}title") is None:
            continue
        if e.tag == f"{SVG}circle":
            cx, cy, r = (float(e.get(k)) for k in ("cx", "cy", "r"))
            boxes.append((cx - r, cy - r, cx + r, cy + r))
        elif e.tag == f"{SVG}path" and re.fullmatch(r"[ML\d.,\-Z]+", e.get("d", "")):
            xy = [float(v) for v in re.findall(r"-?[\d.]+", e.get("d"))]
            boxes.append((min(xy[0::2]), min(xy[1::2]), max(xy[0::2]), max(xy[1::2])))
    return boxes


def _text_box(x: float, y: float, text: str, anchor: str) -> tuple[float, float, float, float]:
    w = _ADVANCE * len(text)
    x0 = x - w if anchor == "end" else x
    return x0, y - _ASCENT, x0 + w, y + _DESCENT


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("width", [560, PHONE_WIDTH])
@pytest.mark.parametrize("which", ["progress", "model"])
def test_the_threshold_s_label_is_not_written_over_measured_points(url, which, width):
    """(A newcomer's trial.) The threshold's label was written at the right end of its line,
    just above it: over the last measurements (progress) and those at the right end of the
    space (1-D model) when they lie just above the threshold. It now takes a spot beside the
    line clear of every mark (below it there, at its other end, or along it)."""
    study = make_edge("edge", url)
    root = ET.fromstring(pictures(study, growth=False, width=width)[which])
    (line,) = [e for e in root.iter(f"{SVG}line") if e.get("stroke-dasharray") == "5 3"]
    Y, left, right = float(line.get("y1")), float(line.get("x1")), float(line.get("x2"))
    (label,) = [e for e in root.iter(f"{SVG}text") if e.text == "threshold 0.5"]
    marks = _boxes_of_marks(root)
    assert len(marks) == len(EDGE_VALUES)
    # where the label used to be: over a measurement
    assert any(_overlap(_text_box(right - 4, Y - 4, label.text, "end"), m) for m in marks)
    x, y = float(label.get("x")), float(label.get("y"))
    box = _text_box(x, y, label.text, label.get("text-anchor", "start"))
    assert not [m for m in marks if _overlap(box, m)], (box, marks)
    assert left <= box[0] and box[2] <= right  # along the line
    assert min(abs(y - (Y - 4)), abs(y - (Y + 12))) < 0.11  # just above it or just below it


def test_a_line_s_label_with_nothing_under_it_stays_where_it_was(url):
    """A threshold with no measurement near the right end of its line keeps its label there,
    just above the line, as it was always drawn."""
    study = create_study("clear", *SPACES["lev1"], storage=url, seed=3)
    for k, value in enumerate([0.9, 0.1, 0.8, 0.05]):  # far from the threshold (0.3)
        study.add({"temperature": 0.5 * k}, value)
    root = ET.fromstring(progress_svg(study))
    (line,) = [e for e in root.iter(f"{SVG}line") if e.get("stroke-dasharray") == "5 3"]
    (label,) = [e for e in root.iter(f"{SVG}text") if e.text == "threshold 0.3"]
    Y, right = float(line.get("y1")), float(line.get("x2"))
    assert float(label.get("x")) == pytest.approx(right - 4, abs=0.11)
    assert float(label.get("y")) == pytest.approx(Y - 4, abs=0.11)
    assert label.get("text-anchor") == "end"


# -- the expert's g panel without colour ---------------------------------------------------------
def _key_marks(root) -> dict[str, ET.Element]:
    """Each key's text -> the mark drawn just before it (a dot, a cross, a sign glyph)."""
    elems = list(root)
    return {
        e.text: elems[k - 1]
        for k, e in enumerate(elems)
        if e.tag == f"{SVG}text" and e.get("class") == "key"
    }


_GLYPH = re.compile(r"M([\d.]+),([\d.]+)h([\d.]+)(M[\d.]+,[\d.]+v[\d.]+)?")
_CROSS_D = re.compile(r"M[\d.]+,[\d.]+L[\d.]+,[\d.]+M[\d.]+,[\d.]+L[\d.]+,[\d.]+")


def _label_marks(root, below: float) -> dict[str, list[str]]:
    """The tags of the marks of the labels given ("accepted", "rejected": their tooltips'
    ends) lying below picture height ``below``."""
    out: dict[str, list[str]] = {"accepted": [], "rejected": []}
    for e in root.iter():
        tip = e.findtext(f"{SVG}title") or ""
        word = tip.rpartition(": ")[2]
        if word not in out:
            continue
        if e.tag == f"{SVG}circle":
            y = float(e.get("cy"))
        else:
            assert _CROSS_D.fullmatch(e.get("d")), e.get("d")
            y = float(re.findall(r"[\d.]+", e.get("d"))[1])
        if y > below:
            out[word].append(e.tag.removeprefix(SVG))
    return out


def test_expert_g_map_says_each_side_and_each_label_by_a_shape(url):
    """WCAG 1.4.1, and a greyscale print: on the expert's g map a plus marks the cells where
    the estimate would reject (g > 0, red), a minus those where it would accept (green), as the
    level-set class map marks its classes; the labels given are a dot (accepted) and a cross
    (rejected), and the key shows each of these marks beside its text."""
    study = make_study("expert", url, answers=16, fast=True)
    root = ET.fromstring(model_svg(study))
    cells = []  # the g panel's cells: (x0, y0, x1, y1, rejects), their sign by colour
    for e in root.iter(f"{SVG}rect"):
        fill = e.get("fill", "")
        if float(e.get("y", 0)) > 220 and len(fill) == 7 and e.get("height") not in (None, "10"):
            x, y, w, h = (float(e.get(k)) for k in ("x", "y", "width", "height"))
            cells.append((x, y, x + w, y + h, int(fill[1:3], 16) > int(fill[3:5], 16)))
    assert {c[4] for c in cells} == {True, False}  # both sides drawn
    glyphs = [
        (float(x) + float(h) / 2, float(y), bool(plus))
        for e in root.iter(f"{SVG}path")
        if e.get("stroke-width") == "1.3" and e.find(f"{SVG}title") is None
        for x, y, h, plus in _GLYPH.findall(e.get("d", ""))
        if float(y) > 220 and float(y) < 440  # the g panel, not the key
    ]
    assert len(glyphs) > 50
    sides = set()
    for X, Y, plus in glyphs:
        cell = min(cells, key=lambda c: abs((c[0] + c[2]) / 2 - X) + abs((c[1] + c[3]) / 2 - Y))
        assert cell[0] <= X <= cell[2] and cell[1] <= Y <= cell[3]
        rejects = cell[4]
        assert plus == rejects, (X, Y)
        sides.add(plus)
    assert sides == {True, False}
    labels = [r["answer"] for r in study.history() if r["kind"] == "label"]
    marks = _label_marks(root, below=220)  # the g panel's
    assert marks["accepted"] == ["circle"] * sum(labels)
    assert marks["rejected"] == ["path"] * (len(labels) - sum(labels))
    assert sum(labels) and len(labels) - sum(labels)  # both kinds given
    keys = _key_marks(root)
    assert keys["accepted"].tag == f"{SVG}circle"
    assert _CROSS_D.fullmatch(keys["rejected"].get("d"))
    accept, reject = keys["expert's g <= 0: would accept"], keys["g > 0: would reject"]
    assert _GLYPH.fullmatch(accept.get("d")).group(4) is None  # a minus
    assert _GLYPH.fullmatch(reject.get("d")).group(4) is not None  # a plus


def test_expert_1d_model_keys_the_labels_by_their_shapes(url):
    """The 1-D expert model drew its labels as dots and crosses but keyed only two colour
    squares ("would accept" green, "would reject" red) that stood for nothing drawn in 1-D:
    its key now shows the labels' dot and cross, and the g curve."""
    study = create_study("e1", "cobol", {"parameters": [{"name": "a", "low": 0, "high": 1}]},
                         storage=url, seed=3)  # fmt: skip
    for _ in range(24):
        q = study.ask()
        study.tell(q.id, answer_for(q))
    root = ET.fromstring(model_svg(study))
    assert any((t.text or "").startswith("expert model: latent g") for t in root.iter(f"{SVG}text"))
    keys = _key_marks(root)
    assert keys["accepted"].tag == f"{SVG}circle"
    assert _CROSS_D.fullmatch(keys["rejected"].get("d"))
    assert keys["expert's latent g (estimate)"].tag == f"{SVG}line"
    assert not any("would accept" in k for k in keys)
    labels = [r["answer"] for r in study.history() if r["kind"] == "label"]
    for below in (0, PANEL_H):  # both panels, then the g panel alone
        marks = _label_marks(root, below)
        n = 2 if below == 0 else 1
        assert marks["accepted"] == ["circle"] * (n * sum(labels))
        assert marks["rejected"] == ["path"] * (n * (len(labels) - sum(labels)))


# -- maps over uneven grids --------------------------------------------------------------------
#: a table whose doses and ratios are unevenly spaced (the doses a trial would test)
_UNEVEN_DOSES = [0.0, 1.0, 2.0, 5.0, 10.0]
_UNEVEN_RATIOS = [0.0, 0.1, 0.3, 1.0]


def _uneven_table(threshold: float | None = None) -> dict:
    rows = [[d, r] for d in _UNEVEN_DOSES for r in _UNEVEN_RATIOS]
    space: dict = {"candidates": {"columns": ["dose", "ratio"], "rows": rows}}
    if threshold is not None:
        space["threshold"] = threshold
    return space


def _axis_maps(root, frame):
    """The data -> picture maps of a panel's two axes, read from its tick labels (the tick
    marks below and left of its ``frame``): two functions of a data value."""
    fx, fy, fw, fh = frame
    xt, yt = [], []
    items = list(root)
    for line, text in zip(items, items[1:]):
        if line.tag != f"{SVG}line" or text.tag != f"{SVG}text":
            continue
        x1, y1, x2, y2 = (float(line.get(k)) for k in ("x1", "y1", "x2", "y2"))
        if x1 == x2 and abs(y1 - (fy + fh)) < 0.05 and fx <= x1 <= fx + fw:
            xt.append((float(text.text), x1))
        elif y1 == y2 and abs(x2 - fx) < 0.05 and fy <= y1 <= fy + fh:
            yt.append((float(text.text), y1))
    assert len(xt) >= 2 and len(yt) >= 2, (xt, yt)

    def linear(ticks):
        (a, A), (b, B) = ticks[0], ticks[-1]
        return lambda v: A + (v - a) / (b - a) * (B - A)

    return linear(xt), linear(yt)


def _map_cells(root, frame):
    """The cells of the map in ``frame``: their (left, top, right, bottom), the 0.3 units by
    which a cell overlaps its right and lower neighbours (to close the seams) taken off."""
    fx, fy, fw, fh = frame
    out = []
    for e in root.iter(f"{SVG}rect"):
        if e.get("x") is None or e.get("fill") == "none":
            continue
        x, y, w, h = (float(e.get(k)) for k in ("x", "y", "width", "height"))
        if not (fx - 0.05 <= x and x + w <= fx + fw + 0.05 and fy - 0.05 <= y <= fy + fh):
            continue
        right = x + w if x + w >= fx + fw - 0.05 else x + w - 0.3
        bottom = y + h if y + h >= fy + fh - 0.05 else y + h - 0.3
        out.append((x, y, right, bottom))
    return out


def _check_uneven_map(root, frame) -> None:
    """Each cell of the map in ``frame`` covers its grid value and reaches halfway to each
    neighbour (the outer cells to the frame), against the panel's own axes; the cells tile the
    frame without gap or overlap."""
    X, Y = _axis_maps(root, frame)
    cells = _map_cells(root, frame)
    assert len(cells) == len(_UNEVEN_DOSES) * len(_UNEVEN_RATIOS)
    fx, fy, fw, fh = frame

    def edges(values, to, lo, hi):
        mids = [to((a + b) / 2) for a, b in zip(values, values[1:])]
        return list(zip([lo, *mids], [*mids, hi]))

    cols = edges(_UNEVEN_DOSES, X, fx, fx + fw)  # left to right
    rows = edges(_UNEVEN_RATIOS, Y, fy + fh, fy)  # bottom to top: (lower edge Y, upper edge Y)
    for d, (left, right) in zip(_UNEVEN_DOSES, cols):
        for r, (low, high) in zip(_UNEVEN_RATIOS, rows):
            (cell,) = [c for c in cells if c[0] < X(d) < c[2] and c[1] < Y(r) < c[3]]
            assert abs(cell[0] - left) <= 0.15 and abs(cell[2] - right) <= 0.15, (d, cell)
            assert abs(cell[3] - low) <= 0.15 and abs(cell[1] - high) <= 0.15, (r, cell)
    # the outer cells stand half their neighbour's gap beyond their value: the frame
    assert abs(X(_UNEVEN_DOSES[0] - 0.5) - fx) <= 0.15
    assert abs(X(_UNEVEN_DOSES[-1] + 2.5) - (fx + fw)) <= 0.15


def test_a_map_over_an_uneven_grid_draws_each_cell_over_its_value(url):
    """A 2-D level-set map over a table of uneven doses (0, 1, 2, 5, 10) drew every cell the
    average step wide, so cells stood beside their values and the measurements drawn over
    them: each cell now covers its value and meets its neighbours halfway, and each
    measurement's dot lies in the cell its tooltip names."""
    study = create_study("uneven", "straddle", _uneven_table(0.3), storage=url, seed=1)
    for _ in range(6):
        q = study.ask()
        study.tell(q.id, q.params["dose"] / 10 + q.params["ratio"])
    for width in (WIDTH, PHONE_WIDTH):
        root = ET.fromstring(model_svg(study, width=width))
        (frame,) = _frames(root)
        _check_uneven_map(root, frame)
        X, Y = _axis_maps(root, frame)
        dots = [
            (float(e.get("cx")), float(e.get("cy")), e.findtext(f"{SVG}title"))
            for e in root.iter(f"{SVG}circle")
            if (e.findtext(f"{SVG}title") or "").startswith("dose=")
        ]
        assert len(dots) == 6
        for cx, cy, tip in dots:
            d, r = (float(v) for v in re.findall(r"=([\d.]+)", tip)[:2])
            assert abs(cx - X(d)) <= 0.15 and abs(cy - Y(r)) <= 0.15, tip


def test_the_expert_maps_over_an_uneven_grid_draw_each_cell_over_its_value(url):
    """The expert family's two maps (the posterior mean of f, the expert's latent g) over an
    uneven table: each cell covers its value and meets its neighbours halfway."""
    study = create_study("uneven-expert", "cobol", _uneven_table(), storage=url, seed=3)
    for _ in range(16):
        q = study.ask()
        study.tell(q.id, answer_for(q))
    root = ET.fromstring(model_svg(study))
    frames = _frames(root)
    assert len(frames) == 2  # f's posterior mean above, the expert's g below
    for frame in frames:
        _check_uneven_map(root, frame)


#: the fills of a certified and a not yet known cell of the safe model picture
GREENS_AND_GREY = ("#a8dbb5", "#eeeeee")


def test_safe_model_calls_likely_unsafe_only_what_the_model_puts_above_h(url):
    """A newcomer's dose study (h = 0.6, g measured at 0.3-0.45) showed cells 'likely unsafe'
    whose lower bound of g was 0.28: the picture compared the lower bound of g with 0, not with
    the limit h. A cell is likely unsafe where the model's lower bound of g is above h, and its
    tooltip gives the upper bound of g against h."""
    space = {
        "monotone": "dose",
        "h": 5.0,
        "parameters": [
            {"name": "dose", "low": 0, "high": 1, "grid": 8},
            {"name": "weight", "low": 0, "high": 1, "grid": 5},
        ],
    }
    study = create_study("far", "m-safeopt", space, storage=url, seed=0, fit_hyperparameters=False)
    for _ in range(8):  # g well above 0 and far below the limit 5 everywhere
        q = study.ask()
        study.tell(q.id, {"f": q.params["dose"], "g": 0.3 + 0.5 * q.params["dose"]})
    root = ET.fromstring(model_svg(study))
    cells = [e for e in root.iter(f"{SVG}rect") if e.find(f"{SVG}title") is not None]
    titles = [e.findtext(f"{SVG}title") for e in cells]
    titles = [t for t in titles if "upper bound of g" in t]
    assert len(titles) == 8 * 5, titles[:3]
    unsafe = [e.findtext(f"{SVG}title") for e in cells if e.get("fill") not in GREENS_AND_GREY]
    assert unsafe == [], unsafe[:3]  # no lower bound of g reaches 5
    assert "likely unsafe: 0;" in root.findtext(f"{SVG}desc")
    # the tooltip's bound is that of g, said against h, as the model has it
    bounds, sets = study.policy.state()
    first = next(t for t in titles if t.startswith("weight=0, dose=0:"))
    assert f"upper bound of g {float(bounds.ucb_g[0, 0]):.4g} (limit h = 5)" in first, first


def _whole_number_ticks_fail(svg: str, y_rows: tuple[int, ...]) -> list[str]:
    """The tick labels of ``svg`` on an axis that counts and that are no whole number: every x
    tick (the answers), and the y ticks of the panels in ``y_rows`` (0 the top panel)."""
    bad = []
    for t in ET.fromstring(svg).iter(f"{SVG}text"):
        text = "".join(t.itertext())
        if t.get("transform") or not re.fullmatch(r"-?[\d.]+", text):
            continue
        is_x = t.get("text-anchor") == "middle"
        row = int(float(t.get("y")) // PANEL_H)
        if (is_x or row in y_rows) and float(text) != int(float(text)):
            bad.append(f"{'x' if is_x else 'y'} tick {text} (row {row})")
    return bad


@pytest.mark.parametrize("answers", [1, 2, 9])
def test_axes_that_count_have_whole_number_ticks(url, answers):
    """A newcomer's level-set study, 8 measured points above the threshold: the count axis read
    0, 2.5, 5, 7.5; after one or two answers the answers axis read 0.5, 0.75, 1, 1.25 (answer
    1.25). Answers, counts and wins are whole numbers, and so are their ticks."""
    space = {"threshold": 0.5, "parameters": [{"name": "t", "low": 0, "high": 1, "grid": 11}]}
    study = create_study("count", "randomized-straddle", space, storage=url, seed=0)
    for _ in range(answers):  # every value above the threshold: the count is the answers
        q = study.ask()
        study.tell(q.id, 1.0 + q.params["t"])
    assert _whole_number_ticks_fail(progress_svg(study), y_rows=(1,)) == []
    pref = make_study("pref", url, answers=answers)
    assert _whole_number_ticks_fail(progress_svg(pref), y_rows=(0,)) == []


def test_safe_progress_names_g_on_its_axis_as_f_is_named(url):
    """A newcomer's dose study named both outputs ([measurement.f] efficacy in %, [measurement.g]
    toxicity in AU): the progress picture's f axis read "efficacy (f, %)" and its g axis "g".
    Each axis names its output as the form does; a study that names nothing keeps "f" and "g"."""
    space = {
        "monotone": "dose",
        "h": 0.6,
        "measurement": {
            "f": {"name": "efficacy", "unit": "%"},
            "g": {"name": "toxicity", "unit": "AU"},
        },
        "parameters": [
            {"name": "dose", "low": 0, "high": 40, "grid": 5},
            {"name": "timing", "low": 0, "high": 24, "grid": 3},
        ],
    }
    fixed = {"seed": 0, "fit_hyperparameters": False}
    named = create_study("named", "m-safeopt", space, storage=url, **fixed)
    plain = {k: v for k, v in space.items() if k != "measurement"}
    bare = create_study("bare", "m-safeopt", plain, storage=url, **fixed)
    for study in (named, bare):
        for _ in range(3):
            q = study.ask()
            study.tell(q.id, {"f": 1.0 + q.params["dose"], "g": 0.05})
    texts = _texts(progress_svg(named))
    assert "efficacy (f, %)" in texts and "toxicity (g, AU)" in texts, texts
    texts = _texts(progress_svg(bare))
    assert "f" in texts and "g" in texts and "toxicity (g, AU)" not in texts, texts


def test_large_counts_are_written_out_on_their_axes():
    """A count axis of 20,000 answers read 5000, 1e+04, 1.5e+04, 2e+04 (the axes' 4-digit
    format); a count is written out whole. (A study of that many answers is too slow for a test:
    the tick labels' function is checked on the ticks the axis draws.)"""
    from boloop.study.pictures.panel import _tick_text
    from boloop.study.pictures.svg import _nice_ticks

    ticks = _nice_ticks(0, 20000, whole=True)
    assert [_tick_text(t, True) for t in ticks] == [str(int(t)) for t in ticks]
    assert "10000" in [_tick_text(t, True) for t in ticks]
    assert _tick_text(1e6, True) == "1000000"
    assert _tick_text(12345.6, False) == "1.235e+04"  # a measured axis keeps its format


def test_levelset_value_at_the_threshold_counts_as_above_as_the_map_does(url):
    """A newcomer's level set (threshold 40) measured 40.0: the progress picture drew it as a dot
    and counted it below, while the map (eq. 3.1, H = {mean >= h}) puts such settings in the
    "above" set. The pictures now use the family's one convention: at the threshold is above."""
    space = {"threshold": 40, "parameters": [{"name": "t", "low": 0, "high": 1, "grid": 11}]}
    study = create_study("edge40", "randomized-straddle", space, storage=url, seed=0)
    values = [40.0, 10.0, 55.0]
    for v in values:
        study.tell(study.ask().id, v)
    svg = progress_svg(study)
    assert re.search(r"<path [^>]*><title>answer 1: ", svg)  # a triangle: above
    assert re.search(r"<circle [^>]*><title>answer 2: ", svg)  # a dot: below
    assert "3 measurements, 2 at or above the threshold 40." in svg
    assert "3 measurements, 2 at or above the threshold 40" in model_svg(study)


def test_growth_key_words_a_run_of_levels_and_a_single_level(url):
    """A newcomer's dose study on a fine grid: more levels than keys, so a key stands for a run
    of levels and read "dose up to 0 to 2 mg". A run now reads "dose up to a level from 1 to 2
    mg", a single level still "dose up to 4 mg"."""
    from boloop.study.pictures import growth_svg

    space = {
        "monotone": "dose",
        "h": 0.6,
        "parameters": [
            {"name": "dose", "low": 0, "high": 40, "grid": 41, "unit": "mg"},
            {"name": "timing", "low": 0, "high": 24, "grid": 4, "unit": "h"},
        ],
    }
    study = create_study("fine", "m-safeopt", space, storage=url, seed=0)
    for _ in range(20):
        q = study.ask()
        d = q.params["dose"]
        study.tell(q.id, {"f": d / 10, "g": 0.05 + 0.0002 * d * d})
    _, keys = _growth_keys(growth_svg(study))
    texts = list(keys.values())
    runs = [t for t in texts if " to " in t.removeprefix("dose up to ")]
    singles = [t for t in texts if t not in runs]
    assert runs and singles, texts  # precondition: more levels used than keys
    for t in runs:
        assert re.fullmatch(r"dose up to a level from [\d.]+ to [\d.]+ mg( \(the highest\))?", t), t
    for t in singles:
        assert re.fullmatch(r"dose up to [\d.]+ mg( \(the highest\))?", t), t
