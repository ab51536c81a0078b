"""Search across calls (GET /search, callscope/services/search.py) at N analysed calls of about 100 segments each,
on SQLite and PostgreSQL: the p50 and p95 time of a search per mode (keyword, meaning, hybrid), without and with
filters (project and speaker role, inside the query), beside the time to index one call (embedding its segments and
writing them in one transaction), the first meaning search of a process (it loads the segment vectors into memory),
the memory they take, and meaning's recall@10 against an exact float32 search of the same segments.

The catalog is a scratch one: a SQLite file under /tmp, and a PostgreSQL database this script creates and drops on
the server of ``--postgres-url``, migrated (the real schema, triggers and full-text indexes included). One account,
``acme``, holds the N calls (5 projects, 20 operators), each a completed recording with its analysis row and 100
segments; another account holds a tenth as many, which no search of acme's may find. A segment's text is one of a
pool of sentences made from templates in English (70% of the calls), Spanish (20%) and German (10%), and its vector
is the real embedding of that sentence (all-MiniLM-L6-v2, embedded once per pool sentence); ``--words-only`` builds
the calls without vectors (as without the text model) and times keyword search only.

The bulk is written as the catalog writes it, row for row, but in bulk: on SQLite by executemany (the FTS5 triggers
index each row), on PostgreSQL by COPY, each segment's tsvector the one its trigger makes (search_tsv, computed by
the server once per pool sentence, the trigger off meanwhile) and the GIN indexes of the three languages built after
the load.
The one call indexed at the end goes through search.index itself.

    .venv/bin/python -P benchmarks/search.py [--calls 10000] [--db sqlite postgres] [--runs 40] [--words-only]
                                             [--explain] [--hnsw SEGMENTS] [--keep [NAME]]

Besides p50 and p95 over every query, each query's median and slowest time is printed (the phrase class is
`"broken blender"`: two common words never side by side). `--keep` (words only, PostgreSQL) keeps the catalog
built, and a later run searches it again without building it, after migrating it to the current schema (timed): so
a catalog built before a migration measures the migration's upgrade of 100,000 calls.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import insert, make_url, text

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from callscope.analysis.models.text_embedding import text_embedder_from_settings  # noqa: E402
from callscope.catalog import search as search_rows  # noqa: E402
from callscope.catalog import search_postgres, search_sqlite  # noqa: E402
from callscope.catalog.db import Catalog  # noqa: E402
from callscope.catalog.recordings import Scope  # noqa: E402
from callscope.catalog.search import SearchFilters  # noqa: E402
from callscope.catalog.tables import Analysis, Recording  # noqa: E402
from callscope.config import Settings  # noqa: E402
from callscope.runtime import Runtime  # noqa: E402
from callscope.search.embedding import SearchEmbedder  # noqa: E402
from callscope.search.entries import CallEntries, Entry  # noqa: E402
from callscope.search.syntax import parse  # noqa: E402
from callscope.search.vectors import encode  # noqa: E402
from callscope.search.words import configuration  # noqa: E402
from callscope.services import search  # noqa: E402
from callscope.services.context import Principal  # noqa: E402

SEGMENTS = 100
PROJECTS, OPERATORS = 5, 20
CALLS_PER_BATCH = 1000
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
MIN_SIMILARITY = Settings().search_min_similarity


def sentence_pool(rng: random.Random) -> dict[str, list[str]]:
    pool: dict[str, list[str]] = {}
    for language, templates in TEMPLATES.items():
        sentences = set()
        for template in templates:
            for _ in range(POOL_PER_TEMPLATE):
                sentences.add(template.format(**{k: rng.choice(v) for k, v in SLOTS.items()}))
        pool[language] = sorted(sentences)
    return pool


def scratch_catalog(database: str, postgres_url: str, tmp: Path, kept: str | None
                    ) -> tuple[str, Callable[[], None], bool]:
    """(the catalog's URL, what drops it, whether it was built before): `kept`, a PostgreSQL database of that name
    built by an earlier run and kept (made and kept when absent), or a scratch one."""
    if database == "sqlite":
        return f"sqlite:///{tmp / 'catalog.db'}", lambda: None, False
    import psycopg

    server = make_url(postgres_url)
    name = kept or f"search_bench_{uuid.uuid4().hex[:8]}"
    dsn = f"host={server.host} port={server.port or 5432} user={server.username} dbname={server.database}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        built = admin.execute("SELECT shobj_description(oid, 'pg_database') = 'built' FROM pg_database "
                              "WHERE datname = %s", (name,)).fetchone()
        if built and not built[0]:  # an earlier run stopped while building it
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        if not (built and built[0]):
            admin.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        if not kept:
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return server.set(database=name).render_as_string(hide_password=False), drop, bool(built and built[0])


@dataclass
class Built:
    """What was written, for exact search: acme's segments (id, language, pool sentence, project, role)."""

    seconds: float
    ids: np.ndarray
    languages: np.ndarray
    sentences: np.ndarray
    projects: np.ndarray
    customers: np.ndarray


def _pool_rows(catalog: Catalog, pool: dict[str, list[str]]) -> dict[str, list[tuple[str, str, str | None]]]:
    """(text, terms, tsvector) of each pool sentence, as the catalog indexes it (the tsvector: PostgreSQL's)."""
    engine = search_postgres if catalog.dialect == "postgresql" else search_sqlite
    rows: dict[str, list[tuple[str, str, str | None]]] = {}
    with catalog.engine.connect() as conn:
        for language, sentences in pool.items():
            config = configuration(language)
            terms = [engine.terms(config, sentence) for sentence in sentences]
            tsvs: list[str | None] = [None] * len(sentences)
            if catalog.dialect == "postgresql":
                tsvs = [conn.execute(text("SELECT search_tsv(CAST(:config AS regconfig), :terms)::text"),
                                     {"config": config, "terms": t}).scalar() for t in terms]
            rows[language] = list(zip(sentences, terms, tsvs, strict=True))
    return rows


def load(catalog: Catalog, calls: int, pool: dict[str, list[str]], vectors: dict[str, np.ndarray] | None,
         rng: random.Random) -> Built:
    """The accounts' calls, their analyses, their segments and vectors, in bulk."""
    started = time.perf_counter()
    picks = np.random.default_rng(rng.randrange(2**32))
    pool_rows = _pool_rows(catalog, pool)
    codes = {language: [encode(v[None, :]) for v in matrix] for language, matrix in vectors.items()} if vectors else {}
    total = calls + calls // 10
    languages = [lang for lang, _ in LANGUAGES]
    acme = Built(0, np.zeros(calls * SEGMENTS, np.int64), np.zeros(calls * SEGMENTS, np.int8),
                 np.zeros(calls * SEGMENTS, np.int16), np.zeros(calls * SEGMENTS, np.int8),
                 np.tile(np.arange(SEGMENTS) % 2 == 0, calls))
    postgres = catalog.dialect == "postgresql"
    raw = catalog.engine.raw_connection()
    driver = raw.driver_connection
    cursor = raw.cursor()
    if postgres:
        cursor.execute("SET synchronous_commit = off")
        cursor.execute("SET maintenance_work_mem = '1GB'")
        gin = {config: cursor.execute("SELECT pg_get_indexdef(%s::regclass)",
                                      (f"ix_search_segments_tsv_{config}",)).fetchone()[0]
               for config in sorted({configuration(lang) for lang in languages})}
        for config in gin:
            cursor.execute(f"DROP INDEX ix_search_segments_tsv_{config}")
        cursor.execute("ALTER TABLE search_segments DISABLE TRIGGER search_segments_tsv")
    else:
        cursor.execute("PRAGMA synchronous = OFF")
    raw.commit()
    segment_id = 0
    for first in range(0, total, CALLS_PER_BATCH):
        recordings, analyses, segments, call_codes = [], [], [], []
        for rid in range(first + 1, min(first + CALLS_PER_BATCH, total) + 1):
            account = "acme" if rid <= calls else "other"
            language = rng.choices(languages, [w for _, w in LANGUAGES])[0]
            config = configuration(language)
            created = T0 + timedelta(seconds=rid * 60)
            public_id = str(uuid.uuid4())
            project = rng.randint(1, PROJECTS)
            recordings.append({
                "id": rid, "public_id": public_id, "account": account, "project_id": project,
                "operator_id": rng.randint(1, OPERATORS), "name": f"call {rid}", "language": language,
                "status": "completed", "progress": 100, "duration_ms": SEGMENTS * 5000, "audio_format": "wav",
                "size_bytes": 1, "dialogues_count": SEGMENTS, "goals_evaluated": False, "pauses_detected": 0,
                "processing_restricted": False, "conversation_id": public_id, "created_at": created,
                "updated_at": created})
            analyses.append({"recording_id": rid, "version": 1, "transcript_key": f"t/{rid}", "results": "{}",
                             "language": language, "completed_at": created})
            picked = picks.integers(0, len(pool[language]), SEGMENTS)
            emotions = picks.integers(0, len(EMOTIONS), SEGMENTS)
            if account == "acme":
                at = (rid - 1) * SEGMENTS
                acme.ids[at : at + SEGMENTS] = np.arange(segment_id + 1, segment_id + SEGMENTS + 1)
                acme.languages[at : at + SEGMENTS] = languages.index(language)
                acme.sentences[at : at + SEGMENTS] = picked
                acme.projects[at : at + SEGMENTS] = project
            for n, i in enumerate(picked.tolist()):
                segment_id += 1
                sentence, terms, tsv = pool_rows[language][i]
                row = (segment_id, rid, n, n * 5000, n * 5000 + 4500, f"speaker-{n % 2 + 1}",
                       "agent" if n % 2 else "customer", None, EMOTIONS[emotions[n]], config, sentence, terms)
                segments.append((*row, tsv) if postgres else row)
            if codes:
                call_codes.append((rid, b"".join(codes[language][i] for i in picked.tolist())))
        with catalog.session() as session:
            session.execute(insert(Recording), recordings)
            session.execute(insert(Analysis), analyses)
        columns = ("id, recording_id, position, start_ms, end_ms, speaker, role, operator_id, emotion, config, text, "
                   "terms")
        if postgres:
            with cursor.copy(f"COPY search_segments ({columns}, tsv) FROM STDIN") as copy:
                for row in segments:
                    copy.write_row(row)
            if call_codes:
                with cursor.copy("COPY search_vectors (recording_id, codes) FROM STDIN") as copy:
                    for row in call_codes:
                        copy.write_row(row)
        else:
            cursor.executemany(f"INSERT INTO search_segments ({columns}) VALUES ({', '.join('?' * 12)})", segments)
            cursor.executemany("INSERT INTO search_vectors (recording_id, codes) VALUES (?, ?)", call_codes)
        raw.commit()
    if postgres:
        cursor.execute("ALTER TABLE search_segments ENABLE TRIGGER search_segments_tsv")
        for definition in gin.values():
            cursor.execute(definition)
        cursor.execute("SELECT setval(pg_get_serial_sequence('search_segments', 'id'), %s)", (segment_id,))
        raw.commit()
        driver.autocommit = True
        cursor.execute("VACUUM ANALYZE")
    else:
        cursor.execute("ANALYZE")
        raw.commit()
    raw.close()
    acme.seconds = time.perf_counter() - started
    return acme


def percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1000, ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000


async def index_one_call(runtime: Runtime, pool: dict[str, list[str]], rng: random.Random) -> tuple[float, float]:
    """(embedding seconds, writing seconds) of indexing one new call of SEGMENTS segments."""
    sentences = [rng.choice(pool["en"]) + f" ({n})" for n in range(SEGMENTS)]
    call = CallEntries("english", [Entry(n, n * 5000, n * 5000 + 4500, "speaker-1", "agent", None, None, s)
                                   for n, s in enumerate(sentences)], ["billing"])
    started = time.perf_counter()
    vectors = await runtime.ctx.embedder.embed(sentences)
    embedded = time.perf_counter()
    await runtime.catalog.write(search_rows.index, 1, call, [v.tobytes() for v in vectors])
    return embedded - started, time.perf_counter() - embedded


async def measure(database: str, calls: int, runs: int, postgres_url: str, embedder, pool, vectors,
                  words_only: bool, explain: bool, hnsw_sample: int, keep: str | None) -> list[str]:
    rng = random.Random(7)
    kept = keep.format(calls=calls) if keep and database == "postgres" else None
    with tempfile.TemporaryDirectory(prefix="callscope-search-bench-") as tmp:
        url, drop, reused = scratch_catalog(database, postgres_url, Path(tmp), kept)
        try:
            catalog = Catalog(url)
            started = time.perf_counter()
            catalog.migrate()  # a kept catalog of an older schema is upgraded: its migrations timed
            migrated = time.perf_counter() - started
            if reused:
                built = Built(0, *(np.zeros(0, np.int64) for _ in range(5)))
                print(f"{kept}: kept from an earlier run, migrated to head in {migrated:.1f} s", flush=True)
            else:
                built = load(catalog, calls, pool, None if words_only else vectors, rng)
                if kept:
                    with catalog.engine.begin() as conn:
                        conn.exec_driver_sql(f"COMMENT ON DATABASE \"{kept}\" IS 'built'")
            catalog.dispose()
            runtime = Runtime(Settings(data_dir=Path(tmp) / "data", database_url=url, log_level="WARNING"))
            await runtime.start(background=False)
            runtime.ctx.embedder = SearchEmbedder(lambda: embedder) if embedder is not None else None
            try:
                return await _timings(runtime, database, calls, runs, built, pool, vectors, rng, words_only, explain,
                                      hnsw_sample)
            finally:
                await runtime.stop()
        finally:
            drop()


def exact_top(built: Built, matrices: dict[str, np.ndarray], query: np.ndarray, f: SearchFilters, excluded: set[int],
              k: int) -> list[int]:
    """The best k segment ids by the float32 cosine of every segment (ties: by id), with the filters."""
    scores = np.zeros(len(built.ids), np.float32)
    for at, (language, _) in enumerate(LANGUAGES):
        rows = built.languages == at
        scores[rows] = (matrices[language] @ query)[built.sentences[rows]]
    keep = scores >= MIN_SIMILARITY
    if f.project_id is not None:
        keep &= built.projects == f.project_id
    if f.role == "customer":
        keep &= built.customers
    if excluded:
        keep &= ~np.isin(built.ids, np.fromiter(excluded, np.int64))
    found = np.flatnonzero(keep)
    order = np.lexsort((built.ids[found], -scores[found]))[:k]
    return built.ids[found][order].tolist()


async def _recall(runtime: Runtime, built: Built, vectors: dict[str, np.ndarray], principal: Principal
                  ) -> tuple[float, float, float]:
    """Meaning's recall@10 against exact float32 search, over QUERIES without and with the filters; and the time of
    one exact float32 product over every segment (the comparison held before)."""
    matrices = {lang: vectors[lang] for lang, _ in LANGUAGES}
    recalls: dict[str, list[float]] = {"none": [], "filtered": []}
    scope = principal.scope
    for q in QUERIES:
        query = parse(q)
        vector = await runtime.ctx.embedder.embed_query(query.text)
        for label, f in (("none", SearchFilters()), ("filtered", FILTERED)):
            hits, _ = await search.search(runtime.ctx, principal, q, "meaning", f, 0, 10)
            configs = await runtime.catalog.read(search_rows.configs, scope)
            excluded = await runtime.catalog.read(search_rows.matching_ids, scope, f, query.excluded, configs)
            exact = exact_top(built, matrices, vector, f, excluded, 10)
            got = {hit.row.segment_id for hit in hits}
            recalls[label].append(len(got & set(exact)) / len(exact) if exact else 1.0)
    full = np.concatenate([matrices[lang] for lang, _ in LANGUAGES])
    rows = full[np.random.default_rng(0).integers(0, len(full), len(built.ids))]
    started = time.perf_counter()
    for _ in range(5):
        rows @ vector
    product = (time.perf_counter() - started) / 5
    return statistics.mean(recalls["none"]), statistics.mean(recalls["filtered"]), product


def hnsw(vectors: dict[str, np.ndarray], built: Built, sample: int, queries: np.ndarray) -> str:
    """What an approximate index (faiss's HNSW over the same int8 codes, M=32) would cost: its build over `sample`
    of the segments, and a query's time and recall@10 against the exact scan of the same sample."""
    import faiss

    matrices = [vectors[lang] for lang, _ in LANGUAGES]
    at = np.random.default_rng(3).choice(len(built.ids), sample, replace=False)
    rows = np.stack([matrices[built.languages[i]][built.sentences[i]] for i in at])
    rows += np.random.default_rng(4).normal(0, 0.01, rows.shape).astype(np.float32)  # no two alike: no ties
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    started = time.perf_counter()
    index = faiss.IndexHNSWSQ(rows.shape[1], faiss.ScalarQuantizer.QT_8bit, 32, faiss.METRIC_INNER_PRODUCT)
    index.train(rows)
    index.add(rows)
    build = time.perf_counter() - started
    exact = faiss.IndexScalarQuantizer(rows.shape[1], faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
    exact.train(rows)
    exact.add(rows)
    recalls, times = [], {"hnsw": 0.0, "exact": 0.0}
    for q in queries:
        found = {}
        for name, searched in (("hnsw", index), ("exact", exact)):
            started = time.perf_counter()
            found[name] = set(searched.search(q[None, :], 10)[1][0].tolist())
            times[name] += time.perf_counter() - started
        recalls.append(len(found["hnsw"] & found["exact"]) / 10)
    return (f"HNSW (faiss IndexHNSWSQ, M=32, efSearch 16) over {sample:,} segments: built in {build:.0f} s; a query "
            f"{times['hnsw'] / len(queries) * 1000:.1f} ms against {times['exact'] / len(queries) * 1000:.1f} ms "
            f"exact, recall@10 {statistics.mean(recalls):.3f}")


def plans(session, scope: Scope, q: str) -> list[str]:
    """PostgreSQL's plans (EXPLAIN ANALYZE) and times of a keyword search for `q`: ranking every match (as keyword
    search did before it ranked the newest only), and the first window of the newest calls."""
    from sqlalchemy import BigInteger, any_, func, literal, select
    from sqlalchemy.dialects import postgresql

    query = parse(q)
    configs = search_rows.configs(session, scope)
    narrowing = search_rows.Narrowing(scope, SearchFilters())
    every = search_postgres.ranked(query, configs, narrowing).subquery()
    window = list(session.scalars(narrowing.calls(select(Recording.id))
                                  .order_by(Recording.created_at.desc(), Recording.id.desc())
                                  .limit(search_postgres.FIRST_CALLS)))
    calls = literal(window, postgresql.ARRAY(BigInteger))
    first = search_postgres.ranked(query, configs, lambda statement: statement.where(
        search_rows.SearchSegment.recording_id == any_(calls))).subquery()
    lines = []
    for label, statement in (
            ("every match ranked (before)", select(every.c.id, every.c.score, func.count().over())
             .order_by(every.c.score.desc(), every.c.id).limit(20)),
            ("the newest calls' first window", select(first.c.id, first.c.score))):
        sql = str(statement.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
        plan = session.execute(text(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")).scalars().all()
        lines += [f"plan of {q!r}, {label}:", *plan]
    return lines


async def _timings(runtime: Runtime, database: str, calls: int, runs: int, built: Built, pool, vectors, rng,
                   words_only: bool, explain: bool, hnsw_sample: int) -> list[str]:
    ctx = runtime.ctx
    principal = Principal(account="acme", key_name="bench", key_uid="bench", permissions=frozenset({"read"}))
    lines = [f"{database}, {calls:,} calls ({calls * SEGMENTS:,} segments; {calls // 10 * SEGMENTS:,} more in "
             f"another account{', no vectors' if words_only else ''}): "
             f"{f'built in {built.seconds:.0f} s' if built.seconds else 'kept'}; "
             f"load {os.getloadavg()[0]:.1f}"]
    modes = ("keyword",) if words_only else ("keyword", "meaning", "hybrid")
    if not words_only:
        started = time.perf_counter()
        await search.search(ctx, principal, "refund", "meaning", SearchFilters(), 0, 20)
        cold = time.perf_counter() - started
        held = ctx.vectors.of("acme")
        lines.append(f"first meaning search {cold * 1000:.0f} ms (loads {held.size:,} vectors, "
                     f"{held.nbytes / 2**20:,.0f} MB held)")
    lines.append("| mode | filters | p50 ms | p95 ms | hits (median total_count) |")
    lines.append("|---|---|---|---|---|")
    each: list[str] = []
    for mode in modes:
        for label, f in (("none", SearchFilters()), ("project + customer", FILTERED)):
            times, totals = [], []
            per_query: dict[str, list[float]] = {q: [] for q in QUERIES}
            for run in range(runs + 2):
                q = QUERIES[run % len(QUERIES)]
                started = time.perf_counter()
                _, total = await search.search(ctx, principal, q, mode, f, 0, 20)
                if run >= 2:  # two unmeasured runs first
                    times.append(time.perf_counter() - started)
                    per_query[q].append(times[-1])
                    totals.append(total)
            p50, p95 = percentiles(times)
            lines.append(f"| {mode} | {label} | {p50:.0f} | {p95:.0f} | {statistics.median(totals):,.0f} |")
            each.append(f"{mode}, {label}, per query (median / slowest ms): " + ", ".join(
                f"{q} {statistics.median(t) * 1000:.0f} / {max(t) * 1000:.0f}" for q, t in per_query.items() if t))
    lines += each
    if not words_only:
        plain, filtered, product = await _recall(runtime, built, vectors, principal)
        lines.append(f"meaning recall@10 against exact float32 search: {plain:.3f} (no filter), {filtered:.3f} "
                     f"(project + customer); one float32 product over the {len(built.ids):,} vectors "
                     f"{product * 1000:.0f} ms")
        if hnsw_sample:
            lines.append(hnsw(vectors, built, hnsw_sample, await ctx.embedder.embed(QUERIES)))
        embeds, writes = [], []
        for _ in range(5):
            embed, write = await index_one_call(runtime, pool, rng)
            embeds.append(embed)
            writes.append(write)
        lines.append(f"index one call of {SEGMENTS} segments: embedding {statistics.median(embeds) * 1000:.0f} ms, "
                     f"writing {statistics.median(writes) * 1000:.0f} ms (median of 5)")
    if database == "postgres" and explain:
        lines += await runtime.catalog.read(plans, principal.scope, "refund")
    lines.append(f"load average after: {os.getloadavg()[0]:.1f}")
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[10_000])
    parser.add_argument("--db", nargs="+", choices=["sqlite", "postgres"], default=["sqlite", "postgres"])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--words-only", action="store_true", help="no vectors: keyword search only")
    parser.add_argument("--explain", action="store_true", help="PostgreSQL: the plans of a keyword search")
    parser.add_argument("--hnsw", type=int, default=0, metavar="SEGMENTS",
                        help="also build faiss's HNSW over this many of the segments, and compare")
    parser.add_argument("--keep", nargs="?", const="search_bench_kept_{calls}", metavar="NAME",
                        help="PostgreSQL, --words-only: keep the catalog built (a database of this name, by default "
                             "search_bench_kept_CALLS) and search it again on the next run, upgraded to the current "
                             "schema first (drop it by hand)")
    parser.add_argument("--postgres-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    if args.keep and not args.words_only:
        parser.error("--keep keeps no vectors: use it with --words-only")
    pool = sentence_pool(random.Random(1))
    embedder, vectors = None, {}
    if not args.words_only:
        embedder = text_embedder_from_settings(Settings())
        started = time.perf_counter()
        vectors = {language: embedder.embed(sentences) for language, sentences in pool.items()}
        print(f"embedded a pool of {sum(map(len, pool.values()))} sentences in {time.perf_counter() - started:.0f} s",
              flush=True)
    for calls in args.calls:
        for database in args.db:
            for line in await measure(database, calls, args.runs, args.postgres_url, embedder, pool, vectors,
                                      args.words_only, args.explain, args.hnsw, args.keep):
                print(line, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
