"""Revoking and regenerating one API key at the same instant, on the Settings pages, on SQLite and PostgreSQL
catalogs: two replicas of the service (two runtimes on one data directory and catalog, each with its own object
cache) and one replica alone take the two forms of each pair, sent together or a moment apart. The key is an object
of the resource store, written with resourceVersion-checked updates; whatever the order, a key the page showed as new
either works, or it was revoked after it was made (never "Copy the key now" for a key that was already revoked), and
a revocation that answered holds."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from callscope.api.app import create_app
from callscope.resources import ApiKey
from callscope.services import accounts, keys
from tests.pages.conftest import BASE, browser_of, csrf_of

ADMIN = "ada@example.com"
KEYS = "/settings/api-keys"
# How long after the first form the second is sent (seconds): at once, then apart enough for the other replica's
# cache to have seen the first write (CALLSCOPE_STORE_POLL_INTERVAL is 0.05 s in these tests).
DELAYS = (0, 0, 0, 0.003, 0.01, 0.03, 0.15)


async def _admin(rt) -> httpx.AsyncClient:
    return await browser_of(rt, ADMIN)


async def _later(delay: float, request):
    if delay:
        await asyncio.sleep(delay)
    return await request


async def _writes(runtime, name: str, since: str, until: str) -> list[ApiKey]:
    """The key's versions the store wrote after `since`, up to `until`, in the order they were written."""
    versions: list[ApiKey] = []
    watch = runtime.ctx.store.backend.watch(ApiKey, "default", since)
    try:
        async with asyncio.timeout(10):
            async for event in watch:
                if event.object.name == name:
                    versions.append(event.object)
                if event.object.metadata.resource_version == until:
                    break
    finally:
        await watch.aclose()
    return versions


async def _works(runtime, replica, key: str) -> bool:
    answers = set()
    for rt in (runtime, replica):
        await rt.ctx.store.sync()
        app = create_app(rt.ctx, rt.usage, rt.limiter)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as api:
            resp = await api.get("/api/v1/public/projects", headers={"Authorization": f"Bearer {key}"})
        assert resp.status_code in (200, 401), resp.text
        answers.add(resp.status_code == 200)
    assert len(answers) == 1, "the replicas disagree about the key"
    return answers.pop()


@pytest.mark.parametrize("where", ["two replicas", "one replica"])
@pytest.mark.parametrize("first", ["regenerate", "revoke"])
async def test_a_regenerated_key_works_or_was_revoked_after_it_was_made(runtime, replica, where, first):
    await accounts.add_member(runtime.ctx, "default", ADMIN, "Ada", "admin")
    await replica.ctx.store.sync()
    here = await _admin(runtime)
    there = await _admin(replica) if where == "two replicas" else here
    try:
        for round_, delay in enumerate(DELAYS):
            name = f"k{round_}"
            made, old_key = await keys.create_key(runtime.ctx, "default", name, ["read"])
            await replica.ctx.store.sync()
            regenerating, revoking = (here, there)
            tokens = [csrf_of((await http.get(f"{KEYS}/{name}")).text) for http in (regenerating, revoking)]
            _, since = await runtime.ctx.store.backend.list_with_version(ApiKey, "default")
            regenerate = regenerating.post(f"{KEYS}/{name}/regenerate", data={"csrf": tokens[0]})
            revoke = revoking.post(f"{KEYS}/{name}/revoke", data={"csrf": tokens[1]})
            if first == "regenerate":
                regenerated, revoked = await asyncio.gather(regenerate, _later(delay, revoke))
            else:
                revoked, regenerated = await asyncio.gather(revoke, _later(delay, regenerate))
            seen = (round_, delay, regenerated.status_code, revoked.status_code)

            # A revocation that answered holds, whatever crossed it: no key of this object works any more.
            assert revoked.status_code == 303, (seen, revoked.text)
            final = await runtime.ctx.store.backend.get(ApiKey, "default", name)
            assert final.spec.revoked is True, seen
            assert not await _works(runtime, replica, old_key), seen

            if regenerated.status_code == 409:  # the revocation came first: nothing shown, nothing written
                assert "is revoked" in regenerated.text and 'id="new-key"' not in regenerated.text, seen
                assert final.status.key_hash == made.status.key_hash, seen
                continue
            assert regenerated.status_code == 200, (seen, regenerated.text)
            new_key = re.search(r'id="new-key" class="secret" readonly value="([^"]+)"', regenerated.text).group(1)
            if await _works(runtime, replica, new_key):
                continue
            # Refused: only because the key was revoked after it was made, i.e. the first version the store wrote
            # revoked already carries the new key's hash.
            writes = await _writes(runtime, name, since, final.metadata.resource_version)
            first_revoked = next(w for w in writes if w.spec.revoked)
            assert first_revoked.status.key_hash == keys.hash_key(new_key), (
                seen, "the page showed a new key for a key that was already revoked")
    finally:
        await here.aclose()
        if there is not here:
            await there.aclose()
