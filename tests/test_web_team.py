"""A team answering one study in two browsers, through the TestClient: an answer sent after the
server restarted with a new token (not stored, said so on the login page with its values, and
back on the study page after the login); a page's poll told to log in again; a refused answer's
values shown back and not put in the next query's form; the same values sent by two browsers
with different notes told apart from one form sent twice."""

from __future__ import annotations

import re
from html import unescape

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from boloop.study import load_study  # noqa: E402
from boloop.web import create_app  # noqa: E402
from study_samples import make_study  # noqa: E402

OLD, NEW = "old-token-0123456789", "new-token-9876543210"


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'team.db'}"


def _client(url, token=None):
    return TestClient(create_app(url, token), follow_redirects=False)


def _csrf(client, path):
    r = client.get(path)
    assert r.status_code == 200, r.text
    m = re.search(r'name="csrf" value="([^"]+)"', r.text)
    assert m
    return m.group(1)


def _login(client, token):
    r = client.post("/login", data={"csrf": _csrf(client, "/login"), "token": token, "next": "/"})
    assert r.status_code == 303


def _text(html: str) -> str:
    """The page's text, tags removed and blanks folded."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _restarted(url, old_client, token):
    """A client of a new server (``token``) holding the old client's cookies: the browser that
    was logged in to the server before its restart."""
    c = _client(url, token)
    for cookie in old_client.cookies.jar:
        c.cookies.set(cookie.name, cookie.value, domain=cookie.domain, path=cookie.path)
    return c


def test_an_answer_sent_after_a_restart_with_a_new_token_is_not_stored_and_shown(url):
    make_study("dose", url, answers=1, key="safe", fast=True)
    before = _client(url, OLD)
    _login(before, OLD)
    csrf = _csrf(before, "/studies/dose")
    qid = load_study("dose", storage=url).ask().id
    after = _restarted(url, before, NEW)  # the page's cookie is for the old token
    # the page's poll is told to log in again, not "cannot reach"
    r = after.get("/studies/dose/state")
    assert r.status_code == 401 and r.json()["error"] == "login_required"
    sent = {"csrf": csrf, "query_id": str(qid), "out.f": "50", "out.g": "0.1",
            "note": "alice, bench 2"}  # fmt: skip
    r = after.post("/studies/dose/tell", data=sent)
    assert r.status_code == 401
    text = _text(r.text)
    assert f"Your answer to query {qid} was NOT stored" in text
    assert "f: 50" in text and "g: 0.1" in text and "note: alice, bench 2" in text
    assert 'name="next" value="/studies/dose"' in r.text  # back to the study, not /
    assert load_study("dose", storage=url).n_answered == 1  # never stored without the token
    # the login form carries the answer; a wrong token keeps it
    fields = dict(re.findall(r'name="(sent\.[^"]+)" value="([^"]*)"', r.text))
    assert fields == {"sent.query_id": str(qid), "sent.out.f": "50", "sent.out.g": "0.1",
                      "sent.note": "alice, bench 2"}  # fmt: skip
    form = {"csrf": csrf, "next": "/studies/dose", **fields}
    r = after.post("/login", data={**form, "token": OLD})
    assert r.status_code == 401 and "wrong token" in r.text and "f: 50" in _text(r.text)
    assert load_study("dose", storage=url).n_answered == 1
    # the right token: the study page, the answer back in the form of its still open query
    r = after.post("/login", data={**form, "token": NEW})
    assert r.status_code == 200 and "boloop_session=" in r.headers["set-cookie"]
    text = _text(r.text)
    assert f"Your answer to query {qid} was NOT stored" in text and "back in the form" in text
    assert 'name="out.f" inputmode="decimal" autocomplete="off" value="50"' in r.text
    assert 'id="note" name="note" maxlength="2000" autocomplete="off" value="alice, bench 2"' in (
        r.text
    )
    assert "log out" in r.text  # the page is for a logged-in browser
    assert load_study("dose", storage=url).n_answered == 1  # stored only when sent again
    r = after.post("/studies/dose/tell", data={**sent, "csrf": csrf})
    assert r.status_code == 303
    row = load_study("dose", storage=url).history()[-1]
    assert (row["query_id"], row["answer"], row["note"]) == (
        qid, {"f": 50.0, "g": 0.1}, "alice, bench 2"
    )  # fmt: skip


def test_after_the_login_an_answer_to_a_closed_query_is_shown_not_put_in_the_form(url):
    make_study("dose", url, answers=1, key="safe", fast=True)
    c = _client(url, NEW)
    csrf = _csrf(c, "/login")
    study = load_study("dose", storage=url)
    qid = study.ask().id
    study.tell(qid, {"f": 49.0, "g": 0.12})  # a colleague answered meanwhile
    r = c.post("/login", data={"csrf": csrf, "next": "/studies/dose", "token": NEW,
                               "sent.query_id": str(qid), "sent.out.f": "51",
                               "sent.out.g": "0.11"})  # fmt: skip
    assert r.status_code == 200
    text = _text(r.text)
    assert f"Query {qid} is not open any more" in text and "not put in the form" in text
    assert "f: 51" in text and "g: 0.11" in text
    assert 'value="51"' not in r.text and 'value="0.11"' not in r.text
    assert load_study("dose", storage=url).n_answered == 2


def test_an_undo_without_a_login_withdraws_nothing_and_goes_back_to_the_study(url):
    make_study("dose", url, answers=2, key="safe", fast=True)
    c = _client(url, NEW)
    csrf = _csrf(c, "/login")
    r = c.post("/studies/dose/undo", data={"csrf": csrf, "last": ""})
    assert r.status_code == 401 and "Nothing was withdrawn" in _text(r.text)
    assert 'name="next" value="/studies/dose"' in r.text
    assert load_study("dose", storage=url).n_answered == 2


def test_a_cross_site_answer_without_a_login_is_not_echoed(url):
    """Values are shown back only for a form of this site (its CSRF token matches)."""
    make_study("dose", url, answers=1, key="safe", fast=True)
    c = _client(url, NEW)
    r = c.post("/studies/dose/tell", data={"csrf": "forged", "query_id": "2",
                                           "out.f": "INJECTED", "out.g": "1"})  # fmt: skip
    assert r.status_code == 401 and "INJECTED" not in r.text
    assert load_study("dose", storage=url).n_answered == 1


def _two_pages(url, name):
    """Two browsers (clients with their own cookies) with the study's page open."""
    app = create_app(url)  # one server
    a, b = TestClient(app, follow_redirects=False), TestClient(app, follow_redirects=False)
    return a, _csrf(a, f"/studies/{name}"), b, _csrf(b, f"/studies/{name}")


def test_a_refused_answer_is_shown_back_and_not_put_in_the_new_querys_form(url):
    make_study("dose", url, answers=1, key="safe", fast=True)
    a, ca, b, cb = _two_pages(url, "dose")
    qid = load_study("dose", storage=url).ask().id
    r = a.post("/studies/dose/tell", data={"csrf": ca, "query_id": str(qid), "out.f": "50",
                                           "out.g": "0.1", "note": "alice"})  # fmt: skip
    assert r.status_code == 303
    r = b.post("/studies/dose/tell", data={"csrf": cb, "query_id": str(qid), "out.f": "51",
                                           "out.g": "0.11", "note": "bob, 2nd run"})  # fmt: skip
    assert r.status_code == 409
    text = _text(r.text)
    new = load_study("dose", storage=url).ask().id
    assert f"query {qid} was answered first by someone else (query {qid}: f=50, g=0.1" in text
    assert f"The open query is now {new}" in text and "no query was open" not in text
    sent = _text(re.search(r'<div class="warning" id="sent">.*?</div>', r.text, re.S).group(0))
    assert f"for query {qid}" in sent
    assert "f: 51" in sent and "g: 0.11" in sent and "note: bob, 2nd run" in sent
    form = re.search(r'<form method="post" action="/studies/dose/tell".*?</form>', r.text, re.S)
    assert f'name="query_id" value="{new}"' in form.group(0)
    assert 'value="51"' not in form.group(0) and "bob, 2nd run" not in form.group(0)
    assert 'data-refused="1"' in r.text


def test_the_same_values_from_two_browsers_with_different_notes_are_told_apart(url):
    make_study("dose", url, answers=1, key="safe", fast=True)
    a, ca, b, cb = _two_pages(url, "dose")
    qid = load_study("dose", storage=url).ask().id
    same = {"query_id": str(qid), "out.f": "50", "out.g": "0.1"}
    assert (
        a.post("/studies/dose/tell", data={**same, "csrf": ca, "note": "alice"}).status_code == 303
    )
    r = b.post("/studies/dose/tell", data={**same, "csrf": cb, "note": "bob"})
    assert r.status_code == 409
    text = _text(r.text)
    assert "not stored again" not in text and "nothing is stored twice" not in text
    assert "answered first from another browser, with the same values as yours" in text
    assert "Your note was NOT stored" in text and "note: bob" in text
    assert 'data-refused="1"' in r.text
    assert [r["note"] for r in load_study("dose", storage=url).history()][-1] == "alice"
    # the same form sent twice from one browser is that, not someone else's
    r = a.post("/studies/dose/tell", data={**same, "csrf": ca, "note": "alice"})
    text = _text(r.text)
    assert "this browser had stored it already" in text and "sent twice" in text
    assert "note was NOT stored" not in text and 'data-refused="1"' not in r.text


def test_the_same_values_with_another_note_from_an_unknown_sender_say_the_note_was_lost(url):
    """An answer given elsewhere (Python, the CLI, before a restart): no browser is known; the
    same values with another note are not called "sent twice"."""
    make_study("dose", url, answers=1, key="safe", fast=True)
    c = _client(url)
    csrf = _csrf(c, "/studies/dose")
    study = load_study("dose", storage=url)
    qid = study.ask().id
    study.tell(qid, {"f": 50.0, "g": 0.1}, note="from the notebook")
    r = c.post("/studies/dose/tell", data={"csrf": csrf, "query_id": str(qid), "out.f": "50",
                                           "out.g": "0.1", "note": "bob"})  # fmt: skip
    text = _text(r.text)
    assert "the same values as yours but another note" in text
    assert "Your note was NOT stored" in text and "note: bob" in text
    assert "not stored again" not in text


def test_an_answer_to_a_withdrawn_query_says_it_was_withdrawn(url):
    make_study("dose", url, answers=1, key="safe", fast=True)
    c = _client(url)
    csrf = _csrf(c, "/studies/dose")
    study = load_study("dose", storage=url)
    q1 = study.ask().id
    study.tell(q1, {"f": 40.0, "g": 0.1})
    q2 = study.ask().id
    study.undo()  # the answer to q1 withdrawn: q1 is open again, q2 gone
    r = c.post("/studies/dose/tell", data={"csrf": csrf, "query_id": str(q2), "out.f": "1",
                                           "out.g": "0.1"})  # fmt: skip
    assert r.status_code == 409
    text = _text(r.text)
    assert f"query {q2} was withdrawn" in text and f"The open query is now {q1}" in text


def test_a_login_carrying_an_answer_to_a_study_that_is_not_there_still_logs_in(url):
    """The review's case: the right token with an answer carried for a study this server does
    not have (``next=/studies/nope``) answered 404 without the session cookie: not logged in,
    and going Back sent the same login again. Now the browser is logged in, the page says the
    answer was not stored and why, and the next page opens without a new login."""
    make_study("dose", url, answers=1, key="safe", fast=True)
    c = _client(url, NEW)
    csrf = _csrf(c, "/login")
    r = c.post("/login", data={"csrf": csrf, "next": "/studies/nope", "token": NEW,
                               "sent.query_id": "1", "sent.out.f": "3"})  # fmt: skip
    assert r.status_code == 404 and "boloop_session=" in r.headers["set-cookie"]
    text = _text(r.text)
    assert "Logged in, but your answer to query 1 was NOT stored" in text and "nope" in text
    assert c.get("/studies/dose").status_code == 200  # logged in: no redirect to /login
    assert c.get("/studies/nope").status_code == 404
    assert load_study("dose", storage=url).n_answered == 1


def test_an_api_tell_repeated_after_a_dropped_connection_says_whose_answer_stands(url):
    """A ``tell`` repeated because its response never came (the connection dropped) is a 409
    whether the first one was stored or someone else answered first: the 409 carries the
    answer in effect (value, text, note), so the program can tell the two apart; ``detail``
    stays. A query whose answer was withdrawn has none."""
    make_study("lev", url, answers=1, key="lev1", fast=True)
    c = _client(url)
    q = c.post("/api/studies/lev/ask").json()["id"]
    mine = {"query_id": q, "answer": 0.61, "note": "bench 2"}
    assert c.post("/api/studies/lev/tell", json=mine).status_code == 200
    r = c.post("/api/studies/lev/tell", json=mine)  # the repeat: its own answer stands
    assert r.status_code == 409
    body = r.json()
    assert "already answered" in body["detail"]
    assert body["error"] == "query_answered" and body["query_id"] == q
    stored = body["stored_answer"]
    assert (stored["answer"], stored["answer_text"], stored["note"]) == (0.61, "0.61", "bench 2")
    assert stored["told_at"] == load_study("lev", storage=url).history()[-1]["told_at"]

    # someone else answered the next query first (Python, another server): theirs is returned
    other = load_study("lev", storage=url)
    q2 = other.ask().id
    other.tell(q2, 0.3, note="alice")
    r = c.post("/api/studies/lev/tell", json={"query_id": q2, "answer": 0.61, "note": "bob"})
    assert r.status_code == 409
    stored = r.json()["stored_answer"]
    assert (stored["answer"], stored["note"]) == (0.3, "alice")
    assert r.json()["open_query"] != q2

    # withdrawn: both answers undone (q is open again, q2 gone): no answer stands for q2
    other.undo()
    assert c.post("/api/studies/lev/undo").json()["withdrawn"]["query_id"] == q
    n = load_study("lev", storage=url).n_answered
    r = c.post("/api/studies/lev/tell", json={"query_id": q2, "answer": 0.5})
    body = r.json()
    assert r.status_code == 409 and body["error"] == "query_not_open"
    assert body["stored_answer"] is None and "detail" in body and body["open_query"] == q
    assert load_study("lev", storage=url).n_answered == n  # nothing stored by a 409


def _version(html: str) -> int:
    return int(re.search(r'data-version="(\d+)"', html).group(1))


def _undo_form(html: str) -> str:
    return re.search(r'<form [^>]*id="undo-form".*?</form>', html, re.S).group(0)


def test_the_undo_names_the_answer_and_whose_it_is_and_the_other_page_is_told(url):
    """Bob stores an answer with a note; Alice's page names it in its undo form (query, value,
    time, note) as stored from another browser; Alice withdraws it. Bob's page's next poll, and
    the page it then draws, say that his answer was withdrawn by an undo from another browser,
    when, and that the query is open again; Alice's poll says nothing of it (not hers)."""
    make_study("dose", url, answers=1, key="safe", fast=True)
    alice, ca, bob, cb = _two_pages(url, "dose")
    qid = load_study("dose", storage=url).ask().id
    r = bob.post("/studies/dose/tell", data={"csrf": cb, "query_id": str(qid), "out.f": "50",
                                             "out.g": "0.1", "note": "bob"})  # fmt: skip
    assert r.status_code == 303
    row = load_study("dose", storage=url).history()[-1]
    desc = (
        f'query {qid}: f=50, g=0.1, given {row["told_at"][:19].replace("T", " ")} UTC, note "bob"'
    )
    page_a, page_b = alice.get("/studies/dose").text, bob.get("/studies/dose").text
    assert f'data-last="{desc}"'.replace('"bob"', "&#34;bob&#34;") in _undo_form(page_a)
    assert 'data-last-by="other"' in _undo_form(page_a)
    assert f"last answer: {desc} (stored from another browser)" in _text(page_a)
    assert 'data-last-by="this"' in _undo_form(page_b)
    assert "(stored from this browser)" in _text(page_b)
    seen_a, seen_b = _version(page_a), _version(page_b)
    key = re.search(r'name="last" value="([^"]+)"', page_a).group(1)
    r = alice.post("/studies/dose/undo", data={"csrf": ca, "last": key})
    assert r.status_code == 303
    # Bob's poll: his answer, whose undo, when, what is open now
    told = bob.get(f"/studies/dose/state?since={seen_b}").json()
    assert told["version"] > seen_b and told["open_query"] == qid
    (said,) = told["withdrawn_yours"]
    assert said.startswith(f"Your answer, stored from this browser ({desc}), was withdrawn by an "
                           "undo from another browser at 20")  # fmt: skip
    assert f"UTC: query {qid} is open again" in said
    assert alice.get(f"/studies/dose/state?since={seen_a}").json()["withdrawn_yours"] == []
    assert "withdrawn_yours" not in bob.get("/studies/dose/state").json()  # no page version
    # the page the poll reloads says it once
    shown = bob.get(f"/studies/dose?since={seen_b}").text
    box = re.search(r'<div class="warning" role="alert" id="withdrawn-yours".*?</div>', shown, re.S)
    assert box and said in _text(box.group(0))
    assert 'autofocus' not in re.search(r'<form method="post" action="/studies/dose/tell".*?</form>',
                                        shown, re.S).group(0)  # fmt: skip
    assert 'id="withdrawn-yours"' not in bob.get("/studies/dose").text
    assert 'id="withdrawn-yours"' not in alice.get(f"/studies/dose?since={seen_a}").text


def test_an_undo_made_elsewhere_and_an_answer_given_again_are_said_so(url):
    """Bob's answer withdrawn from Python (no page of this server saw the undo), and its query
    answered again since by someone else: his poll says both, not "open again"."""
    make_study("dose", url, answers=1, key="safe", fast=True)
    _, _, bob, cb = _two_pages(url, "dose")
    qid = load_study("dose", storage=url).ask().id
    r = bob.post("/studies/dose/tell", data={"csrf": cb, "query_id": str(qid), "out.f": "50",
                                             "out.g": "0.1"})  # fmt: skip
    assert r.status_code == 303
    seen = _version(bob.get("/studies/dose").text)
    elsewhere = load_study("dose", storage=url)
    elsewhere.undo()
    elsewhere.tell(qid, {"f": 49.0, "g": 0.12}, note="carol")
    (said,) = bob.get(f"/studies/dose/state?since={seen}").json()["withdrawn_yours"]
    assert "was withdrawn by an undo made elsewhere (not on this server's pages" in said
    assert f"query {qid} was answered again since (query {qid}: f=49, g=0.12, given" in said
    assert 'note "carol"' in said and "open again" not in said


def test_a_poll_says_that_the_study_was_continued(url):
    """A continuation writes nothing to the old study's log (its version stays): the poll says
    it in ``continued_as``, which an open page compares with the one it was drawn with."""
    make_study("dose", url, answers=2, key="safe", fast=True)
    c = _client(url)
    page = c.get("/studies/dose").text
    assert "data-continued='[]'" in page
    before = c.get("/studies/dose/state").json()
    assert before["continued_as"] == []
    from boloop.study import create_study

    create_study("dose-2", from_study="dose", storage=url)
    after = c.get(f"/studies/dose/state?since={before['version']}").json()
    assert after["continued_as"] == ["dose-2"] and after["version"] == before["version"]
    assert "data-continued='[\"dose-2\"]'" in c.get("/studies/dose").text


# -- the measured values by their names (session 18: "f: 51", "g: 0.11" for efficacy, toxicity)
#: session 18's dose study: f and g named, with units
NAMED_DOSE = {
    "monotone": "dose",
    "h": 0.6,
    "measurement": {"f": {"name": "efficacy", "unit": "%"}, "g": {"name": "toxicity", "unit": "AU"}},
    "parameters": [
        {"name": "dose", "low": 0.0, "high": 40.0, "grid": 11, "unit": "mg"},
        {"name": "timing", "low": 0.0, "high": 24.0, "grid": 9, "unit": "h"},
    ],
}


def _named_dose(url):
    from boloop.study import create_study

    study = create_study("dose", "m-safeopt", NAMED_DOSE, storage=url, seed=0)
    study.tell(study.ask(), {"f": 20.0, "g": 0.05})
    return study


def test_a_refused_answer_shows_the_values_by_their_names(url):
    _named_dose(url)
    a, ca, b, cb = _two_pages(url, "dose")
    qid = load_study("dose", storage=url).ask().id
    r = a.post("/studies/dose/tell", data={"csrf": ca, "query_id": str(qid), "out.f": "50",
                                           "out.g": "0.1", "note": "alice"})  # fmt: skip
    assert r.status_code == 303
    r = b.post("/studies/dose/tell", data={"csrf": cb, "query_id": str(qid), "out.f": "51",
                                           "out.g": "0.11", "note": "bob"})  # fmt: skip
    assert r.status_code == 409
    sent = _text(re.search(r'<div class="warning" id="sent">.*?</div>', r.text, re.S).group(0))
    assert "efficacy (f, %): 51" in sent and "toxicity (g, AU): 0.11" in sent
    assert "note: bob" in sent and "g: 0.11" not in sent and "f: 51" not in sent


def test_the_login_page_names_the_values_of_a_study_the_server_holds(url):
    """A browser that is not logged in (another tab logged out): the login page shows what it
    sent by the names the study page uses, the study being loaded in this server already; the
    fields it carries through the login keep their form names."""
    _named_dose(url)
    app = create_app(url, NEW)
    alice = TestClient(app, follow_redirects=False)
    _login(alice, NEW)
    assert alice.get("/studies/dose").status_code == 200  # the server holds the study now
    bob = TestClient(app, follow_redirects=False)
    csrf = _csrf(bob, "/login")
    qid = load_study("dose", storage=url).ask().id
    r = bob.post("/studies/dose/tell", data={"csrf": csrf, "query_id": str(qid), "out.f": "50",
                                             "out.g": "0.1"})  # fmt: skip
    assert r.status_code == 401
    text = _text(r.text)
    assert "efficacy (f, %): 50" in text and "toxicity (g, AU): 0.1" in text
    assert 'name="sent.out.g" value="0.1"' in r.text


def test_the_limit_question_without_javascript_names_the_value(url):
    """The page's own question when a g above the limit reaches the server unconfirmed (no
    JavaScript: the browser's dialog is app.js's) and its box name the value as the page does."""
    _named_dose(url)
    c = _client(url)
    csrf = _csrf(c, "/studies/dose")
    qid = load_study("dose", storage=url).ask().id
    form = {"csrf": csrf, "query_id": str(qid), "out.f": "20", "out.g": "0.9", "note": ""}
    r = c.post("/studies/dose/tell", data=form)
    assert r.status_code == 400
    text = _text(r.text)
    assert "toxicity (g, AU) = 0.9 is above the safety limit h = 0.6." in text
    assert "store toxicity above the limit as measured" in text
    assert 'data-limit-label="toxicity (g, AU)"' in r.text  # what app.js's dialog says
    assert load_study("dose", storage=url).n_answered == 1
