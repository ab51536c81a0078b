"""The account's API keys as its Settings pages show and change them. The keys are the ApiKey objects the CLI and
YAML make, through the same rules (callscope/services/keys.py); this adds what only the dashboard needs: each key
with its project and usage, and leaving alone the keys a GitOps tool owns, so the dashboard never fights a sync."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from callscope.catalog.usage import HourlyUsage, KeyUsage, read_hourly, read_usage
from callscope.errors import Conflict
from callscope.kube import FIELD_MANAGER
from callscope.resources import ApiKey, Resource
from callscope.services import keys, scope
from callscope.services.context import Context

MANAGED_BY = "app.kubernetes.io/managed-by"
USAGE_HOURS = 48  # the span of a key's usage over time


@dataclass(frozen=True)
class KeyRow:
    key: ApiKey
    state: str  # active, revoked or expired
    project_id: int | None
    project_name: str | None  # the project's display name
    usage: KeyUsage
    managed_by: str | None  # why the dashboard leaves the key alone; None when it may change it


def managed_elsewhere(key: Resource) -> str | None:
    """Who else owns the object (a key, a project), said for people; None when only this service writes it."""
    label = key.metadata.labels.get(MANAGED_BY)
    if label is not None and label != FIELD_MANAGER:
        return f"Managed by {label} (label {MANAGED_BY}): change it where it is defined."
    # Status writes (the reconciler's, a controller's) do not own the key's spec; only the others count.
    others = sorted({f.manager for f in key.metadata.managed_fields
                     if f.manager and f.manager != FIELD_MANAGER and f.subresource != "status"})
    if others:
        return f"Managed by {', '.join(others)} (field manager): change it where it is defined."
    return None


async def list_rows(ctx: Context, account: str) -> list[KeyRow]:
    found = keys.list_keys(ctx, account)
    usage = await ctx.catalog.read(read_usage, [k.metadata.uid for k in found if k.metadata.uid])
    return [_row(ctx, k, usage.get(k.metadata.uid or "", KeyUsage())) for k in found]


async def get_row(ctx: Context, account: str, name: str) -> KeyRow:
    """One key of the account; NotFound for any other account's, as for one that does not exist."""
    key = keys.get_key(ctx, account, name)
    usage = await ctx.catalog.read(read_usage, [key.metadata.uid] if key.metadata.uid else [])
    return _row(ctx, key, usage.get(key.metadata.uid or "", KeyUsage()))


async def usage_by_hour(ctx: Context, row: KeyRow) -> list[HourlyUsage]:
    """The key's hours with requests among the last USAGE_HOURS, oldest first."""
    since = ctx.clock().replace(minute=0, second=0, microsecond=0) - timedelta(hours=USAGE_HOURS - 1)
    return await ctx.catalog.read(read_hourly, row.key.metadata.uid or "", since) if row.key.metadata.uid else []


def project_name(ctx: Context, key: ApiKey) -> str | None:
    project = scope.project_named(ctx, key.namespace, key.spec.project)
    return project.spec.name if project else key.spec.project


def _row(ctx: Context, key: ApiKey, usage: KeyUsage) -> KeyRow:
    return KeyRow(key, keys.key_state(key, ctx.clock()), scope.project_id_of(ctx, key.namespace, key.spec.project),
                  project_name(ctx, key), usage, managed_elsewhere(key))


def _editable(ctx: Context, account: str, name: str) -> None:
    reason = managed_elsewhere(keys.get_key(ctx, account, name))
    if reason is not None:
        raise Conflict(reason)


async def revoke(ctx: Context, account: str, name: str) -> ApiKey:
    _editable(ctx, account, name)
    return await keys.revoke_key(ctx, account, name)


async def regenerate(ctx: Context, account: str, name: str) -> tuple[ApiKey, str]:
    _editable(ctx, account, name)
    return await keys.regenerate_key(ctx, account, name)
