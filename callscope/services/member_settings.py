"""An account's members as its admins change them on the Settings pages: invite (add and email a sign-in link),
role, lock, unlock, remove. The changes are those of `callscope members` (callscope/services/accounts.py); the
pages add one rule, that the account keeps an unlocked admin (the CLI, which needs no sign-in, can mend it)."""

from __future__ import annotations

from callscope.errors import Conflict
from callscope.resources import Member
from callscope.resources.kinds import Role
from callscope.services import accounts, member_auth
from callscope.services.context import Context

LAST_ADMIN = "The account needs an unlocked admin: make another member admin first."


async def invite(ctx: Context, account: str, email: str, name: str, role: Role) -> Member:
    member = await accounts.add_member(ctx, account, email, name, role)
    await member_auth.invite(ctx, member.spec.email)
    return member


def _keep_an_admin(ctx: Context, account: str, email: str, role: Role, locked: bool) -> None:
    """Refuse a change that leaves `account` with no unlocked admin once `email` has `role` and `locked` (a
    removal: locked). NotFound for an address that is no member of `account` (another account's member too)."""
    changed = accounts.existing_member(ctx, account, email)
    others = [m for m in accounts.list_members(ctx, account)
              if m.name != changed.name and m.spec.role == "admin" and not m.spec.locked]
    if not others and (role != "admin" or locked):
        raise Conflict(LAST_ADMIN)


async def set_role(ctx: Context, account: str, email: str, role: Role) -> Member:
    member = accounts.existing_member(ctx, account, email)
    _keep_an_admin(ctx, account, email, role, member.spec.locked)
    return await accounts.set_member_role(ctx, account, email, role)


async def set_locked(ctx: Context, account: str, email: str, locked: bool) -> Member:
    member = accounts.existing_member(ctx, account, email)
    _keep_an_admin(ctx, account, email, member.spec.role, locked)
    return await accounts.set_member_locked(ctx, account, email, locked)


async def remove(ctx: Context, account: str, email: str) -> None:
    _keep_an_admin(ctx, account, email, "member", True)
    await accounts.remove_member(ctx, account, email)
