"""Refused API keys are alike: an unknown key and a known but revoked, expired or unbound one take the same path
(one catch-up of the cache, the same store reads), so the time of a 401 does not tell whether a key exists."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from callscope.services import keys as key_service


@pytest.fixture
def store_work(runtime, monkeypatch) -> Counter:
    """Counts the cache's catch-ups and, on the SQLite store, the polls of its file."""
    counts: Counter = Counter()
    store = runtime.store

    def counted(name, fn):
        async def wrapper(*args, **kwargs):
            counts[name] += 1
            return await fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(store, "sync", counted("sync", store.sync))
    if hasattr(store.backend, "poll_now"):
        monkeypatch.setattr(store.backend, "poll_now", counted("poll", store.backend.poll_now))
    return counts


async def refused_keys(client, runtime, make_key, create_project) -> dict[str, dict[str, str]]:
    _, revoked = await key_service.create_key(runtime.ctx, "default", "revoked", ["read"])
    await key_service.revoke_key(runtime.ctx, "default", "revoked")
    project = await create_project("Gone")
    unbound = await make_key("read", project_id=project["id"])
    admin = await make_key()
    assert (await client.delete(f"/projects/{project['id']}", headers=admin)).status_code == 204
    unknown = key_service.generate_key(runtime.ctx.settings.api_key_prefix)
    return {
        "unknown": {"Authorization": f"Bearer {unknown}"},
        "revoked": {"Authorization": f"Bearer {revoked}"},
        "expired": await make_key("read", expires_at=datetime.now(UTC) - timedelta(seconds=1)),
        "unbound": unbound,
    }


async def test_unknown_and_known_but_invalid_keys_do_the_same_store_work(client, runtime, make_key, create_project,
                                                                         store_work):
    refused = await refused_keys(client, runtime, make_key, create_project)
    work = {}
    for kind, headers in refused.items():
        store_work.clear()
        resp = await client.get("/projects", headers=headers)
        assert resp.status_code == 401 and resp.json() == {"error": "Invalid or expired API key"}, kind
        work[kind] = dict(store_work)
    assert work["unknown"]["sync"] == 1
    assert all(done == work["unknown"] for done in work.values()), work


async def test_a_valid_key_needs_no_catch_up(client, make_key, store_work):
    headers = await make_key("read")
    assert (await client.get("/projects", headers=headers)).status_code == 200
    assert store_work["sync"] == 0
