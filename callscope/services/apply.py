"""`callscope apply` and `callscope get`: the YAML that `kubectl apply -f` takes, in embedded mode."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from callscope.errors import ValidationFailed
from callscope.resources import API_VERSION, KINDS, Account, ApiKey, Project, Resource
from callscope.services.accounts import ACCOUNT_NAME, check_account_name, ensure_account
from callscope.services.context import Context
from callscope.services.site_models import unknown_model
from callscope.store.interface import ObjectNotFound
from callscope.validation import PATTERN_PROBLEMS

OBJECT_NAME = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# An ApiKey's key goes to the Secret `<name>-key` (operator/handlers.py), whose name is at most 253 characters too.
API_KEY_NAME_MAX = 253 - len("-key")


def _parse(document: dict[str, Any], default_namespace: str) -> Resource:
    if not isinstance(document, dict):
        raise ValidationFailed("every YAML document must be a mapping")
    kind = document.get("kind")
    if document.get("apiVersion") != API_VERSION or not isinstance(kind, str) or kind not in KINDS:
        raise ValidationFailed(f"apiVersion must be {API_VERSION} and kind one of {', '.join(KINDS)}")
    data = {k: v for k, v in document.items() if k != "status"}  # status is the operator's, as with kubectl
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValidationFailed(f"{kind}: metadata must be a mapping")
    data["metadata"] = {**metadata, "namespace": metadata.get("namespace") or default_namespace}
    name = data["metadata"].get("name", "?")
    # Names are checked here, before anything is written, so that a bad file changes nothing (and an
    # ApiKey name never leaves the secrets folder when its key file is written).
    if not isinstance(data["metadata"]["namespace"], str) or not ACCOUNT_NAME.fullmatch(data["metadata"]["namespace"]):
        raise ValidationFailed(f"{kind} {name}: metadata.namespace must be an account name "
                               "(lowercase letters, digits and '-')")
    if not isinstance(name, str) or not OBJECT_NAME.fullmatch(name):
        raise ValidationFailed(f"{kind} {name}: metadata.name must be lowercase letters, digits, '-' and '.' "
                               "(a Kubernetes object name)")
    if kind == ApiKey.KIND and len(name) > API_KEY_NAME_MAX:
        raise ValidationFailed(f"{kind} {name}: metadata.name must be at most {API_KEY_NAME_MAX} characters "
                               "(its key's Secret is named <name>-key)")
    try:
        return KINDS[kind].from_dict(data)
    except ValidationError as exc:
        raise ValidationFailed([f"{kind} {name}: {'.'.join(map(str, e['loc']))}: {_problem(e)}"
                                for e in exc.errors()]) from None


def _problem(error: Any) -> str:
    """What is wrong with one value: a missed pattern in words where there are some, else pydantic's message."""
    pattern = (error.get("ctx") or {}).get("pattern") if error["type"] == "string_pattern_mismatch" else None
    return PATTERN_PROBLEMS.get(pattern, error["msg"]) if pattern else error["msg"]


async def apply_object(ctx: Context, obj: Resource) -> tuple[Resource, str]:
    """Create the object, or update its labels, annotations and spec: (stored object, what happened)."""
    check_account_name(obj.namespace)
    if not isinstance(obj, Account):
        await ensure_account(ctx, obj.namespace)
    label = f"{obj.KIND.lower()}/{obj.name}"
    try:
        current = await ctx.store.get(type(obj), obj.namespace, obj.name)
    except ObjectNotFound:
        return await ctx.store.create(obj), f"{label} created"
    draft = current.model_copy(deep=True)
    draft.spec = obj.spec
    draft.metadata.labels = {**current.metadata.labels, **obj.metadata.labels}
    draft.metadata.annotations = {**current.metadata.annotations, **obj.metadata.annotations}
    if draft.spec == current.spec and draft.metadata == current.metadata:
        return current, f"{label} unchanged"
    return await ctx.store.update(draft), f"{label} configured"


async def apply_documents(ctx: Context, documents: list[Any], default_namespace: str) -> list[tuple[Resource, str]]:
    """Validate every document first, so a bad file changes nothing, then apply them in order."""
    objects = [_parse(d, default_namespace) for d in documents]
    unusable = [f"{obj.KIND} {obj.name}: {problem}" for obj in objects
                if isinstance(obj, Project) and (problem := unknown_model(obj.spec, ctx.settings))]
    if unusable:
        raise ValidationFailed(unusable)
    return [await apply_object(ctx, obj) for obj in objects]


def _age(obj: Resource) -> str:
    created = obj.metadata.creation_timestamp
    if created is None:
        return "-"
    seconds = int((datetime.now(UTC) - created).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _summary(obj: Resource) -> str:
    spec = obj.spec
    return {
        "Account": lambda: spec.display_name,
        "Member": lambda: f"{spec.email}{' (locked)' if spec.locked else ''}",
        "Project": lambda: f"{spec.name} [{spec.language}]",
        "Operator": lambda: f"{spec.name} {spec.phone_number or ''}".strip(),
        "VirtualNumber": lambda: f"{spec.phone_number} {spec.project or '-'}",
        "Tag": lambda: f"{spec.name} {spec.project} {getattr(obj.status, 'color', '') or ''}".strip(),
        "ApiKey": lambda: ",".join(spec.permissions) + (" revoked" if spec.revoked else ""),
        "Scorecard": lambda: f"{spec.name} v{obj.metadata.generation or 1} {','.join(spec.projects) or '-'}",
    }[obj.KIND]()


def table(objects: list[Resource]) -> str:
    if not objects:
        return "No resources found."
    rows = [("NAME", "ID", "READY", "SUMMARY", "AGE")]
    for obj in objects:
        ready = next((c.status for c in obj.status.conditions if c.type == "Ready"), "-")
        rows.append((obj.name, str(obj.status.id or "-"), ready, _summary(obj), _age(obj)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("   ".join(r[i].ljust(widths[i]) for i in range(4)) + "   " + r[4] for r in rows)
