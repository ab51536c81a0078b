"""The spec's key-scope rules for configuration objects, in one place: every lookup by id for a caller goes
through `visible_*` here, and every object shown inside another (a number's operators, an operator's projects, a
recording's operator) through `*_visible` (recordings: `Principal.scope` with callscope.catalog.recordings.in_scope)."""

from __future__ import annotations

from typing import TypeVar

from callscope.errors import Forbidden, NotFound, ValidationFailed
from callscope.resources import Operator, Project, Resource, Tag, VirtualNumber
from callscope.services.context import Context, Principal

R = TypeVar("R", bound=Resource)

PROJECT_MISMATCH = "project_id does not match this API key's project"
PROJECT_REQUIRED = "project_id is required for account-wide API keys"


def by_id(ctx: Context, cls: type[R], account: str, object_id: int) -> R | None:
    return ctx.store.get_by_id(cls, account, object_id)


def all_of(ctx: Context, cls: type[R], account: str) -> list[R]:
    return [o for o in ctx.store.cached_list(cls, account) if o.status.id is not None]


def project_named(ctx: Context, account: str, name: str | None) -> Project | None:
    if name is None:
        return None
    return ctx.store.cached_get(Project, account, name)


def project_id_of(ctx: Context, account: str, name: str | None) -> int | None:
    project = project_named(ctx, account, name)
    return project.status.id if project else None


def own_project(ctx: Context, principal: Principal) -> Project:
    project = project_named(ctx, principal.account, principal.project)
    if project is None:  # the key's project was deleted under it
        raise NotFound("Project not found")
    return project


def project_for_request(ctx: Context, principal: Principal, project_id: int | None, *,
                        required: bool = True) -> Project | None:
    """The spec's project_id rule: required for account-wide keys (422), must match a scoped key's
    project (403), must exist in the account (404 `Project not found`)."""
    if project_id is None:
        if principal.scoped:
            return own_project(ctx, principal)
        if required:
            raise ValidationFailed(PROJECT_REQUIRED)
        return None
    if principal.scoped and project_id != principal.project_id:
        raise Forbidden(PROJECT_MISMATCH)
    project = by_id(ctx, Project, principal.account, project_id)
    if project is None:
        raise NotFound("Project not found")
    return project


def project_visible(principal: Principal, name: str | None) -> bool:
    """A project-scoped key sees its own project only."""
    return not principal.scoped or name == principal.project


def visible_project(ctx: Context, principal: Principal, project_id: int) -> Project:
    project = by_id(ctx, Project, principal.account, project_id)
    if project is None or not project_visible(principal, project.name):
        raise NotFound()
    return project


def visible_operator(ctx: Context, principal: Principal, operator_id: int) -> Operator:
    operator = by_id(ctx, Operator, principal.account, operator_id)
    if operator is None or not operator_visible(principal, operator):
        raise NotFound()
    return operator


def operator_visible(principal: Principal, operator: Operator) -> bool:
    return not principal.scoped or principal.project in operator.spec.projects


def visible_operator_id(ctx: Context, principal: Principal, operator_id: int | None) -> int | None:
    """A reference to an operator as the key may see it: one a project-scoped key cannot see shows as none."""
    if not principal.scoped or operator_id is None:
        return operator_id
    operator = by_id(ctx, Operator, principal.account, operator_id)
    return operator_id if operator is not None and operator_visible(principal, operator) else None


def visible_number(ctx: Context, principal: Principal, number_id: int) -> VirtualNumber:
    number = by_id(ctx, VirtualNumber, principal.account, number_id)
    if number is None or not number_visible(principal, number):
        raise NotFound()
    return number


def number_visible(principal: Principal, number: VirtualNumber) -> bool:
    return project_visible(principal, number.spec.project)


def visible_tag(ctx: Context, principal: Principal, tag_id: int) -> Tag:
    tag = by_id(ctx, Tag, principal.account, tag_id)
    if tag is None or not project_visible(principal, tag.spec.project):
        raise NotFound()
    return tag
