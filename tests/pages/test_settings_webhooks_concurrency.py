"""Settings → Webhooks under forms sent at the same instant, on SQLite and PostgreSQL: two replicas of the service (two
runtimes on one data directory, catalog and store, each with its own cache and in-process locks) take the two forms
of each pair, so only the catalog can keep the rule. Two *Redeliver*s of one failed delivery queue it once (the other
is told it is not failed any more), and two *Rotate secret*s leave the last secret shown current and the one before it
signing beside it for the overlap: no secret shown as new is lost, and no more than one replaced secret signs. Each
pair is sent several times: before the fixes, both redeliveries were accepted on PostgreSQL and a rotation replaced the
secret another had just made without keeping it, on both catalogs."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest
from sqlalchemy import update

from callscope import signing_secrets, webhook_signing
from callscope.catalog import outbox
from callscope.catalog.tables import WebhookEvent
from callscope.resources import Project
from callscope.secret_store import FileSecretStore
from callscope.services import accounts
from tests.pages.conftest import browser_of, csrf_of
from tests.pages.webhook_world import HOOKS_REF, add_event, hooked_project

ADMIN = "ada@example.com"
HOOKS = "/settings/webhooks"
REF = HOOKS_REF
ROUNDS = 8


@pytest.fixture
async def project(runtime) -> Project:
    await accounts.add_member(runtime.ctx, "default", ADMIN, "Ada", "admin")
    return await hooked_project(runtime, "default", "Support")


async def _admin(rt) -> httpx.AsyncClient:
    return await browser_of(rt, ADMIN)


async def test_two_redeliveries_of_one_failed_delivery_at_once_queue_it_once(runtime, replica, project):
    here, there = await _admin(runtime), await _admin(replica)
    event_id = await add_event(runtime, project)
    path = f"{HOOKS}/{project.status.id}/deliveries/{event_id}"
    try:
        tokens = [csrf_of((await http.get(path)).text) for http in (here, there)]
        for round_ in range(ROUNDS):
            def fail_again(session):
                session.execute(update(WebhookEvent).where(WebhookEvent.id == event_id).values(state="failed",
                                                                                                attempts=3))
            await runtime.ctx.catalog.write(fail_again)
            answers = await asyncio.gather(*(http.post(f"{path}/redeliver", data={"csrf": token})
                                             for http, token in zip((here, there), tokens, strict=True)))
            # the first one in queues it; the other finds it pending, no longer failed
            assert sorted(a.status_code for a in answers) == [303, 409], (round_, [a.text[:300] for a in answers])
            [event] = await runtime.ctx.catalog.read(outbox.list_events, "default")
            assert (event.state, event.attempts) == ("pending", 0)
    finally:
        await here.aclose()
        await there.aclose()


def _shown_secret(html: str) -> str:
    return re.search(r'id="new-secret" class="secret" readonly value="([^"]+)"', html).group(1)


async def test_two_rotations_at_once_keep_every_secret_shown(runtime, replica, project):
    here, there = await _admin(runtime), await _admin(replica)
    store, path = FileSecretStore(runtime.ctx.settings.secrets_dir), f"{HOOKS}/{project.status.id}/rotate"
    try:
        tokens = [csrf_of((await http.get(path)).text) for http in (here, there)]
        for round_ in range(ROUNDS):
            start = webhook_signing.new_secret()
            store.write("default", REF.name, REF.key, start)
            store.write("default", REF.name, REF.key + signing_secrets.UNTIL, "2000-01-01T00:00:00+00:00")
            answers = await asyncio.gather(*(http.post(path, data={"csrf": token, "overlap_hours": "24"})
                                             for http, token in zip((here, there), tokens, strict=True)))
            assert [a.status_code for a in answers] == [200, 200], [a.text[:300] for a in answers]
            shown = {_shown_secret(a.text) for a in answers}
            current = await store.read("default", REF.name, REF.key)
            previous = await store.read("default", REF.name, REF.key + signing_secrets.PREVIOUS)
            # one rotation after the other: start -> first shown -> second shown; the second replaced the first,
            # which signs beside it for the overlap, and `start`, replaced twice, signs no more
            assert len(shown) == 2 and {current, previous} == shown, (round_, start in (current, previous))
            signing = await signing_secrets.signing(store, "default", REF, runtime.ctx.clock())
            assert signing == [current, previous]
    finally:
        await here.aclose()
        await there.aclose()
