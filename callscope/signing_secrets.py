"""A project's webhook signing secrets in its Secret (``spec.webhook.signingSecretRef``): the current one under the
ref's key and, for an overlap window after a rotation, the one it replaced, so that receivers can switch secrets
without losing a delivery (Standard Webhooks: a `webhook-signature` may carry several signatures).

Layout, the same for a file-backed Secret (embedded) and a Kubernetes Secret (written with kubectl there):
``<key>`` the current secret, ``<key>.previous`` the one rotated out, ``<key>.previous-until`` when it stops signing
(ISO 8601, UTC).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from callscope import webhook_signing
from callscope.resources.kinds import SecretKeyRef
from callscope.secret_store import SecretStore

PREVIOUS = ".previous"
UNTIL = ".previous-until"


class SecretMissing(Exception):
    """The ref names a Secret (or key) that does not exist."""


async def previous_until(store: SecretStore, account: str, ref: SecretKeyRef) -> datetime | None:
    """When the rotated-out secret stops signing; None without one (an unreadable date counts as none)."""
    value = await store.read(account, ref.name, ref.key + UNTIL)
    try:
        until = datetime.fromisoformat(value) if value else None
    except ValueError:
        return None
    return until if until is not None and until.tzinfo is not None else None


async def signing(store: SecretStore, account: str, ref: SecretKeyRef, now: datetime) -> list[str]:
    """The secrets a delivery is signed with now: the current one, then the previous while its window lasts."""
    current = await store.read(account, ref.name, ref.key)
    if current is None:
        raise SecretMissing(f"signing secret {ref.name}/{ref.key} not found in {account}")
    until = await previous_until(store, account, ref)
    previous = await store.read(account, ref.name, ref.key + PREVIOUS) if until and now < until else None
    return [current] + ([previous] if previous and previous != current else [])


async def rotate(store: SecretStore, account: str, ref: SecretKeyRef, overlap: timedelta, now: datetime) -> str:
    """A new current secret; the old one (if any) keeps signing for `overlap`. The old one is saved before the new
    one replaces it, so a failure part-way never loses the secret receivers verify with."""
    new = webhook_signing.new_secret()
    old = await store.read(account, ref.name, ref.key)
    if old is not None:  # a window of 0 ends at once, and ends any earlier rotation's too
        await store.put(account, ref.name, ref.key + PREVIOUS, old)
        await store.put(account, ref.name, ref.key + UNTIL, (now + overlap).isoformat())
    await store.put(account, ref.name, ref.key, new)
    return new
