"""The account's trends at 1,000,000 recordings: the trends query's time on SQLite and PostgreSQL, read from the
per-day sums (callscope/catalog/trends.py: the days, the goals' days, the trackers' days and the projects' calls they
are shares of) beside the baseline of adding up the same figures from the recordings'
rows at query time (the list's own query grouped per day, as a first version did), and the Trends page's weight and
time.

The catalog is a scratch one: a SQLite file under /tmp, and a PostgreSQL database this script creates and drops on
the server of ``--postgres-url``. It is migrated (the real schema), its recordings' indexes are dropped, and
``--recordings`` analysed calls are bulk loaded (SQLite: executemany in one transaction; PostgreSQL: COPY), spread
over a year, ids in time order as uploads give them: half of them in account ``acme`` (5 projects of 3 goals and 2
trackers, 20 operators), the rest in 9 other accounts; each with its figures, 3 goals met or not, and the trackers it
matched (the first 30 % of calls, the second 10 %, each at one moment). The indexes are built again,
then the sums, by the code that keeps them (callscope.catalog.trend_sums.contribute, 5,000 recordings a
transaction). PostgreSQL gets ``VACUUM ANALYZE`` after the load, as autovacuum would; SQLite gets nothing (callscope
never runs ANALYZE there).

A query is what the Trends page runs for one scope and period: the days and the goals' days, with the filters the
service builds (callscope.services.trends.trend_filters); its time is both together, ``--runs`` times after two
unmeasured runs. The page is GET /trends of a signed-in member of ``acme`` on an embedded runtime over the same
catalog (in process, through its ASGI app): its HTML's bytes (and gzipped, as served), the stylesheet beside it
(the page has no script), and its time.

    .venv/bin/python -P benchmarks/trends.py [--recordings 1000000] [--runs 20] [--database sqlite,postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import httpx
from sqlalchemy import Date, case, cast, create_engine, func, literal_column, make_url, text

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from callscope.analysis.result import EMOTIONS  # noqa: E402
from callscope.api.app import create_app  # noqa: E402
from callscope.api.pages.web import ASSETS, SESSION_COOKIE  # noqa: E402
from callscope.catalog import member_sessions, trend_sums  # noqa: E402
from callscope.catalog import trends as trend_rows  # noqa: E402
from callscope.catalog.db import Catalog  # noqa: E402
from callscope.catalog.recordings import Filters, Scope, filtered  # noqa: E402
from callscope.catalog.tables import Recording, RecordingGoal, RecordingTracker, SignInLink  # noqa: E402
from callscope.config import Settings  # noqa: E402
from callscope.runtime import Runtime  # noqa: E402
from callscope.services import accounts, member_auth, operators, projects, trends  # noqa: E402
from callscope.services.context import Principal  # noqa: E402

LAST_DAY = date(2031, 6, 30)
FIRST = datetime(2030, 7, 1, tzinfo=UTC)
YEAR_S = (datetime(2031, 7, 1, tzinfo=UTC) - FIRST).total_seconds()
PROJECTS, OPERATORS, GOALS, OTHER_ACCOUNTS = 5, 20, 3, 9
TRACKERS = {"Refund": 0.3, "Lawyer": 0.1}  # each project's trackers: the share of calls that match each
BATCH = 20_000
COLUMNS = ("id", "public_id", "account", "project_id", "operator_id", "name", "language", "status", "progress",
           "duration_ms", "audio_format", "size_bytes", "dialogues_count", "goals_evaluated", "pauses_detected",
           "processing_restricted", "conversation_id", "created_at", "updated_at", "pause_compliance",
           "agent_talk_ms", "customer_talk_ms", "emotion")
TRACKER_COLUMNS = "recording_id, tracker, position, start_ms, end_ms"
# (name, project_id, operator_id, days): the scopes and periods timed, all of account acme
CASES = [("account, 30 days (by day)", None, None, 30), ("project, 90 days (by week)", 1, None, 90),
         ("operator, 365 days (by month)", None, 7, 365), ("account, 365 days (by month)", None, None, 365)]


def rows(count: int, rng: random.Random):
    """Batches of (recording rows, their goal rows, their tracker rows); created_at ascends with the id."""
    emotions = [*EMOTIONS, None]
    for start in range(0, count, BATCH):
        batch, goals, tracked = [], [], []
        stamps = sorted(rng.random() for _ in range(min(BATCH, count - start)))
        for offset, fraction in enumerate(stamps):
            rid = start + offset + 1
            at = FIRST + timedelta(seconds=(start + fraction * len(stamps)) / count * YEAR_S)
            acme = rng.random() < 0.5
            status = "completed" if rng.random() < 0.97 else rng.choice(("failed", "processing"))  # analysed before
            public_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            agent = rng.randrange(10_000, 400_000)
            batch.append((rid, public_id, "acme" if acme else f"tenant-{rng.randrange(OTHER_ACCOUNTS):02d}",
                          rng.randrange(1, PROJECTS + 1), rng.randrange(1, OPERATORS + 1) if rng.random() < 0.95
                          else None, f"Call {rid}", "en", status, 100, 300_000, "wav", 1000, 40, True, 3, False,
                          public_id, at, at, rng.choice((0.0, 0.25, 0.5, 0.75, 1.0)), agent,
                          rng.randrange(10_000, 400_000), rng.choice(emotions)))
            goals += [(rid, goal, rng.random() < 0.7) for goal in range(1, GOALS + 1)]
            tracked += [(rid, name, 3, 15_000, 19_000) for name, share in TRACKERS.items() if rng.random() < share]
        yield batch, goals, tracked


def sqlite_value(value):
    if isinstance(value, datetime):  # as UTCDateTime stores it there
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    return int(value) if isinstance(value, bool) else value


def load(catalog: Catalog, count: int) -> float:
    rng, started = random.Random(7), time.perf_counter()
    raw = catalog.engine.raw_connection()
    try:
        cursor = raw.cursor()
        if catalog.dialect == "sqlite":
            marks = ", ".join("?" for _ in COLUMNS)
            for batch, goals, tracked in rows(count, rng):
                cursor.executemany(f"INSERT INTO recordings ({', '.join(COLUMNS)}) VALUES ({marks})",
                                   [tuple(map(sqlite_value, r)) for r in batch])
                cursor.executemany("INSERT INTO recording_goals (recording_id, goal_id, met) VALUES (?, ?, ?)",
                                   [(r, g, int(m)) for r, g, m in goals])
                cursor.executemany(f"INSERT INTO recording_trackers ({TRACKER_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                                   tracked)
        else:
            for batch, goals, tracked in rows(count, rng):
                with cursor.copy(f"COPY recordings ({', '.join(COLUMNS)}) FROM STDIN") as copy:
                    for r in batch:
                        copy.write_row(r)
                with cursor.copy("COPY recording_goals (recording_id, goal_id, met) FROM STDIN") as copy:
                    for r in goals:
                        copy.write_row(r)
                with cursor.copy(f"COPY recording_trackers ({TRACKER_COLUMNS}) FROM STDIN") as copy:
                    for r in tracked:
                        copy.write_row(r)
        raw.commit()
    finally:
        raw.close()
    return time.perf_counter() - started


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """p50 and p95 in ms."""
    for _ in range(2):
        fn()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[max(0, round(0.95 * runs) - 1)]


def from_rows(session, scope: Scope, f: Filters) -> list:
    """The baseline: the same figures added up from the recordings' rows at query time."""
    day = (func.substr(Recording.created_at, 1, 10) if session.get_bind().dialect.name == "sqlite"
           else cast(func.timezone(literal_column("'UTC'"), Recording.created_at), Date))
    days = session.execute(filtered(scope, f).with_only_columns(
        day, Recording.emotion, func.count(), func.sum(Recording.pause_compliance),
        func.sum(Recording.agent_talk_ms), func.sum(Recording.customer_talk_ms), maintain_column_froms=True,
    ).group_by(day, Recording.emotion)).all()
    goals = session.execute(filtered(scope, f).with_only_columns(
        day, Recording.project_id, RecordingGoal.goal_id, func.count(), func.sum(case((RecordingGoal.met, 1), else_=0)),
        maintain_column_froms=True).join(RecordingGoal, RecordingGoal.recording_id == Recording.id)
        .group_by(day, Recording.project_id, RecordingGoal.goal_id)).all()
    projects = session.execute(filtered(scope, f).with_only_columns(
        day, Recording.project_id, func.count(), maintain_column_froms=True).group_by(day, Recording.project_id)).all()
    tracked = session.execute(filtered(scope, f).with_only_columns(
        day, Recording.project_id, RecordingTracker.tracker, func.count(func.distinct(Recording.id)),
        maintain_column_froms=True).join(RecordingTracker, RecordingTracker.recording_id == Recording.id)
        .group_by(day, Recording.project_id, RecordingTracker.tracker)).all()
    return days + goals + projects + tracked


def sums(session, scope: Scope, f: Filters) -> list:
    """What the Trends page reads (callscope/services/trends.py): every project has trackers here."""
    shown = [f.project_id] if f.project_id else list(range(1, PROJECTS + 1))
    return [*trend_rows.days(session, scope, f), *trend_rows.goal_days(session, scope, f),
            *trend_rows.project_days(session, scope, f, shown), *trend_rows.tracker_days(session, scope, f)]


def query(catalog: Catalog, read, project_id: int | None, operator_id: int | None,
          days: int) -> Callable[[], int]:
    period = trends.Period(LAST_DAY - timedelta(days=days - 1), LAST_DAY)
    f = trends.trend_filters(project_id, operator_id, period)

    def run() -> int:
        with catalog.session() as session:
            return len(read(session, Scope("acme"), f))
    return run


def calls(catalog: Catalog, project_id: int | None, operator_id: int | None, days: int) -> int:
    period = trends.Period(LAST_DAY - timedelta(days=days - 1), LAST_DAY)
    with catalog.session() as session:
        return sum(d.calls for d in trend_rows.days(session, Scope("acme"),
                                                     trends.trend_filters(project_id, operator_id, period)))


def measure(catalog: Catalog, read, runs: int) -> dict[str, tuple[float, float, int]]:
    """Per case: p50, p95 ms and the rows the query read back."""
    out = {}
    for name, project_id, operator_id, days in CASES:
        run = query(catalog, read, project_id, operator_id, days)
        p50, p95 = timed(run, runs)
        out[name] = (p50, p95, run())
    return out


def build(catalog: Catalog) -> float:
    started = time.perf_counter()
    with catalog.engine.begin() as conn:
        for index in Recording.__table__.indexes:
            index.create(conn)
    if catalog.dialect == "postgresql":  # statistics, and the visibility map index-only scans need
        with catalog.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE recordings, recording_goals, recording_trackers")
    return time.perf_counter() - started


def add_up(catalog: Catalog, count: int) -> float:
    """The sums, by the code that keeps them, 5,000 recordings a transaction."""
    started = time.perf_counter()
    for first in range(1, count + 1, 5000):
        with catalog.session(write=True) as session:
            trend_sums.contribute(session, range(first, min(first + 5000, count + 1)))
    if catalog.dialect == "postgresql":
        with catalog.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE trend_days, trend_goal_days, trend_tracker_days")
    return time.perf_counter() - started


def drop(catalog: Catalog) -> None:
    with catalog.engine.begin() as conn:
        for index in Recording.__table__.indexes:
            conn.exec_driver_sql(f"DROP INDEX {index.name}")


async def page(url: str, runs: int) -> dict[str, tuple[float, float, int, int]]:
    """GET /trends as a member of acme: p50, p95 ms, HTML bytes, bytes sent (gzip)."""
    with tempfile.TemporaryDirectory() as folder:
        runtime = Runtime(Settings(data_dir=Path(folder), database_url=url, log_level="WARNING"))
        await runtime.start(background=False)
        try:
            ctx = runtime.ctx
            admin = Principal(account="acme", key_name="bench", key_uid="bench", permissions=frozenset({"write"}))
            for n in range(PROJECTS):
                await projects.create_project(ctx, admin, {"name": f"Project {n + 1}", "language": "en", "goals": [
                    {"id": g, "name": f"Goal {g}", "description": "What the call must achieve."}
                    for g in range(1, GOALS + 1)], "trackers": [{"name": name, "query": name.lower()}
                                                                 for name in TRACKERS]})
            for n in range(OPERATORS):
                await operators.create_operator(ctx, admin, {"name": f"Operator {n + 1}"})
            await accounts.add_member(ctx, "acme", "ana@example.com", "Ana")
            token, now = secrets.token_urlsafe(32), ctx.clock()
            await ctx.catalog.write(member_sessions.insert_link, SignInLink(
                token_hash=hashlib.sha256(token.encode()).hexdigest(), email="ana@example.com", next_path="/trends",
                created_at=now, expires_at=now + timedelta(minutes=5)))
            session, _ = await member_auth.redeem_link(ctx, token)
            app = create_app(ctx, runtime.usage, runtime.limiter)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench.test",
                                         cookies={SESSION_COOKIE: session},
                                         headers={"Accept-Encoding": "gzip"}) as client:
                out = {}
                for name, project_id, operator_id, days in CASES:
                    params = {"start": str(LAST_DAY - timedelta(days=days - 1)), "end": str(LAST_DAY),
                              **({"project_id": project_id} if project_id else {}),
                              **({"operator_id": operator_id} if operator_id else {})}
                    samples, resp = [], None
                    for n in range(runs + 2):
                        started = time.perf_counter()
                        resp = await client.get("/trends", params=params)
                        if n >= 2:
                            samples.append((time.perf_counter() - started) * 1000)
                        assert resp.status_code == 200, resp.text[:500]
                    samples.sort()
                    out[name] = (statistics.median(samples), samples[max(0, round(0.95 * runs) - 1)],
                                 len(resp.content), resp.num_bytes_downloaded)
                return out
        finally:
            await runtime.stop()


class ScratchPostgres:
    """A scratch database created from (and dropped through) the maintenance database."""

    def __init__(self, admin_url: str):
        self.admin_url = make_url(admin_url)
        self.name = f"callscope_trends_bench_{uuid.uuid4().hex[:8]}"
        self.url = self.admin_url.set(database=self.name).render_as_string(hide_password=False)
        self._engine = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")

    def __enter__(self) -> str:
        with self._engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{self.name}"'))
        return self.url

    def __exit__(self, *exc) -> None:
        with self._engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))
        self._engine.dispose()


def bench(url: str, args: argparse.Namespace) -> None:
    catalog = Catalog(url)
    try:
        catalog.migrate()
        drop(catalog)
        loaded = load(catalog, args.recordings)
        built = build(catalog)
        summed = add_up(catalog, args.recordings)
        baseline = measure(catalog, from_rows, max(3, args.runs // 4))
        indexed = measure(catalog, sums, args.runs)
        counted = {name: calls(catalog, p, o, d) for name, p, o, d in CASES}
    finally:
        catalog.dispose()
    pages = asyncio.run(page(url, max(3, args.runs // 2)))
    print(f"\n{catalog.dialect}: {args.recordings:,} recordings ({args.recordings * GOALS:,} goal rows, trackers "
          f"matched by {' and '.join(f'{share:.0%}' for share in TRACKERS.values())}) loaded in "
          f"{loaded:.0f} s, indexed in {built:.0f} s, summed per day in {summed:.0f} s")
    print("| query (account acme) | calls | baseline: from the rows, p50 / p95 ms | sums per day: p50 / p95 ms "
          "| rows read |")
    print("|---|---:|---:|---:|---:|")
    for name, (p50, p95, rows_read) in indexed.items():
        b50, b95, _ = baseline[name]
        print(f"| {name} | {counted[name]:,} | {b50:.0f} / {b95:.0f} | {p50:.1f} / {p95:.1f} | {rows_read:,} |")
    css = len(ASSETS["pages.css"].body)
    print(f"\n| Trends page, GET /trends in process ({css:,} B of pages.css beside it, no script) | p50 / p95 ms "
          "| HTML bytes (gzip as sent) |")
    print("|---|---:|---:|")
    for name, (p50, p95, size, sent) in pages.items():
        print(f"| {name} | {p50:.0f} / {p95:.0f} | {size:,} ({sent:,}) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recordings", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--database", default="sqlite,postgres")
    parser.add_argument("--postgres-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    for database in args.database.split(","):
        if database == "sqlite":
            with tempfile.TemporaryDirectory(prefix="trends-bench-", dir="/tmp") as folder:
                bench(f"sqlite:///{folder}/catalog.db", args)
        else:
            with ScratchPostgres(args.postgres_url) as url:
                bench(url, args)


if __name__ == "__main__":
    main()
