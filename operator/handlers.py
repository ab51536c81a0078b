"""Reconcile handlers: idempotent functions of an object's spec and the world around it.

They fill in what objects applied as YAML (kubectl, `callscope apply`) lack and what REST-created
objects already carry: the integer id (status and the `callscope.io/id` label), tag colours, key
material for ApiKeys, the uniqueness rules as a Conflict condition, whether the objects the spec names
exist as a ReferencesResolved condition, whether delivery would send to a project's webhook URL as a
WebhookEndpoint condition, observedGeneration and a Ready condition (False while any of those says
something is wrong). They write status (and the id label), never spec: applied YAML does
not drift.
"""

from __future__ import annotations

import re
from collections.abc import Hashable

import structlog

from callscope import webhook_endpoints
from callscope.catalog.ids import Owner, allocate_id, claim, claim_of, transfer_claim
from callscope.resources import KINDS, ApiKey, Condition, Operator, Project, Resource, Scorecard, Tag, VirtualNumber
from callscope.resources.meta import ID_LABEL
from callscope.secret_store import SecretStore
from callscope.services.context import Context
from callscope.services.indexes import CALLED_NUMBER, OPERATOR_EXTERNAL_ID, PHONE, TAG_NAME, holder, seniority
from callscope.services.keys import generate_key, key_status
from callscope.services.scorecards import missing_in_projects
from callscope.services.site_models import unknown_model
from callscope.services.tags import next_color, project_tags
from callscope.store.interface import ObjectNotFound

log = structlog.get_logger()

ID_KINDS = (Project, Operator, VirtualNumber, Tag, Scorecard)
_ID_LABEL_VALUE = re.compile(r"^[0-9]{1,18}$")
API_KEY_SECRET_KEY = "api-key"


def api_key_secret(api_key_name: str) -> str:
    """The Secret that gets the key of an ApiKey applied without key material (under API_KEY_SECRET_KEY)."""
    return f"{api_key_name}-key"


async def _write_key(secrets: SecretStore, obj: ApiKey, key: str) -> None:
    """The key into the ApiKey's Secret, which in a cluster the ApiKey owns (it goes with it); embedded, the file of
    that Secret."""
    name = api_key_secret(obj.name)
    await secrets.put(obj.namespace, name, API_KEY_SECRET_KEY, key, owner=obj)
    log.info("api_key_written", account=obj.namespace, apikey=obj.name, secret=name)


def _unique_values(obj: Resource) -> list[tuple[str, Hashable, str]]:
    """The values the object must hold alone, as (index, value, what it is): the account-wide rules the REST API
    enforces at write time, and a number's E.164 in all accounts (the carrier routes it to one number)."""
    ns, spec = obj.namespace, obj.spec
    if isinstance(obj, Operator):
        values = []
        if spec.external_id:
            values.append((OPERATOR_EXTERNAL_ID, (ns, spec.external_id), f"externalId {spec.external_id!r}"))
        if spec.phone_number:
            values.append((PHONE, (ns, spec.phone_number), f"phoneNumber {spec.phone_number}"))
        return values
    if isinstance(obj, VirtualNumber):
        return [(CALLED_NUMBER, spec.phone_number, f"phoneNumber {spec.phone_number}")]
    if isinstance(obj, Tag):
        return [(TAG_NAME, (ns, spec.project, spec.name.casefold()),
                 f"tag name {spec.name!r} in project {spec.project}")]
    return []


def conflicts(ctx: Context, obj: Resource) -> list[str]:
    """The unique values another object holds: the senior claimant (services.indexes.holder) keeps a value, a later
    one is the one in conflict. Another account's holder is not named: its names are not this account's to read."""
    found = []
    for index, value, what in _unique_values(obj):
        senior = holder(ctx.store, type(obj), index, value)
        if senior is not None and seniority(senior) < seniority(obj):
            by = f"another {obj.KIND}" if senior.namespace == obj.namespace else f"a {obj.KIND} of another account"
            found.append(f"{what} is used by {by}")
    return found


async def unresolved(ctx: Context, obj: Resource, secrets: SecretStore | None) -> list[str]:
    """The objects the spec names that do not exist in the object's own account (a name never reaches another), what
    a scorecard's questions name that its projects lack, a project's transcription model the site lacks, and a
    project's webhook signing Secret (or its key) that does not (read where `secrets` is given: Secrets are not
    watched, the periodic re-check sees one made later)."""
    missing = [f"{kind} {name!r} does not exist in account {obj.namespace}" for kind, name in obj.references()
               if ctx.store.cached_get(KINDS[kind], obj.namespace, name) is None]
    if isinstance(obj, Scorecard):  # the goals, categories and fields its questions name, in the projects it names
        missing += missing_in_projects(ctx, obj.namespace, obj.spec)
    if isinstance(obj, Project) and (model := unknown_model(obj.spec, ctx.settings)) is not None:
        missing.append(model)  # the site's models are its settings: the same here as where the analysis runs
    ref = obj.spec.webhook.signing_secret_ref if isinstance(obj, Project) and obj.spec.webhook else None
    if ref is not None and secrets is not None:
        try:
            found = await secrets.read(obj.namespace, ref.name, ref.key)
        except ValueError:  # not a Secret's name or key: none can have it
            found = None
        if found is None:
            missing.append(f"Secret {ref.name!r} with key {ref.key!r} does not exist in account {obj.namespace}")
    return missing


def dependents(ctx: Context, obj: Resource) -> list[Resource]:
    """The objects whose conditions may change when `obj` appears, changes or goes: those that name it, and those
    claiming one of its unique values. (Values it held before a change are left to the periodic re-check.)"""
    key = (obj.KIND, obj.name)
    naming = [o for cls in KINDS.values() for o in ctx.store.cached_list(cls, obj.namespace) if key in o.references()]
    claiming = [o for index, value, _ in _unique_values(obj) for o in ctx.store.by_index(type(obj), index, value)
                if (o.namespace, o.name) != (obj.namespace, obj.name)]
    return naming + claiming


async def _webhook_endpoint(ctx: Context, obj: Resource) -> Condition | None:
    """A project's WebhookEndpoint condition: whether delivery would send to its URL (the rule Settings → Webhooks
    checks when saving, callscope/webhook_endpoints.py), so that applied YAML is not refused silently at every
    delivery. A name that does not resolve yet is Unknown: the DNS record may come later."""
    if not isinstance(obj, Project) or obj.spec.webhook is None:
        return None
    refused = await webhook_endpoints.refusal(obj.spec.webhook.url, ctx.settings)
    if refused is None:
        return Condition(type="WebhookEndpoint", status="True", reason="Deliverable")
    return Condition(type="WebhookEndpoint", status="Unknown" if refused.retry else "False",
                     reason="Unresolved" if refused.retry else "Refused", message=str(refused))


def _condition(conditions: list[Condition], new: Condition, now) -> list[Condition]:
    kept = [c for c in conditions if c.type != new.type]
    old = next((c for c in conditions if c.type == new.type), None)
    if old is not None and (old.status, old.reason, old.message) == (new.status, new.reason, new.message):
        return conditions
    return [*kept, new.model_copy(update={"last_transition_time": now})]


async def reconcile(ctx: Context, obj: Resource, secrets: SecretStore | None = None) -> Resource:
    """Bring one object's status (and id label) in line with its spec; a no-op when it already is. `secrets`: where
    an ApiKey's new key is written and a project's signing Secret is looked up (without it, neither happens)."""
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
    problems, missing = conflicts(ctx, obj), await unresolved(ctx, obj, secrets)
    conflict = Condition(type="Conflict", status="True" if problems else "False",
                         reason="NotUnique" if problems else "Unique", message="; ".join(problems))
    resolved = Condition(type="ReferencesResolved", status="False" if missing else "True",
                         reason="NotFound" if missing else "Resolved", message="; ".join(missing))
    webhook = await _webhook_endpoint(ctx, obj)
    refused = [webhook.message] if webhook is not None and webhook.status == "False" else []
    ready = Condition(type="Ready", status="False" if problems or missing or refused else "True",
                      reason="Conflict" if problems else "UnresolvedReferences" if missing
                      else "WebhookRefused" if refused else "Reconciled",
                      message="; ".join(problems + missing + refused))
    for condition in (conflict, resolved, ready):
        status.conditions = _condition(status.conditions, condition, now)
    if webhook is not None:
        status.conditions = _condition(status.conditions, webhook, now)
    else:  # no webhook (any more): nothing to say about one
        status.conditions = [c for c in status.conditions if c.type != "WebhookEndpoint"]
    if status == obj.status:
        return obj
    if key is not None and secrets is not None:
        await _write_key(secrets, obj, key)  # before the hash is stored, so a key that works is never lost
    draft = obj.model_copy(deep=True)
    draft.status = status
    updated = await ctx.store.update_status(draft)
    if problems or missing or refused:
        log.warning("reconcile_not_ready", kind=obj.KIND, account=obj.namespace, name=obj.name,
                    problems=problems + missing + refused)
    return updated


async def _assign_id(ctx: Context, obj: Resource) -> Resource:
    """Adopt the id that the allocator handed to this very object (a REST create writes it into the label
    before the status), or allocate one. An id label the allocator did not write for this object (copied,
    or typed into YAML) is never trusted: it is overwritten, and a condition says so.

    One reconciler at a time per object, in every process: `callscope apply` reconciles what it applied while a
    running server reconciles the same change, and both allocating would leave the object with the second id (the
    first one wasted, the README's `project_id=1` wrong). The second reads the object as the first left it."""
    async with ctx.catalog.exclusive(f"assign-id:{obj.KIND}:{obj.namespace}/{obj.name}"):
        try:
            latest = await ctx.store.latest(type(obj), obj.namespace, obj.name)
        except ObjectNotFound:
            return obj  # deleted meanwhile: nothing to number
        if latest.metadata.uid != obj.metadata.uid:
            return obj  # a new object of the same name: its own reconcile numbers it
        if latest.status.id is not None:
            return latest
        return await _numbered(ctx, latest)


async def _numbered(ctx: Context, obj: Resource) -> Resource:
    owner = Owner(obj.namespace, obj.name)
    label = obj.metadata.labels.get(ID_LABEL, "")
    claimed = False
    if _ID_LABEL_VALUE.match(label) and await ctx.catalog.read(claim_of, obj.KIND, int(label)) == owner:
        holder = ctx.store.get_by_id(type(obj), obj.namespace, int(label))
        claimed = holder is None or holder.name == obj.name
    object_id = int(label) if claimed else await _new_id(ctx, obj)
    note = (None if claimed or not label
            else f"the {ID_LABEL} label {label!r} was not assigned by Callscope: id {object_id} assigned")
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
    recorded = ctx.store.cached_get(type(obj), *on_record)
    if recorded is not None and recorded.status.id == obj.status.id and seniority(recorded) <= seniority(obj):
        note = f"id {obj.status.id} belongs to {on_record.account}/{on_record.name}: id reassigned"
        return await _write_id(ctx, obj, await _new_id(ctx, obj), note)
    await ctx.catalog.write(transfer_claim, obj.KIND, obj.status.id, owner)
    if recorded is not None and recorded.status.id == obj.status.id:  # the younger holder moves
        await _keep_unique_id(ctx, recorded)
    return obj


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
