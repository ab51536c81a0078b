"""The account's uniqueness rules with two replicas of the service (two runtimes on one catalog and one store, each
with its own cache and in-process locks) taking requests at the same instant: a phone number stays one operator's,
a virtual number is bought once, a tag name is one tag. Before the catalog's lock (Context.exclusive) each replica
checked only its own cache, and both requests of a pair succeeded."""

from __future__ import annotations

import asyncio

import pytest

from callscope.errors import ValidationFailed
from callscope.services import numbers, operators, projects, tags
from callscope.services.context import Principal
from tests.api.conftest import catalog_on_both

ROUNDS = 4


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_settings(request) -> dict:
    return catalog_on_both(request)


@pytest.fixture
def settings_overrides() -> dict:
    return {"virtual_number_purchase_paused": False}


@pytest.fixture
async def replica(settings, runtime):
    from callscope.runtime import Runtime

    other = Runtime(settings)
    await other.start(background=False)
    yield other
    await other.stop()


def _principal(account: str = "default") -> Principal:
    return Principal(account=account, key_name="test", key_uid="test", permissions=frozenset({"read", "write"}))


async def test_one_phone_number_makes_one_operator(runtime, replica):
    for round_ in range(ROUNDS):
        phone = f"+1415555{2670 + round_:04d}"
        outcomes = await asyncio.gather(
            *(operators.create_operator(rt.ctx, _principal(), {"name": f"Op {i}", "phone_number": phone})
              for i, rt in enumerate((runtime, replica))), return_exceptions=True)
        refused = [o for o in outcomes if isinstance(o, ValidationFailed)]
        assert len(refused) == 1 and operators.PHONE_TAKEN in str(refused[0].errors), outcomes


async def test_one_tag_name_makes_one_tag(runtime, replica):
    project = await projects.create_project(runtime.ctx, _principal(), {"name": "Support", "language": "en"})
    await replica.ctx.store.sync()
    for round_ in range(ROUNDS):
        made = await asyncio.gather(*(tags.create_tag(rt.ctx, _principal(), f"vip-{round_}", project.status.id)
                                      for rt in (runtime, replica)))
        assert made[0][0].status.id == made[1][0].status.id and sorted(c for _, c in made) == [False, True], made


async def test_one_called_number_is_bought_by_one_account(runtime, replica):
    candidates = await numbers.search_available(runtime.ctx, "US", "mobile")
    for candidate in candidates[:ROUNDS]:
        outcomes = await asyncio.gather(
            *(numbers.purchase_number(rt.ctx, _principal(account), {"phone_number": candidate.phone_number})
              for rt, account in ((runtime, "default"), (replica, "other"))), return_exceptions=True)
        refused = [o for o in outcomes if isinstance(o, ValidationFailed)]
        assert len(refused) == 1 and operators.PHONE_TAKEN in str(refused[0].errors), outcomes
