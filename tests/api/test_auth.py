"""The spec's Authentication section, rule by rule."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from callscope.catalog.usage import read_usage
from callscope.config import Settings
from callscope.errors import Conflict
from callscope.resources import ApiKey
from callscope.runtime import Runtime
from callscope.services import keys as key_service


async def test_missing_header_is_401_unauthorized(client):
    resp = await client.get("/projects")
    assert resp.status_code == 401
    assert resp.json() == {"error": "Unauthorized"}


@pytest.mark.parametrize("header", [
    "Token cs_live_" + "a" * 32,          # not Bearer
    "Bearer",                             # no key
    "Bearer sk_live_" + "a" * 32,         # wrong prefix
    "Bearer cs_live_" + "a" * 31,         # too short
    "Bearer cs_live_" + "a" * 31 + "-",   # not alphanumeric
])
async def test_malformed_key_is_401_invalid_api_key(client, header):
    resp = await client.get("/projects", headers={"Authorization": header})
    assert resp.status_code == 401
    assert resp.json() == {"error": "Invalid API key"}


async def test_unknown_key_is_401_invalid_or_expired(client):
    resp = await client.get("/projects", headers={"Authorization": "Bearer cs_live_" + "A1" * 16})
    assert resp.status_code == 401
    assert resp.json() == {"error": "Invalid or expired API key"}


async def test_key_format_is_prefix_plus_32_alphanumerics(runtime):
    _, key = await key_service.create_key(runtime.ctx, "default", "fmt", ["read"])
    assert key.startswith("cs_live_")
    body = key[len("cs_live_"):]
    assert len(body) == 32 and body.isalnum()


async def test_only_the_hash_of_a_key_is_stored(runtime, settings):
    _, key = await key_service.create_key(runtime.ctx, "default", "hashed", ["read"])
    stored = json.dumps((await runtime.backend.get(ApiKey, "default", "hashed")).to_dict())
    assert key not in stored and key_service.hash_key(key) in stored
    raw = b"".join(p.read_bytes() for p in settings.data_dir.rglob("*") if p.is_file())  # WAL files included
    assert key.encode() not in raw


async def test_revoked_key_is_401_at_once(client, runtime, make_key):
    headers = await make_key("read")
    assert (await client.get("/projects", headers=headers)).status_code == 200
    name = next(k.name for k in key_service.list_keys(runtime.ctx, "default"))
    await key_service.revoke_key(runtime.ctx, "default", name)
    resp = await client.get("/projects", headers=headers)
    assert resp.status_code == 401
    assert resp.json() == {"error": "Invalid or expired API key"}


async def test_expired_key_is_401(client, make_key):
    headers = await make_key("read", expires_at=datetime.now(UTC) - timedelta(seconds=1))
    resp = await client.get("/projects", headers=headers)
    assert resp.status_code == 401
    assert resp.json() == {"error": "Invalid or expired API key"}


async def test_key_valid_until_its_expiry(client, make_key):
    headers = await make_key("read", expires_at=datetime.now(UTC) + timedelta(hours=1))
    assert (await client.get("/projects", headers=headers)).status_code == 200


async def test_regenerate_invalidates_old_key_and_new_one_works(client, runtime):
    _, old = await key_service.create_key(runtime.ctx, "default", "rotate", ["read"])
    _, new = await key_service.regenerate_key(runtime.ctx, "default", "rotate")
    assert (await client.get("/projects", headers={"Authorization": f"Bearer {old}"})).status_code == 401
    assert (await client.get("/projects", headers={"Authorization": f"Bearer {new}"})).status_code == 200


@pytest.mark.parametrize(("permissions", "method", "path", "message"), [
    ("write,delete", "GET", "/projects", "Read permission required"),
    ("read,delete", "POST", "/projects", "Write permission required"),
    ("read,write", "DELETE", "/projects/1", "Delete permission required"),
    ("read,delete", "POST", "/tags", "Write permission required"),
    ("read,delete", "DELETE", "/tags/1", "Write permission required"),
    ("read,delete", "DELETE", "/operators/1/remove_project", "Write permission required"),
    ("read,delete", "DELETE", "/virtual_numbers/1/remove_operator", "Write permission required"),
    ("write,delete", "GET", "/virtual_numbers", "Forbidden"),
    ("write,delete", "GET", "/app/settings", "Read permission required"),
])
async def test_missing_permission_is_403_with_the_spec_message(client, make_key, permissions, method, path, message):
    resp = await client.request(method, path, headers=await make_key(permissions), json={})
    assert resp.status_code == 403
    assert resp.json() == {"error": message}


async def test_accounts_are_isolated(client, make_key, create_project):
    project = await create_project("Acme only")
    other = await make_key(account="globex")
    assert (await client.get(f"/projects/{project['id']}", headers=other)).status_code == 404
    assert (await client.get("/projects", headers=other)).json() == {"data": []}


async def test_key_made_by_another_process_works_without_restart(client, settings):
    """The CLI writes keys from its own process; the running server must accept them at once."""
    other = Runtime(settings)
    await other.start(background=False)
    try:
        _, key = await key_service.create_key(other.ctx, "default", "from-cli", ["read"])
    finally:
        await other.stop()
    resp = await client.get("/projects", headers={"Authorization": f"Bearer {key}"})
    assert resp.status_code == 200


async def test_usage_is_tracked_per_key_and_endpoint(client, runtime, make_key):
    headers = await make_key("read")
    for _ in range(3):
        assert (await client.get("/projects", headers=headers)).status_code == 200
    assert (await client.get("/projects/999", headers=headers)).status_code == 404
    await runtime.usage.flush()
    key = key_service.list_keys(runtime.ctx, "default")[0]
    usage = runtime.catalog.query(read_usage, [key.metadata.uid])[key.metadata.uid]
    assert usage.total_requests == 4
    assert usage.requests_by_endpoint == {"GET /api/v1/public/projects": 3, "GET /api/v1/public/projects/{id:int}": 1}
    assert usage.error_rate == pytest.approx(0.25)
    assert usage.last_used_at is not None


async def test_requests_write_nothing_to_the_catalog_before_a_flush(client, runtime, make_key):
    headers = await make_key("read")
    calls = []
    original = runtime.catalog.run

    async def counting(fn, *args, **kwargs):
        calls.append(fn)
        return await original(fn, *args, **kwargs)

    runtime.catalog.run = counting
    for _ in range(5):
        await client.get("/projects", headers=headers)
    assert calls == []


def test_purchase_is_paused_by_default():
    assert Settings().virtual_number_purchase_paused is True


async def test_a_key_revoked_by_another_replica_is_not_regenerated_on_each_store(runtime):
    """Another replica (or the CLI) revoked the key, straight in the store; this one's cache may not have seen it yet.
    The regeneration writes only over the version it checked (resourceVersion), so it is refused as revoked, never
    answered with a key that is refused at once; nothing is written."""
    ctx = runtime.ctx
    made, _ = await key_service.create_key(ctx, "default", "ci", ["read"])
    revoked = (await ctx.store.backend.get(ApiKey, "default", "ci")).model_copy(deep=True)
    revoked.spec.revoked = True
    await ctx.store.backend.update(revoked)
    with pytest.raises(Conflict, match="is revoked: a revoked key cannot be regenerated"):
        await key_service.regenerate_key(ctx, "default", "ci")
    stored = await ctx.store.backend.get(ApiKey, "default", "ci")
    assert stored.spec.revoked and stored.status.key_hash == made.status.key_hash


async def test_a_revocation_crossing_a_regeneration_by_another_replica_revokes_the_new_key_on_each_store(client,
                                                                                                        runtime):
    """Another replica regenerated the key a moment ago: the revocation, written over a version that is no longer the
    stored one, reads the key again and revokes it as regenerated (before, it failed with "changed by someone else"
    and the new key kept working)."""
    ctx = runtime.ctx
    await key_service.create_key(ctx, "default", "ci", ["read"])
    new = key_service.generate_key(ctx.settings.api_key_prefix)
    regenerated = (await ctx.store.backend.get(ApiKey, "default", "ci")).model_copy(deep=True)
    regenerated.status = key_service.key_status(new, ctx.clock())
    await ctx.store.backend.update_status(regenerated)
    await key_service.revoke_key(ctx, "default", "ci")
    stored = await ctx.store.backend.get(ApiKey, "default", "ci")
    assert stored.spec.revoked and stored.status.key_hash == key_service.hash_key(new)
    await ctx.store.sync()
    assert (await client.get("/projects", headers={"Authorization": f"Bearer {new}"})).status_code == 401
