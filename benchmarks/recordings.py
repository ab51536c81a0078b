"""Benchmark of recordings: one large streamed upload, and the recordings list at scale.

What it measures
----------------
The script starts the embedded server (`callscope serve`) on a free port of 127.0.0.1 with a fresh
temporary data directory (and, with ``--database postgres``, a scratch PostgreSQL database that it
creates and drops), creates an API key with the CLI, then through the REST API one project, 5 tags
and 3 operators.

1. Upload. It writes a valid WAV of ``--upload-mb`` MB (1 MB = 1,000,000 bytes, like the server's
   limits) with ``tests/audio_samples.make_large_wav`` and uploads it once to
   ``POST /api/v1/public/recordings``. The multipart body is a generator (the form fields, the file
   in 1 MiB chunks, the closing boundary) with an explicit boundary and Content-Length, so the client
   never holds the file either. A thread samples the resident memory (VmRSS of /proc/<pid>/status,
   summed over the server and its child processes, if any) every 50 ms. It reports the throughput
   (bytes / time from the first body byte sent to the response), how that time splits between
   sending the body and the server finishing (probe, fsync, commit), the server's RSS before, peak
   during and after (1 s after the response), its lifetime VmHWM, the client's RSS, and the status,
   which must be 201. The server runs with ``CALLSCOPE_UPLOAD_LIMITS_MB`` raised for WAV (2000 MB).

2. Listing at scale. It seeds ``--recordings`` rows of the project straight into the catalog with
   SQLAlchemy Core bulk inserts (executemany, batches of 5000): created_at spread over a year, ids in
   created_at order as uploads would give them, UUIDv7-like public ids, statuses, durations,
   formats, the 3 operators, ~10% of the rows tagged with one of the 5 tags; blob_key is NULL.
   PostgreSQL then gets ``VACUUM ANALYZE`` (what autovacuum does shortly after such a load: statistics,
   and the visibility map that lets count(*) use index-only scans); SQLite gets
   nothing (callscope never runs ANALYZE there). Then, on the running server, for each of

   * first page:  ``GET /recordings?page=1&per_page=20``
   * deep page:   ``GET /recordings?page=<total/20 - 10>&per_page=20`` (OFFSET near the end)
   * tag filter:  ``GET /recordings?tag_ids[]=<one tag>``
   * combined:    ``GET /recordings?status=completed&called_from=..&called_to=..`` (a 3-month window)

   it sends ``--warmup`` unmeasured requests, then ``--requests`` sequential requests on one
   keep-alive connection, checks every status, ``meta.total_count`` (against the counts of the
   generated data) and the number of items, and reports p50/p90/p99/max latency (sending the request
   to having read the whole body). For a query whose p50 exceeds ``--explain-ms`` it prints the
   plan of the SQL the API issues (built with the catalog's own ``filtered``; the count and the
   page query): ``EXPLAIN QUERY PLAN`` on SQLite, ``EXPLAIN (ANALYZE, BUFFERS)`` on PostgreSQL.

3. The machine and the exact command.

How to run
----------
From the repository root::

    .venv/bin/python benchmarks/recordings.py
    .venv/bin/python benchmarks/recordings.py --database postgres --upload-mb 256

PostgreSQL: ``--postgres-url`` (default ``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``)
is the maintenance database the scratch ``callscope_bench_<pid>`` database is created from and
dropped through. The server inherits the environment, except CALLSCOPE_DATA_DIR, CALLSCOPE_LOG_LEVEL,
CALLSCOPE_RATE_LIMIT_ENABLED, CALLSCOPE_UPLOAD_LIMITS_MB and CALLSCOPE_DATABASE_URL. ``--keep`` keeps
the temporary directory (server log, blobs, SQLite catalog) and the scratch database. Linux only.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import platform
import random
import re
import shlex
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, func, insert, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import ClauseElement, Executable

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path):
    """Import a sibling file as a module (benchmarks/ and tests/ are not packages)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


api_load = _load("callscope_bench_api_load", Path(__file__).resolve().parent / "api_load.py")
audio_samples = _load("callscope_bench_audio_samples", ROOT / "tests" / "audio_samples.py")

from callscope.catalog.db import Catalog  # noqa: E402
from callscope.catalog.recordings import Filters, Scope, filtered  # noqa: E402
from callscope.catalog.tables import Recording, RecordingTag  # noqa: E402

API = api_load.API
BenchmarkError = api_load.BenchmarkError
percentile = api_load.percentile
proc_status_kib = api_load.proc_status_kib

MB = 1_000_000
UPLOAD_LIMITS_MB = '{"mp3":100,"m4a":100,"ogg":100,"webm":100,"wav":2000,"flac":2000}'
ACCOUNT = "default"  # the account of api_load.Server.create_key
BATCH = 5000
TAGS = 5
OPERATORS = 3
SAMPLE_EVERY_S = 0.05
DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def say(line: str = "") -> None:
    print(line, flush=True)


# ----- memory sampling ------------------------------------------------------------------------

def process_tree(pid: int) -> list[int]:
    """pid and all its descendants (from /proc/<pid>/task/<tid>/children)."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                try:
                    todo += [int(c) for c in (task / "children").read_text().split()]
                except OSError:
                    pass
        except OSError:
            pass
    return out


def tree_rss_kib(pid: int) -> int:
    return sum(proc_status_kib(p, "VmRSS") or 0 for p in process_tree(pid))


class RssSampler(threading.Thread):
    """Samples the RSS of a process tree (and of this process) every SAMPLE_EVERY_S seconds."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, int, int]] = []  # (monotonic, server KiB, client KiB)
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.samples.append((time.monotonic(), tree_rss_kib(self.pid), proc_status_kib(os.getpid(), "VmRSS") or 0))
            self._halt.wait(SAMPLE_EVERY_S)

    def stop(self) -> None:
        self._halt.set()
        self.join()

    def peak(self, start: float, end: float) -> tuple[int, int]:
        window = [s for s in self.samples if start <= s[0] <= end] or self.samples
        return max(s[1] for s in window), max(s[2] for s in window)


def mib(kib: int | None) -> str:
    return "unknown" if kib is None else f"{kib / 1024:.1f} MiB"


# ----- API helpers ----------------------------------------------------------------------------

def expect(response: httpx.Response, statuses: tuple[int, ...], what: str) -> Any:
    if response.status_code not in statuses:
        raise BenchmarkError(f"{what}: expected {statuses}, got {response.status_code}: {response.text[:500]}")
    return response.json()


@dataclass
class Fixture:
    project_id: int
    tag_ids: list[int]
    operator_ids: list[int]


def create_fixture(client: httpx.Client) -> Fixture:
    project = expect(client.post("/projects", json={"name": "Bench recordings", "language": "en"}),
                     (201,), "POST /projects")["data"]
    tags = [expect(client.post("/tags", json={"name": f"bench-tag-{i}", "project_id": project["id"]}),
                   (201,), "POST /tags")["data"]["id"] for i in range(TAGS)]
    operators = [expect(client.post("/operators", json={"name": f"Bench Operator {i}", "external_id": f"bench-op-{i}"}),
                        (200, 201), "POST /operators")["data"]["id"] for i in range(OPERATORS)]
    return Fixture(project["id"], tags, operators)


# ----- 1. upload ------------------------------------------------------------------------------

@dataclass
class UploadResult:
    size: int
    make_s: float
    status: int
    total_s: float
    send_s: float
    finish_s: float
    rss_before: int
    rss_peak: int
    rss_after: int
    hwm: int | None
    client_before: int
    client_peak: int
    recording: dict[str, Any]


class MultipartFile:
    """A multipart/form-data body streamed from disk: form fields, then the file, then the boundary."""

    def __init__(self, path: Path, fields: dict[str, str], filename: str, content_type: str, chunk: int = 1 << 20):
        self.path, self.chunk = path, chunk
        self.boundary = f"callscope-bench-{uuid.uuid4().hex}"
        b = self.boundary
        pre = "".join(f'--{b}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n' for k, v in fields.items())
        pre += (f'--{b}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
                f"Content-Type: {content_type}\r\n\r\n")
        self.preamble, self.closing = pre.encode(), f"\r\n--{b}--\r\n".encode()
        self.length = len(self.preamble) + path.stat().st_size + len(self.closing)
        self.first_byte: float | None = None
        self.last_byte: float | None = None

    @property
    def headers(self) -> dict[str, str]:
        return {"Content-Type": f"multipart/form-data; boundary={self.boundary}", "Content-Length": str(self.length)}

    def __iter__(self) -> Iterator[bytes]:
        self.first_byte = time.perf_counter()
        yield self.preamble
        with self.path.open("rb") as f:
            while chunk := f.read(self.chunk):
                yield chunk
        yield self.closing
        self.last_byte = time.perf_counter()


def upload(server, key: str, fixture: Fixture, workdir: Path, size_mb: int) -> UploadResult:
    wav = workdir / "bench.wav"
    started = time.perf_counter()
    audio_samples.make_large_wav(wav, size_mb * MB)
    make_s = time.perf_counter() - started
    size = wav.stat().st_size
    body = MultipartFile(wav, {"project_id": str(fixture.project_id), "external_id": "bench-upload"},
                         "bench.wav", "audio/wav")
    time.sleep(0.5)  # let the server settle after the set-up requests
    rss_before = tree_rss_kib(server.pid)
    client_before = proc_status_kib(os.getpid(), "VmRSS") or 0
    sampler = RssSampler(server.pid)
    sampler.start()
    try:
        with httpx.Client(base_url=server.base_url + API, headers={"Authorization": f"Bearer {key}"},
                          timeout=httpx.Timeout(900.0, connect=10.0)) as client:
            response = client.post("/recordings", content=iter(body), headers=body.headers)
            answered = time.perf_counter()
            answered_mono = time.monotonic()
        time.sleep(1.0)
        rss_after = tree_rss_kib(server.pid)
    finally:
        sampler.stop()
    wav.unlink()
    if body.first_byte is None or body.last_byte is None:
        raise BenchmarkError(f"upload: the body was not sent completely (status {response.status_code})")
    sent_mono = answered_mono - (answered - body.first_byte)
    rss_peak, client_peak = sampler.peak(sent_mono, answered_mono)
    recording = expect(response, (201,), "POST /recordings (upload)")["data"]
    server.check_alive()
    return UploadResult(size=size, make_s=make_s, status=response.status_code, total_s=answered - body.first_byte,
                        send_s=body.last_byte - body.first_byte, finish_s=answered - body.last_byte,
                        rss_before=rss_before, rss_peak=rss_peak, rss_after=rss_after,
                        hwm=proc_status_kib(server.pid, "VmHWM"), client_before=client_before,
                        client_peak=client_peak, recording=recording)


def report_upload(u: UploadResult) -> list[str]:
    return [
        f"upload (CALLSCOPE_UPLOAD_LIMITS_MB='{UPLOAD_LIMITS_MB}', i.e. WAV limit raised from 500 to 2000 MB)",
        f"  file: WAV, {u.size:,} bytes ({u.size / MB:.0f} MB, {u.recording.get('duration_ms', 0) / 3_600_000:.1f} h "
        f"of 16 kHz mono PCM), written by make_large_wav in {u.make_s:.1f} s",
        f"  response: {u.status} (recording {u.recording.get('public_id')}, "
        f"size_bytes={u.recording.get('size_bytes')})",
        f"  throughput: {u.size / MB / u.total_s:.1f} MB/s ({u.total_s:.2f} s from first body byte to response: "
        f"{u.send_s:.2f} s sending the body, {u.finish_s:.2f} s after the last byte until the response)",
        f"  server RSS: before {mib(u.rss_before)}, peak during {mib(u.rss_peak)} "
        f"(sampled every {SAMPLE_EVERY_S * 1000:.0f} ms), after {mib(u.rss_after)} (1 s after the response); "
        f"lifetime VmHWM {mib(u.hwm)}",
        f"  client RSS: before {mib(u.client_before)}, peak during {mib(u.client_peak)} (streaming generator body)",
    ]


# ----- 2. seeding -----------------------------------------------------------------------------

STATUS_WEIGHTS = (("completed", 80), ("pending", 10), ("processing", 4), ("failed", 6))
FORMATS = (("mp3", 60), ("wav", 20), ("m4a", 15), ("ogg", 5))


def uuid7_at(moment: datetime, rng: random.Random) -> str:
    ms = int(moment.timestamp() * 1000)
    rand = rng.getrandbits(74)
    value = ((ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | ((rand >> 62) & 0xFFF) << 64 | 0b10 << 62
             | (rand & ((1 << 62) - 1)))
    return str(uuid.UUID(int=value))


@dataclass
class Seeded:
    rows: int
    tag_rows: int
    per_tag: dict[int, int]
    statuses: dict[str, int]
    window: tuple[datetime, datetime]  # the combined filter's called_at window
    completed_in_window: int
    insert_s: float
    tags_s: float
    analyze_s: float | None


def seed(catalog: Catalog, fixture: Fixture, count: int, now: datetime, rng: random.Random) -> Seeded:
    statuses, s_weights = zip(*STATUS_WEIGHTS, strict=True)
    formats, f_weights = zip(*FORMATS, strict=True)
    year = 365 * 86400
    # created_at over the past year (up to an hour ago), ascending so ids follow time like real uploads
    offsets = sorted((rng.randrange(3600, year) for _ in range(count)), reverse=True)
    window = (now - timedelta(days=180), now - timedelta(days=90))
    per_tag = {t: 0 for t in fixture.tag_ids}
    status_counts = {s: 0 for s in statuses}
    completed_in_window = 0
    tagged: dict[str, int] = {}  # external_id -> tag id
    rows: list[dict[str, Any]] = []
    for i, offset in enumerate(offsets):
        created = now - timedelta(seconds=offset)
        called = created - timedelta(seconds=rng.randrange(60, 3 * 86400))
        status = rng.choices(statuses, s_weights)[0]
        status_counts[status] += 1
        if status == "completed" and window[0] <= called <= window[1]:
            completed_in_window += 1
        fmt = rng.choices(formats, f_weights)[0]
        duration = rng.randrange(5_000, 1_800_000)
        public_id = uuid7_at(created, rng)
        external_id = f"seed-{i:07d}"
        if rng.random() < 0.10:
            tag = rng.choice(fixture.tag_ids)
            tagged[external_id] = tag
            per_tag[tag] += 1
        rows.append({
            "public_id": public_id, "account": ACCOUNT, "project_id": fixture.project_id,
            "name": f"Call {i:07d}.{fmt}", "external_id": external_id,
            "operator_id": rng.choice(fixture.operator_ids) if rng.random() < 0.9 else None,
            "called_at": called, "language": "en", "recording_source": rng.choice(("pbx", "crm", None)),
            "status": status, "status_reason": "decode error" if status == "failed" else None,
            "stage": "done" if status == "completed" else None,
            "progress": 100 if status == "completed" else (50 if status == "processing" else 0),
            "duration_ms": duration, "audio_format": fmt, "size_bytes": duration * 16,
            "original_filename": f"call-{i:07d}.{fmt}", "blob_key": None,
            "dialogues_count": rng.randrange(0, 40) if status == "completed" else 0,
            "goals_evaluated": status == "completed", "pauses_detected": rng.randrange(0, 10),
            "processing_restricted": rng.random() < 0.01, "conversation_id": public_id,
            "created_at": created, "updated_at": created,
        })
    table, tag_table = Recording.__table__, RecordingTag.__table__
    started = time.perf_counter()
    progress = api_load.Progress("seeding recordings (batches)", -(-count // BATCH))
    for start in range(0, count, BATCH):
        with catalog.connect() as conn:
            conn.execute(insert(table), rows[start:start + BATCH])
        progress.advance()
    insert_s = time.perf_counter() - started
    started = time.perf_counter()
    with catalog.connect() as conn:
        ids = dict(conn.execute(select(table.c.external_id, table.c.id)
                                .where(table.c.project_id == fixture.project_id,
                                       table.c.external_id.like("seed-%"))).all())
    tag_rows = [{"recording_id": ids[ext], "tag_id": tag} for ext, tag in tagged.items()]
    for start in range(0, len(tag_rows), BATCH):
        with catalog.connect() as conn:
            conn.execute(insert(tag_table), tag_rows[start:start + BATCH])
    tags_s = time.perf_counter() - started
    analyze_s = None
    if catalog.dialect == "postgresql":
        started = time.perf_counter()
        with catalog.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE recordings, recording_tags")
        analyze_s = time.perf_counter() - started
    return Seeded(rows=count, tag_rows=len(tag_rows), per_tag=per_tag, statuses=status_counts, window=window,
                  completed_in_window=completed_in_window, insert_s=insert_s, tags_s=tags_s, analyze_s=analyze_s)


# ----- 2. listing -----------------------------------------------------------------------------

@dataclass
class Query:
    label: str
    params: list[tuple[str, str]]
    filters: Filters
    expected_total: int
    expected_items: int
    offset: int


@dataclass
class Timing:
    query: Query
    latencies_ms: list[float]
    body_bytes: int

    def pct(self, p: float) -> float:
        return percentile(self.latencies_ms, p)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def build_queries(fixture: Fixture, seeded: Seeded, uploaded: int) -> list[Query]:
    total = seeded.rows + uploaded
    deep_page = max(1, total // 20 - 10)
    tag = max(seeded.per_tag, key=lambda t: seeded.per_tag[t])  # the most used tag
    low, high = seeded.window

    def items(expected: int, page: int) -> int:
        return max(0, min(20, expected - (page - 1) * 20))

    return [
        Query("first page", [("page", "1"), ("per_page", "20")], Filters(), total, items(total, 1), 0),
        Query(f"deep page {deep_page}", [("page", str(deep_page)), ("per_page", "20")], Filters(), total,
              items(total, deep_page), (deep_page - 1) * 20),
        Query(f"tag filter ({seeded.per_tag[tag]} rows)", [("tag_ids[]", str(tag)), ("per_page", "20")],
              Filters(tag_ids=[tag]), seeded.per_tag[tag], items(seeded.per_tag[tag], 1), 0),
        Query("status+called range", [("status", "completed"), ("called_from", iso(low)), ("called_to", iso(high)),
                                      ("per_page", "20")],
              Filters(status="completed", called_from=low, called_to=high), seeded.completed_in_window,
              items(seeded.completed_in_window, 1), 0),
    ]


def measure(client: httpx.Client, query: Query, requests: int, warmup: int) -> Timing:
    def one() -> tuple[float, int]:
        start = time.perf_counter()
        response = client.get("/recordings", params=query.params)
        elapsed = (time.perf_counter() - start) * 1000
        body = expect(response, (200,), f"GET /recordings ({query.label})")
        got_total, got_items = body["meta"]["total_count"], len(body["data"])
        if got_total != query.expected_total or got_items != query.expected_items:
            raise BenchmarkError(f"GET /recordings ({query.label}): total_count {got_total}, {got_items} items; "
                                 f"expected {query.expected_total}, {query.expected_items}")
        return elapsed, len(response.content)

    for _ in range(warmup):
        one()
    latencies, size = [], 0
    progress = api_load.Progress(f"GET /recordings {query.label}", requests)
    for _ in range(requests):
        elapsed, size = one()
        latencies.append(elapsed)
        progress.advance()
    return Timing(query, latencies, size)


def report_listing(timings: list[Timing], requests: int) -> list[str]:
    header = ("query", "total_count", "items", "p50 ms", "p90 ms", "p99 ms", "max ms", "resp KB")
    rows = [header] + [(t.query.label, str(t.query.expected_total), str(t.query.expected_items),
                        f"{t.pct(50):.1f}", f"{t.pct(90):.1f}", f"{t.pct(99):.1f}", f"{max(t.latencies_ms):.1f}",
                        f"{t.body_bytes / 1024:.1f}") for t in timings]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return [f"  GET {API}/recordings, {requests} sequential requests each (one keep-alive connection), "
            f"total_count checked on every response:"] + ["  " + line for line in lines]


# ----- EXPLAIN of the SQL the API issues ------------------------------------------------------

class Explain(Executable, ClauseElement):
    """EXPLAIN of a statement, with its bind parameters processed as usual (SQLAlchemy's recipe)."""

    inherit_cache = False

    def __init__(self, statement):
        self.statement = statement


@compiles(Explain, "sqlite")
def _explain_sqlite(element, compiler, **kw):
    return "EXPLAIN QUERY PLAN " + compiler.process(element.statement, **kw)


@compiles(Explain, "postgresql")
def _explain_postgresql(element, compiler, **kw):
    return "EXPLAIN (ANALYZE, BUFFERS) " + compiler.process(element.statement, **kw)


def api_statements(query: Query):
    """The count and page statements of the list (catalog.recordings.page) for an account-wide key."""
    rows = filtered(Scope(ACCOUNT), query.filters)
    count = select(func.count()).select_from(rows.subquery())
    page = rows.order_by(Recording.created_at.desc(), Recording.id.desc()).offset(query.offset).limit(20)
    return (("count", count), ("page", page))


def explain(catalog: Catalog, query: Query) -> list[str]:
    lines = []
    for name, statement in api_statements(query):
        compiled = statement.compile(dialect=catalog.engine.dialect)
        sql = " ".join(str(compiled).split())
        # the 26 columns of recordings make the SQL unreadable: abbreviate them (the plans are unaffected)
        sql = re.sub(r"SELECT recordings\.id(?: AS id)?(?:, recordings\.\w+(?: AS \w+)?)+ FROM",
                     "SELECT <all columns of recordings> FROM", sql)
        lines.append(f"  [{query.label}] {name} query: {sql}")
        lines.append(f"    params: {compiled.params}")
        with catalog.connect() as conn:
            result = conn.execute(Explain(statement)).all()
        if catalog.dialect == "sqlite":  # (id, parent, notused, detail): indent by depth
            depth: dict[int, int] = {0: 0}
            for row in result:
                depth[row[0]] = depth.get(row[1], 0) + 1
                lines.append("    " + "  " * depth[row[0]] + str(row[3]))
        else:
            lines += ["    " + row[0] for row in result]
    return lines


# ----- the run --------------------------------------------------------------------------------

def cpu_line() -> str:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    mem = proc_meminfo_gib()
    return (f"machine: {os.cpu_count()} CPUs ({affinity} usable), {api_load.cpu_model()}; {mem}; "
            f"{platform.system()} {platform.release()}; Python {platform.python_version()}; "
            f"client and server on the same machine")


def proc_meminfo_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
    except OSError:
        pass
    return "RAM unknown"


class ScratchPostgres:
    """A scratch database created from (and dropped through) the maintenance database."""

    def __init__(self, admin_url: str):
        self.admin_url = make_url(admin_url)
        self.name = f"callscope_bench_{os.getpid()}"
        self.url = self.admin_url.set(database=self.name).render_as_string(hide_password=False)
        self._engine = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")

    def create(self) -> None:
        with self._engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{self.name}"'))
            conn.execute(text(f'CREATE DATABASE "{self.name}"'))

    def drop(self) -> None:
        with self._engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))
        self._engine.dispose()

    def server_version(self) -> str:
        with self._engine.connect() as conn:
            return str(conn.execute(text("SHOW server_version")).scalar())


def run(args: argparse.Namespace, server, pg: ScratchPostgres | None) -> None:
    server.env["CALLSCOPE_UPLOAD_LIMITS_MB"] = UPLOAD_LIMITS_MB
    if pg is not None:
        pg.create()
        server.env["CALLSCOPE_DATABASE_URL"] = pg.url
    else:
        server.env.pop("CALLSCOPE_DATABASE_URL", None)
    started = time.perf_counter()
    server.start()
    asyncio.run(server.wait_ready())
    key = server.create_key()
    with httpx.Client(base_url=server.base_url + API, headers={"Authorization": f"Bearer {key}"},
                      timeout=httpx.Timeout(120.0)) as client:
        fixture = create_fixture(client)
    say(f"set-up (start, key, project, {TAGS} tags, {OPERATORS} operators): {time.perf_counter() - started:.1f} s")

    uploaded = 0
    if args.upload_mb > 0:
        u = upload(server, key, fixture, server.data_dir.parent, args.upload_mb)
        uploaded = 1
        for line in report_upload(u):
            say(line)

    catalog = Catalog(pg.url if pg is not None else f"sqlite:///{(server.data_dir / 'catalog.db').resolve()}")
    try:
        rng = random.Random(args.seed)
        now = datetime.now(UTC).replace(microsecond=0)
        seeded = seed(catalog, fixture, args.recordings, now, rng)
        lines = [
            f"listing at scale ({catalog.dialect} catalog)",
            f"  seeded {seeded.rows:,} recordings in {seeded.insert_s:.1f} s "
            f"({seeded.rows / seeded.insert_s:,.0f} rows/s, Core executemany in batches of {BATCH}) "
            f"+ {seeded.tag_rows:,} recording_tags rows in {seeded.tags_s:.1f} s"
            + (f"; VACUUM ANALYZE {seeded.analyze_s:.1f} s" if seeded.analyze_s is not None
               else "; no ANALYZE (SQLite)"),
            f"  statuses: {', '.join(f'{k} {v:,}' for k, v in seeded.statuses.items())}; rows per tag: "
            f"{', '.join(f'{t}: {n:,}' for t, n in seeded.per_tag.items())}"
            + ("; plus the uploaded recording (pending, untagged)" if uploaded else ""),
        ]
        for line in lines:
            say(line)
        queries = build_queries(fixture, seeded, uploaded)
        timings = []
        with httpx.Client(base_url=server.base_url + API, headers={"Authorization": f"Bearer {key}"},
                          timeout=httpx.Timeout(120.0)) as client:
            for query in queries:
                timings.append(measure(client, query, args.requests, args.warmup))
                server.check_alive()
        lines = report_listing(timings, args.requests)
        lines.append(f"  combined filter window: called_from={iso(seeded.window[0])} called_to={iso(seeded.window[1])}")
        for line in lines:
            say(line)
        slow = [t for t in timings if t.pct(50) > args.explain_ms or args.explain_all]
        if slow:
            lines = [f"  query plans ({'all queries' if args.explain_all else f'p50 > {args.explain_ms:.0f} ms'}):"]
            for t in slow:
                lines += explain(catalog, t.query)
            for line in lines:
                say(line)
    finally:
        catalog.dispose()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--upload-mb", type=int, default=1024, help="size of the uploaded WAV in MB (0: no upload)")
    parser.add_argument("--recordings", type=int, default=100_000, help="recordings to seed into the catalog")
    parser.add_argument("--requests", type=int, default=300, help="measured requests per list query")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured requests per list query first")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite", help="catalog database")
    parser.add_argument("--postgres-url", default=DEFAULT_PG_URL,
                        help="maintenance database to create and drop the scratch database through")
    parser.add_argument("--explain-ms", type=float, default=100.0, help="print plans of queries with a slower p50")
    parser.add_argument("--explain-all", action="store_true", help="print the plans of every list query")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the generated rows")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory and scratch database")
    args = parser.parse_args(argv)
    if args.recordings < 400:
        parser.error("--recordings must be at least 400 (the deep page is 10 pages from the end)")
    if args.requests < 1 or args.upload_mb < 0 or args.warmup < 0:
        parser.error("--requests must be at least 1; --upload-mb and --warmup must not be negative")
    if args.upload_mb > 2000:
        parser.error("--upload-mb must be at most 2000 (the raised WAV limit)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="callscope-bench-rec-"))
    free = shutil.disk_usage(workdir).free
    if free < args.upload_mb * MB * 2.5 + 500 * MB:
        print(f"only {free / 1e9:.1f} GB free in {workdir.parent}; "
              f"need about {args.upload_mb * 2.5 / 1000 + 0.5:.1f} GB",
              file=sys.stderr)
        shutil.rmtree(workdir, ignore_errors=True)
        return 1
    server = api_load.Server(workdir / "data", workdir / "server.log")
    pg = ScratchPostgres(args.postgres_url) if args.database == "postgres" else None
    say(f"command: {shlex.join(sys.orig_argv)}")
    say(cpu_line())
    if pg is not None:
        say(f"catalog: PostgreSQL {pg.server_version()}, scratch database {pg.name}")
    else:
        say(f"catalog: SQLite {__import__('sqlite3').sqlite_version} file {workdir / 'data' / 'catalog.db'}")
    started = time.perf_counter()

    def cleanup() -> None:
        if pg is not None:
            if args.keep:
                print(f"kept database {pg.name}", file=sys.stderr)
            else:
                pg.drop()
        api_load.keep_or_remove(workdir, args.keep)

    code = api_load.run_against(server, lambda: run(args, server, pg), cleanup)
    say(f"total run time: {time.perf_counter() - started:.1f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
