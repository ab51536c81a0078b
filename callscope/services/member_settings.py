"""An account's members as its admins change them on the Settings pages: invite (add and email a sign-in link),
role, lock, unlock, remove. The changes are those of `callscope members` (callscope/services/accounts.py); the
pages add two rules: the account keeps an unlocked admin (the CLI, which needs no sign-in, can mend it), and only an
unlocked admin changes members. Both span several Member objects, so each change reads, checks and writes them under
the account's members lock in the catalog: two requests at once, on one replica or several, run one after the
other, and the second sees what the first did."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from callscope.catalog import member_sessions
from callscope.errors import Conflict, NotFound
from callscope.resources import Member
from callscope.resources.kinds import Role
from callscope.services import accounts, member_auth
from callscope.services.context import Context

LAST_ADMIN = "The account needs an unlocked admin: make another member admin first."
NO_PAGE = "There is no page here."  # what a non-admin meets on Settings (api/pages/web.require_admin)


async def invite(ctx: Context, account: str, inviter_name: str, email: str, name: str, role: Role) -> Member:
    member = await accounts.add_member(ctx, account, email, name, role)
    await member_auth.invite(ctx, member, inviter_name, accounts.account_display_name(ctx, account))
    return member


async def last_sign_ins(ctx: Context, members: list[Member]) -> dict[str, datetime]:
    """When each member last signed in, by email; one left out never has (invited, not active yet)."""
    return await ctx.catalog.read(member_sessions.last_sign_ins, [m.spec.email.lower() for m in members])


def _is_unlocked_admin(member: Member) -> bool:
    return member.spec.role == "admin" and not member.spec.locked


@asynccontextmanager
async def _change_of(ctx: Context, account: str, actor: str, email: str) -> AsyncIterator[tuple[Member, list[Member]]]:
    """The member `email` and the account's other members, read from the store itself (not this replica's cache)
    while the account's rules lock is held; the caller checks and writes inside the block. NotFound when `actor`
    is no longer an unlocked admin of `account` (demoted or locked by a request that went first) or `email` is no
    member of it (another account's member too)."""
    async with ctx.exclusive(account):
        members = await accounts.current_members(ctx, account)
        by_email = {m.spec.email.lower(): m for m in members}
        acting = by_email.get(actor.strip().lower())
        if acting is None or not _is_unlocked_admin(acting):
            raise NotFound(NO_PAGE)
        changed = by_email.get(email.strip().lower())
        if changed is None:
            raise NotFound(f"No member {email} in account {account}")
        yield changed, [m for m in members if m.name != changed.name]


def _keep_an_admin(others: list[Member], role: Role, locked: bool) -> None:
    """Refuse a change that leaves no unlocked admin once the changed member has `role` and `locked` (a removal:
    locked)."""
    if not any(_is_unlocked_admin(m) for m in others) and (role != "admin" or locked):
        raise Conflict(LAST_ADMIN)


async def set_role(ctx: Context, account: str, actor: str, email: str, role: Role) -> Member:
    async with _change_of(ctx, account, actor, email) as (member, others):
        _keep_an_admin(others, role, member.spec.locked)
        return await accounts.set_member_role(ctx, account, email, role, current=member)


async def set_locked(ctx: Context, account: str, actor: str, email: str, locked: bool) -> Member:
    async with _change_of(ctx, account, actor, email) as (member, others):
        _keep_an_admin(others, member.spec.role, locked)
        return await accounts.set_member_locked(ctx, account, email, locked, current=member)


async def remove(ctx: Context, account: str, actor: str, email: str) -> None:
    async with _change_of(ctx, account, actor, email) as (member, others):
        _keep_an_admin(others, "member", True)
        await accounts.remove_member(ctx, account, email, current=member)
