"""The Trends page's tracker charts, in process, on SQLite and PostgreSQL: a chart per tracker of the projects shown,
each bar the share of the project's analysed calls of its days that matched the tracker (another account's never
count), linking to the search page of the tracker's query over exactly those days, which finds the calls' moments."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select

from callscope.catalog import search
from callscope.catalog.tables import Analysis, Recording
from callscope.search.entries import call_entries
from callscope.services import operators, projects, trackers
from callscope.services.context import Principal
from tests.catalog.trend_rows import add, fig
from tests.search.calls import segments

REFUND = {"name": "Refund", "query": "refund", "mode": "keyword"}


def admin(account: str) -> Principal:
    return Principal(account=account, key_name="test", key_uid="test", permissions=frozenset({"read", "write"}))


def june(day: int, hour: int = 12) -> datetime:
    return datetime(2031, 6, day, hour, tzinfo=UTC)


def analysed(runtime, account: str, project_id: int, created_at: datetime, said: str, name: str,
             operator_id: int | None = None) -> None:
    """A call added on `created_at` whose analysis stored `said` (its search entries as the worker writes them)."""
    ctx = runtime.ctx
    public_id = add(ctx.catalog, account=account, project_id=project_id, operator_id=operator_id,
                    created_at=created_at, found=fig(1.0, 50, 50, None, {}), name=name)
    transcript = {"segments": [s.model_dump() for s in segments([("customer", said)])]}
    with ctx.catalog.session() as session:
        rid = session.scalar(select(Recording.id).where(Recording.public_id == public_id))
        session.add(Analysis(recording_id=rid, version=1, transcript_key=f"t-{rid}", results="{}",
                             language="en", completed_at=created_at))
        search.index(session, rid, call_entries({}, transcript, "en"), None)


def links(html: str) -> dict[str, str]:
    """aria-label -> href of every chart bar."""
    return {unescape(label): unescape(href) for href, label in
            re.findall(r'<a href="([^"]+)" aria-label="([^"]+)"><title>', html)}


@pytest.fixture
async def world(runtime, member):
    """Project Support with a Refund tracker: two calls in the week of 2 June 2031 (one about a refund, Olga's), one
    in the week of 16 June (about a refund); another account's project, with the same tracker, full of refunds.
    (project id, Olga's operator id)"""
    ctx = runtime.ctx
    support = await projects.create_project(ctx, admin("default"), {"name": "Support", "language": "en",
                                                                    "trackers": [REFUND]})
    olga = await operators.create_operator(ctx, admin("default"), {"name": "Olga"})
    pid = support.status.id
    analysed(runtime, "default", pid, june(2, 9), "I want a refund today", "Early call", operator_id=olga.status.id)
    analysed(runtime, "default", pid, june(3), "Where is my parcel", "Parcel call")
    analysed(runtime, "default", pid, june(20), "Refunds take five days", "Later call")
    theirs = await projects.create_project(ctx, admin("other"), {"name": "Theirs", "language": "en",
                                                                 "trackers": [REFUND]})
    for n in range(4):
        analysed(runtime, "other", theirs.status.id, june(2), "A refund, now", f"Other account's {n}")
    await trackers.match_projects(ctx)  # the calls were stored as a migrated catalog holds them: the pass matches
    return pid, olga.status.id


async def test_a_tracker_chart_shows_the_share_of_calls_that_matched(member, world):
    pid, _ = world
    html = (await member.get("/trends", params={"project_id": pid, "start": "2031-06-01",
                                                "end": "2031-07-05"})).text
    assert "Tracker: Refund (Support)" in html
    bars = links(html)
    assert "Week of 2 Jun 2031: 50% matched, 1 of 2 calls" in bars  # not the other account's four
    assert "Week of 16 Jun 2031: 100% matched, 1 of 1 call" in bars
    assert "Week of 23 Jun 2031: no call to measure" in " ".join(bars)
    every = links((await member.get("/trends", params={"start": "2031-06-01", "end": "2031-07-05"})).text)
    assert "Week of 2 Jun 2031: 50% matched, 1 of 2 calls" in every  # all projects: the project's own calls


async def test_a_bar_opens_the_search_of_its_moments(member, world):
    pid, oid = world
    html = (await member.get("/trends", params={"project_id": pid, "start": "2031-06-01",
                                                "end": "2031-07-05"})).text
    href = links(html)["Week of 2 Jun 2031: 50% matched, 1 of 2 calls"]
    assert urlsplit(href).path == "/search"
    assert parse_qs(urlsplit(href).query) == {"q": ["refund"], "mode": ["keyword"], "project_id": [str(pid)],
                                              "created_from": ["2031-06-02"], "created_to": ["2031-06-08"]}
    page = await member.get(href)
    assert page.status_code == 200
    assert "Early call" in page.text and "Later call" not in page.text and "Other account" not in page.text
    by_operator = links((await member.get("/trends", params={"project_id": pid, "operator_id": oid,
                                                             "start": "2031-06-01", "end": "2031-07-05"})).text)
    href = by_operator["Week of 2 Jun 2031: 100% matched, 1 of 1 call"]
    assert parse_qs(urlsplit(href).query)["operator_id"] == [str(oid)]


async def test_a_project_without_trackers_has_no_tracker_chart(runtime, member):
    await projects.create_project(runtime.ctx, admin("default"), {"name": "Plain", "language": "en"})
    assert "Tracker:" not in (await member.get("/trends")).text
