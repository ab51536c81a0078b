"""What a search is narrowed to (its filters), and how the queries of search's tables apply that and the caller's
Scope: inside each query, before any ranking or limit, so that a filter never shortens a page of hits that exist."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Select, select

from callscope.catalog.recordings import Scope, in_scope
from callscope.catalog.tables import Recording, RecordingCategory, RecordingGoal, RecordingTag, SearchSegment


@dataclass(frozen=True)
class SearchFilters:
    """What a search is narrowed to: of the call (project, operator, tag, category found, goal met or not, when it
    was added, status) and of the segment (the speaker's role, its emotion)."""

    project_id: int | None = None
    operator_id: int | None = None
    role: str | None = None
    tag_id: int | None = None
    category: str | None = None
    goal_id: int | None = None
    goal_met: bool | None = None  # with goal_id; None: the goal evaluated, met or not
    emotion: str | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    status: str | None = None



@dataclass(frozen=True)
class Narrowing:
    """A search's scope and filters, as the engines' queries apply them: to the calls (a select whose FROM has
    recordings), to the segments alone (role, emotion), or, called, to a select of search_segments (both, joined)."""

    scope: Scope
    filters: SearchFilters

    def calls(self, statement: Select) -> Select:
        f = self.filters
        statement = in_scope(statement, self.scope)
        for column, value in ((Recording.project_id, f.project_id), (Recording.operator_id, f.operator_id),
                              (Recording.status, f.status)):
            if value is not None:
                statement = statement.where(column == value)
        if f.created_from is not None:
            statement = statement.where(Recording.created_at >= f.created_from)
        if f.created_to is not None:
            statement = statement.where(Recording.created_at <= f.created_to)
        if f.tag_id is not None:
            statement = statement.where(Recording.id.in_(
                select(RecordingTag.recording_id).where(RecordingTag.tag_id == f.tag_id)))
        if f.category is not None:
            statement = statement.where(Recording.id.in_(
                select(RecordingCategory.recording_id).where(RecordingCategory.name == f.category)))
        if f.goal_id is not None:
            goals = select(RecordingGoal.recording_id).where(RecordingGoal.goal_id == f.goal_id)
            if f.goal_met is not None:
                goals = goals.where(RecordingGoal.met == f.goal_met)
            statement = statement.where(Recording.id.in_(goals))
        return statement

    def segments(self, statement: Select) -> Select:
        if self.filters.role is not None:
            statement = statement.where(SearchSegment.role == self.filters.role)
        if self.filters.emotion is not None:
            statement = statement.where(SearchSegment.emotion == self.filters.emotion)
        return statement

    def __call__(self, statement: Select) -> Select:
        return self.calls(self.segments(statement).join(Recording, Recording.id == SearchSegment.recording_id))
