"""API keys: a fixed prefix plus 32 random alphanumerics, stored only as a SHA-256 hash."""

from __future__ import annotations

import hashlib
import re
import secrets
import string
from datetime import datetime

from callscope.errors import Conflict, NotFound, Unauthorized, ValidationFailed
from callscope.resources import ApiKey, ApiKeySpec, ApiKeyStatus, ObjectMeta, Project
from callscope.services import scope
from callscope.services.accounts import ensure_account
from callscope.services.context import Context, Principal
from callscope.services.indexes import KEY_HASH
from callscope.store.interface import ObjectNotFound, StaleResourceVersion

KEY_ALPHABET = string.ascii_letters + string.digits
KEY_RANDOM_LENGTH = 32
KEY_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")

MISSING = "Unauthorized"
MALFORMED = "Invalid API key"
INVALID = "Invalid or expired API key"
WRITE_ATTEMPTS = 5  # optimistic-concurrency retries of a revocation or regeneration racing another change


def generate_key(prefix: str) -> str:
    return prefix + "".join(secrets.choice(KEY_ALPHABET) for _ in range(KEY_RANDOM_LENGTH))


def hash_key(key: str) -> str:
    # Keys carry 190 bits of randomness, so a fast hash is as safe as a slow one and keeps auth cheap.
    return hashlib.sha256(key.encode()).hexdigest()


def key_status(key: str, now: datetime) -> ApiKeyStatus:
    return ApiKeyStatus(key_hash=hash_key(key), key_hint=f"{key[:len(key) - KEY_RANDOM_LENGTH + 4]}…{key[-4:]}",
                        rotated_at=now, updated_at=now)


def well_formed(prefix: str, token: str) -> bool:
    body = token[len(prefix):]
    return token.startswith(prefix) and len(body) == KEY_RANDOM_LENGTH and all(c in KEY_ALPHABET for c in body)


async def create_key(ctx: Context, account: str, name: str, permissions: list[str], project_id: int | None = None,
                     expires_at: datetime | None = None,
                     rate_limit_per_minute: int | None = None) -> tuple[ApiKey, str]:
    """The new key object and the key itself (shown once: only its hash is kept)."""
    await ensure_account(ctx, account)
    if not KEY_NAME.match(name):
        raise ValidationFailed("key name must be lowercase letters, digits and '-' (up to 63 characters)")
    project = None
    if project_id is not None:
        project = scope.by_id(ctx, Project, account, project_id)
        if project is None:
            raise NotFound("Project not found")
    spec = ApiKeySpec(permissions=sorted(set(permissions)), project=project.name if project else None,
                      expires_at=expires_at, rate_limit_per_minute=rate_limit_per_minute)
    created = await ctx.store.create(ApiKey(metadata=ObjectMeta(name=name, namespace=account), spec=spec))
    key = generate_key(ctx.settings.api_key_prefix)
    status = key_status(key, ctx.clock())
    for _ in range(5):
        draft = created.model_copy(deep=True)
        draft.status = status
        try:
            return await ctx.store.update_status(draft), key
        except StaleResourceVersion:
            # A running server's reconciler saw the new key before its hash was written and gave it
            # key material of its own (as for an applied ApiKey): the key we print must be the one stored.
            await ctx.store.sync()
            created = await ctx.store.get(ApiKey, account, name)
    raise StaleResourceVersion(ApiKey.KIND, name)


def key_state(key: ApiKey, now: datetime) -> str:
    """revoked, expired or active: what `authenticate` makes of the key (a revoked key that expired is revoked)."""
    if key.spec.revoked:
        return "revoked"
    return "expired" if key.spec.expires_at is not None and key.spec.expires_at <= now else "active"


def get_key(ctx: Context, account: str, name: str) -> ApiKey:
    key = ctx.store.cached_get(ApiKey, account, name)
    if key is None:
        raise NotFound(f"No API key {name!r} in account {account}")
    return key


def list_keys(ctx: Context, account: str) -> list[ApiKey]:
    return sorted(ctx.store.cached_list(ApiKey, account), key=lambda k: k.name)


async def _current(ctx: Context, account: str, name: str) -> ApiKey:
    """The key as the store holds it now: the cache can lag behind a write of another replica or of the CLI."""
    try:
        return await ctx.store.backend.get(ApiKey, account, name)
    except ObjectNotFound:
        raise NotFound(f"No API key {name!r} in account {account}") from None


async def revoke_key(ctx: Context, account: str, name: str) -> ApiKey:
    """Revoke the key: invalid at once, whatever its key material. A write that loses the race against another change
    of the key (a regeneration at the same instant) reads the key again and revokes that, so a revocation that
    answers is never undone by a regeneration it crossed."""
    key = get_key(ctx, account, name)
    for _ in range(WRITE_ATTEMPTS):
        if key.spec.revoked:
            current = await _current(ctx, account, name)  # revoked in the cache: make sure it still is
            if current.spec.revoked:
                return current
            key = current
        draft = key.model_copy(deep=True)
        draft.spec.revoked = True
        try:
            return await ctx.store.update(draft)
        except StaleResourceVersion:
            key = await _current(ctx, account, name)
    raise StaleResourceVersion(ApiKey.KIND, name)


def regeneration_refused(ctx: Context, key: ApiKey) -> str | None:
    """Why new key material for `key` would be refused the moment it is used (what `authenticate` refuses), said for
    people; None when a regenerated key works."""
    state = key_state(key, ctx.clock())
    if state == "revoked":
        return f"API key {key.name!r} is revoked: a revoked key cannot be regenerated; create a new key instead"
    if state == "expired":
        return (f"API key {key.name!r} expired on {key.spec.expires_at:%Y-%m-%d %H:%M} UTC: regenerating does not "
                "renew it; create a new key instead")
    if key.spec.project is not None and scope.project_id_of(ctx, key.namespace, key.spec.project) is None:
        return (f"API key {key.name!r} is bound to project {key.spec.project!r}, which no longer exists; create a "
                "new key instead")
    return None


async def regenerate_key(ctx: Context, account: str, name: str) -> tuple[ApiKey, str]:
    """A new key for the same object: the old key stops matching the moment the new hash is written. Conflict for a
    key that could not be used (revoked, expired, its project gone): the new key would be refused at once.

    The new hash is written only over the version of the key that was checked (a resourceVersion-checked status
    write): a revocation at the same instant makes the write fail, and the key read again is refused as revoked, so
    a key shown as new was never revoked before it was made."""
    key_obj = get_key(ctx, account, name)
    for _ in range(WRITE_ATTEMPTS):
        problem = regeneration_refused(ctx, key_obj)
        if problem is not None:
            raise Conflict(problem)
        key = generate_key(ctx.settings.api_key_prefix)
        draft = key_obj.model_copy(deep=True)
        draft.status = key_status(key, ctx.clock())
        try:
            return await ctx.store.update_status(draft), key
        except StaleResourceVersion:
            key_obj = await _current(ctx, account, name)
    raise StaleResourceVersion(ApiKey.KIND, name)


async def authenticate(ctx: Context, header: str | None) -> Principal:
    """The spec's 401s: no header `Unauthorized`; not a Bearer key of our format `Invalid API key`;
    unknown, revoked or expired `Invalid or expired API key`."""
    if not header:
        raise Unauthorized(MISSING)
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not well_formed(ctx.settings.api_key_prefix, token):
        raise Unauthorized(MALFORMED)
    digest = hash_key(token)
    principal = _principal(ctx, digest)
    if principal is None:
        # Made or renewed a moment ago by another process (the CLI)? Catch up once before refusing. Every key
        # refused here, unknown or revoked, expired, unbound, takes this same path: the time of the answer must
        # not tell whether a key exists.
        await ctx.store.sync()
        principal = _principal(ctx, digest)
    if principal is None:
        raise Unauthorized(INVALID)
    return principal


def _principal(ctx: Context, digest: str) -> Principal | None:
    """Who the key of hash `digest` is, from the cache; None when it is unknown or no longer valid."""
    matches = ctx.store.by_index(ApiKey, KEY_HASH, digest)
    if len(matches) != 1:
        return None
    key = matches[0]
    if key.spec.revoked or (key.spec.expires_at is not None and key.spec.expires_at <= ctx.clock()):
        return None
    project_id = scope.project_id_of(ctx, key.namespace, key.spec.project)
    if key.spec.project is not None and project_id is None:  # bound project is gone
        return None
    return Principal(
        account=key.namespace, key_name=key.name, key_uid=key.metadata.uid or key.name,
        permissions=frozenset(key.spec.permissions), project=key.spec.project, project_id=project_id,
        rate_limit_per_minute=key.spec.rate_limit_per_minute, expires_at=key.spec.expires_at,
    )
