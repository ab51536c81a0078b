"""Writing configuration objects the way every service needs: create with an id, change with retries."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from callscope.catalog.ids import Owner, allocate_id, claim
from callscope.resources.meta import ID_LABEL, ObjectMeta, Resource
from callscope.services.context import Context
from callscope.services.naming import object_name, unique_suffix
from callscope.store.interface import StaleResourceVersion

R = TypeVar("R", bound=Resource)
MAX_ATTEMPTS = 5


async def create_with_id(ctx: Context, cls: type[R], account: str, display_name: str, spec, status=None,
                         labels: dict[str, str] | None = None, unique: tuple[str, ...] | None = None) -> R:
    """Allocate the integer id, create the object and record the id in its status.

    The id also goes into the `callscope.io/id` label at creation and is claimed for this object's
    name first, so a reconciler that sees the object before its status is written adopts that id
    instead of allocating another (it adopts no label without such a claim). With `unique`
    (the values that must be unique in the account) the name derives from them, and a concurrent
    creator in any API process gets AlreadyExists from the store.
    """
    object_id = await ctx.catalog.write(allocate_id, cls.KIND)
    now = ctx.clock()
    # a unique name depends on the unique values only (the last one reads best), never on the id
    name = (object_name(unique[-1], unique_suffix(*unique), cls.KIND.lower()) if unique
            else object_name(display_name, object_id, cls.KIND.lower()))
    await ctx.catalog.write(claim, cls.KIND, object_id, Owner(account, name))
    obj = cls(
        metadata=ObjectMeta(
            name=name,
            namespace=account,
            labels={**(labels or {}), ID_LABEL: str(object_id)},
        ),
        spec=spec,
    )
    created = await ctx.store.create(obj)
    new_status = (status or cls.model_fields["status"].default_factory()).model_copy(
        update={"id": object_id, "updated_at": now, "observed_generation": created.metadata.generation}
    )
    return await _write_status(ctx, created, new_status)


async def _write_status(ctx: Context, obj: R, status) -> R:
    for _ in range(MAX_ATTEMPTS):
        draft = obj.model_copy(deep=True)
        draft.status = status
        try:
            return await ctx.store.update_status(draft)
        except StaleResourceVersion:
            await ctx.store.sync()
            obj = await ctx.store.get(type(obj), obj.namespace, obj.name)
    raise StaleResourceVersion(obj.KIND, obj.name)


async def change_spec(ctx: Context, obj: R, change: Callable[[R], None]) -> R:
    """Apply `change` to a copy of the object and write it, re-reading and re-applying on a lost race.

    A change that leaves the spec as it was writes nothing (idempotent operations stay free).
    """
    for _ in range(MAX_ATTEMPTS):
        draft = obj.model_copy(deep=True)
        change(draft)
        if draft.spec == obj.spec and draft.metadata.labels == obj.metadata.labels:
            return obj
        try:
            updated = await ctx.store.update(draft)
        except StaleResourceVersion:
            await ctx.store.sync()
            obj = await ctx.store.get(type(obj), obj.namespace, obj.name)
            continue
        status = updated.status.model_copy(
            update={"updated_at": ctx.clock(), "observed_generation": updated.metadata.generation}
        )
        return await _write_status(ctx, updated, status)
    raise StaleResourceVersion(obj.KIND, obj.name)
