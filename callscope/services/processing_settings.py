"""The projects' analysis settings as Settings → Processing shows and changes them: language, pause threshold,
retention, transcription hints, goals, categories and fields, written through callscope/services/projects.py as
`PATCH /projects/{id}` writes them. Projects a GitOps tool owns are left alone, as keys are (key_settings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from callscope.errors import Conflict, ValidationFailed
from callscope.resources import Project
from callscope.services import projects
from callscope.services.context import Context, Principal
from callscope.services.key_settings import managed_elsewhere

# The rules the CRD states in CEL (crd.py _VALIDATIONS["ProjectSpec"]), which the embedded store does not run.
UNIQUE_BY = {"goals": ("id", "goal ids must be unique within the project"),
             "categories": ("name", "category names must be unique within the project"),
             "fields": ("name", "extracted field names must be unique within the project")}


@dataclass(frozen=True)
class ProjectRow:
    project: Project
    managed_by: str | None  # why the page leaves the project alone; None when it may change it


def rows(ctx: Context, principal: Principal) -> list[ProjectRow]:
    return [ProjectRow(p, managed_elsewhere(p)) for p in projects.list_projects(ctx, principal)]


def row(ctx: Context, principal: Principal, project_id: int) -> ProjectRow:
    """One project of the caller's account; NotFound for another account's, as for one that does not exist."""
    project = projects.get_project(ctx, principal, project_id)
    return ProjectRow(project, managed_elsewhere(project))


def _unique(changes: dict[str, Any]) -> None:
    errors = []
    for name, (key, message) in UNIQUE_BY.items():
        values = [getattr(item, key) for item in changes.get(name) or []]
        if len(values) != len(set(values)):
            errors.append(f"{name}: {message}")
    if errors:
        raise ValidationFailed(errors)


async def update(ctx: Context, principal: Principal, project_id: int, changes: dict[str, Any]) -> Project:
    """`changes` as PATCH /projects/{id} takes them (validated), plus goals, categories and fields as the resource's
    models; the page's whole form, so a field left blank is cleared."""
    found = row(ctx, principal, project_id)
    if found.managed_by is not None:
        raise Conflict(found.managed_by)
    _unique(changes)
    return await projects.update_project(ctx, principal, project_id, changes)
