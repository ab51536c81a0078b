"""Search across calls (GET /search, callscope/services/search.py) at N analysed calls of about 100 segments each,
on SQLite and PostgreSQL: the p50 and p95 time of a search per mode (keyword, meaning, hybrid), without and with
filters (project and speaker role, inside the query), beside the time to index one call (embedding its segments and
writing them in one transaction), the first meaning search of a process (it loads the segment vectors into memory)
and the memory they take.

The catalog is a scratch one: a SQLite file under /tmp, and a PostgreSQL database this script creates and drops on
the server of ``--postgres-url``, migrated (the real schema, triggers and full-text indexes included). One account,
``acme``, holds the N calls (5 projects, 20 operators), each a completed recording with its analysis row and ~100
segments; another account holds a tenth as many, which no search of acme's may find. A segment's text is one of a
pool of sentences made from templates in English (70% of the calls), Spanish (20%) and German (10%), and its vector
is the real embedding of that sentence (all-MiniLM-L6-v2, embedded once per pool sentence). Segments are written by
the catalog's own insert (search.index's rows, so each engine's trigger indexes them), many calls a transaction.

Meaning search is exact (a matrix product over every vector of the account): its recall@10 against exact search is 1
by construction; no approximate index is used.

    .venv/bin/python -P benchmarks/search.py [--calls 10000] [--db sqlite postgres] [--runs 40]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import insert, make_url, text

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from callscope.analysis.models.text_embedding import text_embedder_from_settings  # noqa: E402
from callscope.catalog import search as search_rows  # noqa: E402
from callscope.catalog.db import Catalog  # noqa: E402
from callscope.catalog.search import SearchFilters  # noqa: E402
from callscope.catalog.tables import Analysis, Recording  # noqa: E402
from callscope.config import Settings  # noqa: E402
from callscope.runtime import Runtime  # noqa: E402
from callscope.search.embedding import SearchEmbedder  # noqa: E402
from callscope.search.entries import CallEntries, Entry  # noqa: E402
from callscope.search.words import configuration  # noqa: E402
from callscope.services import search  # noqa: E402
from callscope.services.context import Principal  # noqa: E402

SEGMENTS = 100
PROJECTS, OPERATORS = 5, 20
CALLS_PER_TRANSACTION = 200
T0 = datetime(2031, 1, 1, tzinfo=UTC)
TEMPLATES = {
    "en": ["I would like a {thing} for my {item} today", "Can you {verb} my {item} please",
           "The {item} arrived {state} and I want a {thing}", "We can offer a {thing} on your next {doc}",
           "Let me check your {doc} for the {item}", "Your {item} will be {state} within {n} days",
           "Thank you for calling, my name is {name}", "I have been waiting {n} minutes for the {item}",
           "Please hold while I look up your {doc}", "Is there anything else I can help you with today"],
    "es": ["Quiero un {es_thing} para mi {es_item} hoy", "Compraremos el {es_item} mañana",
           "Su {es_item} llegará en {n} días", "Gracias por llamar, me llamo {name}"],
    "de": ["Ich möchte eine {de_thing} für meine {de_item}", "Ihre {de_item} kommt in {n} Tagen",
           "Danke für Ihren Anruf, mein Name ist {name}"],
}
SLOTS = {
    "thing": ["refund", "credit", "replacement", "discount", "callback"],
    "item": ["order", "subscription", "invoice", "blender", "kettle", "router", "phone", "account"],
    "verb": ["cancel", "change", "upgrade", "pause", "renew"], "state": ["broken", "late", "damaged", "ready"],
    "doc": ["invoice", "contract", "statement", "order"], "n": [str(n) for n in (2, 3, 5, 10, 30)],
    "name": ["Olga", "Peter", "Ana", "José", "Jürgen"],
    "es_thing": ["reembolso", "descuento", "cambio"], "es_item": ["pedido", "contrato", "teléfono"],
    "de_thing": ["Rückerstattung", "Gutschrift"], "de_item": ["Bestellung", "Rechnung", "Lieferung"],
}
LANGUAGES = [("en", 0.7), ("es", 0.2), ("de", 0.1)]
POOL_PER_TEMPLATE = 40
QUERIES = ["refund", "refund today", '"broken blender"', "cancel -subscription", "refund OR credit",
           "where is my parcel", "money back", "reembolso", "Rückerstattung", "invoice statement"]
FILTERED = SearchFilters(project_id=1, role="customer")
EMOTIONS = ["neutral", "calm", "angry", "happy"]


def sentence_pool(rng: random.Random) -> dict[str, list[str]]:
    pool: dict[str, list[str]] = {}
    for language, templates in TEMPLATES.items():
        sentences = set()
        for template in templates:
            for _ in range(POOL_PER_TEMPLATE):
                sentences.add(template.format(**{k: rng.choice(v) for k, v in SLOTS.items()}))
        pool[language] = sorted(sentences)
    return pool


def scratch_catalog(database: str, postgres_url: str, tmp: Path) -> tuple[str, Callable[[], None]]:
    if database == "sqlite":
        return f"sqlite:///{tmp / 'catalog.db'}", lambda: None
    import psycopg

    server = make_url(postgres_url)
    name = f"search_bench_{uuid.uuid4().hex[:8]}"
    dsn = f"host={server.host} port={server.port or 5432} user={server.username} dbname={server.database}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return server.set(database=name).render_as_string(hide_password=False), drop


def load(catalog: Catalog, calls: int, pool: dict[str, list[str]], vectors: dict[str, np.ndarray],
         rng: random.Random) -> float:
    """The accounts' calls, their analyses and their segments (search.index, as an analysis writes them); seconds."""
    started = time.perf_counter()
    total = calls + calls // 10
    for first in range(0, total, CALLS_PER_TRANSACTION):
        recordings, analyses, entries = [], [], []
        for rid in range(first + 1, min(first + CALLS_PER_TRANSACTION, total) + 1):
            account = "acme" if rid <= calls else "other"
            language = rng.choices([lang for lang, _ in LANGUAGES], [w for _, w in LANGUAGES])[0]
            created = T0 + timedelta(seconds=rid * 60)
            public_id = str(uuid.uuid4())
            recordings.append({
                "id": rid, "public_id": public_id, "account": account, "project_id": rng.randint(1, PROJECTS),
                "operator_id": rng.randint(1, OPERATORS), "name": f"call {rid}", "language": language,
                "status": "completed", "progress": 100, "duration_ms": SEGMENTS * 5000, "audio_format": "wav",
                "size_bytes": 1, "dialogues_count": SEGMENTS, "goals_evaluated": False, "pauses_detected": 0,
                "processing_restricted": False, "conversation_id": public_id, "created_at": created,
                "updated_at": created})
            analyses.append({"recording_id": rid, "version": 1, "transcript_key": f"t/{rid}", "results": "{}",
                             "language": language, "completed_at": created})
            picked = [rng.randrange(len(pool[language])) for _ in range(SEGMENTS)]
            segments = [Entry(n, n * 5000, n * 5000 + 4500, f"speaker-{n % 2 + 1}",
                              "agent" if n % 2 else "customer", None, rng.choice(EMOTIONS), pool[language][i])
                        for n, i in enumerate(picked)]
            entries.append((rid, CallEntries(configuration(language), segments, []),
                            [vectors[language][i].tobytes() for i in picked]))
        with catalog.session() as session:
            session.execute(insert(Recording), recordings)
            session.execute(insert(Analysis), analyses)
            for rid, call, call_vectors in entries:
                search_rows.index(session, rid, call, call_vectors)
    if catalog.dialect == "postgresql":
        with catalog.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))
    return time.perf_counter() - started


def percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1000, ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000


async def index_one_call(runtime: Runtime, embedder, pool: dict[str, list[str]], rng: random.Random
                         ) -> tuple[float, float]:
    """(embedding seconds, writing seconds) of indexing one new call of SEGMENTS segments."""
    sentences = [rng.choice(pool["en"]) + f" ({n})" for n in range(SEGMENTS)]
    call = CallEntries("english", [Entry(n, n * 5000, n * 5000 + 4500, "speaker-1", "agent", None, None, s)
                                   for n, s in enumerate(sentences)], ["billing"])
    started = time.perf_counter()
    vectors = await runtime.ctx.embedder.embed(sentences)
    embedded = time.perf_counter()
    await runtime.catalog.write(search_rows.index, 1, call, [v.tobytes() for v in vectors])
    return embedded - started, time.perf_counter() - embedded


async def measure(database: str, calls: int, runs: int, postgres_url: str, embedder, pool, vectors) -> list[str]:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="callscope-search-bench-") as tmp:
        url, drop = scratch_catalog(database, postgres_url, Path(tmp))
        try:
            catalog = Catalog(url)
            catalog.migrate()
            built = load(catalog, calls, pool, vectors, rng)
            catalog.dispose()
            runtime = Runtime(Settings(data_dir=Path(tmp) / "data", database_url=url, log_level="WARNING"))
            await runtime.start(background=False)
            runtime.ctx.embedder = SearchEmbedder(lambda: embedder)
            try:
                return await _timings(runtime, database, calls, runs, built, pool, rng)
            finally:
                await runtime.stop()
        finally:
            drop()


async def _timings(runtime: Runtime, database: str, calls: int, runs: int, built: float, pool, rng) -> list[str]:
    ctx = runtime.ctx
    principal = Principal(account="acme", key_name="bench", key_uid="bench", permissions=frozenset({"read"}))
    started = time.perf_counter()
    await search.search(ctx, principal, "refund", "meaning", SearchFilters(), 0, 20)
    cold = time.perf_counter() - started
    held = ctx.vectors.of("acme")
    arrays = (held.matrix, held.ids, held.recordings, held.roles, held.emotions, held.live)
    memory_mb = sum(a.nbytes for a in arrays) / 2**20
    lines = [f"{database}, {calls:,} calls ({calls * SEGMENTS:,} segments; {calls // 10 * SEGMENTS:,} more in "
             f"another account): built in {built:.0f} s; first meaning search {cold * 1000:.0f} ms (loads "
             f"{held.size:,} vectors, {memory_mb:,.0f} MB)"]
    lines.append("| mode | filters | p50 ms | p95 ms | hits (median total_count) |")
    lines.append("|---|---|---|---|---|")
    for mode in ("keyword", "meaning", "hybrid"):
        for label, f in (("none", SearchFilters()), ("project + customer", FILTERED)):
            times, totals = [], []
            for run in range(runs + 2):
                q = QUERIES[run % len(QUERIES)]
                started = time.perf_counter()
                _, total = await search.search(ctx, principal, q, mode, f, 0, 20)
                if run >= 2:  # two unmeasured runs first
                    times.append(time.perf_counter() - started)
                    totals.append(total)
            p50, p95 = percentiles(times)
            lines.append(f"| {mode} | {label} | {p50:.0f} | {p95:.0f} | {statistics.median(totals):,.0f} |")
    embeds, writes = [], []
    for _ in range(5):
        embed, write = await index_one_call(runtime, ctx.embedder, pool, rng)
        embeds.append(embed)
        writes.append(write)
    lines.append(f"index one call of {SEGMENTS} segments: embedding {statistics.median(embeds) * 1000:.0f} ms, "
                 f"writing {statistics.median(writes) * 1000:.0f} ms (median of 5)")
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[10_000])
    parser.add_argument("--db", nargs="+", choices=["sqlite", "postgres"], default=["sqlite", "postgres"])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--postgres-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    embedder = text_embedder_from_settings(Settings())
    pool = sentence_pool(random.Random(1))
    started = time.perf_counter()
    vectors = {language: embedder.embed(sentences) for language, sentences in pool.items()}
    print(f"embedded a pool of {sum(map(len, pool.values()))} sentences in {time.perf_counter() - started:.0f} s",
          flush=True)
    for calls in args.calls:
        for database in args.db:
            for line in await measure(database, calls, args.runs, args.postgres_url, embedder, pool, vectors):
                print(line, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
