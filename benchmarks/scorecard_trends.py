"""How long the team's scorecard figures on Trends take to read (callscope/catalog/trends.py `call_scores`,
`agent_scores` and `part_scores`, the queries of a Trends page with a QA form) over a month of scored calls.

It writes N scored calls of one account straight into a fresh catalog (default SQLite in a temporary directory;
--database-url for PostgreSQL: an empty database), spread over 30 days, 20 operators and one form of 3 sections and
12 questions (15 `recording_scorecard_parts` rows a call, one in ten reviewed, one answer in twenty changed), plus as
many calls of another account on the same days; then times each query over the month, and over one operator, as
the page asks them (best of 5).

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

from sqlalchemy import insert

from callscope.catalog import trends
from callscope.catalog.db import Catalog
from callscope.catalog.recordings import Filters, Scope
from callscope.catalog.tables import Recording, RecordingScorecard, RecordingScorecardPart

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
        print(f"{catalog.url.get_backend_name()}: {2 * args.calls} calls, {2 * args.calls * 15} parts written in "
              f"{time.perf_counter() - start:.1f} s", flush=True)
        month = Filters(analysed=True, created_from=START, created_to=START + timedelta(days=30))
        one = Filters(analysed=True, operator_id=7, created_from=START, created_to=START + timedelta(days=30))
        for label, query in (("call_scores", trends.call_scores), ("agent_scores", trends.agent_scores),
                             ("part_scores", trends.part_scores)):
            for what, f in (("the month", month), ("one operator", one)):
                seconds, rows = _best(catalog, query, f)
                print(f"{label:<13} {what:<13} {seconds * 1000:8.1f} ms  ({rows} rows)")
        catalog.dispose()


if __name__ == "__main__":
    main()
