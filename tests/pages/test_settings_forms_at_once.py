"""A concurrency fuzz of the Settings forms that change state (role, lock, unlock, remove, revoke, regenerate,
rotate, redeliver), on SQLite and PostgreSQL: each round sends a random pair of them at the same instant, by two
admins through two replicas (two runtimes on one store and catalog), then checks every rule that spans rows or
objects. Dedicated tests beside it (test_settings_concurrency.py, test_settings_keys_concurrency.py,
test_settings_webhooks_concurrency.py) pin each pair's exact outcome; this one looks for a broken rule across pairs
nobody thought of. The seed is fixed: a failure names its round and can be replayed."""

from __future__ import annotations

import asyncio
import random
import re

import httpx
import pytest
from sqlalchemy import update

from callscope import signing_secrets, webhook_signing
from callscope.catalog import outbox
from callscope.catalog.tables import WebhookEvent
from callscope.resources import ApiKey, Member
from callscope.secret_store import FileSecretStore
from callscope.services import accounts, keys
from tests.pages.conftest import browser_of, csrf_of
from tests.pages.webhook_world import HOOKS_REF, add_event, hooked_project

ADA, BO, CY = "ada@example.com", "bo@example.com", "cy@example.com"
ROUNDS = 40
SEED = 37


def _forms(project_id: int, event_id: int, key: str) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """Each state-changing form of Settings, with the fields it may be sent with."""
    def members(action: str, *variants: dict[str, str]) -> list[tuple[str, dict[str, str]]]:
        return [(f"/settings/members/{action}", {"email": who, **fields}) for who in (ADA, BO, CY)
                for fields in variants]
    return {
        "role": members("role", {"role": "member"}, {"role": "admin"}),
        "lock": members("lock", {}),
        "unlock": members("unlock", {}),
        "remove": members("remove", {"confirmed": "yes"}),
        "revoke": [(f"/settings/api-keys/{key}/revoke", {})],
        "regenerate": [(f"/settings/api-keys/{key}/regenerate", {})],
        "rotate": [(f"/settings/webhooks/{project_id}/rotate", {"overlap_hours": "24"})],
        "redeliver": [(f"/settings/webhooks/{project_id}/deliveries/{event_id}/redeliver", {})],
    }


async def _reset(runtime, event_id: int, key_name: str) -> str:
    """Ada and Bo unlocked admins, Cy a member, a fresh key `key_name`, the event failed, the secret un-rotated; the
    key's secret value."""
    ctx = runtime.ctx
    await ctx.store.sync()
    for address, role in ((ADA, "admin"), (BO, "admin"), (CY, "member")):
        if accounts.find_member(ctx, "default", address) is None:
            await accounts.add_member(ctx, "default", address, address[:2].title(), role)
        else:
            await accounts.set_member_role(ctx, "default", address, role)
            await accounts.set_member_locked(ctx, "default", address, False)
    _, secret = await keys.create_key(ctx, "default", key_name, ["read"])

    def fail_again(session):
        session.execute(update(WebhookEvent).where(WebhookEvent.id == event_id).values(state="failed", attempts=3))
    await ctx.catalog.write(fail_again)
    store = FileSecretStore(ctx.settings.secrets_dir)
    store.write("default", HOOKS_REF.name, HOOKS_REF.key, webhook_signing.new_secret())
    store.write("default", HOOKS_REF.name, HOOKS_REF.key + signing_secrets.UNTIL, "2000-01-01T00:00:00+00:00")
    return secret


def _shown(pattern: str, html: str) -> str | None:
    found = re.search(rf'id="{pattern}" class="secret" readonly value="([^"]+)"', html)
    return found.group(1) if found else None


async def _check(runtime, key_name: str, sent: list[str], answers: list[httpx.Response], event_id: int) -> None:
    ctx = runtime.ctx
    codes = [a.status_code for a in answers]
    assert all(code < 500 for code in codes), [a.text[:300] for a in answers]

    members = await ctx.store.backend.list(Member, "default")
    assert any(m.spec.role == "admin" and not m.spec.locked for m in members), "no unlocked admin left"

    key = await ctx.store.backend.get(ApiKey, "default", key_name)
    pairs = list(zip(sent, answers, strict=True))
    if any(p.endswith("/revoke") and a.status_code == 303 for p, a in pairs):
        assert key.spec.revoked, "a revocation answered but did not hold"
    shown_keys = [_shown("new-key", a.text) for p, a in pairs if p.endswith("/regenerate") and a.status_code == 200]
    if shown_keys and not key.spec.revoked:
        # one after the other: the last regeneration replaced the first, whose key it showed works
        assert [keys.hash_key(k) for k in shown_keys].count(key.status.key_hash) == 1, "no regenerated key works"

    if sent.count(sent[0]) == 2 and sent[0].endswith("/redeliver"):
        assert sorted(codes) == [303, 409], "one failed delivery queued twice"
    [event] = [e for e in await ctx.catalog.read(outbox.list_events, "default") if e.id == event_id]
    redelivered = any(p.endswith("/redeliver") and a.status_code == 303 for p, a in zip(sent, answers, strict=True))
    assert event.state == ("pending" if redelivered else "failed"), event.state

    shown_secrets = [s for p, a in zip(sent, answers, strict=True) if p.endswith("/rotate") and a.status_code == 200
                     if (s := _shown("new-secret", a.text))]
    if shown_secrets:
        store = FileSecretStore(ctx.settings.secrets_dir)
        signing = await signing_secrets.signing(store, "default", HOOKS_REF, ctx.clock())
        assert set(shown_secrets) <= set(signing) and len(signing) <= 2, "a secret shown as new does not sign"


async def test_random_pairs_of_settings_forms_at_once_keep_every_rule(runtime, replica):
    project = await hooked_project(runtime, "default", "Support")
    event_id = await add_event(runtime, project)
    rng = random.Random(SEED)
    for round_ in range(ROUNDS):
        key_name = f"key-{round_}"
        await _reset(runtime, event_id, key_name)
        forms = _forms(project.status.id, event_id, key_name)
        pair = [rng.choice(forms[rng.choice(sorted(forms))]) for _ in range(2)]  # every form as often
        # two admins at two screens, each on a replica of their own, every page open before any form is sent
        browsers = [await browser_of(runtime, ADA), await browser_of(replica, rng.choice((ADA, BO)))]
        try:
            tokens = [csrf_of((await http.get("/settings/members")).text) for http in browsers]
            answers = await asyncio.gather(*(http.post(path, data={"csrf": token, **fields})
                                             for http, token, (path, fields) in zip(browsers, tokens, pair,
                                                                                     strict=True)))
        finally:
            for http in browsers:
                await http.aclose()
        sent = [path for path, _ in pair]
        try:
            await _check(runtime, key_name, sent, answers, event_id)
        except AssertionError as exc:
            pytest.fail(f"round {round_}: {pair} answered {[a.status_code for a in answers]}: {exc}")
