"""``boloop serve`` through the framework's TestClient: every page and API call, the error paths,
auth on and off, CSRF, XSS, uploads and media."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from boloop.errors import InvalidInputError  # noqa: E402
from boloop.study import create_study, load_study  # noqa: E402
from boloop.web import check_bind, create_app  # noqa: E402
from boloop.web.app import jsonable  # noqa: E402
from boloop.web.server import server_urls  # noqa: E402
from study_samples import DRINKS, SPACES, answer_for, make_study  # noqa: E402

TOKEN = "correct-horse-battery"


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'web.db'}"


def _client(url, token=None, **kw):
    return TestClient(create_app(url, token, **kw), follow_redirects=False)


def _csrf(client, path="/"):
    r = client.get(path)
    assert r.status_code == 200, r.text
    m = re.search(r'name="csrf" value="([^"]+)"', r.text)
    assert m, "every form carries a CSRF token"
    return m.group(1)


def _form_for(q, note=""):
    """The form fields a person's click or typing sends for query q."""
    ans = answer_for(q)
    data = {"query_id": str(q.id), "note": note}
    if q.kind == "label":
        data["answer"] = "accept" if ans else "reject"
    elif q.kind == "compare":
        data["answer"] = ans
    elif q.outputs:
        data.update({f"out.{k}": repr(v) for k, v in ans.items()})
    else:
        data["value"] = repr(ans)
    return data


# -- pages ----------------------------------------------------------------------------------------
def test_index_lists_studies_with_their_state(url):
    make_study("lev1", url, answers=3)
    make_study("pref", url, answers=0)
    c = _client(url)
    r = c.get("/")
    assert r.status_code == 200
    assert "Content-Security-Policy" in r.headers
    for name, method in (("lev1", "randomized-straddle"), ("pref", "maxminlcb")):
        assert f'href="/studies/{name}"' in r.text and method in r.text
    assert re.search(
        r"lev1</a></td>\s*<td>levelset</td><td>randomized-straddle</td><td[^>]*>3<", r.text
    )
    assert 'name="space" type="file"' in r.text  # the create form


@pytest.mark.parametrize("name", sorted(SPACES))
def test_study_page_answers_every_kind_and_stores_exactly_that(url, name):
    make_study(name, url, answers=2)
    c = _client(url)
    for k in range(3):
        csrf = _csrf(c, f"/studies/{name}")
        q = load_study(name, storage=url).ask()
        page = c.get(f"/studies/{name}").text
        assert f'data-kind="{q.kind}"' in page
        assert f'name="query_id" value="{q.id}"' in page
        for pname in q.a if q.kind == "compare" else q.params:
            assert f'<th scope="row">{pname}</th>' in page
        form = _form_for(q, note=f"note {k}")
        r = c.post(f"/studies/{name}/tell", data={**form, "csrf": csrf})
        assert r.status_code == 303, r.text
        assert r.headers["location"].startswith(f"/studies/{name}?done=told&w=")
        last = load_study(name, storage=url).history()[-1]
        assert last["query_id"] == q.id and last["note"] == f"note {k}"
        expected = answer_for(q)
        if q.kind == "compare":
            assert last["answer"] == (0 if expected == "a" else 1)
        else:
            assert last["answer"] == expected
        # the next page says what was stored (a newcomer's trial), from a text this server signed
        said = f"answer stored: query {q.id}: {last['answer_text']}"
        if q.kind == "compare":
            said = f"answer stored: query {q.id}: {'A' if expected == 'a' else 'B'} is better"
        assert said in c.get(r.headers["location"]).text
    assert c.get(f"/studies/{name}?done=told").status_code == 200
    # an unsigned text is not shown (a word no page holds: "999" was, in a time stamp's digits)
    forged = c.get(f"/studies/{name}?done=told&w=query%201%3A%20forged-value&sig=0").text
    assert "answer stored" in forged and "forged-value" not in forged


def test_safe_page_states_the_limit_and_confirms_above_it(url):
    make_study("safe", url, answers=1)
    c = _client(url)
    csrf = _csrf(c, "/studies/safe")
    page = c.get("/studies/safe").text
    assert "Safety limit" in page and 'data-limit-h="0.8"' in page
    q = load_study("safe", storage=url).ask()
    base = {"csrf": csrf, "query_id": str(q.id), "out.f": "0.5", "out.g": "0.95"}
    r = c.post("/studies/safe/tell", data=base)
    assert r.status_code == 400
    assert "above the safety limit" in r.text and 'name="confirm_over_limit"' in r.text
    assert load_study("safe", storage=url).n_answered == 1  # nothing stored
    # a confirmation of another value confirms nothing (the box holds the g it was ticked for)
    r = c.post("/studies/safe/tell", data={**base, "out.g": "0.99", "confirm_over_limit": "0.95"})
    assert r.status_code == 400 and "g = 0.99 is above the safety limit" in r.text
    assert load_study("safe", storage=url).n_answered == 1
    r = c.post("/studies/safe/tell", data={**base, "confirm_over_limit": "0.95"})
    assert r.status_code == 303
    assert load_study("safe", storage=url).history()[-1]["answer"] == {"f": 0.5, "g": 0.95}


@pytest.mark.parametrize(
    "fields,field,needle",
    [
        ({"out.f": "abc", "out.g": "0.1"}, "out.f", "must be a number"),
        ({"out.f": "1", "out.g": ""}, "out.g", "must be a number"),
        ({"out.f": "nan", "out.g": "0.1"}, "out.f", "finite"),
    ],
)
def test_bad_number_is_shown_next_to_its_field_and_nothing_stored(url, fields, field, needle):
    make_study("safe", url, answers=1)
    c = _client(url)
    csrf = _csrf(c, "/studies/safe")
    q = load_study("safe", storage=url).ask()
    r = c.post("/studies/safe/tell", data={"csrf": csrf, "query_id": str(q.id), **fields})
    assert r.status_code == 400
    out = field.split(".")[1]
    m = re.search(
        rf'id="out-{out}"[^>]*aria-invalid="true"[^>]*>\s*<p class="field-error" '
        rf'id="err-{out}" role="alert">([^<]*)</p>',
        r.text,
    )
    assert m and needle in m.group(1), r.text[:3000]
    assert load_study("safe", storage=url).n_answered == 1
    # what was typed stays in the fields
    assert f'value="{fields["out.f"]}"' in r.text


def test_bad_single_value_and_bad_label(url):
    make_study("lev1", url, answers=0)
    c = _client(url)
    csrf = _csrf(c, "/studies/lev1")
    q = load_study("lev1", storage=url).ask()
    # "1,2" is 1.2 (a decimal comma); "1,234" could be 1234 or 1.234: refused, saying why
    r = c.post("/studies/lev1/tell", data={"csrf": csrf, "query_id": str(q.id), "value": "1,234"})
    assert r.status_code == 400 and 'id="err-value"' in r.text and "ambiguous" in r.text
    r = c.post("/studies/lev1/tell", data={"csrf": csrf, "query_id": str(q.id), "value": "1 2"})
    assert r.status_code == 400 and 'id="err-value"' in r.text
    assert load_study("lev1", storage=url).n_answered == 0
    make_study("expert", url, answers=0)
    csrf = _csrf(c, "/studies/expert")
    q = load_study("expert", storage=url).ask()
    assert q.kind == "label"
    r = c.post(
        "/studies/expert/tell", data={"csrf": csrf, "query_id": str(q.id), "answer": "maybe"}
    )
    assert r.status_code == 400 and "accept or reject" in r.text
    assert load_study("expert", storage=url).n_answered == 0


def test_two_browsers_on_one_query_exactly_one_wins(url):
    make_study("pref", url, answers=1)
    alice, bob = _client(url), _client(url)
    ca, cb = _csrf(alice, "/studies/pref"), _csrf(bob, "/studies/pref")
    q = load_study("pref", storage=url).ask()
    ra = alice.post("/studies/pref/tell", data={"csrf": ca, "query_id": str(q.id), "answer": "a"})
    rb = bob.post("/studies/pref/tell", data={"csrf": cb, "query_id": str(q.id), "answer": "b"})
    assert ra.status_code == 303
    assert rb.status_code == 409
    assert "not stored" in rb.text and f"query {q.id} was answered first by someone else" in rb.text
    nxt = load_study("pref", storage=url).ask()
    assert f'name="query_id" value="{nxt.id}"' in rb.text  # bob sees the next query
    hist = load_study("pref", storage=url).history()
    assert [r["query_id"] for r in hist].count(q.id) == 1 and hist[-1]["answer"] == 0


def test_undo_from_the_page(url):
    make_study("lev1", url, answers=2)
    c = _client(url)
    csrf = _csrf(c, "/studies/lev1")
    before = load_study("lev1", storage=url).history()
    r = c.post("/studies/lev1/undo", data={"csrf": csrf})
    assert r.status_code == 303 and "?done=undone&" in r.headers["location"]
    after = load_study("lev1", storage=url)
    assert after.history() == before[:-1]
    assert after.ask().id == before[-1]["query_id"]  # the withdrawn query is open again
    assert "last answer withdrawn" in c.get(r.headers["location"]).text
    c.post("/studies/lev1/undo", data={"csrf": csrf})
    r = c.post("/studies/lev1/undo", data={"csrf": csrf})
    assert r.status_code == 409 and "no answer to undo" in r.text


def test_undo_names_what_it_withdraws_and_refuses_an_answer_the_page_did_not_show(url):
    """The page shows the last answer (query, answer, time) and its undo form names it; an undo
    whose answer is no longer the last (someone answered since) withdraws nothing."""
    s = make_study("pref", url, answers=2)
    c = _client(url)
    page = c.get("/studies/pref").text
    last = s.history()[-1]
    told = last["told_at"][:19].replace("T", " ")
    words = {0: "A is better", 1: "B is better"}[last["answer"]]
    desc = f"query {last['query_id']}: {words}, given {told} UTC"
    assert f'data-last="{desc}"' in page and f"last answer: {desc}" in page
    key = re.search(r'name="last" value="([^"]+)"', page).group(1)
    q = s.ask()  # a colleague answers: the page's last answer is not the last any more
    s.tell(q.id, "a")
    r = c.post("/studies/pref/undo", data={"csrf": _csrf(c, "/studies/pref"), "last": key})
    assert r.status_code == 409
    assert "Nothing was withdrawn" in r.text and f"query {q.id}: A is better" in r.text
    assert load_study("pref", storage=url).n_answered == 3
    key = re.search(r'name="last" value="([^"]+)"', r.text).group(1)  # the page shown now
    r = c.post("/studies/pref/undo", data={"csrf": _csrf(c, "/studies/pref"), "last": key})
    assert r.status_code == 303
    assert load_study("pref", storage=url).n_answered == 2
    assert (
        f"last answer withdrawn: query {q.id}: A is better, given"
        in c.get(r.headers["location"]).text
    )
    forged = "/studies/pref?done=undone&w=call%20555-0100&sig=" + "0" * 32
    assert "555-0100" not in c.get(forged).text  # a link cannot put its own text on the page


def test_csrf_is_required_on_every_form(url):
    make_study("lev1", url, answers=1)
    c = _client(url)
    _csrf(c, "/studies/lev1")
    q = load_study("lev1", storage=url).ask()
    for path, data in (
        ("/studies/lev1/tell", {"query_id": str(q.id), "value": "1.0"}),
        ("/studies/lev1/undo", {}),
        ("/studies", {"name": "x", "method": "straddle", "problem": "levelset/toy"}),
        ("/logout", {}),
    ):
        for bad in ({}, {"csrf": "forged-token-value-forged-token-value"}):
            r = c.post(path, data={**data, **bad})
            assert r.status_code == 403, (path, r.status_code)
            assert "CSRF" in r.text
    assert load_study("lev1", storage=url).n_answered == 1
    # a token from another browser does not work either
    other = _client(url)
    r = c.post("/studies/lev1/undo", data={"csrf": _csrf(other)})
    assert r.status_code == 403


def test_names_and_labels_are_escaped(url):
    evil = "<script>alert(1)</script>"
    space = {
        "candidates": {
            "columns": [evil, "y"],
            "rows": [[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]],
            "labels": ['<img src=x onerror="alert(2)">', "b&b", "c"],
        }
    }
    create_study("<b>bold<b>", "maxminlcb", space, storage=url, seed=0)
    c = _client(url)
    page = c.get("/").text
    assert "<b>bold<b>" not in page and "&lt;b&gt;bold&lt;b&gt;" in page
    r = c.get("/studies/%3Cb%3Ebold%3Cb%3E")
    assert r.status_code == 200
    assert evil not in r.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
    assert "<img src=x" not in r.text
    assert "script-src 'self'" in r.headers["Content-Security-Policy"]


def test_exports_and_pictures_and_state(url):
    s = make_study("pref", url, answers=2)
    q = s.ask()
    s.tell(q.id, "a", note='A tastes, better; "really"')
    c = _client(url)
    r = c.get("/studies/pref/export.csv")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert (
        len(rows) == 3
        and rows[-1]["note"] == 'A tastes, better; "really"'
        and rows[-1]["preferred"] == "a"
    )
    doc = c.get("/studies/pref/export.json").json()
    assert doc["history"][-1]["note"].startswith("A tastes")
    assert c.get("/studies/pref/export.xml").status_code == 404
    for which in ("progress", "model"):
        r = c.get(f"/studies/pref/pictures/{which}.svg")
        assert r.status_code == 200 and r.text.startswith("<svg")
    assert c.get("/studies/pref/pictures/nope.svg").status_code == 404
    st = c.get("/studies/pref/state").json()
    s.tell(s.ask().id, "b")
    st2 = c.get("/studies/pref/state").json()
    assert st2["version"] > st["version"] and st2["answered"] == st["answered"] + 1
    page = c.get("/studies/pref").text
    assert "A tastes, better" in page  # the note in the history table


class _PolicyCopies:
    """Stands for the ``copy`` module in the study and web modules: forwards everything and
    counts the deep copies of a policy made there (copies of the live policy; a policy's own
    copies of itself, e.g. the expert family's ``predict``, are made in its own module)."""

    def __init__(self) -> None:
        import copy

        self._copy = copy
        self.n = 0

    def deepcopy(self, x, *args, **kw):
        from boloop.queries import BasePolicy

        self.n += isinstance(x, BasePolicy)
        return self._copy.deepcopy(x, *args, **kw)

    def __getattr__(self, attr):
        return getattr(self._copy, attr)


def _count_policy_copies(monkeypatch) -> _PolicyCopies:
    import copy
    import importlib
    import pkgutil

    import boloop.study

    counter = _PolicyCopies()
    # every module of boloop.study that copies with the copy module (readout's copy, the growth
    # picture's replay): walked, not listed, so that a module the code moves to is counted too
    patched = []
    for info in pkgutil.walk_packages(boloop.study.__path__, "boloop.study."):
        module = importlib.import_module(info.name)
        if getattr(module, "copy", None) is copy:
            monkeypatch.setattr(module, "copy", counter)
            patched.append(info.name)
    assert "boloop.study.readout" in patched, patched
    return counter


def _page(client, name):
    r = client.get(f"/studies/{name}")
    assert r.status_code == 200, r.text
    return re.sub(r'name="csrf" value="[^"]+"', "", r.text)


@pytest.mark.parametrize("name", sorted(SPACES))
def test_a_page_copies_the_policy_once_and_an_unchanged_study_not_again(url, name, monkeypatch):
    """The page's recommendation, warnings and model picture are read from one copy of the live
    policy per render (its status and its picture share it); drawn again while nothing changed
    (a reload, a second visitor, the picture or the status through the API), the study shows
    the same and copies nothing. Through it all the live study asks what a replay of its log
    asks, and after an answer the page shows what a fresh load of the log shows."""
    make_study(name, url, answers=3)
    c = _client(url)
    _page(c, name)  # the server loads the study and logs the open query
    copies = _count_policy_copies(monkeypatch)
    page = _page(c, name)
    model = c.get(f"/studies/{name}/pictures/model.svg").text
    status = c.get(f"/api/studies/{name}").json()
    assert _page(c, name) == page and model in page
    assert c.get(f"/api/studies/{name}").json() == status
    assert copies.n == 0
    assert _page(_client(url), name) == page  # another server: its own study, its own copy
    copies.n = 0
    q = c.post(f"/api/studies/{name}/ask").json()
    tq = load_study(name, storage=url, full_replay=True).ask()
    assert tq.to_dict().items() <= q.items()  # the API adds a safe query's limit
    r = c.post(f"/api/studies/{name}/tell", json={"query_id": q["id"], "answer": answer_for(tq)})
    assert r.status_code == 200, r.text
    page = _page(c, name)  # an answer changed the study: one copy, for status and picture
    assert copies.n == 1
    status = c.get(f"/api/studies/{name}").json()
    assert c.get(f"/studies/{name}/pictures/model.svg").text in page
    assert copies.n == 1
    fresh = load_study(name, storage=url, full_replay=True)
    assert status == json.loads(json.dumps(jsonable(fresh.status())))
    assert fresh.ask().to_dict().items() <= c.post(f"/api/studies/{name}/ask").json().items()


@pytest.mark.parametrize("name", ["lab/run 1", "a/state", "x/tell", "50% sugar?#", "/lead/"])
def test_study_names_with_slashes_and_url_characters_work_everywhere(url, name):
    """A name is one path segment, percent-encoded in every link (``/`` as ``%2F``); pages, the
    page's forms, pictures, exports, media and the API all reach the right study."""
    from urllib.parse import quote

    s = make_study(name, url, answers=1, key="pref")
    make_study("a", url, answers=0, key="lev1")  # a prefix of "a/state": never reached by it
    seg = quote(name, safe="")
    c = _client(url)
    index = c.get("/").text
    assert f'href="/studies/{seg}"' in index
    page = c.get(f"/studies/{seg}")
    assert page.status_code == 200, page.text
    assert f'action="/studies/{seg}/tell"' in page.text
    assert f'data-state-url="/studies/{seg}/state"' in page.text
    q = s.ask()
    csrf = _csrf(c, f"/studies/{seg}")
    r = c.post(f"/studies/{seg}/tell", data={"csrf": csrf, **_form_for(q, note="n")})
    assert r.status_code == 303 and r.headers["location"].startswith(f"/studies/{seg}?done=told&w=")
    assert [h["query_id"] for h in load_study(name, storage=url).history()][-1] == q.id
    assert c.get(f"/studies/{seg}/state").json()["answered"] == 2
    assert c.get(f"/studies/{seg}/pictures/model.svg").text.startswith("<svg")
    assert len(list(csv.DictReader(io.StringIO(c.get(f"/studies/{seg}/export.csv").text)))) == 2
    assert c.get(f"/studies/{seg}/media/x.png").status_code == 404  # the study, no such file
    # the API
    assert c.get(f"/api/studies/{seg}").json()["name"] == name
    q = c.post(f"/api/studies/{seg}/ask").json()
    r = c.post(f"/api/studies/{seg}/tell", json={"query_id": q["id"], "answer": "b"})
    assert r.status_code == 200, r.text
    assert len(c.get(f"/api/studies/{seg}/history").json()) == 3
    assert c.post(f"/api/studies/{seg}/undo").status_code == 200
    r = c.post(f"/studies/{seg}/undo", data={"csrf": csrf})
    assert r.status_code == 303 and r.headers["location"].startswith(f"/studies/{seg}?done=undone&")
    assert load_study(name, storage=url).n_answered == 1
    assert load_study("a", storage=url).n_answered == 0  # the other study was never touched
    if name == "a/state":  # unencoded, the same text is the state of study "a"
        assert c.get("/studies/a/state").json()["answered"] == 0


def test_a_login_returns_to_a_study_whose_name_has_a_slash(url):
    make_study("lab/run", url, key="pref")
    c = _client(url, TOKEN)
    r = c.get("/studies/lab%2Frun")
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/studies/lab%252Frun"
    csrf = _csrf(c, "/login")
    r = c.post("/login", data={"csrf": csrf, "token": TOKEN, "next": "/studies/lab%2Frun"})
    assert r.status_code == 303 and r.headers["location"] == "/studies/lab%2Frun"
    assert c.get("/studies/lab%2Frun").status_code == 200


def test_safe_growth_is_an_image_of_its_own(url):
    make_study("safe", url, answers=3, fast=True)
    make_study("pref", url, answers=1)
    c = _client(url)
    page = c.get("/studies/safe").text
    assert '<img src="/studies/safe/pictures/growth.svg?v=' in page
    r = c.get("/studies/safe/pictures/growth.svg")
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
    assert "certified safe share of the space" in r.text
    assert c.get("/studies/pref/pictures/growth.svg").status_code == 404
    assert "growth.svg" not in c.get("/studies/pref").text


def test_the_safe_sets_growth_has_its_numbers_on_a_page_of_their_own(url):
    """The growth image's texts reach no screen reader (an <img>): its table "the numbers" on
    the study page links to a page of them (app.js shows it in place), whose rows are
    growth_numbers' (a row per answer), escaped as every text of the page."""
    from boloop.study.pictures import growth_numbers

    study = make_study("safe", url, answers=4, fast=True)
    make_study("pref", url, answers=1)
    c = _client(url)
    page = c.get("/studies/safe").text
    link = "/studies/safe/pictures/growth-numbers"
    assert f'<details class="numbers" id="numbers-growth" data-src="{link}?v=' in page
    assert f'<a href="{link}">' in page
    r = c.get(link)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    lead, rows = growth_numbers(study)
    assert len(rows) == 4 and lead.startswith("4 answers.")
    cells = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", r.text)
    assert cells == rows
    assert f'<p id="growth-lead">{lead}</p>' in r.text
    assert c.get("/studies/pref/pictures/growth-numbers").status_code == 404
    assert c.get("/studies/nope/pictures/growth-numbers").status_code == 404


def test_unknown_study_is_404(url):
    make_study("lev1", url)
    c = _client(url)
    r = c.get("/studies/nope")
    assert r.status_code == 404 and "nope" in r.text
    assert c.get("/api/studies/nope").status_code == 404
    assert c.post("/api/studies/nope/ask").status_code == 404


def test_an_unknown_address_is_a_page_for_a_browser_and_json_for_the_api(url):
    """The router's own 404 and 405 (Starlette's HTTPException, not FastAPI's) get the human
    error page; under /api/ they stay JSON, as every API error."""
    c = _client(url)
    r = c.get("/no/such/page")
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert '<html lang="en">' in r.text and "There is no page at /no/such/page" in r.text
    r = c.get("/api/no-such-call")
    assert r.status_code == 404 and r.json() == {"detail": "Not Found"}
    r = c.delete("/api/studies")  # a known path, a method it does not take
    assert r.status_code == 405 and "GET" in r.headers["allow"] and r.json()["detail"]
    r = c.put("/studies/x/tell")
    assert r.status_code == 405 and "POST" in r.headers["allow"]
    assert r.headers["content-type"].startswith("text/html")


# -- creating studies from the form ----------------------------------------------------------------
def test_create_from_uploaded_space_file(url):
    c = _client(url)
    csrf = _csrf(c)
    space = json.dumps(
        {
            "parameters": [{"name": "temp", "low": 20, "high": 80, "grid": 7, "unit": "degC"}],
            "threshold": 0.3,
        }
    )
    r = c.post(
        "/studies",
        data={"csrf": csrf, "name": "coating", "method": "straddle", "seed": "4", "options": ""},
        files={"space": ("space.json", space.encode(), "application/json")},
    )
    assert r.status_code == 303 and r.headers["location"] == "/studies/coating"
    s = load_study("coating", storage=url)
    assert s.seed == 4 and s.method == "straddle"
    page = c.get("/studies/coating").text
    assert '<span class="unit">degC</span>' in page


def test_every_method_of_the_create_forms_select_creates_a_study(url):
    """The select lists "random (preference)" and the like: what it sends names the family too,
    so every choice creates a study of that family and method (a newcomer got "method id
    'random' exists in several families")."""
    c = _client(url)
    page = c.get("/").text
    select = re.search(r'<select id="c-method" name="method"[^>]*>(.*?)</select>', page, re.S)
    choices = re.findall(r'<option value="([^"]+)"[^>]*>([^<]+)</option>', select.group(1))
    assert ("preference/random", "random (preference)") in choices
    from boloop.algorithms import list_methods
    from boloop.algorithms.registry import FAMILY_DEFAULTS

    assert len(choices) == len(list_methods())
    real = ("expert", "levelset", "preference", "safe")  # not the test families of test_loop
    assert {v.split("/")[0] for v, _ in choices} >= set(real)
    csrf = _csrf(c)
    for k, (value, text) in enumerate(choices):  # on each family's toy problem
        family, method = value.split("/")
        default = FAMILY_DEFAULTS.get(family) == method  # marked: "cobol (expert, default)"
        assert text == f"{method} ({family}{', default' if default else ''})"
        if family not in real:
            continue
        data = {"csrf": csrf, "name": f"s{k}", "method": value, "problem": f"{family}/toy"}
        r = c.post("/studies", data=data)
        assert r.status_code == 303, (value, re.findall(r'class="field-error"[^>]*>([^<]*)', r.text))
        s = load_study(f"s{k}", storage=url)
        assert (s.family, s.method) == (family, method)
    space = json.dumps(DRINKS).encode()  # the newcomer's case: their own space file
    r = c.post(
        "/studies",
        data={"csrf": csrf, "name": "drinks", "method": "preference/random"},
        files={"space": ("drinks.json", space, "application/json")},
    )
    assert r.status_code == 303 and load_study("drinks", storage=url).family == "preference"
    r = c.post(
        "/studies",
        data={"csrf": csrf, "name": "x", "method": "levelset/no-such", "problem": "levelset/toy"},
    )
    assert r.status_code == 400 and "no-such" in r.text  # refused, nothing stored


def test_create_errors_stay_on_the_form_and_store_nothing(url):
    c = _client(url)
    csrf = _csrf(c)
    bad = json.dumps({"parameters": [{"name": "t", "low": 2, "high": 1}], "threshold": 0})
    r = c.post(
        "/studies",
        data={"csrf": csrf, "name": "bad", "method": "straddle"},
        files={"space": ("space.json", bad.encode(), "application/json")},
    )
    assert r.status_code == 400 and "low must be &lt; high" in r.text
    assert 'value="bad"' in r.text  # the typed name stays
    r = c.post(
        "/studies",
        data={
            "csrf": csrf,
            "name": "x",
            "method": "straddle",
            "problem": "levelset/toy",
            "seed": "-3",
        },
    )
    assert r.status_code == 400 and "seed" in r.text
    r = c.post(
        "/studies",
        data={
            "csrf": csrf,
            "name": "x",
            "method": "straddle",
            "problem": "levelset/toy",
            "options": "bogus=1",
        },
    )
    assert r.status_code == 400 and "bogus" in r.text
    r = c.post("/studies", data={"csrf": csrf, "name": "x", "method": "straddle"})
    assert r.status_code == 400 and "upload a space file" in r.text
    assert c.get("/api/studies").json() == []
    r = c.post(
        "/studies",
        data={
            "csrf": csrf,
            "name": "ok",
            "method": "straddle",
            "problem": "levelset/toy",
            "options": "beta=2",
        },
    )
    assert r.status_code in (303, 400)


def test_upload_size_limit(url):
    c = _client(url, max_upload_bytes=10_000)
    csrf = _csrf(c)
    r = c.post(
        "/studies",
        data={"csrf": csrf, "name": "big", "method": "straddle"},
        files={"space": ("t.csv", b"x,y\n" + b"1,2\n" * 5000, "text/csv")},
    )
    assert r.status_code == 413 and "limit" in r.text
    assert c.get("/api/studies").json() == []


# -- media ----------------------------------------------------------------------------------------
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2a2a1e60000000049454e44ae426082"
)


def test_media_options_are_stored_and_served_only_from_the_study(url, tmp_path):
    c = _client(url)
    csrf = _csrf(c)
    table = "name,photo,sugar,flour\nplain,plain.png,0.1,0.5\nsweet,sweet.png,0.9,0.5\nrich,rich.png,0.5,0.9\n"
    files = [("space", ("recipes.csv", table.encode(), "text/csv"))]
    files += [
        ("files", (f"{n}.png", PNG + n.encode(), "image/png")) for n in ("plain", "sweet", "rich")
    ]
    r = c.post(
        "/studies",
        data={"csrf": csrf, "name": "cakes", "method": "maxminlcb", "seed": "0"},
        files=files,
    )
    assert r.status_code == 303, r.text
    page = c.get("/studies/cakes").text
    q = load_study("cakes", storage=url).ask()
    for lab in (q.a_label, q.b_label):
        assert f'<img src="/studies/cakes/media/{lab}.png"' in page
        got = c.get(f"/studies/cakes/media/{lab}.png")
        assert got.status_code == 200 and got.content == PNG + lab.encode()
        assert got.headers["content-type"] == "image/png"
    for bad in ("..%2Fweb.db", "%2Fetc%2Fpasswd", "nothere.png", "..%2F..%2Frecipes.csv"):
        assert c.get(f"/studies/cakes/media/{bad}").status_code == 404
    # a missing file beside the table: refused, nothing stored
    r = c.post(
        "/studies",
        data={"csrf": csrf, "name": "broken", "method": "maxminlcb"},
        files=[("space", ("recipes.csv", table.encode(), "text/csv"))],
    )
    assert r.status_code == 400 and "not a file beside the table" in r.text
    assert [s["name"] for s in c.get("/api/studies").json()] == ["cakes"]


def test_media_named_by_a_space_file_key_label_study(url, tmp_path):
    """The ``media`` key of a TOML space file's options table: the files beside it are copied
    into the study; moving them away later changes nothing; a Label query shows its picture."""
    d = tmp_path / "lab"
    d.mkdir()
    for n in ("p", "q", "r", "s"):
        (d / f"{n}.png").write_bytes(PNG + n.encode())
    (d / "space.toml").write_text(
        "[candidates]\ncolumns = [\"a\", \"b\"]\n"
        "rows = [[0.1, 0.2], [0.8, 0.3], [0.4, 0.9], [0.6, 0.6]]\n"
        'labels = ["P", "Q", "R", "S"]\nmedia = { photo = ["p.png", "q.png", "r.png", "s.png"] }\n'
    )
    s = create_study("look", "cobol", str(d / "space.toml"), storage=url, seed=1)
    for n in ("p", "q", "r", "s"):
        (d / f"{n}.png").unlink()  # served from the study's storage, not the folder
    c = _client(url)
    q = s.ask()
    assert q.kind == "label"
    page = c.get("/studies/look").text
    fname = f"{q.label.lower()}.png"
    assert f'<img src="/studies/look/media/{fname}"' in page
    assert c.get(f"/studies/look/media/{fname}").content == PNG + q.label.lower().encode()
    assert c.post("/api/studies/look/ask").json()["media"]["x"][0]["file"] == fname


@pytest.mark.parametrize(
    "names,words",
    [
        (["../web.db.png", "x.png"], "not a plain file name"),
        (["sub/x.png", "x.png"], "not a plain file name"),
        ([".hidden.png", "x.png"], "not a plain file name"),
        (["x.svg", "x.png"], "not a plain file name"),
        (["x.png", "gone.png"], "not a file beside"),
        (["x.png"], "one file per option"),
    ],
)
def test_bad_media_keys_are_refused_before_reading_and_nothing_stored(url, tmp_path, names, words):
    (tmp_path / "x.png").write_bytes(PNG)
    (tmp_path / "web.db.png").write_bytes(PNG)  # would be reached by ../ from a subfolder
    sub = tmp_path / "space"
    sub.mkdir()
    doc = {"candidates": {"columns": ["a"], "rows": [[0.1], [0.9]], "media": {"photo": names}}}
    (sub / "s.json").write_text(json.dumps(doc))
    if "../" not in names[0]:
        (sub / "x.png").write_bytes(PNG)
    with pytest.raises(InvalidInputError, match=words):
        create_study("m", "maxminlcb", str(sub / "s.json"), storage=url)
    assert not (tmp_path / "web.db").exists()


def test_media_named_without_a_space_file_is_refused(url):
    doc = {"candidates": {"columns": ["a"], "rows": [[0.1], [0.9]], "media": {"p": ["x.png"] * 2}}}
    with pytest.raises(InvalidInputError, match="not stored with the space"):
        create_study("m", "maxminlcb", doc, storage=url)


# -- the JSON API -------------------------------------------------------------------------------
def test_api_round_trip(url):
    make_study("lev1", url, answers=1)
    c = _client(url)
    studies = c.get("/api/studies").json()
    assert [s["name"] for s in studies] == ["lev1"] and studies[0]["answered"] == 1
    q1 = c.post("/api/studies/lev1/ask").json()
    q2 = c.post("/api/studies/lev1/ask").json()
    assert q1 == q2 and q1["kind"] == "evaluate" and "temperature" in q1["params"]
    r = c.post("/api/studies/lev1/tell", json={"query_id": q1["id"], "answer": "abc"})
    assert r.status_code == 400 and "abc" in r.json()["detail"]
    r = c.post(
        "/api/studies/lev1/tell",
        content=f'{{"query_id": {q1["id"]}, "answer": Infinity}}',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400
    r = c.post("/api/studies/lev1/tell", json={"query_id": q1["id"]})
    assert r.status_code == 400 and "answer" in r.json()["detail"]
    assert load_study("lev1", storage=url).n_answered == 1
    r = c.post("/api/studies/lev1/tell", json={"query_id": q1["id"], "answer": 0.7, "note": "hi"})
    assert r.status_code == 200 and r.json() == {
        "stored": True,
        "query_id": q1["id"],
        "answered": 2,
        "unusual": [],
    }
    r = c.post("/api/studies/lev1/tell", json={"query_id": q1["id"], "answer": 0.7})
    assert r.status_code == 409 and "already answered" in r.json()["detail"]
    hist = c.get("/api/studies/lev1/history").json()
    assert hist[-1]["answer"] == 0.7 and hist[-1]["note"] == "hi"
    status = c.get("/api/studies/lev1").json()
    assert status["answered"] == 2 and status["method"] == "randomized-straddle"
    r = c.post("/api/studies/lev1/undo").json()
    assert r["withdrawn"]["query_id"] == q1["id"]
    assert c.post("/api/studies/lev1/ask").json()["id"] == q1["id"]


def test_api_safe_query_names_its_limit(url):
    make_study("safe", url)
    c = _client(url)
    q = c.post("/api/studies/safe/ask").json()
    assert q["outputs"] == ["f", "g"] and q["limit"] == {"output": "g", "h": 0.8}


def test_openapi_and_offline_docs(url):
    c = _client(url)
    spec = c.get("/openapi.json").json()
    for path in (
        "/api/studies",
        "/api/studies/{name}",
        "/api/studies/{name}/ask",
        "/api/studies/{name}/tell",
        "/api/studies/{name}/undo",
        "/api/studies/{name}/history",
    ):
        assert path in spec["paths"]
    docs = c.get("/docs")
    assert docs.status_code == 200
    assert (
        "cdn" not in docs.text.lower()
        and "http://" not in docs.text
        and "https://" not in docs.text
    )
    assert '<html lang="en">' in docs.text  # WCAG 3.1.1: FastAPI's page names no language
    assert '"deepLinking": false' in docs.text  # no link inside an operation's toggle button
    assets = re.findall(r"""(?:src|href)=["'](/[^"']+)["']""", docs.text)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    for asset in assets:
        assert c.get(asset).status_code == 200, asset


# -- auth ---------------------------------------------------------------------------------------
def test_token_protects_pages_and_api(url):
    make_study("lev1", url, answers=1)
    c = _client(url, TOKEN)
    r = c.get("/studies/lev1")
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/studies/lev1"
    for path in ("/", "/docs", "/studies/lev1/export.csv"):
        assert c.get(path).status_code == 303
    r = c.get("/studies/lev1/state")  # an open page's poll: told to log in again, in JSON
    assert r.status_code == 401 and r.json()["error"] == "login_required"
    assert c.get("/openapi.json").status_code == 401
    r = c.get("/api/studies")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert c.get("/api/studies", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert c.get("/api/studies", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    r = c.post("/studies/lev1/undo", data={})  # the login page, back to the study after it
    assert r.status_code == 401 and 'name="next" value="/studies/lev1"' in r.text
    assert load_study("lev1", storage=url).n_answered == 1
    # the login form
    login = c.get("/login?next=/studies/lev1")
    assert login.status_code == 200
    csrf = re.search(r'name="csrf" value="([^"]+)"', login.text).group(1)
    r = c.post("/login", data={"csrf": csrf, "token": "nope", "next": "/studies/lev1"})
    assert r.status_code == 401 and "wrong token" in r.text
    r = c.post("/login", data={"csrf": csrf, "token": TOKEN, "next": "//evil.example/x"})
    assert r.status_code == 303 and r.headers["location"] == "/"
    assert TOKEN not in r.headers["set-cookie"]  # the cookie holds a derived value
    assert c.get("/studies/lev1").status_code == 200
    # a browser cookie does not open the API (cross-site requests would carry it)
    assert c.get("/api/studies").status_code == 401
    r = c.post("/logout", data={"csrf": csrf})
    assert r.status_code == 303
    assert c.get("/studies/lev1").status_code == 303


def test_a_visitor_not_logged_in_sees_no_log_out_and_no_storage(url):
    """The login page (and any page a visitor reaches before logging in) shows neither a "log
    out" link nor the storage path: where the data lives is not for a stranger."""
    c = _client(url, TOKEN)
    storage = url.split("///", 1)[1]
    for path in ("/login", "/login?next=/studies/x", "/static/no-such-file.css"):
        r = c.get(path)
        assert "log out" not in r.text and storage not in r.text and "storage" not in r.text, path
    r = c.post("/login", data={"csrf": _csrf(c, "/login"), "token": "nope", "next": "/"})
    assert r.status_code == 401 and "log out" not in r.text and storage not in r.text
    r = c.post("/login", data={"csrf": _csrf(c, "/login"), "token": TOKEN, "next": "/"})
    page = c.get("/").text  # logged in: both
    assert "log out" in page and f"storage {url}" in page
    open_page = _client(url).get("/").text  # a server without a token: the storage is shown
    assert "log out" not in open_page and f"storage {url}" in open_page


def test_csv_export_is_the_same_bytes_from_the_page_the_cli_and_python(url, tmp_path):
    """One line end ("\n") whoever exports; the CLI wrote "\r\n" (the csv module's default)
    and the page "\n"."""
    from cli_runner import run_cli

    s = make_study("pref", url, answers=3)
    s.tell(s.ask().id, "a", note="two lines:\r\nsweet, then sour")
    page = _client(url).get("/studies/pref/export.csv").content
    res = run_cli(
        ["study", "export", "pref", "--out", "cli.csv", "--storage", url], cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    s.export(tmp_path / "api.csv")
    cli, api = (tmp_path / "cli.csv").read_bytes(), (tmp_path / "api.csv").read_bytes()
    assert page == cli == api
    assert page.count(b"\n") == 6 and page.count(b"\r\n") == 1  # only inside the quoted note
    rows = list(csv.DictReader(io.StringIO(page.decode(), newline="")))
    assert rows[-1]["note"] == "two lines:\r\nsweet, then sour"


def test_no_token_means_open_pages(url):
    make_study("lev1", url)
    c = _client(url)
    assert c.get("/studies/lev1").status_code == 200
    assert c.get("/api/studies").status_code == 200
    assert c.get("/login").status_code == 200


def test_bind_rules():
    assert check_bind("127.0.0.1", None) == (None, False)
    assert check_bind("localhost", None) == (None, False)
    assert check_bind("::1", None) == (None, False)
    tok, generated = check_bind("0.0.0.0", None)
    assert generated and len(tok) >= 32
    assert check_bind("0.0.0.0", TOKEN) == (TOKEN, False)
    with pytest.raises(InvalidInputError, match="at least 8"):
        check_bind("0.0.0.0", "short")


def test_the_printed_urls_can_be_opened():
    """``--host 0.0.0.0`` listens everywhere, but http://0.0.0.0:PORT/ is no address to give a
    colleague: this machine opens 127.0.0.1, others its name (or its network address)."""
    import socket

    local, others = server_urls("0.0.0.0", 8000)
    assert local == "http://127.0.0.1:8000/"
    assert others[0] == f"http://{socket.gethostname()}:8000/"
    assert all("0.0.0.0" not in u and "127." not in u for u in others)
    assert server_urls("::", 8000)[0] == "http://[::1]:8000/"
    assert server_urls("127.0.0.1", 8000) == ("http://127.0.0.1:8000/", [])
    assert server_urls("10.1.2.3", 9) == ("http://10.1.2.3:9/", ["http://10.1.2.3:9/"])


def test_serve_on_the_network_generates_prints_and_requires_a_token(tmp_path):
    """``boloop serve --host 0.0.0.0`` without a token: one is generated and printed, and the
    API refuses calls without it."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.error
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"sqlite:///{tmp_path / 'net.db'}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "boloop.cli",
            "serve",
            "--storage",
            url,
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        while len(lines) < 3:
            line = proc.stderr.readline()
            assert line, "".join(lines)
            lines.append(line)
        # a URL a person can open (not the wildcard 0.0.0.0), and how others reach it
        assert "http://127.0.0.1:" in lines[0] and "0.0.0.0" not in lines[0]
        assert "from another machine: http://" in lines[0]
        assert "needs this token" in lines[1] and "--token or $BOLOOP_TOKEN keeps one" in lines[1]
        token = lines[2].strip()
        assert len(token) >= 32
        base = f"http://127.0.0.1:{port}/api/studies"
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(base, timeout=2)
                raise AssertionError("the API answered without a token")
            except urllib.error.HTTPError as exc:
                assert exc.code == 401
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        req = urllib.request.Request(base, headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=5) as r:
            assert r.status == 200 and json.loads(r.read()) == []
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_calibration_label_is_announced_on_the_page(url):
    """A COBOL label whose point is measured whatever the answer says so on the page; an
    ordinary label does not."""
    from boloop.spaces import Box

    s = create_study("cal", "cobol", space=Box([0, 0], [1, 1]), storage=url, seed=0,
                     n_initial_labels=4, n_candidates=128)
    c = _client(url)
    assert 'id="calibration-note"' not in c.get("/studies/cal").text  # an initial label
    for _ in range(300):
        q = s.ask()
        if q.kind == "label" and q.calibration:
            break
        x = q.query.x
        s.tell(q.id, bool(x[0] > 0.5) if q.kind == "label" else float(np.sum((x - 0.3) ** 2)))
    else:
        raise AssertionError("no calibration label asked")
    page = c.get("/studies/cal").text
    assert f'name="query_id" value="{q.id}"' in page
    assert 'id="calibration-note"' in page and "measured next whatever you answer" in page
