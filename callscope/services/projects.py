"""Projects: the spec's rules for list, get, create, update and the cascading delete."""

from __future__ import annotations

from typing import Any

import structlog

from callscope.catalog import calls, usage
from callscope.errors import Forbidden, NotFound, ValidationFailed
from callscope.resources import ApiKey, Operator, Project, ProjectSpec, Scorecard, Tag, VirtualNumber
from callscope.resources.kinds import Redaction, Tracker, TranscriptionSpec
from callscope.services import scope
from callscope.services.context import Context, Principal
from callscope.services.objects import change_spec, create_with_id
from callscope.services.operators import unlink
from callscope.services.recordings import delete_project_recordings, remove_tag_everywhere
from callscope.services.scorecards import detach
from callscope.services.site_models import check_model

log = structlog.get_logger()

SCOPED_CANNOT = "Project-scoped API keys cannot create or destroy projects"


def list_projects(ctx: Context, principal: Principal) -> list[Project]:
    projects = [p for p in scope.all_of(ctx, Project, principal.account) if scope.project_visible(principal, p.name)]
    return sorted(projects, key=lambda p: (p.spec.name.casefold(), p.status.id))


def get_project(ctx: Context, principal: Principal, project_id: int) -> Project:
    return scope.visible_project(ctx, principal, project_id)


def _validate(fields: dict[str, Any], *, creating: bool) -> None:
    """The spec's blank-field messages; sizes, formats and ranges were checked at the API's edge."""
    errors: list[str] = []
    for key, label in (("name", "Name"), ("language", "Language")):
        if (creating or key in fields) and not (fields.get(key) or "").strip():
            errors.append(f"{label} can't be blank")
    if errors:
        raise ValidationFailed(errors)


def _normalised(fields: dict[str, Any]) -> dict[str, Any]:
    out = {k: v.strip() if isinstance(v, str) and k in ("name", "language") else v for k, v in fields.items()}
    for flag in ("quality_baseline_enabled", "live"):
        if flag in out and out[flag] is None:
            out[flag] = False
    if out.get("redaction") is not None:  # replaced whole: what is left out takes its default
        out["redaction"] = Redaction.model_validate(out["redaction"])
    if out.get("transcription") is not None:  # replaced whole
        out["transcription"] = TranscriptionSpec.model_validate(out["transcription"])
    if "trackers" in out:  # replaced whole; null: none
        out["trackers"] = [Tracker.model_validate(t) for t in out["trackers"] or []]
    return out


async def create_project(ctx: Context, principal: Principal, fields: dict[str, Any]) -> Project:
    if principal.scoped:
        raise Forbidden(SCOPED_CANNOT)
    _validate(fields, creating=True)
    spec = ProjectSpec(**_normalised(fields))
    check_model(spec, ctx.settings)
    return await create_with_id(ctx, Project, principal.account, spec.name, spec)


async def update_project(ctx: Context, principal: Principal, project_id: int, fields: dict[str, Any]) -> Project:
    project = scope.visible_project(ctx, principal, project_id)
    _validate(fields, creating=False)
    changes = _normalised(fields)
    if "transcription" in changes:  # a model the site dropped since stays until the project names another
        check_model(project.spec.model_copy(update=changes), ctx.settings)

    def apply(draft: Project) -> None:
        draft.spec = draft.spec.model_copy(update=changes)

    return await change_spec(ctx, project, apply)


async def delete_project(ctx: Context, principal: Principal, project_id: int) -> None:
    """Delete the project and everything that hangs on it, dependants first so that a failure part-way
    leaves a project that can be deleted again rather than orphans."""
    if principal.scoped:
        raise Forbidden(SCOPED_CANNOT)
    project = scope.by_id(ctx, Project, principal.account, project_id)
    if project is None:
        raise NotFound()
    await cascade_project_delete(ctx, project)


async def cascade_project_delete(ctx: Context, project: Project) -> None:
    account, name = project.namespace, project.name
    await delete_project_recordings(ctx, account, project.status.id)
    numbers = [number for number in scope.all_of(ctx, VirtualNumber, account) if number.spec.project == name]
    for number in numbers:
        await _release_number(ctx, number)
        await ctx.store.delete(VirtualNumber, account, number.name)
    await ctx.catalog.write(calls.delete_calls_of_numbers, account,  # their call records and routing cursors
                            [n.status.id for n in numbers if n.status.id is not None])
    for tag in ctx.store.cached_list(Tag, account):
        if tag.spec.project == name:
            await ctx.store.delete(Tag, account, tag.name)
            if tag.status.id is not None:
                await remove_tag_everywhere(ctx, account, tag.status.id)
    for operator in ctx.store.cached_list(Operator, account):
        if name in operator.spec.projects:
            await change_spec(ctx, operator, unlink(name))
    for form in ctx.store.cached_list(Scorecard, account):  # forms are the account's: taken off the project, kept
        if name in form.spec.projects:
            await change_spec(ctx, form, detach(name))
    for key in ctx.store.cached_list(ApiKey, account):
        if key.spec.project == name:  # a key bound to a deleted project can reach nothing
            await ctx.store.delete(ApiKey, account, key.name)
            await ctx.catalog.write(usage.delete_usage, key.metadata.uid or key.name)  # as Principal.key_uid
    await ctx.store.delete(Project, account, name)
    log.info("project_deleted", account=account, project=name, project_id=project.status.id)


async def _release_number(ctx: Context, number: VirtualNumber) -> None:
    if number.status.provider_ref and number.status.provider == ctx.provider.name:
        try:
            await ctx.provider.release(number.status.provider_ref)
        except Exception as exc:  # noqa: BLE001 - the number goes anyway; the provider side is logged for follow-up
            log.warning("number_release_failed", number=number.spec.phone_number, error=str(exc))
