"""The sums the trends read (tables ``trend_days``, ``trend_goal_days``, ``trend_tracker_days``,
``trend_score_days``; callscope/catalog/trends.py), kept equal to the recordings' own figures, goals met, trackers
matched and scorecard scores.

A recording counts once it has figures (its analysis wrote them: the list's ``analysed`` filter), on the UTC day it
was added, in its account, its project and its operator. Every write that changes one of those takes the recording's
part out of the sums first and puts it back after (:func:`regrouping`), in the same transaction: an analysis stored
(:func:`record`), a call matched against its trackers (callscope/catalog/trackers.py), a recording moved to another
project or operator (callscope/catalog/recordings.py), a call's scores written by an analysis, a review or a
rescoring pass (callscope/catalog/scorecards.py, which regroups the scores only: ``figures=False``); a deleted
recording's part goes (:func:`withdraw`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC
from typing import Any

from sqlalchemy import and_, delete, select, update
from sqlalchemy.orm import Session

from callscope.catalog.db import insert
from callscope.catalog.tables import (
    Recording,
    RecordingGoal,
    RecordingScorecard,
    RecordingScorecardPart,
    RecordingTracker,
    TrendDay,
    TrendGoalDay,
    TrendScoreDay,
    TrendTrackerDay,
)
from callscope.figures import CallFigures

EVERY = 0  # the project_id / operator_id of the sums over every project / operator (ids start at 1)
NO_EMOTION = ""
NO_OPERATOR = -1  # the operator_id of a scorecard's sums over the calls of no operator (the agents' figure lists them)
TOTAL = "total"  # the kind of a form's own score in trend_score_days, beside its sections' and questions'


class _Changes:
    """Parts of recordings to add to (or take from) the sums, written together in key order: concurrent writers then
    lock the sums' rows in the same order (no deadlocks on PostgreSQL)."""

    def __init__(self, figures: bool = True) -> None:
        self.figures = figures  # False: the scores' sums only (a review, a rescoring)
        self.days: dict[tuple, list] = defaultdict(lambda: [0, 0.0, 0, 0])
        self.goals: dict[tuple, list] = defaultdict(lambda: [0, 0])
        self.trackers: dict[tuple, list] = defaultdict(lambda: [0])
        self.scores: dict[tuple, list] = defaultdict(lambda: [0, 0, 0.0, 0, 0])

    def add(self, session: Session, recording_ids: list[int], sign: int) -> None:
        """The recordings' parts as they are now, times `sign`."""
        session.flush()  # the rows as the caller left them
        analysed = (Recording.id.in_(recording_ids), Recording.pause_compliance.is_not(None))
        self._add_scores(session, analysed, sign)
        if not self.figures:
            return
        for r in session.execute(select(Recording.account, Recording.project_id, Recording.operator_id,
                                        Recording.created_at, Recording.emotion, Recording.pause_compliance,
                                        Recording.agent_talk_ms, Recording.customer_talk_ms).where(*analysed)):
            day = r.created_at.astimezone(UTC).date()
            for project, operator in _slices(r.project_id, r.operator_id):
                s = self.days[(r.account, project, operator, day, r.emotion or NO_EMOTION)]
                s[0] += sign
                s[1] += sign * r.pause_compliance
                s[2] += sign * (r.agent_talk_ms or 0)
                s[3] += sign * (r.customer_talk_ms or 0)
        for goal in session.execute(select(Recording.account, Recording.project_id, Recording.operator_id,
                                           Recording.created_at, RecordingGoal.goal_id, RecordingGoal.met)
                                    .join(RecordingGoal, RecordingGoal.recording_id == Recording.id)
                                    .where(*analysed)):
            day = goal.created_at.astimezone(UTC).date()
            for operator in {EVERY, goal.operator_id or EVERY}:
                g = self.goals[(goal.account, operator, goal.project_id, day, goal.goal_id)]
                g[0] += sign
                g[1] += sign * int(goal.met)
        for matched in session.execute(select(Recording.id, Recording.account, Recording.project_id,
                                              Recording.operator_id, Recording.created_at, RecordingTracker.tracker)
                                       .join(RecordingTracker, RecordingTracker.recording_id == Recording.id)
                                       .where(*analysed).distinct()):  # a call counts once however often it matched
            day = matched.created_at.astimezone(UTC).date()
            for operator in {EVERY, matched.operator_id or EVERY}:
                self.trackers[(matched.account, operator, matched.project_id, day, matched.tracker)][0] += sign

    def _add_scores(self, session: Session, analysed: tuple, sign: int) -> None:
        """Each form's score, and its sections' and questions', of the analysed recordings (what
        callscope/catalog/trends.py read from the calls' rows before these sums)."""
        rs, part = RecordingScorecard, RecordingScorecardPart
        call = (Recording.account, Recording.project_id, Recording.operator_id, Recording.created_at)
        totals = select(*call, rs.scorecard_id, rs.score).join(rs, rs.recording_id == Recording.id).where(*analysed)
        for account, project_id, operator_id, created_at, form, score in session.execute(totals):
            self._add_score((account, project_id, operator_id, created_at), (form, TOTAL, ""), score, False, False,
                            sign)
        parts = select(*call, part.scorecard_id, part.kind, part.name, part.score, rs.reviewed_at.is_not(None),
                       part.changed).join(rs, rs.recording_id == Recording.id).join(
            part, and_(part.recording_id == rs.recording_id, part.scorecard_id == rs.scorecard_id)).where(*analysed)
        for account, project_id, operator_id, created_at, form, kind, name, score, reviewed, changed in (
                session.execute(parts)):
            self._add_score((account, project_id, operator_id, created_at), (form, kind, name), score,
                            bool(reviewed) or changed, changed, sign)

    def _add_score(self, call: tuple, part: tuple, score: float | None, reviewed: bool, changed: bool,
                   sign: int) -> None:
        account, project_id, operator_id, created_at = call
        day = created_at.astimezone(UTC).date()
        for project, operator in _slices(project_id, operator_id or NO_OPERATOR):
            s = self.scores[(account, operator, project, day, *part)]
            s[0] += sign
            if score is not None:
                s[1] += sign
                s[2] += sign * score
            s[3] += sign * int(reviewed)
            s[4] += sign * int(changed)

    def write(self, session: Session) -> None:
        _upsert(session, TrendScoreDay, ["account", "operator_id", "project_id", "day", "scorecard_id", "kind", "name"],
                ["calls", "scored", "score_sum", "reviewed", "changed"], self.scores)
        if not self.figures:
            return
        _upsert(session, TrendDay, ["account", "project_id", "operator_id", "day", "emotion"],
                ["calls", "pause_compliance_sum", "agent_talk_ms", "customer_talk_ms"], self.days)
        _upsert(session, TrendGoalDay, ["account", "operator_id", "project_id", "day", "goal_id"], ["calls", "met"],
                self.goals)
        _upsert(session, TrendTrackerDay, ["account", "operator_id", "project_id", "day", "tracker"], ["calls"],
                self.trackers)


@contextmanager
def regrouping(session: Session, recording_ids: list[int], figures: bool = True) -> Iterator[None]:
    """Around a change of the recordings' figures, scores, project or operator: their parts as they were leave the
    sums, and as they are after come in, in one write (`figures` False: around a change of their scores only)."""
    changes = _Changes(figures)
    changes.add(session, recording_ids, -1)
    yield
    changes.add(session, recording_ids, 1)
    changes.write(session)


def record(session: Session, recording_id: int, found: CallFigures) -> None:
    """Write a new analysis' figures and goals met onto the recording, and into the sums."""
    with regrouping(session, [recording_id]):
        session.execute(update(Recording).where(Recording.id == recording_id).values(
            pause_compliance=found.pause_compliance, agent_talk_ms=found.agent_talk_ms,
            customer_talk_ms=found.customer_talk_ms, emotion=found.emotion))
        session.execute(delete(RecordingGoal).where(RecordingGoal.recording_id == recording_id))
        session.add_all(RecordingGoal(recording_id=recording_id, goal_id=goal, met=met)
                        for goal, met in found.goals.items())


def withdraw(session: Session, recording_ids: Iterable[int]) -> None:
    """Take the recordings' parts out of the sums (before they go)."""
    _apply(session, list(recording_ids), -1)


def contribute(session: Session, recording_ids: Iterable[int]) -> None:
    """Put the recordings' parts into the sums (benchmarks/trends.py builds its sums so)."""
    _apply(session, list(recording_ids), 1)


def _apply(session: Session, recording_ids: list[int], sign: int) -> None:
    if recording_ids:
        changes = _Changes()
        changes.add(session, recording_ids, sign)
        changes.write(session)


def _slices(project_id: int, operator_id: int | None) -> set[tuple[int, int]]:
    """The (project, operator) sums a recording counts in."""
    return {(EVERY, EVERY), (project_id, EVERY), (EVERY, operator_id or EVERY), (project_id, operator_id or EVERY)}


def _upsert(session: Session, model: Any, keys: list[str], values: list[str], rows: dict[tuple, list]) -> None:
    rows = {key: sums for key, sums in rows.items() if any(sums)}  # a part that left and came back as it was
    if not rows:
        return
    table = model.__table__
    ins = insert(session, model)
    statement = ins.on_conflict_do_update(
        index_elements=[table.c[k] for k in keys],
        set_={v: table.c[v] + getattr(ins.excluded, v) for v in values})
    session.execute(statement, [dict(zip(keys + values, (*key, *sums), strict=True))
                                for key, sums in sorted(rows.items())])

