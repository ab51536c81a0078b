"""The trends in the catalog, on SQLite and PostgreSQL: each call's figures read from its analysis documents; their
sums per day, which read exactly the calls the list shows for the same filters (never another account's, never a
call not analysed) and stay equal to the recordings' own figures through every write that changes them (an analysis
stored again, a recording moved to another project or operator, recordings deleted); and the migration that filled
figures and sums for analyses stored before it.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime

import pytest
from sqlalchemy import case, func, select, text

from callscope.catalog import trend_sums, trends
from callscope.catalog.db import Catalog
from callscope.catalog.recordings import Filters, Scope, change, delete_rows, page
from callscope.catalog.tables import Analysis, Recording, RecordingGoal
from callscope.figures import CallFigures, figures
from tests.catalog.trend_rows import add, fig

RESULTS = {"speakers": [{"label": "speaker-1", "role": "agent", "talk_ms": 6000},
                        {"label": "speaker-2", "role": "customer", "talk_ms": 4000},
                        {"label": "speaker-3", "role": "unknown", "talk_ms": 500}],
           "pauses": [{"compliant": True}, {"compliant": False}, {"compliant": True}, {"compliant": True}],
           "goals": [{"goal_id": 1, "met": True}, {"goal_id": 7, "met": False}]}
SEGMENTS = [{"start_ms": 0, "end_ms": 9000, "emotions": {"calm": 0.6, "angry": 0.4}},
            {"start_ms": 9000, "end_ms": 10000, "emotions": {"angry": 0.9, "calm": 0.1}}]


def test_figures_of_a_results_document_and_its_segments() -> None:
    assert figures(RESULTS, SEGMENTS) == CallFigures(pause_compliance=0.75, agent_talk_ms=6000, customer_talk_ms=4000,
                                                     emotion="calm", goals={1: True, 7: False})
    bare = figures({"speakers": [], "pauses": []}, None)  # no pauses: nothing to break; no segments: no emotion
    assert (bare.pause_compliance, bare.emotion, bare.goals) == (1.0, None, {})


def june(day: int, hour: int = 12) -> datetime:
    return datetime(2031, 6, day, hour, tzinfo=UTC)


def june_filters(**fields) -> Filters:
    return Filters(analysed=True, created_from=june(1, 0), created_to=datetime(2031, 6, 30, 23, 59, tzinfo=UTC),
                   **fields)


def test_days_add_up_the_analysed_calls_of_the_account_only(catalog: Catalog) -> None:
    add(catalog, created_at=june(2, 0), found=fig(1.0, 60, 40, "calm", {1: True}))
    add(catalog, created_at=june(2, 23), status="processing", found=fig(0.5, 30, 70, "calm", {1: False, 2: True}))
    add(catalog, created_at=june(3), found=fig(0.0, 10, 0, "angry", {1: True}))
    add(catalog, created_at=june(3), project_id=2, operator_id=6, found=fig(1.0, 1, 1, None, {1: True}))
    # never counted: another account's call, a call never analysed, one out of the period
    add(catalog, account="other", created_at=june(2), found=fig(0.0, 99, 1, "sad", {1: False}))
    add(catalog, status="pending", created_at=june(2))
    add(catalog, created_at=datetime(2031, 5, 31, 23, 59, tzinfo=UTC), found=fig(0.0, 99, 1, "sad", {1: False}))

    with catalog.session() as session:
        days = sorted(trends.days(session, Scope("acme"), june_filters(project_id=1)),
                      key=lambda d: (d.day, d.emotion or ""))
        goals = sorted(trends.goal_days(session, Scope("acme"), june_filters(project_id=1)),
                       key=lambda g: (g.day, g.goal_id))
        by_operator = trends.days(session, Scope("acme"), june_filters(operator_id=6))
        listed, total = page(session, Scope("acme"), june_filters(project_id=1), 0, 50)
    assert days == [trends.Day(date(2031, 6, 2), "calm", 2, 1.5, 90, 110),
                    trends.Day(date(2031, 6, 3), "angry", 1, 0.0, 10, 0)]
    assert goals == [trends.GoalDay(date(2031, 6, 2), 1, 1, 2, 1), trends.GoalDay(date(2031, 6, 2), 1, 2, 1, 1),
                     trends.GoalDay(date(2031, 6, 3), 1, 1, 1, 1)]
    assert [(d.day, d.calls, d.emotion) for d in by_operator] == [(date(2031, 6, 3), 1, None)]
    assert total == sum(d.calls for d in days) == len(listed)  # the list shows exactly the calls the trend counts


def test_a_project_scoped_caller_counts_its_project_only(catalog: Catalog) -> None:
    add(catalog, created_at=june(4), found=fig(1.0, 1, 1, "calm", {}))
    add(catalog, project_id=2, created_at=june(4), found=fig(1.0, 1, 1, "calm", {}))
    with catalog.session() as session:
        assert sum(d.calls for d in trends.days(session, Scope("acme", 2), june_filters(project_id=2))) == 1
        assert trends.days(session, Scope("acme", 2), june_filters(project_id=1)) == []


SLICES = [{}, {"project_id": 1}, {"project_id": 2}, {"operator_id": 5}, {"operator_id": 6},
          {"project_id": 1, "operator_id": 5}, {"project_id": 2, "operator_id": 6}]


def sums_match_the_recordings(catalog: Catalog) -> None:
    """Every slice's sums equal what the list's rows of the same filters add up to."""
    with catalog.session() as session:
        for fields in SLICES:
            f = june_filters(**fields)
            rows, total = page(session, Scope("acme"), f, 0, 1000)
            found = trends.days(session, Scope("acme"), f)
            assert sum(d.calls for d in found) == total, fields
            assert sum(d.agent_talk_ms for d in found) == sum(r.recording.agent_talk_ms for r in rows), fields
            assert sum(d.pause_compliance_sum for d in found) == pytest.approx(
                sum(r.recording.pause_compliance for r in rows)), fields
            per_emotion: dict[str | None, int] = {}
            for r in rows:
                per_emotion[r.recording.emotion] = per_emotion.get(r.recording.emotion, 0) + 1
            assert {e: sum(d.calls for d in found if d.emotion == e) for e in per_emotion} == per_emotion, fields
            met = session.execute(select(func.count(), func.sum(case((RecordingGoal.met, 1), else_=0))).where(
                RecordingGoal.recording_id.in_([r.recording.id for r in rows]))).one()
            goals = trends.goal_days(session, Scope("acme"), f)
            assert (sum(g.calls for g in goals), sum(g.met for g in goals)) == (met[0], met[1] or 0), fields


def test_the_sums_follow_every_write_that_changes_them(catalog: Catalog) -> None:
    ids = [add(catalog, created_at=june(2 + n % 3), project_id=1 + n % 2, operator_id=(None, 5, 6)[n % 3],
               found=fig(n / 10, 10 * n, 5, ("calm", "angry", None)[n % 3], {1: n % 2 == 0, 2: True}))
           for n in range(9)]
    sums_match_the_recordings(catalog)
    with catalog.session() as session:  # analysed again: the new figures replace the old
        rid = session.scalar(select(Recording.id).where(Recording.public_id == ids[0]))
        trend_sums.record(session, rid, fig(0.25, 999, 1, "sad", {3: True}))
    sums_match_the_recordings(catalog)
    for ref, changes in ((ids[1], {"project_id": 2}), (ids[2], {"operator_id": 5}), (ids[3], {"operator_id": None}),
                         (ids[4], {"name": "renamed"})):
        with catalog.session() as session:
            assert change(session, Scope("acme"), ref, changes, None, "project_id" in changes, june(9)) is not None
        sums_match_the_recordings(catalog)
    with catalog.session() as session:
        delete_rows(session, "acme", list(session.scalars(select(Recording.id).where(
            Recording.public_id.in_(ids[5:8])))))
    sums_match_the_recordings(catalog)


def test_a_new_analysis_replaces_the_goals_met(catalog: Catalog) -> None:
    public_id = add(catalog, created_at=june(5), found=fig(1.0, 1, 1, "calm", {1: True, 2: True}))
    with catalog.session() as session:
        rid = session.scalar(select(Recording.id).where(Recording.public_id == public_id))
        trend_sums.record(session, rid, fig(1.0, 1, 1, "calm", {2: False}))
    with catalog.session() as session:
        rows = session.execute(select(RecordingGoal.goal_id, RecordingGoal.met)
                               .where(RecordingGoal.recording_id == rid)).all()
        goals = trends.goal_days(session, Scope("acme"), june_filters(project_id=1))
    assert [tuple(r) for r in rows] == [(2, False)]
    assert [(g.goal_id, g.calls, g.met) for g in goals] == [(2, 1, 0)]


def test_the_migration_fills_the_figures_of_analyses_stored_before(empty_catalog_url: str) -> None:
    catalog = Catalog(empty_catalog_url)
    try:
        catalog.migrate("0007_audio_redaction")
        with catalog.engine.begin() as conn:
            for n in range(3):
                conn.execute(text(
                    "INSERT INTO recordings (id, public_id, account, project_id, operator_id, name, language, status,"
                    " progress, duration_ms, audio_format, size_bytes, dialogues_count, goals_evaluated,"
                    " pauses_detected, processing_restricted, conversation_id, created_at, updated_at) VALUES (:id,"
                    " :pid, 'acme', 1, :op, 'old', 'en', 'completed', 100, 1000, 'wav', 1, 0, true, 0, false, :pid,"
                    " :t, :t)"), {"id": n + 1, "pid": str(uuid.uuid4()), "op": (5, None, 6)[n],
                                  "t": f"2031-06-0{n + 1} 12:00:00"})
            for rid in (1, 3):
                conn.execute(text("INSERT INTO analyses (recording_id, version, transcript_key, results, completed_at)"
                                  " VALUES (:rid, 1, 'k', :results, :t)"), {"rid": rid, "results": json.dumps(RESULTS),
                                                                           "t": "2031-06-01 12:00:00"})
        catalog.migrate()
        with catalog.session() as session:
            old = session.get(Recording, 1)
            never = session.get(Recording, 2)
            goals = session.execute(select(RecordingGoal.goal_id, RecordingGoal.met)
                                    .where(RecordingGoal.recording_id == 1).order_by(RecordingGoal.goal_id))
            assert [tuple(g) for g in goals] == [(1, True), (7, False)]
            assert session.get(Analysis, 1) is not None
        assert (old.pause_compliance, old.agent_talk_ms, old.customer_talk_ms, old.emotion) == (0.75, 6000, 4000, None)
        assert (never.pause_compliance, never.agent_talk_ms) == (None, None)  # no analysis: nothing to fill
        sums_match_the_recordings(catalog)  # and the sums, as the worker keeps them
    finally:
        catalog.dispose()
