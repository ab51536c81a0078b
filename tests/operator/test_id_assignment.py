"""An object gets one id, however many reconcilers number it at once: `callscope apply` reconciles what it applied
while a running server reconciles the same change (two processes, one catalog and store)."""

from __future__ import annotations

import asyncio

from operator_support import ACCOUNT
from sqlalchemy import select

from callscope.catalog.tables import IdClaim, IdSequence
from callscope.operator.handlers import reconcile
from callscope.resources import ObjectMeta, Project, ProjectSpec
from callscope.resources.meta import ID_LABEL
from callscope.store.interface import StaleResourceVersion


async def test_reconcilers_that_meet_on_a_new_object_give_it_one_id(ctx) -> None:
    applied = await ctx.store.create(Project(metadata=ObjectMeta(name="support", namespace=ACCOUNT),
                                             spec=ProjectSpec(name="Customer support", language="en")))
    done = await asyncio.gather(*(reconcile(ctx, applied) for _ in range(3)), return_exceptions=True)
    assert all(r is None or isinstance(r, (Project, StaleResourceVersion)) for r in done), done
    stored = await ctx.store.latest(Project, ACCOUNT, "support")
    assert (stored.status.id, stored.metadata.labels[ID_LABEL]) == (1, "1")  # the README's project_id=1
    allocated = ctx.catalog.query(lambda s: s.execute(select(IdSequence.last_value)).scalar_one())
    claims = ctx.catalog.query(lambda s: s.execute(select(IdClaim.id, IdClaim.name)).all())
    assert allocated == 1 and [tuple(c) for c in claims] == [(1, "support")]
