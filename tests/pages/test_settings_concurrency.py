"""The members' rules under requests sent at the same instant, on SQLite and PostgreSQL: two replicas of the service
(two runtimes on one catalog and one store, each with its own cache and its own in-process locks) take the two
requests of each pair, so only the catalog's lock can keep the rule. Each pair is sent several times: before the
members lock, two admins demoting each other left no admin in every run on SQLite."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from callscope.resources import Member
from callscope.services import accounts
from tests.pages.conftest import browser_of, csrf_of

ADA, BO = "ada@example.com", "bo@example.com"
ROUNDS = 6
# the change that takes an admin's powers away, as each form sends it
DEMOTIONS = {"role": {"role": "member"}, "lock": {}, "remove": {"confirmed": "yes"}}


async def _reset(runtime) -> None:
    """Ada and Bo unlocked admins of `default`, and nobody else."""
    ctx = runtime.ctx
    await ctx.store.sync()
    for address in (ADA, BO):
        member = accounts.find_member(ctx, "default", address)
        if member is None:
            await accounts.add_member(ctx, "default", address, address[:3].title(), "admin")
        else:
            await accounts.set_member_role(ctx, "default", address, "admin")
            await accounts.set_member_locked(ctx, "default", address, False)


async def _unlocked_admins(runtime) -> list[str]:
    members = await runtime.ctx.store.backend.list(Member, "default")
    return sorted(m.spec.email for m in members if m.spec.role == "admin" and not m.spec.locked)


async def _at_once(pairs: list[tuple[httpx.AsyncClient, str, str]]) -> list[httpx.Response]:
    """Each (client, action, member) form sent at the same instant; every page is open before any form is sent, as
    with two people at two screens."""
    tokens = [csrf_of((await http.get("/settings/members")).text) for http, _, _ in pairs]
    return await asyncio.gather(*(
        http.post(f"/settings/members/{action}", data={"csrf": token, "email": email, **DEMOTIONS[action]})
        for (http, action, email), token in zip(pairs, tokens, strict=True)))


@pytest.mark.parametrize("action", list(DEMOTIONS))
async def test_two_admins_demoting_each_other_at_once_leave_one_admin(runtime, replica, action):
    for round_ in range(ROUNDS):
        await _reset(runtime)
        ada, bo = await browser_of(runtime, ADA), await browser_of(replica, BO)
        try:
            answers = await _at_once([(ada, action, BO), (bo, action, ADA)])
        finally:
            await ada.aclose()
            await bo.aclose()
        admins = await _unlocked_admins(runtime)
        assert len(admins) == 1, (round_, [a.status_code for a in answers], admins)
        # the first one in wins (the members' page, saying what was done); the other was no admin any more when its
        # turn came (404), or, removed, no member at all: sent to sign in (303)
        assert sorted(a.status_code for a in answers) in ([200, 404], [200, 303]), [a.text for a in answers]


@pytest.mark.parametrize("action", list(DEMOTIONS))
async def test_one_admin_demoting_the_other_and_themselves_at_once_stays_one_admin(runtime, replica, action):
    for round_ in range(ROUNDS):
        await _reset(runtime)
        here, there = await browser_of(runtime, ADA), await browser_of(replica, ADA)  # one person, two tabs
        try:
            answers = await _at_once([(here, action, BO), (there, action, ADA)])
        finally:
            await here.aclose()
            await there.aclose()
        admins = await _unlocked_admins(runtime)
        assert len(admins) == 1, (round_, [a.status_code for a in answers], admins)
        assert sorted(a.status_code for a in answers) in ([200, 404], [200, 409]), [a.text for a in answers]
