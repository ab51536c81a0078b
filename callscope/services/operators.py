"""Operators (the people whose calls are recorded): the spec's rules, uniqueness and project links."""

from __future__ import annotations

from typing import Any

from callscope.errors import ValidationFailed
from callscope.resources import Operator, OperatorSpec, Project
from callscope.services import scope
from callscope.services.context import Context, Principal
from callscope.services.indexes import OPERATOR_EXTERNAL_ID, PHONE, holders
from callscope.services.objects import change_spec, create_with_id
from callscope.services.phones import normalize_e164
from callscope.store.interface import AlreadyExists

PHONE_INVALID = "Phone number is invalid"
PHONE_TAKEN = "Phone number has already been taken"
EXTERNAL_TAKEN = "External has already been taken"


def list_operators(ctx: Context, principal: Principal) -> list[Operator]:
    operators = [o for o in scope.all_of(ctx, Operator, principal.account) if scope.operator_visible(principal, o)]
    return sorted(operators, key=lambda o: (o.spec.name.casefold(), o.status.id))


def get_operator(ctx: Context, principal: Principal, operator_id: int) -> Operator:
    return scope.visible_operator(ctx, principal, operator_id)


def _clean(ctx: Context, account: str, fields: dict[str, Any], *, creating: bool,
           exclude: str | None = None) -> dict[str, Any]:
    """Validate and normalise operator fields; every problem is reported at once, as the spec's 422 lists."""
    errors: list[str] = []
    out = dict(fields)
    if creating or "name" in fields:
        name = (fields.get("name") or "").strip()
        if not name:
            errors.append("Name can't be blank")
        out["name"] = name
    for key in ("external_id", "email"):
        if key in fields and isinstance(fields[key], str):
            out[key] = fields[key].strip() or None
    if "phone_number" in fields:
        raw = (fields.get("phone_number") or "").strip()
        out["phone_number"] = None
        if raw:
            normalised = normalize_e164(raw, ctx.settings.default_phone_region)
            if normalised is None:
                errors.append(PHONE_INVALID)
            else:
                out["phone_number"] = normalised
    if out.get("external_id") and holders(ctx.store, Operator, OPERATOR_EXTERNAL_ID, (account, out["external_id"]),
                                          exclude):
        errors.append(EXTERNAL_TAKEN)
    if out.get("phone_number") and holders(ctx.store, Operator, PHONE, (account, out["phone_number"]), exclude):
        errors.append(PHONE_TAKEN)
    if errors:
        raise ValidationFailed(errors)
    return out


async def create_operator(ctx: Context, principal: Principal, fields: dict[str, Any]) -> Operator:
    fields = dict(fields)
    project = scope.project_for_request(ctx, principal, fields.pop("project_id", None), required=False)
    async with ctx.exclusive(principal.account):
        clean = _clean(ctx, principal.account, fields, creating=True)
        spec = OperatorSpec(**clean, projects=[project.name] if project else [])
        try:
            return await create_with_id(ctx, Operator, principal.account, spec.name, spec,
                                        unique=("external_id", spec.external_id) if spec.external_id else None)
        except AlreadyExists:  # another API process created this external_id a moment ago
            raise ValidationFailed(EXTERNAL_TAKEN) from None


async def update_operator(ctx: Context, principal: Principal, operator_id: int, fields: dict[str, Any]) -> Operator:
    operator = scope.visible_operator(ctx, principal, operator_id)
    async with ctx.exclusive(principal.account):
        clean = _clean(ctx, principal.account, fields, creating=False, exclude=operator.name)

        def apply(draft: Operator) -> None:
            draft.spec = draft.spec.model_copy(update=clean)

        return await change_spec(ctx, operator, apply)


def _link(project: str):
    def apply(draft: Operator) -> None:
        if project not in draft.spec.projects:
            draft.spec.projects.append(project)
    return apply


def unlink(project: str):
    def apply(draft: Operator) -> None:
        if project in draft.spec.projects:
            draft.spec.projects.remove(project)
    return apply


async def add_project(ctx: Context, principal: Principal, operator_id: int, project_id: int | None) -> Operator:
    project: Project = scope.project_for_request(ctx, principal, project_id)
    operator = scope.visible_operator(ctx, principal, operator_id)
    return await change_spec(ctx, operator, _link(project.name))


async def remove_project(ctx: Context, principal: Principal, operator_id: int, project_id: int | None) -> Operator:
    project: Project = scope.project_for_request(ctx, principal, project_id)
    operator = scope.visible_operator(ctx, principal, operator_id)
    return await change_spec(ctx, operator, unlink(project.name))
