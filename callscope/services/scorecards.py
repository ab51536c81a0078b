"""Scorecards (QA forms, the Scorecard resource): the REST rules for list, get, create, update and delete, and the
check of what a form names against the projects it is attached to (the operator reports the same as a condition on
forms applied as YAML).

Key scope: a project-scoped key sees the forms attached to its project, and may create, change or delete only forms
attached to its project alone (a form shared with other projects scores their calls too)."""

from __future__ import annotations

from typing import Any

import structlog
from pydantic import ValidationError

from callscope.errors import Forbidden, NotFound, ValidationFailed
from callscope.resources import Project, Scorecard, ScorecardSpec
from callscope.resources.scorecards import missing_references
from callscope.services import scope
from callscope.services.context import Context, Principal
from callscope.services.objects import change_spec, create_with_id

log = structlog.get_logger()

SCOPED_OTHERS = "Project-scoped API keys can change only the forms of their own project alone"


def form_visible(principal: Principal, form: Scorecard) -> bool:
    return not principal.scoped or principal.project in form.spec.projects


def list_scorecards(ctx: Context, principal: Principal) -> list[Scorecard]:
    forms = [f for f in scope.all_of(ctx, Scorecard, principal.account) if form_visible(principal, f)]
    return sorted(forms, key=lambda f: (f.spec.name.casefold(), f.status.id))


def get_scorecard(ctx: Context, principal: Principal, scorecard_id: int) -> Scorecard:
    form = scope.by_id(ctx, Scorecard, principal.account, scorecard_id)
    if form is None or not form_visible(principal, form):
        raise NotFound()
    return form


def forms_of_project(ctx: Context, account: str, project_name: str) -> list[Scorecard]:
    """The forms attached to a project, by id (those with an id: a form applied as YAML gets one at once)."""
    return sorted((f for f in scope.all_of(ctx, Scorecard, account) if project_name in f.spec.projects),
                  key=lambda f: f.status.id or 0)


def missing_in_projects(ctx: Context, account: str, spec: ScorecardSpec) -> list[str]:
    """What the form's questions name (goals, categories, fields) that one of its existing projects lacks, each with
    its path; the projects that do not exist are the operator's ReferencesResolved to say."""
    projects = [p for name in spec.projects if (p := scope.project_named(ctx, account, name)) is not None]
    return missing_references(spec, [(_shown(p), p.spec) for p in projects])


def _shown(project: Project) -> str:
    return f"{project.spec.name} (id {project.status.id})" if project.status.id is not None else project.spec.name


def _project_names(ctx: Context, principal: Principal, project_ids: list[int] | None) -> list[str]:
    """The projects a request attaches, by name: each one the key may attach (the spec's project_id rule, one id at
    a time); a scoped key's own project where it names none."""
    if not project_ids:
        return [scope.own_project(ctx, principal).name] if principal.scoped else []
    names = [scope.project_for_request(ctx, principal, pid).name for pid in project_ids]  # type: ignore[union-attr]
    return list(dict.fromkeys(names))


def _spec(fields: dict[str, Any]) -> ScorecardSpec:
    """The spec of checked fields (the API validated the form at its edge); a rule broken after all is 422."""
    try:
        return ScorecardSpec.model_validate(fields)
    except ValidationError as exc:
        raise ValidationFailed([f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]) from None


def _checked(ctx: Context, account: str, spec: ScorecardSpec) -> ScorecardSpec:
    missing = missing_in_projects(ctx, account, spec)
    if missing:
        raise ValidationFailed(missing)
    return spec


def _may_change(principal: Principal, form: Scorecard) -> None:
    if principal.scoped and form.spec.projects != [principal.project]:
        raise Forbidden(SCOPED_OTHERS)


async def create_scorecard(ctx: Context, principal: Principal, form: dict[str, Any], name: str,
                           project_ids: list[int] | None) -> Scorecard:
    """`form`: the validated form's fields (sections, review) as the resource model reads them."""
    spec = _spec({**form, "name": name, "projects": _project_names(ctx, principal, project_ids)})
    spec = _checked(ctx, principal.account, spec)
    created = await create_with_id(ctx, Scorecard, principal.account, spec.name, spec)
    log.info("scorecard_created", account=principal.account, scorecard_id=created.status.id)
    return created


async def update_scorecard(ctx: Context, principal: Principal, scorecard_id: int, changes: dict[str, Any],
                           project_ids: list[int] | None) -> Scorecard:
    """`changes`: the supplied fields (name, sections, review), each replaced whole; `project_ids` (None: unchanged)
    replaces the projects."""
    form = get_scorecard(ctx, principal, scorecard_id)
    _may_change(principal, form)
    update = dict(changes)
    if project_ids is not None:
        update["projects"] = _project_names(ctx, principal, project_ids)
    spec = _spec({**form.spec.model_dump(), **update})
    spec = _checked(ctx, principal.account, spec)

    def apply(draft: Scorecard) -> None:
        draft.spec = spec

    return await change_spec(ctx, form, apply)


async def delete_scorecard(ctx: Context, principal: Principal, scorecard_id: int) -> None:
    """The form goes; the calls scored with it keep their scores (in their analyses) until analysed again."""
    form = get_scorecard(ctx, principal, scorecard_id)
    _may_change(principal, form)
    await ctx.store.delete(Scorecard, form.namespace, form.name)
    log.info("scorecard_deleted", account=principal.account, scorecard_id=scorecard_id)


def detach(project_name: str):
    """A change that takes a deleted project off a form (its cascade, as operators are unlinked)."""
    def apply(draft: Scorecard) -> None:
        if project_name in draft.spec.projects:
            draft.spec.projects.remove(project_name)
    return apply
