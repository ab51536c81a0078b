"""How long the team's scorecard figures on Trends take to read (callscope/catalog/trends.py `score_days`,
`agent_scores` and `part_scores`, the queries of a Trends page with a QA form, which read the daily sums
`trend_score_days`) over a month of scored calls, beside the same figures added up from the calls' own rows
(`recording_scorecards`, `recording_scorecard_parts`: the queries before the sums, kept here as the baseline).

It writes N scored calls of one account straight into a fresh catalog (default SQLite in a temporary directory;
--database-url for PostgreSQL: an empty database), spread over 30 days, 20 operators and one form of 3 sections and
12 questions (15 `recording_scorecard_parts` rows a call, one in ten reviewed, one answer in twenty changed), plus as
many calls of another account on the same days, and their sums as the catalog's writes keep them
(callscope/catalog/trend_sums.py); PostgreSQL gets ``ANALYZE`` after the load, as autovacuum would. Then it times
each query over the month, and over one operator, as the page asks them (best of 5).

How to run (repository root)::

    .venv/bin/python -P benchmarks/scorecard_trends.py                  # 20,000 calls a month, SQLite
    .venv/bin/python -P benchmarks/scorecard_trends.py --calls 100000 --database-url postgresql+psycopg://...
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import and_, case, func, insert, or_, select
from sqlalchemy.orm import Session

from callscope.catalog import trend_sums, trends
from callscope.catalog.db import Catalog
from callscope.catalog.recordings import Filters, Scope, filtered
from callscope.catalog.tables import Recording, RecordingScorecard, RecordingScorecardPart, TrendScoreDay

START = datetime(2031, 6, 1, tzinfo=UTC)
SECTIONS = ("Opening", "Handling", "Closing")
QUESTIONS = [f"q{i}" for i in range(12)]
BATCH = 5_000


def _fill(catalog: Catalog, calls: int, account: str, first_id: int, rng: random.Random) -> None:
    for start in range(0, calls, BATCH):
        ids = range(first_id + start, first_id + min(start + BATCH, calls))
        recordings, cards, parts = [], [], []
        for rid in ids:
            at = START + timedelta(seconds=rng.randrange(30 * 86_400))
            recordings.append({
                "id": rid, "public_id": f"00000000-0000-0000-0000-{rid:012d}", "account": account, "project_id": 1,
                "operator_id": rng.randrange(1, 21), "name": "call", "language": "en", "status": "completed",
                "progress": 100, "duration_ms": 60_000, "audio_format": "wav", "size_bytes": 10, "dialogues_count": 1,
                "goals_evaluated": True, "pauses_detected": 0, "processing_restricted": False,
                "conversation_id": str(rid), "pause_compliance": 1.0, "created_at": at, "updated_at": at})
            reviewed = rng.random() < 0.1
            cards.append({"recording_id": rid, "scorecard_id": 1, "score": rng.uniform(0, 100), "auto_failed": False,
                          "version": 1, "reviewed_by": "rita@example.com" if reviewed else None,
                          "reviewed_at": at if reviewed else None})
            parts += [{"recording_id": rid, "scorecard_id": 1, "kind": "section", "name": name,
                       "score": rng.uniform(0, 100), "changed": False} for name in SECTIONS]
            parts += [{"recording_id": rid, "scorecard_id": 1, "kind": "question", "name": name,
                       "score": rng.choice((0.0, 100.0, None)), "changed": reviewed and rng.random() < 0.05}
                      for name in QUESTIONS]
        with catalog.session() as session:
            session.execute(insert(Recording), recordings)
            session.execute(insert(RecordingScorecard), cards)
            session.execute(insert(RecordingScorecardPart), parts)
            trend_sums.contribute(session, list(ids))


# ----- the baseline: the figures added up from the calls' rows, joined to exactly the calls the list shows

def rows_call_scores(session: Session, scope: Scope, f: Filters) -> list:
    rs = RecordingScorecard
    return session.execute(filtered(scope, f)
                           .with_only_columns(rs.scorecard_id, Recording.created_at, rs.score,
                                              maintain_column_froms=True)
                           .join(rs, rs.recording_id == Recording.id).where(rs.score.is_not(None))).all()


def rows_agent_scores(session: Session, scope: Scope, f: Filters) -> list:
    rs = RecordingScorecard
    return session.execute(filtered(scope, f)
                           .with_only_columns(rs.scorecard_id, Recording.operator_id, func.count(rs.score),
                                              func.avg(rs.score), maintain_column_froms=True)
                           .join(rs, rs.recording_id == Recording.id)
                           .group_by(rs.scorecard_id, Recording.operator_id)).all()


def rows_part_scores(session: Session, scope: Scope, f: Filters) -> list:
    rs, part = RecordingScorecard, RecordingScorecardPart
    reviewed = case((or_(rs.reviewed_at.is_not(None), part.changed), 1), else_=0)
    return session.execute(filtered(scope, f)
                           .with_only_columns(part.scorecard_id, part.kind, part.name, func.count(part.score),
                                              func.avg(part.score), func.sum(reviewed),
                                              func.sum(case((part.changed, 1), else_=0)), maintain_column_froms=True)
                           .join(rs, rs.recording_id == Recording.id)
                           .join(part, and_(part.recording_id == rs.recording_id,
                                            part.scorecard_id == rs.scorecard_id))
                           .group_by(part.scorecard_id, part.kind, part.name)).all()


def _best(catalog: Catalog, query, f: Filters) -> tuple[float, int]:
    times, rows = [], 0
    for _ in range(5):
        start = time.perf_counter()
        with catalog.session() as session:
            rows = len(query(session, Scope("acme"), f))
        times.append(time.perf_counter() - start)
    return min(times), rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000, help="scored calls of the account in the month")
    parser.add_argument("--database-url", help="an empty PostgreSQL database (default: SQLite in a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="callscope-scorecard-trends-") as tmp:
        catalog = Catalog(args.database_url or f"sqlite:///{Path(tmp) / 'catalog.db'}")
        catalog.migrate()
        rng = random.Random(43)
        start = time.perf_counter()
        _fill(catalog, args.calls, "acme", 1, rng)
        _fill(catalog, args.calls, "other", args.calls + 1, rng)
        if catalog.dialect == "postgresql":
            with catalog.connect() as conn:
                conn.exec_driver_sql("ANALYZE")
        with catalog.session() as session:
            sums = session.scalar(select(func.count()).select_from(TrendScoreDay))
        print(f"{catalog.url.get_backend_name()}: {2 * args.calls} calls, {2 * args.calls * 15} parts and their "
              f"{sums} daily sums written in {time.perf_counter() - start:.1f} s", flush=True)
        month = Filters(analysed=True, created_from=START, created_to=START + timedelta(days=30))
        one = Filters(analysed=True, operator_id=7, created_from=START, created_to=START + timedelta(days=30))
        for label, rows_query, sums_query in (("per day", rows_call_scores, trends.score_days),
                                              ("per agent", rows_agent_scores, trends.agent_scores),
                                              ("per part", rows_part_scores, trends.part_scores)):
            for what, f in (("the month", month), ("one operator", one)):
                rows_s, rows = _best(catalog, rows_query, f)
                sums_s, found = _best(catalog, sums_query, f)
                print(f"{label:<9} {what:<13} rows {rows_s * 1000:8.1f} ms ({rows} rows)   "
                      f"sums {sums_s * 1000:7.1f} ms ({found} rows)", flush=True)
        catalog.dispose()


if __name__ == "__main__":
    main()
