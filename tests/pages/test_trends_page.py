"""The Trends page in process, on SQLite and on PostgreSQL: its charts add up exactly the analysed calls the
member's list shows (another account's never count), each bar links to the list filtered to its calls, the period's
rules (default, order, length, the bucket its length calls for), and the standards every members' page keeps (CSP,
no inline script or style, a GET filter form with labels)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from html import unescape
from urllib.parse import parse_qsl, urlsplit

import pytest

from callscope.api.pages.listing import ListQuery
from callscope.api.pages.trends import count_top
from callscope.errors import ValidationFailed
from callscope.services import operators, projects, trends
from callscope.services.context import Principal
from callscope.services.trends import Bucket, Period, Unit
from tests.catalog.trend_rows import add, fig

GOAL = {"id": 1, "name": "Greeting", "description": "The agent greets the caller."}


def admin(account: str) -> Principal:
    return Principal(account=account, key_name="test", key_uid="test", permissions=frozenset({"read", "write"}))


def june(day: int, hour: int = 12) -> datetime:
    return datetime(2031, 6, day, hour, tzinfo=UTC)


@pytest.fixture
async def world(runtime, member):
    """Project Support (one goal) with operator Olga in the member's account, the same project id's calls in
    another account, and calls of June 2031 in both."""
    ctx = runtime.ctx
    support = await projects.create_project(ctx, admin("default"), {"name": "Support", "language": "en",
                                                                    "goals": [GOAL]})
    olga = await operators.create_operator(ctx, admin("default"), {"name": "Olga"})
    pid, oid = support.status.id, olga.status.id
    add(ctx.catalog, account="default", project_id=pid, operator_id=oid, created_at=june(2, 9),
        found=fig(1.0, 60, 40, "calm", {1: True}), name="Early call")
    add(ctx.catalog, account="default", project_id=pid, operator_id=None, created_at=june(2, 23),
        found=fig(0.5, 30, 70, "angry", {1: False}), name="Late call")
    add(ctx.catalog, account="default", project_id=pid, operator_id=oid, created_at=june(20),
        found=fig(1.0, 50, 50, None, {}), name="Later call")
    add(ctx.catalog, account="default", project_id=pid, status="pending", created_at=june(2), name="Not analysed yet")
    for n in range(5):  # another account, the same ids: never counted
        add(ctx.catalog, account="other", project_id=pid, operator_id=oid, created_at=june(2),
            found=fig(0.0, 1, 1, "sad", {1: False}), name=f"Other account's {n}")
    return pid, oid


def links(html: str) -> dict[str, str]:
    """aria-label -> href of every chart bar."""
    return {unescape(label): unescape(href) for href, label in
            re.findall(r'<a href="([^"]+)" aria-label="([^"]+)"><title>', html)}


def listed(html: str) -> set[str]:
    return {unescape(name) for name in re.findall(r'<a href="/recordings/[0-9a-f-]{36}(?:\?[^"]*)?">([^<]+)</a>', html)}


async def test_a_bar_links_to_exactly_the_calls_it_counts(member, world):
    pid, oid = world
    resp = await member.get("/trends", params={"project_id": pid, "start": "2031-06-01", "end": "2031-07-05"})
    assert resp.status_code == 200
    html = resp.text
    assert "3 calls analysed" in html  # not the call not analysed yet, none of the other account's
    bars = links(html)
    assert bars["Week of 2 Jun 2031: 2 calls analysed"].startswith("/recordings?")
    assert "Week of 2 Jun 2031: 50% met, 1 of 2 calls" in bars
    assert "Week of 2 Jun 2031: 75% of pauses compliant, over 2 calls" in bars
    assert "Week of 2 Jun 2031: 45% of the talk time by agents" in bars
    assert "Week of 2 Jun 2031: calm 1, angry 1" in bars
    assert "Week of 16 Jun 2031: no emotion known" in bars
    page = await member.get(bars["Week of 2 Jun 2031: 2 calls analysed"])
    assert listed(page.text) == {"Early call", "Late call"}
    by_operator = await member.get("/trends", params={"operator_id": oid, "start": "2031-06-01", "end": "2031-07-05"})
    week = links(by_operator.text)["Week of 2 Jun 2031: 1 call analysed"]
    assert listed((await member.get(week)).text) == {"Early call"}


async def test_the_links_are_the_lists_filters_of_the_trend(member, world):
    pid, oid = world
    html = (await member.get("/trends", params={"project_id": pid, "operator_id": oid, "start": "2031-06-01",
                                                "end": "2031-06-09"})).text
    bucket = Bucket(date(2031, 6, 3), date(2031, 6, 3))
    href = links(html)["Tue 3 Jun 2031: 0 calls analysed"]
    query = ListQuery(**dict(parse_qsl(urlsplit(href).query)))
    assert query.filters() == trends.trend_filters(pid, oid, bucket)


async def test_the_page_keeps_the_members_pages_standards(member, world):
    resp = await member.get("/trends")
    assert resp.status_code == 200
    assert "script-src 'self'" in resp.headers["content-security-policy"]
    assert "default-src 'none'" in resp.headers["content-security-policy"]
    assert "<script" not in resp.text and "style=" not in resp.text and "<style" not in resp.text
    assert re.search(r'<form class="filters" method="get"', resp.text)  # a GET filter form: no CSRF token needed
    for field in ("f-project", "f-operator", "f-start", "f-end"):
        assert f'<label for="{field}">' in resp.text


async def test_a_period_the_page_refuses_is_a_422_page(member, world):
    backwards = await member.get("/trends", params={"start": "2031-06-30", "end": "2031-06-01"})
    assert backwards.status_code == 422 and "first day is after its last" in backwards.text
    too_long = await member.get("/trends", params={"start": "2020-01-01", "end": "2031-06-01"})
    assert too_long.status_code == 422 and "at most" in too_long.text
    assert (await member.get("/trends", params={"project_id": "99999999999999999999"})).status_code == 422


async def test_an_operator_of_another_account_counts_nothing(member, world):
    resp = await member.get("/trends", params={"operator_id": 987654, "start": "2031-06-01", "end": "2031-07-05"})
    assert resp.status_code == 200 and "0 calls analysed" in resp.text


def test_the_period_defaults_to_the_last_30_days_and_picks_its_bucket() -> None:
    today = date(2031, 6, 30)
    assert trends.period(None, None, today) == Period(date(2031, 6, 1), today)
    assert trends.period(date(2031, 1, 1), None, today) == Period(date(2031, 1, 1), date(2031, 1, 30))
    with pytest.raises(ValidationFailed):
        trends.period(date(2031, 6, 2), date(2031, 6, 1), today)
    assert trends.unit_for(Period(date(2031, 6, 1), date(2031, 7, 1))) is Unit.DAY  # 31 days
    assert trends.unit_for(Period(date(2031, 6, 1), date(2031, 7, 2))) is Unit.WEEK
    assert trends.unit_for(Period(date(2031, 1, 1), date(2031, 12, 31))) is Unit.MONTH


def test_buckets_cover_the_period_exactly_clipped_at_its_ends() -> None:
    weeks = trends.buckets(Period(date(2031, 6, 4), date(2031, 6, 20)), Unit.WEEK)  # a Wednesday to a Friday
    assert [(b.first, b.last) for b in weeks] == [(date(2031, 6, 4), date(2031, 6, 8)),
                                                  (date(2031, 6, 9), date(2031, 6, 15)),
                                                  (date(2031, 6, 16), date(2031, 6, 20))]
    months = trends.buckets(Period(date(2030, 12, 15), date(2031, 2, 10)), Unit.MONTH)
    assert [(b.first, b.last) for b in months] == [(date(2030, 12, 15), date(2030, 12, 31)),
                                                   (date(2031, 1, 1), date(2031, 1, 31)),
                                                   (date(2031, 2, 1), date(2031, 2, 10))]


@pytest.mark.parametrize("peak, top", [(0, 2), (1, 2), (3, 4), (5, 6), (7, 10), (11, 20), (45, 60), (101, 200)])
def test_a_count_axis_ticks_whole_numbers(peak: int, top: int) -> None:
    assert count_top(peak) == top and (count_top(peak) / 2).is_integer()
