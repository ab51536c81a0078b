"""Reconcile handlers: idempotent functions of an object's spec and the world around it.

They fill in what objects applied as YAML (kubectl, `callscope apply`) lack and what REST-created
objects already carry: the integer id (status and the `callscope.io/id` label), tag colours, key
material for ApiKeys, the account-wide uniqueness rules as a Conflict condition, observedGeneration
and a Ready condition. They write status (and the id label), never spec: applied YAML does not drift.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable

import structlog

from callscope.catalog.ids import Owner, allocate_id, claim, claim_of, transfer_claim
from callscope.resources import ApiKey, Condition, Operator, Project, Resource, Tag, VirtualNumber
from callscope.resources.meta import ID_LABEL
from callscope.secret_store import SecretStore
from callscope.services.context import Context
from callscope.services.indexes import OPERATOR_EXTERNAL_ID, PHONE, TAG_NAME, holders
from callscope.services.keys import generate_key, key_status
from callscope.services.tags import next_color, project_tags

log = structlog.get_logger()

ID_KINDS = (Project, Operator, VirtualNumber, Tag)
_ID_LABEL_VALUE = re.compile(r"^[0-9]{1,18}$")
API_KEY_SECRET_KEY = "api-key"

KeyWriter = Callable[[ApiKey, str], None | Awaitable[None]]


def api_key_secret(api_key_name: str) -> str:
    """The Secret that gets the key of an ApiKey applied without key material (under API_KEY_SECRET_KEY)."""
    return f"{api_key_name}-key"


def key_writer(secrets: SecretStore) -> KeyWriter:
    """`reconcile`'s write_key in both modes: the key into the ApiKey's Secret, which in a cluster the ApiKey owns
    (it goes with it); embedded, the file of that Secret."""
    async def write(obj: ApiKey, key: str) -> None:
        name = api_key_secret(obj.name)
        await secrets.put(obj.namespace, name, API_KEY_SECRET_KEY, key, owner=obj)
        log.info("api_key_written", account=obj.namespace, apikey=obj.name, secret=name)
    return write


def conflicts(ctx: Context, obj: Resource) -> list[str]:
    """Account-wide uniqueness rules the REST API enforces at write time, checked for YAML-made objects.
    The object created first keeps the value; a later one is the one in conflict."""
    ns = obj.namespace

    def taken(kind, index: str, value: tuple) -> bool:
        mine = (obj.metadata.creation_timestamp, obj.name)
        return any((h.metadata.creation_timestamp, h.name) < mine for h in holders(ctx.store, kind, index, value, obj.name))

    found: list[str] = []
    if isinstance(obj, Operator):
        if obj.spec.external_id and taken(Operator, OPERATOR_EXTERNAL_ID, (ns, obj.spec.external_id)):
            found.append(f"externalId {obj.spec.external_id!r} is used by another operator")
        if obj.spec.phone_number and taken(Operator, PHONE, (ns, obj.spec.phone_number)):
            found.append(f"phoneNumber {obj.spec.phone_number} is used by another operator")
    elif isinstance(obj, VirtualNumber):
        if taken(VirtualNumber, PHONE, (ns, obj.spec.phone_number)):
            found.append(f"phoneNumber {obj.spec.phone_number} is used by another virtual number")
    elif isinstance(obj, Tag):
        if taken(Tag, TAG_NAME, (ns, obj.spec.project, obj.spec.name.casefold())):
            found.append(f"tag {obj.spec.name!r} already exists in project {obj.spec.project}")
    return found


def _condition(conditions: list[Condition], new: Condition, now) -> list[Condition]:
    kept = [c for c in conditions if c.type != new.type]
    old = next((c for c in conditions if c.type == new.type), None)
    if old is not None and (old.status, old.reason, old.message) == (new.status, new.reason, new.message):
        return conditions
    return [*kept, new.model_copy(update={"last_transition_time": now})]


async def reconcile(ctx: Context, obj: Resource, write_key: KeyWriter | None = None) -> Resource:
    """Bring one object's status (and id label) in line with its spec; a no-op when it already is."""
    now = ctx.clock()
    if isinstance(obj, ID_KINDS):
        obj = await _assign_id(ctx, obj) if obj.status.id is None else await _keep_unique_id(ctx, obj)
    status = obj.status.model_copy(deep=True)
    if isinstance(obj, Tag) and not status.color:
        status.color = next_color([t for t in project_tags(ctx, obj.namespace, obj.spec.project) if t.name != obj.name])
    key = None
    if isinstance(obj, ApiKey) and not status.key_hash:
        key = generate_key(ctx.settings.api_key_prefix)
        status = key_status(key, now)
    if status.observed_generation != obj.metadata.generation:
        status.observed_generation = obj.metadata.generation
        status.updated_at = now if status.updated_at is None or obj.metadata.generation != 1 else status.updated_at
    problems = conflicts(ctx, obj)
    conflict = Condition(type="Conflict", status="True" if problems else "False",
                         reason="NotUnique" if problems else "Unique", message="; ".join(problems))
    ready = Condition(type="Ready", status="False" if problems else "True",
                      reason="Conflict" if problems else "Reconciled", message="; ".join(problems))
    status.conditions = _condition(_condition(status.conditions, conflict, now), ready, now)
    if status == obj.status:
        return obj
    if key is not None and write_key is not None:
        written = write_key(obj, key)  # before the hash is stored, so a key that works is never lost
        if inspect.isawaitable(written):  # key_writer's is: a Secret store writes asynchronously
            await written
    draft = obj.model_copy(deep=True)
    draft.status = status
    updated = await ctx.store.update_status(draft)
    if problems:
        log.warning("reconcile_conflict", kind=obj.KIND, account=obj.namespace, name=obj.name, problems=problems)
    return updated


async def _assign_id(ctx: Context, obj: Resource) -> Resource:
    """Adopt the id that the allocator handed to this very object (a REST create writes it into the label
    before the status), or allocate one. An id label the allocator did not write for this object (copied,
    or typed into YAML) is never trusted: it is overwritten, and a condition says so."""
    owner = Owner(obj.namespace, obj.name)
    label = obj.metadata.labels.get(ID_LABEL, "")
    claimed = False
    if _ID_LABEL_VALUE.match(label) and await ctx.catalog.read(claim_of, obj.KIND, int(label)) == owner:
        holder = ctx.store.get_by_id(type(obj), obj.namespace, int(label))
        claimed = holder is None or holder.name == obj.name
    object_id = int(label) if claimed else await _new_id(ctx, obj)
    note = None if claimed or not label else f"the {ID_LABEL} label {label!r} was not assigned by Callscope: id {object_id} assigned"
    return await _write_id(ctx, obj, object_id, note)


async def _keep_unique_id(ctx: Context, obj: Resource) -> Resource:
    """An id is one object's in all accounts. Objects that got their id before claims existed claim it
    now; where two carry the same id (a label adopted by an older version), the older object keeps it
    and the younger gets a new one. A no-op for an object whose claim is its own."""
    owner = Owner(obj.namespace, obj.name)
    on_record = await ctx.catalog.write(claim, obj.KIND, obj.status.id, owner)
    if on_record == owner:
        label = obj.metadata.labels.get(ID_LABEL)
        if label == str(obj.status.id):
            return obj
        return await _write_id(ctx, obj, obj.status.id, f"the {ID_LABEL} label {label!r} does not name this object's "
                                                         f"id {obj.status.id}: label restored")
    holder = ctx.store.cached_get(type(obj), *on_record)
    if holder is not None and holder.status.id == obj.status.id and _age(holder) <= _age(obj):
        note = f"id {obj.status.id} belongs to {on_record.account}/{on_record.name}: id reassigned"
        return await _write_id(ctx, obj, await _new_id(ctx, obj), note)
    await ctx.catalog.write(transfer_claim, obj.KIND, obj.status.id, owner)
    if holder is not None and holder.status.id == obj.status.id:  # the younger holder moves
        await _keep_unique_id(ctx, holder)
    return obj


def _age(obj: Resource) -> tuple:
    created = obj.metadata.creation_timestamp
    return (created.timestamp() if created else float("inf"), obj.namespace, obj.name)


async def _new_id(ctx: Context, obj: Resource) -> int:
    object_id = await ctx.catalog.write(allocate_id, obj.KIND)
    await ctx.catalog.write(claim, obj.KIND, object_id, Owner(obj.namespace, obj.name))
    return object_id


async def _write_id(ctx: Context, obj: Resource, object_id: int, note: str | None) -> Resource:
    """The id into the label (spec-side metadata) and the status, with an IdAssigned condition when an id
    label or an old id was replaced."""
    draft = obj.model_copy(deep=True)
    if draft.metadata.labels.get(ID_LABEL) != str(object_id):
        draft.metadata.labels[ID_LABEL] = str(object_id)
        draft = (await ctx.store.update(draft)).model_copy(deep=True)
    draft.status.id = object_id
    draft.status.updated_at = draft.status.updated_at or ctx.clock()
    if note is not None:
        log.warning("id_label_replaced", kind=obj.KIND, account=obj.namespace, name=obj.name, detail=note)
        draft.status.conditions = _condition(
            draft.status.conditions, Condition(type="IdAssigned", status="True", reason="LabelReplaced", message=note),
            ctx.clock())
    return await ctx.store.update_status(draft)
