"""A live call on the members' pages, in process, on SQLite and PostgreSQL, with a scripted recognition (the events a
call's recogniser would send; the real one is tests/live_calls/ and test_live_page_browser.py): the list marks the
call live and links to its page; the page has the goal checklist, the speakers and the containers the script fills
from the page's own events route, which a member reads with their session; another account's member gets 404 for
both, a signed-out reader 401. Once the call ends its recording's page is the ordinary one, its results keep the live
transcript (`live`), and its alerts went to the project's webhook as `recording.live_alert`, which it subscribes to.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence

import httpx
import numpy as np
import pytest
from sqlalchemy import select

from callscope.api.app import create_app
from callscope.catalog.tables import WebhookEvent
from callscope.live.calls import LiveCalls
from callscope.live.events import Alert, Event, Final, GoalMet, Partial, Role, Word
from callscope.live.protocol import Start
from callscope.resources import ProjectSpec
from callscope.services import accounts, keys, projects, webhook_settings
from callscope.services.context import Principal
from tests.pages.conftest import BASE, browser_of

OUTSIDER = "olga@example.com"
GREETING = "Thank you for calling Acme"
PROJECT = {"name": "Support", "language": "en", "live": True,
           "goals": [{"id": 1, "name": "greeting", "description": "The agent thanks the caller.",
                      "phrases": ["thank you for calling"], "speaker": "agent"},
                     {"id": 2, "name": "resolution", "description": "The agent solves the customer's problem."}],
           "liveAlerts": [{"name": "Cancellation", "phrases": ["cancel my subscription"]}]}


class Scripted:
    """A recognition that tells a greeting and a cancellation alert once audio comes."""

    def __init__(self) -> None:
        self.told = False

    def warm_up(self) -> None:
        pass

    def feed(self, chunks: Sequence[np.ndarray]) -> list[Event]:
        if self.told:
            return []
        self.told = True
        words = [Word(text=w, start=0.2 + i * 0.3, end=0.4 + i * 0.3, probability=0.9)
                 for i, w in enumerate(GREETING.split())]
        return [Partial(at=0.8, speaker="channel-0", role="agent", start=0.2, stable="Thank you", text="Thank you for"),
                Final(at=1.8, speaker="channel-0", role="agent", start=0.2, end=1.6, text=GREETING, words=words),
                GoalMet(at=1.8, goal_id=1, goal_name="greeting", phrase="thank you for calling", quote=GREETING,
                        start=0.2, speaker="channel-0", role="agent"),
                Alert(at=2.5, kind="phrase", name="Cancellation", start=2.0, phrase="cancel my subscription",
                      quote="I want to cancel my subscription", speaker="channel-1", role="customer")]

    def finish(self) -> list[Event]:
        return []


def writer(account: str) -> Principal:
    return Principal(account=account, key_name="test", key_uid="test", permissions=frozenset({"read", "write"}))


@pytest.fixture
async def world(runtime):
    """A live call of project Support (whose webhook takes live alerts) with its events told; browsers of a member of
    its account and of another account's; an API key. (calls, public_id, member, outsider, key headers)"""
    ctx = runtime.ctx
    project = await projects.create_project(ctx, writer("default"), PROJECT)
    await webhook_settings.set_endpoint(ctx, "default", project.status.id, "https://crm.example.com/hooks",
                                        ["metadata"], live_alerts=True)
    await accounts.add_member(ctx, "default", "ana@example.com", "Ana")
    await accounts.add_member(ctx, "other", OUTSIDER, "Olga")

    def recognition(spec: ProjectSpec, tracks: Sequence[tuple[str, Role]]) -> Scripted:
        assert [g.name for g in spec.goals] == ["greeting", "resolution"]
        return Scripted()

    calls = LiveCalls(ctx, recognition)
    session = await calls.open_generic(writer("default"), Start(
        type="start", project_id=project.status.id, name="Jane's call", encoding="pcm16", sample_rate=16000,
        channels=2))
    for track in (0, 1):
        session.add(track, np.zeros(16000, dtype=np.int16))
    for _ in range(100):
        if len(session.log.events) == 4:
            break
        await asyncio.sleep(0.05)
    _, key = await keys.create_key(ctx, "default", "reader", ["read"], None, None, None)
    member = await browser_of(runtime, "ana@example.com", live_calls=calls)
    outsider = await browser_of(runtime, OUTSIDER, live_calls=calls)
    try:
        yield calls, session, member, outsider, {"Authorization": f"Bearer {key}"}
    finally:
        await member.aclose()
        await outsider.aclose()
        await session.end("stop")


def sse(text: str) -> list[dict]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


async def test_the_list_marks_the_live_call_and_its_page_follows_it(world):
    _, session, member, _, _ = world
    public_id = session.public_id
    listed = (await member.get("/recordings")).text
    live = listed[listed.index('class="live-calls"'):listed.index("</section>", listed.index('class="live-calls"'))]
    assert f'<a href="/recordings/{public_id}">Jane&#39;s call</a>' in live
    assert '<span class="status status-live">Live</span>' in live and "Support" in live
    assert 'class="live-calls"' not in (await member.get("/recordings", params={"status": "completed"})).text

    page = await member.get(f"/recordings/{public_id}")
    assert page.status_code == 200
    html = page.text
    assert 'data-status="live"' in html and f'data-live-url="/recordings/{public_id}/live"' in html
    assert '<h1>Jane&#39;s call</h1>' in html
    assert '<span class="status status-live" id="status-badge">live</span>' in html
    goals = re.findall(r'<li class="card goal (\w+)" data-goal-id="(\d+)"><h3>(\w+)</h3>', html)
    assert goals == [("pending", "1", "greeting"), ("later", "2", "resolution")]
    assert re.findall(r'data-speaker="([\w-]+)" data-index="\d" data-title="(\w+)"', html) == [
        ("channel-0", "Agent"), ("channel-1", "Customer")]
    for container in ('id="live-segments" role="log"', 'id="live-partials"', 'id="live-alerts" role="log"'):
        assert container in html
    assert 'name="viewport" content="width=device-width, initial-scale=1"' in html

    assert [e.type for e in session.log.events] == ["partial", "final", "goal", "alert"]  # what the script reads


async def test_another_accounts_member_and_a_signed_out_reader_get_nothing(world):
    _, session, _, outsider, _ = world
    public_id = session.public_id
    page = await outsider.get(f"/recordings/{public_id}")
    assert page.status_code == 404 and "not in one of your accounts" in page.text
    assert (await outsider.get(f"/recordings/{public_id}/live")).status_code == 404
    assert public_id not in (await outsider.get("/recordings")).text
    async with httpx.AsyncClient(transport=outsider._transport, base_url=BASE) as anonymous:
        assert (await anonymous.get(f"/recordings/{public_id}/live")).status_code == 401
        resp = await anonymous.get(f"/recordings/{public_id}")
        assert resp.status_code == 303 and resp.headers["location"].startswith("/sign-in?next=")


async def test_an_ended_call_is_its_recording_with_the_live_transcript_and_its_alert_webhook(runtime, world):
    calls, session, member, _, reader = world
    public_id = session.public_id
    end = await session.end("stop")
    assert end.stored, end

    events = await member.get(f"/recordings/{public_id}/live")  # the whole call, replayed to a member
    assert events.headers["content-type"].startswith("text/event-stream")
    assert [e["type"] for e in sse(events.text)] == ["partial", "final", "goal", "alert", "end"]
    done = await member.get(f"/recordings/{public_id}/live", headers={"Last-Event-ID": "5"})
    assert done.status_code == 204  # read to its end: an EventSource does not come back

    page = (await member.get(f"/recordings/{public_id}")).text
    assert 'data-status="live"' not in page and 'data-status="pending"' in page  # the ordinary page, analysing
    assert public_id not in (await member.get("/recordings")).text.split('role="status"')[0]  # no longer live

    api = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(runtime.ctx, runtime.usage, runtime.limiter,
                                                                         live_calls=calls)), base_url=BASE)
    async with api:
        results = (await api.get(f"/api/v1/public/recordings/{public_id}/results", headers=reader)).json()["data"]
    [segment] = results["live"]["segments"]
    assert (segment["speaker"], segment["role"], segment["text"]) == ("channel-0", "agent", GREETING)
    assert (segment["start_ms"], segment["end_ms"]) == (200, 1600)
    assert [w["text"] for w in segment["words"]] == GREETING.split() and segment["words"][0]["start_ms"] == 200

    with runtime.ctx.catalog.session() as db:
        sent = db.scalars(select(WebhookEvent).where(WebhookEvent.account == "default")).all()
    [alert] = [e for e in sent if e.event_type == "recording.live_alert"]
    assert (alert.url, alert.recording_id) == ("https://crm.example.com/hooks", None)
    body = json.loads(alert.payload)
    assert body["type"] == "recording.live_alert" and body["data"]["public_id"] == public_id
    assert (body["data"]["alert"]["name"], body["data"]["alert"]["quote"], body["data"]["alert"]["seq"]) == (
        "Cancellation", "I want to cancel my subscription", 4)
