"""Objects of the stores turned into the spec's response forms (short, detail, list item), with the
joins the public API shows (counts, linked ids, attached operators) read from the in-memory cache."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from callscope.analysis import readouts, stored
from callscope.analysis.readouts import RecordingScorecard, Subject
from callscope.analysis.result import AnalysisResult
from callscope.api import schemas as s
from callscope.catalog.search import SearchFilters
from callscope.catalog.tables import Recording
from callscope.catalog.trackers import Moment
from callscope.resources import Operator, Project, Tag, VirtualNumber
from callscope.services import analyses, scope
from callscope.services.context import Context, Principal
from callscope.services.naming import initials
from callscope.services.numbers import attached_operators, available_operators, call_activity
from callscope.services.recordings import STATUSES, Found, recordings_per_project, recordings_per_tag
from callscope.services.search import Hit
from callscope.services.shares import ShareView, recording_page_url


def _timestamps(obj) -> tuple:
    created = obj.metadata.creation_timestamp
    return created, obj.status.updated_at or created


def project_short(project: Project) -> s.ProjectShort:
    created, updated = _timestamps(project)
    spec = project.spec
    return s.ProjectShort(id=project.status.id, name=spec.name, language=spec.language, industry=spec.industry,
                          created_at=created, updated_at=updated)


async def project_detail(ctx: Context, project: Project) -> s.ProjectDetail:
    spec = project.spec
    recordings = await recordings_per_project(ctx, project.namespace, [project.status.id])
    numbers = sum(1 for n in ctx.store.cached_list(VirtualNumber, project.namespace) if n.spec.project == project.name)
    return s.ProjectDetail(
        **project_short(project).model_dump(),
        description=spec.description, goal_language=spec.goal_language or spec.language,
        summary_language=spec.summary_language or spec.language,
        long_pause_threshold_seconds=spec.long_pause_threshold_seconds, transcription_hints=spec.transcription_hints,
        retention_days=spec.retention_days, quality_baseline_enabled=spec.quality_baseline_enabled,
        quality_baseline_pct=spec.quality_baseline_pct, recordings_count=recordings.get(project.status.id, 0),
        redaction=s.ProjectRedaction(**spec.redaction.model_dump()) if spec.redaction else None,
        transcription=s.ProjectTranscription(**spec.transcription.model_dump()) if spec.transcription else None,
        trackers=[s.ProjectTracker(**t.model_dump()) for t in spec.trackers],
        live=spec.live,
        virtual_numbers_count=numbers,
    )


def _project_ids(ctx: Context, principal: Principal, operator: Operator) -> list[int]:
    """The operator's projects that the key can see (a project-scoped key: its own only)."""
    ids = (scope.project_id_of(ctx, operator.namespace, name) for name in operator.spec.projects
           if scope.project_visible(principal, name))
    return sorted(i for i in ids if i is not None)


def _numbers_by_operator(ctx: Context, principal: Principal) -> dict[str, list[VirtualNumber]]:
    """The numbers each operator answers, among those the key can see."""
    index: dict[str, list[VirtualNumber]] = {}
    for number in scope.all_of(ctx, VirtualNumber, principal.account):
        if scope.number_visible(principal, number):
            for name in number.spec.operators:
                index.setdefault(name, []).append(number)
    return index


def operator_items(ctx: Context, principal: Principal, operators: list[Operator]) -> list[s.OperatorListItem]:
    by_operator = _numbers_by_operator(ctx, principal)
    return [
        s.OperatorListItem(
            id=o.status.id, name=o.spec.name, phone_number=o.spec.phone_number, email=o.spec.email,
            active=o.spec.active, external_id=o.spec.external_id, initials=initials(o.spec.name),
            virtual_numbers_count=len(by_operator.get(o.name, ())),
            recording_project_ids=_project_ids(ctx, principal, o),
        )
        for o in operators
    ]


def operator_detail(ctx: Context, principal: Principal, operator: Operator) -> s.OperatorDetail:
    numbers = sorted(_numbers_by_operator(ctx, principal).get(operator.name, []), key=lambda n: n.status.id)
    return s.OperatorDetail(
        id=operator.status.id, name=operator.spec.name, external_id=operator.spec.external_id,
        phone_number=operator.spec.phone_number, email=operator.spec.email, active=operator.spec.active,
        initials=initials(operator.spec.name), recording_project_ids=_project_ids(ctx, principal, operator),
        virtual_numbers=[s.NumberOfOperator(id=n.status.id, phone_number=n.spec.phone_number, name=n.spec.name,
                                            active=n.spec.active) for n in numbers],
    )


def _number_base(ctx: Context, number: VirtualNumber) -> dict:
    """The fields every form of a virtual number shares."""
    spec = number.spec
    return {"id": number.status.id, "phone_number": spec.phone_number, "name": spec.name,
            "country_code": spec.country_code, "active": spec.active,
            "project_id": scope.project_id_of(ctx, number.namespace, spec.project)}


def _attached(ctx: Context, principal: Principal, number: VirtualNumber) -> list[tuple[int, Operator]]:
    """The number's operators that the key can see, each with its place in the number's routing order."""
    return [(i, o) for i, o in enumerate(attached_operators(ctx, number)) if scope.operator_visible(principal, o)]


def number_item(ctx: Context, principal: Principal, number: VirtualNumber) -> s.NumberListItem:
    attached = [o for _, o in _attached(ctx, principal, number)]
    return s.NumberListItem(
        **_number_base(ctx, number),
        operators=[s.OperatorBrief(id=o.status.id, name=o.spec.name, initials=initials(o.spec.name))
                   for o in attached[:3]],
        operators_count=len(attached),
    )


async def number_detail(ctx: Context, principal: Principal, number: VirtualNumber) -> s.NumberDetail:
    stats, calls = await call_activity(ctx, number)
    return s.NumberDetail(
        **_number_base(ctx, number),
        recording=number.spec.recording, routing_strategy=number.spec.routing_strategy,
        stats=stats,
        operators=[
            s.OperatorAttached(id=o.status.id, name=o.spec.name, phone_number=o.spec.phone_number,
                               initials=initials(o.spec.name), priority=i)
            for i, o in _attached(ctx, principal, number)
        ],
        available_operators=[
            s.OperatorAvailable(id=o.status.id, name=o.spec.name, phone_number=o.spec.phone_number,
                                initials=initials(o.spec.name))
            for o in available_operators(ctx, principal, number)
        ],
        recent_calls=calls,
    )


async def tag_outs(ctx: Context, tags: list[Tag]) -> list[s.TagDetail]:
    if not tags:
        return []
    counts = await recordings_per_tag(ctx, tags[0].namespace, [t.status.id for t in tags])
    return [s.TagDetail(id=t.status.id, name=t.spec.name, color=t.status.color or "",
                     project_id=scope.project_id_of(ctx, t.namespace, t.spec.project) or 0,
                     recordings_count=counts.get(t.status.id, 0)) for t in tags]


def recording_out(ctx: Context, principal: Principal, found: Found) -> s.RecordingDetail:
    r = found.recording
    return s.RecordingDetail(
        public_id=r.public_id, name=r.name, status=r.status, language=r.language, duration_ms=r.duration_ms,
        created_at=r.created_at, updated_at=r.updated_at, dialogues_count=r.dialogues_count,
        goals_evaluated=r.goals_evaluated, pauses_detected=r.pauses_detected, audio_attached=r.blob_key is not None,
        project_id=r.project_id, external_id=r.external_id, called_at=r.called_at,
        recording_source=r.recording_source, operator_id=scope.visible_operator_id(ctx, principal, r.operator_id),
        tag_ids=found.tag_ids,
        processing_restricted=r.processing_restricted, stage=r.stage, progress=r.progress,
        status_reason=r.status_reason, audio_format=r.audio_format, size_bytes=r.size_bytes,
        audio_redaction=r.audio_redaction,
    )


def filter_options(ctx: Context, values: dict) -> s.RecordingFilterOptions:
    def span(pair) -> s.Range:
        return s.Range(min=pair[0], max=pair[1])

    return s.RecordingFilterOptions(
        projects=[s.IdName(id=p.status.id, name=p.spec.name) for p in values["projects"]],
        operators=[s.IdName(id=o.status.id, name=o.spec.name) for o in values["operators"]],
        tags=[s.TagRef(id=t.status.id, name=t.spec.name, color=t.status.color or "",
                       project_id=scope.project_id_of(ctx, t.namespace, t.spec.project) or 0) for t in values["tags"]],
        statuses=list(STATUSES), status_counts=values["status_counts"], languages=values["languages"],
        called_at=span(values["called_at"]), created_at=span(values["created_at"]),
        duration_ms=span(values["duration_ms"]),
    )


def share_out(ctx: Context, view: ShareView) -> s.ShareDetail:
    share = view.share
    return s.ShareDetail(
        id=share.id, everyone=share.everyone,
        user=s.ShareUser(email=view.member.spec.email, name=view.member.spec.name) if view.member else None,
        shared_by=s.SharedBy(type=view.shared_by_type, name=share.shared_by_name), created_at=share.created_at,
        url=recording_page_url(ctx, view.recording_public_id),
    )


# ----- search -------------------------------------------------------------------------------------

def search_filters(query: s.SearchQuery) -> SearchFilters:
    return SearchFilters(project_id=query.project_id, operator_id=query.operator_id, role=query.speaker,
                         tag_id=query.tag, category=query.category, goal_id=query.goal_id, goal_met=query.goal_met,
                         emotion=query.emotion, created_from=query.created_from, created_to=query.created_to,
                         status=query.status)


def search_hit(hit: Hit) -> s.SearchHit:
    row = hit.row
    return s.SearchHit(
        recording=s.SearchRecording(public_id=row.public_id, name=row.name), start=row.start_ms / 1000,
        end=row.end_ms / 1000, speaker=row.speaker, role=row.role, operator_id=hit.operator_id, emotion=row.emotion,
        text=row.text, highlights=[s.Highlight(start=a, end=b) for a, b in hit.highlights], score=hit.score,
        url=hit.url)


# ----- analysis read-outs: the stored analysis read once into its AnalysisResult, the read-outs derived from it ------

@dataclass(frozen=True)
class Analysed:
    """The recording's current analysis (None before the first) and when it completed."""

    result: AnalysisResult | None = None
    completed_at: datetime | None = None


async def current_analysis(ctx: Context, r: Recording, transcript: bool = True) -> Analysed:
    """The current analysis, read from the catalog and validated once; without ``transcript`` its segments are empty
    (the results and summary read-outs show none, and the transcript document is a blob fetch away)."""
    found = await analyses.load_analysis(ctx, r, transcript)
    if found is None:
        return Analysed()
    return Analysed(stored.read(found.results, found.transcript), found.row.completed_at)


def transcription_out(r: Recording, analysed: Analysed) -> s.Transcription:
    """The transcript of the current analysis (empty lists before the first one)."""
    return readouts.transcription(Subject.of(r), analysed.result)


def results_out(r: Recording, analysed: Analysed, trackers: dict[str, list[Moment]] | None = None,
                live: dict[str, Any] | None = None, scorecards: list[RecordingScorecard] | None = None) -> s.Results:
    """The results of the current analysis (goals, pauses, categories, extracted data, speakers, characteristics),
    the trackers the call matched (services/trackers.py `matched`), a live call's live transcript
    (callscope/live/transcript.py `of_recording`) and its scorecards with reviewers' overrides
    (services/scorecard_reviews.py `of_recording`)."""
    return readouts.results(Subject.of(r), analysed.result, analysed.completed_at, [
        readouts.TrackerResult(name=name, moments=[readouts.TrackerMoment(
            dialogue_id=m.position, start_ms=m.start_ms, end_ms=m.end_ms) for m in moments])
        for name, moments in (trackers or {}).items()], live, scorecards)


def summary_out(r: Recording, analysed: Analysed) -> s.Summary:
    return readouts.summary(Subject.of(r), analysed.result)
