"""Accounts (tenants; a namespace each) and their members."""

from __future__ import annotations

import hashlib
import re

from callscope.errors import NotFound, ValidationFailed
from callscope.resources import Account, AccountSpec, Member, MemberSpec, ObjectMeta
from callscope.resources.kinds import Role
from callscope.services.context import Context
from callscope.services.objects import change_spec

ACCOUNT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def check_account_name(account: str) -> str:
    if not ACCOUNT_NAME.match(account):
        raise ValidationFailed("account must be lowercase letters, digits and '-' (a Kubernetes namespace name)")
    return account


async def ensure_account(ctx: Context, account: str) -> Account:
    """The account object, created on first use (its namespace is the account name)."""
    check_account_name(account)
    existing = ctx.store.cached_get(Account, account, account)
    if existing is not None:
        return existing
    obj = Account(metadata=ObjectMeta(name=account, namespace=account), spec=AccountSpec(display_name=account))
    return await ctx.store.create(obj)


def account_display_name(ctx: Context, account: str) -> str:
    obj = ctx.store.cached_get(Account, account, account)
    return obj.spec.display_name if obj else account


def _member_name(email: str) -> str:
    digest = hashlib.sha256(email.encode()).hexdigest()[:10]
    local = re.sub(r"[^a-z0-9]+", "-", email.split("@")[0].lower()).strip("-")[:40]
    return f"{local or 'member'}-{digest}"


def find_member(ctx: Context, account: str, email: str) -> Member | None:
    wanted = email.strip().lower()
    return next((m for m in ctx.store.cached_list(Member, account) if m.spec.email.lower() == wanted), None)


def has_members(ctx: Context) -> bool:
    """Whether anyone at all is a member (of any account): a fresh install has no one who can sign in yet."""
    return bool(ctx.store.cached_list(Member))


def list_members(ctx: Context, account: str) -> list[Member]:
    return sorted(ctx.store.cached_list(Member, account), key=lambda m: m.spec.email)


async def current_members(ctx: Context, account: str) -> list[Member]:
    """The account's members as the store holds them now, for a rule checked across them: this replica's cache may
    not have seen another replica's change yet."""
    return await ctx.store.backend.list(Member, account)


async def add_member(ctx: Context, account: str, email: str, name: str, role: Role = "member") -> Member:
    await ensure_account(ctx, account)
    email = email.strip().lower()
    if find_member(ctx, account, email):
        raise ValidationFailed(f"{email} is already a member of {account}")
    spec = MemberSpec(email=email, name=name.strip(), role=role)
    return await ctx.store.create(Member(metadata=ObjectMeta(name=_member_name(email), namespace=account), spec=spec))


def existing_member(ctx: Context, account: str, email: str) -> Member:
    member = find_member(ctx, account, email)
    if member is None:
        raise NotFound(f"No member {email} in account {account}")
    return member


async def set_member_locked(ctx: Context, account: str, email: str, locked: bool, *,
                            current: Member | None = None) -> Member:
    member = current or existing_member(ctx, account, email)

    def apply(draft: Member) -> None:
        draft.spec.locked = locked

    return await change_spec(ctx, member, apply)


async def set_member_role(ctx: Context, account: str, email: str, role: Role, *,
                          current: Member | None = None) -> Member:
    member = current or existing_member(ctx, account, email)

    def apply(draft: Member) -> None:
        draft.spec.role = role

    return await change_spec(ctx, member, apply)


async def remove_member(ctx: Context, account: str, email: str, *, current: Member | None = None) -> None:
    member = current or existing_member(ctx, account, email)
    await ctx.store.delete(Member, account, member.name)
