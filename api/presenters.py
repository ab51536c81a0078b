"""Objects of the stores turned into the spec's response forms (short, detail, list item), with the
joins the public API shows (counts, linked ids, attached operators) read from the in-memory cache."""

from __future__ import annotations

from callscope.catalog.calls import number_stats, recent_calls
from callscope.resources import Operator, Project, Tag, VirtualNumber
from callscope.services import scope
from callscope.services.context import Context, Principal
from callscope.services.naming import initials
from callscope.services.numbers import attached_operators, available_operators
from callscope.api import schemas as s

# Recordings are not stored yet: the catalog gains them with the recordings API, and these counts
# then read it. Until then there are none to count.
NO_RECORDINGS = 0


def _timestamps(obj) -> tuple:
    created = obj.metadata.creation_timestamp
    return created, obj.status.updated_at or created


def project_short(project: Project) -> s.ProjectShort:
    created, updated = _timestamps(project)
    spec = project.spec
    return s.ProjectShort(id=project.status.id, name=spec.name, language=spec.language, industry=spec.industry,
                          created_at=created, updated_at=updated)


def project_detail(ctx: Context, project: Project) -> s.ProjectDetail:
    spec = project.spec
    numbers = sum(1 for n in ctx.store.cached_list(VirtualNumber, project.namespace) if n.spec.project == project.name)
    return s.ProjectDetail(
        **project_short(project).model_dump(),
        description=spec.description, goal_language=spec.goal_language or spec.language,
        summary_language=spec.summary_language or spec.language,
        long_pause_threshold_seconds=spec.long_pause_threshold_seconds, transcription_hints=spec.transcription_hints,
        retention_days=spec.retention_days, quality_baseline_enabled=spec.quality_baseline_enabled,
        quality_baseline_pct=spec.quality_baseline_pct, recordings_count=NO_RECORDINGS, virtual_numbers_count=numbers,
    )


def _project_ids(ctx: Context, operator: Operator) -> list[int]:
    ids = (scope.project_id_of(ctx, operator.namespace, name) for name in operator.spec.projects)
    return sorted(i for i in ids if i is not None)


def _numbers_by_operator(ctx: Context, account: str) -> dict[str, list[VirtualNumber]]:
    index: dict[str, list[VirtualNumber]] = {}
    for number in scope.all_of(ctx, VirtualNumber, account):
        for name in number.spec.operators:
            index.setdefault(name, []).append(number)
    return index


def operator_items(ctx: Context, operators: list[Operator]) -> list[s.OperatorListItem]:
    if not operators:
        return []
    by_operator = _numbers_by_operator(ctx, operators[0].namespace)
    return [
        s.OperatorListItem(
            id=o.status.id, name=o.spec.name, phone_number=o.spec.phone_number, email=o.spec.email,
            active=o.spec.active, external_id=o.spec.external_id, initials=initials(o.spec.name),
            virtual_numbers_count=len(by_operator.get(o.name, ())), recording_project_ids=_project_ids(ctx, o),
        )
        for o in operators
    ]


def operator_detail(ctx: Context, operator: Operator) -> s.OperatorDetail:
    numbers = sorted(_numbers_by_operator(ctx, operator.namespace).get(operator.name, []), key=lambda n: n.status.id)
    return s.OperatorDetail(
        id=operator.status.id, name=operator.spec.name, external_id=operator.spec.external_id,
        phone_number=operator.spec.phone_number, email=operator.spec.email, active=operator.spec.active,
        initials=initials(operator.spec.name), recording_project_ids=_project_ids(ctx, operator),
        virtual_numbers=[s.NumberOfOperator(id=n.status.id, phone_number=n.spec.phone_number, name=n.spec.name,
                                            active=n.spec.active) for n in numbers],
    )


def number_item(ctx: Context, number: VirtualNumber) -> s.NumberListItem:
    attached = attached_operators(ctx, number)
    return s.NumberListItem(
        id=number.status.id, phone_number=number.spec.phone_number, name=number.spec.name,
        country_code=number.spec.country_code, active=number.spec.active,
        project_id=scope.project_id_of(ctx, number.namespace, number.spec.project),
        operators=[s.OperatorBrief(id=o.status.id, name=o.spec.name, initials=initials(o.spec.name)) for o in attached[:3]],
        operators_count=len(attached),
    )


async def number_detail(ctx: Context, principal: Principal, number: VirtualNumber) -> s.NumberDetail:
    number_id = number.status.id
    stats = (await ctx.catalog.run(number_stats, ctx.catalog, number.namespace, [number_id]))[number_id]
    calls = await ctx.catalog.run(recent_calls, ctx.catalog, number.namespace, number_id, 10)
    return s.NumberDetail(
        id=number_id, phone_number=number.spec.phone_number, name=number.spec.name,
        country_code=number.spec.country_code, active=number.spec.active,
        project_id=scope.project_id_of(ctx, number.namespace, number.spec.project),
        recording=number.spec.recording, routing_strategy=number.spec.routing_strategy,
        stats=stats,
        operators=[
            s.OperatorAttached(id=o.status.id, name=o.spec.name, phone_number=o.spec.phone_number,
                               initials=initials(o.spec.name), priority=i)
            for i, o in enumerate(attached_operators(ctx, number))
        ],
        available_operators=[
            s.OperatorAvailable(id=o.status.id, name=o.spec.name, phone_number=o.spec.phone_number,
                                initials=initials(o.spec.name))
            for o in available_operators(ctx, principal, number)
        ],
        recent_calls=calls,
    )


def tag_out(ctx: Context, tag: Tag) -> s.TagOut:
    return s.TagOut(id=tag.status.id, name=tag.spec.name, color=tag.status.color or "",
                    project_id=scope.project_id_of(ctx, tag.namespace, tag.spec.project) or 0,
                    recordings_count=NO_RECORDINGS)
