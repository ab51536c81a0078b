"""The team's scorecard figures on Trends, on SQLite and PostgreSQL (callscope/services/trends.py
`scorecard_figures`, read from their daily sums): per form the average score per agent, per section and per
question over the period (and the form's average per day, week or month), each linked to its calls on the list, and
per question the share of reviewed answers no reviewer changed; calls outside the period and another account's
calls count nothing."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from html import unescape

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from callscope.analysis.stages.scorecard import AnswerOverride
from callscope.api.scorecard_reviews import Review, review_as
from callscope.catalog import trend_sums
from callscope.catalog.tables import Recording
from callscope.services import operators, projects, scorecards, trends
from tests.pages.conftest import admin
from tests.pages.test_scorecard_review import FORM, LINES

JUNE = trends.Period(date(2031, 6, 1), date(2031, 6, 30))


def june(day: int) -> datetime:
    return datetime(2031, 6, day, 12, tzinfo=UTC)


async def backdate(ctx, public_id: str, day: datetime, operator: int | None) -> None:
    """The call as if added that day by that agent (None: none identified), its part of the trends' sums with it."""
    def write(session: Session) -> None:
        rid = session.scalar(select(Recording.id).where(Recording.public_id == public_id))
        with trend_sums.regrouping(session, [rid]):
            session.execute(update(Recording).where(Recording.id == rid).values(operator_id=operator, created_at=day))
    await ctx.catalog.write(write)


@pytest.fixture
async def team(runtime, call, support) -> dict:
    """Support's form; Olga's calls score 100 (then 60: a reviewer changed its greeting to no, and marked it
    reviewed) and 60, Ivan's 100 (billing n/a: not evaluated; marked reviewed, nothing changed); one of Olga's in
    May, and a call of another account scored on its own form, count nothing."""
    ctx = runtime.ctx
    form = await scorecards.create_scorecard(ctx, admin("default"), {"sections": FORM}, "Support QA", [support])
    olga = (await operators.create_operator(ctx, admin("default"), {"name": "Olga"})).status.id
    ivan = (await operators.create_operator(ctx, admin("default"), {"name": "Ivan"})).status.id
    await runtime.store.sync()

    async def scored(operator: int, day: datetime, greeting: bool, billing: bool) -> str:
        public_id = await call(LINES, support, goals={1: greeting}, categories=("billing",) if billing else ())
        await backdate(ctx, public_id, day, operator)
        return public_id

    first = await scored(olga, june(2), True, True)
    await scored(olga, june(3), False, True)
    third = await scored(ivan, june(4), True, False)
    await scored(olga, datetime(2031, 5, 20, tzinfo=UTC), False, False)
    fid = form.status.id
    await review_as(ctx, admin("default"), first, Review(fid, [AnswerOverride(question_id="greeting", answer="no",
                                                                              comment="No name.")], True))
    await review_as(ctx, admin("default"), third, Review(fid, [], True))

    theirs = await projects.create_project(ctx, admin("other"), {
        "name": "Theirs", "language": "en", "goals": [{"id": 1, "name": "Greeting", "description": "Greets."}],
        "categories": [{"name": "billing"}]})
    await scorecards.create_scorecard(ctx, admin("other"), {"sections": FORM}, "Their QA", [theirs.status.id])
    await runtime.store.sync()
    await backdate(ctx, await call(LINES, theirs.status.id, account="other", goals={1: False}), june(2), None)
    return {"form": fid, "olga": olga, "ivan": ivan}


async def test_the_figures_per_agent_section_and_question(runtime, team) -> None:
    [figures] = await trends.scorecard_figures(runtime.ctx, admin("default"), None, None, JUNE)
    assert (figures.scorecard_id, figures.name) == (team["form"], "Support QA")
    assert [(a.name, a.calls, round(a.average)) for a in figures.agents] == [("Ivan", 1, 100), ("Olga", 2, 60)]
    assert [(s.name, s.calls, round(s.average)) for s in figures.sections] == [("Opening", 3, 33),
                                                                               ("Handling", 2, 100)]
    greeting, billing = figures.questions
    assert (greeting.question_id, greeting.section, round(greeting.average)) == ("greeting", "Opening", 33)
    assert (greeting.reviewed, greeting.changed, greeting.agreement) == (2, 1, 0.5)
    assert (billing.reviewed, billing.changed, billing.agreement) == (2, 0, 1.0)

    per_day = {p.bucket.first.day: (p.calls, p.average) for p in figures.points if p.calls}
    assert per_day == {2: (1, 60.0), 3: (1, 60.0), 4: (1, 100.0)}  # over time: the period's days

    [olga_only] = await trends.scorecard_figures(runtime.ctx, admin("default"), None, team["olga"], JUNE)
    assert [(a.name, a.calls) for a in olga_only.agents] == [("Olga", 2)]
    may = trends.Period(date(2031, 5, 1), date(2031, 5, 31))
    [in_may] = await trends.scorecard_figures(runtime.ctx, admin("default"), None, None, may)
    assert [(a.name, a.calls, a.average) for a in in_may.agents] == [("Olga", 1, 0.0)]


async def test_another_account_sees_only_its_own(runtime, team) -> None:
    [theirs] = await trends.scorecard_figures(runtime.ctx, admin("other"), None, None, JUNE)
    assert theirs.name == "Their QA" and [(a.name, a.calls) for a in theirs.agents] == [("No agent identified", 1)]
    assert all(q.reviewed == 0 and q.agreement is None for q in theirs.questions)


async def test_the_page_shows_them_linked_to_the_calls(member, team, support) -> None:
    page = await member.get("/trends", params={"start": "2031-06-01", "end": "2031-06-30"})
    assert page.status_code == 200
    section = re.search(rf'<section class="sc-figures" id="sc-form-{team["form"]}".*?</section>', page.text, re.S)[0]
    agents = dict(re.findall(r'<th scope="row">(\w+)</th><td>[^<]*</td><td><a href="([^"]+)">', section))
    assert unescape(agents["Olga"]) == (f"/recordings?project_id={support}&operator_id={team['olga']}"
                                        "&added_from=2031-06-01&added_to=2031-06-30&analysed=True")
    bar = re.search(r'<a href="([^"]+)" aria-label="Mon 2 Jun 2031: 60% on average, over 1 call scored">', section)
    assert unescape(bar[1]) == (f"/recordings?project_id={support}&added_from=2031-06-02&added_to=2031-06-02"
                                "&analysed=True")
    greeting = re.search(rf'<tr id="sc-q-{team["form"]}-greeting">(.*?)</tr>', section)[1]
    assert "Did the agent give their name?" in greeting and "<td>50% <span" in greeting and "1 changed" in greeting
    assert "Their QA" not in page.text
