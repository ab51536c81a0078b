"""The scorecard figures' sums per day (trend_score_days), on SQLite and PostgreSQL: after every write that changes a
call's scores or what they are summed under (an analysis, a reviewer's override and mark, a rescoring pass, a
reanalysis, a recording moved or deleted), the Trends queries that read them answer what adding up the calls' own
rows (recording_scorecards, recording_scorecard_parts) of exactly the calls the list shows answers; and the migration
that creates them fills them as the writes keep them.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

from alembic import command
from sqlalchemy import select

from callscope.catalog import scorecards, trend_sums, trends
from callscope.catalog.db import Catalog
from callscope.catalog.recordings import Filters, Scope, change, delete_rows, filtered
from callscope.catalog.scorecards import QUESTION, SECTION, PartScore, Score
from callscope.catalog.tables import (
    Recording,
    RecordingScorecard,
    RecordingScorecardPart,
    ScorecardAnswerChange,
    TrendScoreDay,
)
from tests.catalog.trend_rows import add, fig


def june(day: int, hour: int = 12) -> datetime:
    return datetime(2031, 6, day, hour, tzinfo=UTC)


def period(first: int = 1, last: int = 30, **fields) -> Filters:
    return Filters(analysed=True, created_from=june(first, 0), created_to=datetime(2031, 6, last, 23, 59, tzinfo=UTC),
                   **fields)


ASKED = [(Scope("acme"), period()), (Scope("acme"), period(project_id=1)), (Scope("acme"), period(operator_id=5)),
         (Scope("acme"), period(operator_id=6)), (Scope("acme"), period(project_id=2, operator_id=6)),
         (Scope("acme"), period(2, 2)), (Scope("acme"), period(3, 4, operator_id=6)),
         (Scope("acme", 1), period(project_id=1)), (Scope("other"), period())]


def card(form: int, total: float | None, opening: float | None, greeting: float | None, billing: float | None,
         changed: bool = False, version: int = 1) -> Score:
    return Score(form, total, False, version, (PartScore(SECTION, "Opening", opening),
                                               PartScore(QUESTION, "greeting", greeting, changed),
                                               PartScore(QUESTION, "billing", billing)))


def _round(average: float | None) -> float | None:
    return None if average is None else round(average, 6)


def from_sums(catalog: Catalog, scope: Scope, f: Filters) -> tuple:
    with catalog.session() as session:
        days = {(d.scorecard_id, d.day): (d.calls, round(d.score_sum, 6)) for d in trends.score_days(session, scope, f)}
        agents = {(a.scorecard_id, a.operator_id): (a.calls, _round(a.average))
                  for a in trends.agent_scores(session, scope, f)}
        parts = {(p.scorecard_id, p.kind, p.name): (p.calls, _round(p.average), p.reviewed, p.changed)
                 for p in trends.part_scores(session, scope, f)}
    return days, agents, parts


def from_rows(catalog: Catalog, scope: Scope, f: Filters) -> tuple:
    """The same figures added up from the scores of the calls the list shows for the filters."""
    rs, part = RecordingScorecard, RecordingScorecardPart
    with catalog.session() as session:
        shown = filtered(scope, f).with_only_columns(Recording.id, maintain_column_froms=True)
        cards = session.execute(select(rs.scorecard_id, rs.score, rs.reviewed_at, Recording.operator_id,
                                       Recording.created_at).join(Recording, Recording.id == rs.recording_id)
                                .where(rs.recording_id.in_(shown))).all()
        parts = session.execute(select(part.scorecard_id, part.kind, part.name, part.score, part.changed,
                                       rs.reviewed_at).join(rs, (rs.recording_id == part.recording_id)
                                                            & (rs.scorecard_id == part.scorecard_id))
                                .where(part.recording_id.in_(shown))).all()
    day_scores, agent_scores, part_scores = defaultdict(list), defaultdict(list), defaultdict(list)
    for form, score, _, operator, created_at in cards:
        agent_scores[(form, operator)].append(score)
        if score is not None:
            day_scores[(form, created_at.astimezone(UTC).date())].append(score)
    for form, kind, name, score, changed, reviewed_at in parts:
        part_scores[(form, kind, name)].append((score, reviewed_at is not None or changed, changed))

    def average(scores: list) -> tuple[int, float | None]:
        known = [s for s in scores if s is not None]
        return len(known), _round(sum(known) / len(known)) if known else None

    return ({key: (len(s), round(sum(s), 6)) for key, s in day_scores.items()},
            {key: average(s) for key, s in agent_scores.items()},
            {key: (*average([score for score, _, _ in s]), sum(seen for _, seen, _ in s), sum(c for _, _, c in s))
             for key, s in part_scores.items()})


def sums_match_the_rows(catalog: Catalog) -> None:
    for scope, f in ASKED:
        assert from_sums(catalog, scope, f) == from_rows(catalog, scope, f), (scope, f)


def _id(catalog: Catalog, public_id: str) -> int:
    with catalog.session() as session:
        return session.scalar(select(Recording.id).where(Recording.public_id == public_id))


def scored_calls(catalog: Catalog) -> dict[str, str]:
    """Calls of two projects, three operators (one call of none), two forms, a call not analysed yet and another
    account's call, each scored."""
    calls = {
        "a": add(catalog, created_at=june(2), operator_id=5, found=fig(1.0, 1, 1, "calm", {})),
        "b": add(catalog, created_at=june(2, 23), operator_id=None, found=fig(1.0, 1, 1, None, {})),
        "c": add(catalog, created_at=june(3), project_id=2, operator_id=6, found=fig(0.5, 1, 1, "calm", {})),
        "d": add(catalog, created_at=june(4), operator_id=6),  # not analysed: its scores count nothing yet
        "e": add(catalog, created_at=june(4), operator_id=6, found=fig(1.0, 1, 1, None, {})),
        "f": add(catalog, account="other", created_at=june(2), found=fig(1.0, 1, 1, None, {})),
    }
    scored = {"a": [card(1, 80.0, 50.0, 100.0, 0.0)],
              "b": [card(1, 40.0, 0.0, 0.0, None), card(2, 70.0, 70.0, None, None)],
              "c": [card(1, None, None, None, None)], "d": [card(1, 100.0, 100.0, 100.0, 100.0)],
              "e": [card(1, 55.5, 33.3, 100.0, None)], "f": [card(1, 10.0, 10.0, 0.0, 0.0)]}
    for name, cards in scored.items():
        with catalog.session() as session:
            scorecards.record_scores(session, _id(catalog, calls[name]), cards)
    return calls


def test_the_sums_answer_what_the_calls_rows_add_up_to_through_every_write(catalog: Catalog) -> None:
    calls = scored_calls(catalog)
    sums_match_the_rows(catalog)
    with catalog.session() as session:  # a reviewer changes a's greeting (the score falls) and marks it reviewed
        rid = _id(catalog, calls["a"])
        scorecards.review(session, rid, card(1, 30.0, 0.0, 0.0, 0.0, changed=True), [ScorecardAnswerChange(
            recording_id=rid, scorecard_id=1, question_id="greeting", from_answer='"yes"', to_answer='"no"',
            changed_by="rita@example.com", changed_at=june(9))], "rita@example.com", june(9))
    sums_match_the_rows(catalog)
    with catalog.session() as session:  # e marked reviewed, nothing changed
        scorecards.review(session, _id(catalog, calls["e"]), card(1, 55.5, 33.3, 100.0, None), [], "rita@example.com",
                          june(9))
    sums_match_the_rows(catalog)
    with catalog.session() as session:  # the rescoring pass: form 1 changed, b no longer scored on form 2
        scorecards.record_scores(session, _id(catalog, calls["b"]), [card(1, 90.0, 100.0, 100.0, 50.0, version=2)])
    sums_match_the_rows(catalog)
    with catalog.session() as session:  # c analysed again: new figures and new scores; d analysed at last
        trend_sums.record(session, _id(catalog, calls["c"]), fig(1.0, 2, 2, "angry", {}))
        scorecards.record_scores(session, _id(catalog, calls["c"]), [card(1, 65.0, 65.0, 100.0, 0.0)])
        trend_sums.record(session, _id(catalog, calls["d"]), fig(1.0, 1, 1, None, {}))
    sums_match_the_rows(catalog)
    for ref, changes in ((calls["a"], {"operator_id": 6}), (calls["e"], {"project_id": 2}),
                         (calls["c"], {"operator_id": None})):
        with catalog.session() as session:
            assert change(session, Scope("acme"), ref, changes, None, "project_id" in changes, june(9)) is not None
        sums_match_the_rows(catalog)
    with catalog.session() as session:
        delete_rows(session, "acme", [_id(catalog, calls["a"]), _id(catalog, calls["b"])])
    sums_match_the_rows(catalog)
    with catalog.session() as session:  # every call gone: nothing left in the sums
        delete_rows(session, "acme", list(session.scalars(select(Recording.id).where(Recording.account == "acme"))))
        left = session.execute(select(TrendScoreDay).where(TrendScoreDay.account == "acme")).scalars().all()
    assert all((s.calls, s.scored, s.reviewed, s.changed) == (0, 0, 0, 0) and abs(s.score_sum) < 1e-9 for s in left)
    assert from_sums(catalog, Scope("acme"), period()) == ({}, {}, {})


def test_the_figures_per_agent_section_and_question(catalog: Catalog) -> None:
    """What the page shows, read from the sums: the calls of no operator are an agent of their own."""
    scored_calls(catalog)
    days, agents, parts = from_sums(catalog, Scope("acme"), period(project_id=1))
    assert agents == {(1, 5): (1, 80.0), (1, None): (1, 40.0), (2, None): (1, 70.0), (1, 6): (1, 55.5)}
    assert days == {(1, june(2).date()): (2, 120.0), (2, june(2).date()): (1, 70.0), (1, june(4).date()): (1, 55.5)}
    assert parts[(1, QUESTION, "billing")] == (1, 0.0, 0, 0)
    assert parts[(1, SECTION, "Opening")] == (3, round((50.0 + 0.0 + 33.3) / 3, 6), 0, 0)


def test_the_migration_fills_the_sums_as_the_writes_keep_them(empty_catalog_url: str) -> None:
    catalog = Catalog(empty_catalog_url)
    try:
        catalog.migrate()
        calls = scored_calls(catalog)
        with catalog.session() as session:
            rid = _id(catalog, calls["a"])
            scorecards.review(session, rid, card(1, 30.0, 0.0, 0.0, 0.0, changed=True), [], "rita@example.com",
                              june(9))
        kept = [from_sums(catalog, scope, f) for scope, f in ASKED]
        cfg = catalog.alembic_config()
        with catalog.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0019_recording_notes")
        catalog.migrate()
        assert [from_sums(catalog, scope, f) for scope, f in ASKED] == kept
        sums_match_the_rows(catalog)
    finally:
        catalog.dispose()
