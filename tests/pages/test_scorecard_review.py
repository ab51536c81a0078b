"""Review on the recording page, in process on SQLite and PostgreSQL: a reviewer (or an admin) sees each form the
call was scored on beside the transcript, with its total, its sections' scores and each answer's evidence (a quote
seeks the player), overrides an answer with a comment through the service of PATCH /recordings/{id}/scorecard (the
total recomputed, the history shown: who, when, from, to, comment) and marks the call reviewed; a member without the
role sees the scores read-only and a forged form is refused (403); another account's recording is 404; bad input says
why beside the form (422), and a form without its token does nothing (400)."""

from __future__ import annotations

import re
from html import unescape

import httpx
import pytest

from callscope.analysis.result import Evidence
from callscope.services import accounts, projects, scorecards
from tests.pages.conftest import admin, browser_of
from tests.pages.test_page_fuzz import FORM as FORM_TYPE
from tests.pages.test_page_fuzz import VALUES
from tests.search.calls import analyse, result

REVIEWER = "rita@example.com"
LINES = [("agent", "Thank you for calling, my name is Ana.", "calm"),
         ("customer", "I was charged twice on my invoice.", "angry")]
FORM = [{"name": "Opening", "weight": 40, "questions": [
            {"id": "greeting", "text": "Did the agent give their name?", "type": "yes_no", "weight": 100,
             "answer": {"source": "goal", "goal_id": 1}}]},
        {"name": "Handling", "weight": 60, "questions": [
            {"id": "billing", "text": "Was billing discussed?", "type": "yes_no", "weight": 100,
             "answer": {"source": "category", "name": "billing"}}]}]


@pytest.fixture
async def reviewer(runtime, member) -> httpx.AsyncClient:
    """Rita, the account's reviewer, signed in (Ana, of the `member` fixture, is a plain member)."""
    await accounts.add_member(runtime.ctx, "default", REVIEWER, "Rita Reviewer", "reviewer")
    http = await browser_of(runtime, REVIEWER)
    yield http
    await http.aclose()


@pytest.fixture
async def scored(runtime, api, call, support) -> tuple[str, int]:
    """A call of Support scored on a form: its greeting (goal 1) met, with a quote at 0:01.5; billing found."""
    form = await scorecards.create_scorecard(runtime.ctx, admin("default"), {"sections": FORM}, "Support QA",
                                             [support])
    await runtime.store.sync()
    public_id = await call(LINES, support, goals={1: True}, categories=("billing",))
    quoted = result(LINES, goals={1: True}, categories=("billing",))
    quoted.goals[0].evidence = [Evidence(dialogue_id=0, start_ms=1500, quote="my name is Ana")]
    await analyse(runtime, public_id, quoted, again=True)
    return public_id, form.status.id


def csrf(page: httpx.Response) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page.text)[1]


def total(page: httpx.Response, form_id: int) -> str:
    return re.search(rf'id="sc-total-{form_id}">([^<]+)<', page.text)[1]


def history(page: httpx.Response) -> list[str]:
    return [re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", "", h))).strip()
            for h in re.findall(r'<ol class="sc-history"[^>]*>(.*?)</ol>', page.text, re.S)]


async def review(http: httpx.AsyncClient, public_id: str, **fields) -> httpx.Response:
    page = await http.get(f"/recordings/{public_id}")
    return await http.post(f"/recordings/{public_id}/scorecard", data={"csrf": csrf(page), **fields})


async def test_a_reviewer_overrides_an_answer_and_marks_the_call_reviewed(reviewer, scored, api, call) -> None:
    public_id, form_id = scored
    page = await reviewer.get(f"/recordings/{public_id}")
    assert f'id="scorecard-{form_id}"' in page.text and "Scorecard: Support QA" in page.text
    assert total(page, form_id) == "100%" and "Did the agent give their name?" in page.text
    assert 'data-seek="1500">“my name is Ana”' in page.text  # the evidence plays its moment
    assert page.text.count("Change this answer") == 2 and "Not reviewed yet" in page.text

    resp = await review(reviewer, public_id, scorecard_id=str(form_id), question_id="greeting", answer="no",
                        comment="No name given.")
    assert resp.status_code == 303 and resp.headers["location"].endswith(f"done=scorecard#scorecard-{form_id}")
    saved = await reviewer.get(resp.headers["location"])
    assert total(saved, form_id) == "60%"  # Opening (40) lost
    assert "automatic: yes" in saved.text
    [entry] = history(saved)
    assert entry.startswith(f"{REVIEWER}, ") and entry.endswith("yes → no No name given.")

    reviewed = await reviewer.get((await review(reviewer, public_id, scorecard_id=str(form_id),
                                                reviewed="yes")).headers["location"])
    assert f"Reviewed by {REVIEWER}" in reviewed.text
    [card] = (await api.get(f"/recordings/{public_id}/scorecard", headers=call.keys["default"])).json()["data"]
    greeting = next(a for a in card["answers"] if a["question_id"] == "greeting")
    assert (card["score"], card["reviewed_by"]) == (60.0, REVIEWER)
    assert (greeting["answer"], greeting["overridden"], greeting["history"][0]["comment"]) == ("no", True,
                                                                                              "No name given.")


async def test_a_member_without_the_role_sees_the_scores_read_only(member, scored, api, call) -> None:
    public_id, form_id = scored
    page = await member.get(f"/recordings/{public_id}")
    assert total(page, form_id) == "100%" and "Did the agent give their name?" in page.text
    assert "Change this answer" not in page.text and "Mark reviewed" not in page.text
    forged = await review(member, public_id, scorecard_id=str(form_id), question_id="greeting", answer="no")
    assert forged.status_code == 403 and "Only the account&#39;s reviewers and admins may review calls" in forged.text
    [card] = (await api.get(f"/recordings/{public_id}/scorecard", headers=call.keys["default"])).json()["data"]
    assert card["score"] == 100.0 and not any(a["overridden"] for a in card["answers"])


async def test_another_accounts_recording_is_not_found(runtime, reviewer, call) -> None:
    other = await projects.create_project(runtime.ctx, admin("other"), {"name": "Theirs", "language": "en"})
    theirs = await call(LINES, other.status.id, account="other")
    own = await reviewer.get("/recordings")
    assert (await reviewer.get(f"/recordings/{theirs}")).status_code == 404
    resp = await reviewer.post(f"/recordings/{theirs}/scorecard", data={
        "csrf": csrf(own), "scorecard_id": "1", "question_id": "greeting", "answer": "no"})
    assert resp.status_code == 404 and "<html" in resp.text


@pytest.mark.parametrize(("fields", "why"), [
    ({"question_id": "greeting", "answer": "maybe"}, "answers.0.answer must be yes, no or n/a"),
    ({"question_id": "nosuch", "answer": "no"}, "names no question of the form (nosuch)"),
    ({}, "Choose an answer to change, or mark the call reviewed"),
    ({"question_id": "x" * 64, "answer": "no"}, "question_id"),
])
async def test_bad_input_says_why_beside_the_form(reviewer, scored, fields, why) -> None:
    public_id, form_id = scored
    resp = await review(reviewer, public_id, scorecard_id=str(form_id), **fields)
    assert resp.status_code == 422, resp.text
    assert why in unescape(re.search(r'id="action-problem" tabindex="-1">([^<]+)<', resp.text)[1])
    assert total(resp, form_id) == "100%"


async def test_an_unknown_form_or_a_missing_token_changes_nothing(reviewer, scored) -> None:
    public_id, form_id = scored
    unknown = await review(reviewer, public_id, scorecard_id="999999", reviewed="yes")
    assert unknown.status_code == 422 and "names no scorecard of this recording" in unknown.text
    forged = await reviewer.post(f"/recordings/{public_id}/scorecard", data={
        "csrf": "forged", "scorecard_id": str(form_id), "reviewed": "yes"})
    assert forged.status_code == 400 and "This form has expired" in forged.text
    assert "Not reviewed yet" in (await reviewer.get(f"/recordings/{public_id}")).text


async def test_no_field_of_the_review_form_answers_5xx(reviewer, scored) -> None:
    """Each field of the form given each of the pages' fuzz values (tests/pages/test_page_fuzz.py): a redirect, or
    a 4xx error page, never a 5xx."""
    public_id, form_id = scored
    token = csrf(await reviewer.get(f"/recordings/{public_id}"))
    valid = {"scorecard_id": str(form_id), "question_id": "greeting", "answer": "no", "comment": "c",
             "reviewed": "yes", "back": ""}
    failures = []
    for name in valid:
        for value in VALUES:
            body = "&".join(f"{k}={value if k == name else v}" for k, v in {"csrf": token, **valid}.items())
            resp = await reviewer.post(f"/recordings/{public_id}/scorecard", content=body.encode(),
                                       headers={"Content-Type": FORM_TYPE})
            if resp.status_code >= 500 or (resp.status_code >= 400 and "<html" not in resp.text):
                failures.append(f"{name}={value[:40]}: {resp.status_code}")
    assert failures == []
