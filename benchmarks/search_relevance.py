"""Relevance of search across calls (GET /search, callscope/services/search.py) on analysed calls: recall@10 and MRR
per mode (keyword, meaning, hybrid), for literal queries and for paraphrases that share no content word with the
segments that answer them.

The calls
---------
* real speech: the clips of CLIPS from the real-speech set (`scripts/fetch_real_speech.py`; its manifest says what
  each is): the pyannote phone conversation, English, Spanish, French, Italian and Russian read prompts of the
  Asterisk PBX, an Italian agent/customer dialogue and the Dutch actors' dialogue, each analysed in its language;
* synthetic: the written calls the benchmarks already say with espeak-ng (WRITTEN: the billing, dental, support and
  outage calls, the warehouse team's call, the bakery's two long calls of tests/analysis/long_transcripts.py with each
  subject said once, and the "fit" calls of benchmarks/data/redaction_calls.json), rendered stereo (speaker-1 left,
  speaker-2 right; voice pairs of tests/analysis/voices.py in turn).

Each call is analysed once by the real pipeline (`Pipeline.run`, without the language model: search reads the
transcript, the roles and the emotions), and its stored documents (analysis/stored.py `documents`) are kept as JSON
in ``--transcripts`` (default: a folder under the temp dir), so later runs only search. ``--show`` prints the
transcripts: the queries were written by reading that print, before any search ran (see the note in the queries
file).

The queries
-----------
benchmarks/data/search_queries.json: each query with its kind (``literal``: words of its answers, typed as into a
search box; ``paraphrase``: what the answers say in other words), a split (``fit``: what any tuning may look at;
``report``: the figures to report) and its answers, each a segment named by its call and dialogue id with the text
the transcript gave it. Before searching, the script checks that each answer is still that segment of the cached
transcript, and that no paraphrase shares a content word (stop words aside, stemmed by the call's language) with
any of its answers; it exits naming what is wrong otherwise.

What it measures
----------------
The calls are indexed by the index service (callscope/services/search_index.py `entries`: the segments embedded as
a worker embeds them) into a scratch catalog (the real schema, migrated: a SQLite file under the temp dir, or a
PostgreSQL database created and dropped on ``--postgres-url``), one account; each query runs in each mode through
`services.search.search` (what GET /search calls), 10 hits. Keyword mode wants every word of a query in one segment,
so it finds no paraphrase by construction: it is the baseline meaning has to beat there. Per query: recall@10, the
share of its answers among the first 10 hits (of at most 10 answers), and the reciprocal rank of its first answer
(0 when none is in the 10).
Printed: their means per mode, literal / paraphrase / all, for the split asked (``--split``); ``--save FILE``
writes them as JSON, ``--baseline FILE`` prints each beside a saved run ("before > now"); ``--misses`` lists the
queries whose answers were not all found, with the first hits.

How to run (repository root; after scripts/fetch_real_speech.py; needs espeak-ng)::

    .venv/bin/python -P benchmarks/search_relevance.py --show              # analyse (once) and print the calls
    .venv/bin/python -P benchmarks/search_relevance.py --split all --db sqlite postgres --misses
    .venv/bin/python -P benchmarks/search_relevance.py --split fit --save /tmp/relevance-before.json  # tuning:
    .venv/bin/python -P benchmarks/search_relevance.py --split fit --baseline /tmp/relevance-before.json  # a change
    .venv/bin/python -P benchmarks/search_relevance.py --split report          # then the figure reported
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import insert, select

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]  # benchmarks.*, scripts.*, tests.analysis.*

from callscope.catalog import search as search_rows  # noqa: E402
from callscope.catalog.db import Catalog  # noqa: E402
from callscope.catalog.search import SearchFilters  # noqa: E402
from callscope.catalog.tables import Analysis, Recording, SearchSegment  # noqa: E402
from callscope.config import Settings  # noqa: E402
from callscope.search.words import configuration, stem, words  # noqa: E402

QUERIES = ROOT / "benchmarks" / "data" / "search_queries.json"
CLIPS = ["en-call-mono", "en-read-a-mono", "en-read-b-mono", "es-read-mono", "fr-read-mono", "it-read-mono",
         "ru-read-mono", "it-dialogue-mono", "nl-actors-mono"]
MODES = ("keyword", "meaning", "hybrid")
KINDS = ("literal", "paraphrase")
TOP = 10
T0 = datetime(2031, 1, 1, tzinfo=UTC)

# Words that carry no content, per language a paraphrase is checked in: a paraphrase may share these with its
# answers (and nothing else).
STOP_WORDS = {
    "english": set("""a about after again all also am an and any are as at be because been before being both but by
        can could did do does doing down during each few for from had has have having he her here hers him his how i
        if in into is it its itself just me more most my no nor not now of off on once only or other our ours out over
        own same she should so some such than that the their theirs them then there these they this those through to
        too under until up very was we were what when where which while who whom why will with would you your yours
        yourself yourselves s t d ll m re ve don didn doesn isn wasn won can't i'm it's that's okay ok oh yes yeah
        please well right let lets get got go going one""".split()),
}


# ----- the calls ------------------------------------------------------------------------------------

def written_calls() -> dict[str, list[tuple[str, str]]]:
    """The synthetic calls: name -> turns (speaker-1 / speaker-2, sentence)."""
    from tests.analysis.long_transcripts import GOODBYE, GREETING, RECORDINGS, SUBJECTS
    from tests.analysis.summary_claims import SUPPORT_CALL
    from tests.analysis.transcripts import BILLING_CALL, DENTAL_CALL, WAREHOUSE
    from tests.analysis.voices import OUTAGE_AGENT, OUTAGE_CUSTOMER

    outage = [(f"speaker-{i % 2 + 1}", (OUTAGE_AGENT if i % 2 == 0 else OUTAGE_CUSTOMER)[i // 2]) for i in range(12)]
    calls = {"billing": BILLING_CALL, "dental": DENTAL_CALL, "support": SUPPORT_CALL, "outage": outage,
             "warehouse": WAREHOUSE}
    for recording, subjects in RECORDINGS.items():
        calls[f"bakery-{recording.lower()}"] = [*GREETING, *(t for s in subjects for t in SUBJECTS[s]), *GOODBYE]
    redaction = json.loads((ROOT / "benchmarks" / "data" / "redaction_calls.json").read_text())
    calls.update({c["id"]: [tuple(t) for t in c["turns"]] for c in redaction if c["split"] == "fit"})
    return {name: list(turns) for name, turns in calls.items()}


def render(turns: list[tuple[str, str]], voices: tuple[str, str], path: Path) -> Path:
    """A stereo call: speaker-1 on the left in voices[0], speaker-2 on the right in voices[1], 0.6 s apart."""
    from tests.analysis import speech

    left, right = [speech.silence(0.4)], [speech.silence(0.4)]
    for speaker, line in turns:
        spoken = speech.speak(line, voices[speaker != "speaker-1"])
        quiet, gap = np.zeros(len(spoken), np.float32), speech.silence(0.6)
        left += [spoken if speaker == "speaker-1" else quiet, gap]
        right += [quiet if speaker == "speaker-1" else spoken, gap]
    return speech.write(path, [np.concatenate(left), np.concatenate(right)])


@dataclass(frozen=True)
class Call:
    name: str
    language: str
    results: dict
    transcript: dict


def analysed(folder: Path) -> list[Call]:
    """Every call's stored documents, analysed now where `folder` does not hold them yet."""
    from callscope.analysis.runtime.pipeline import MODELS, Pipeline, load_model
    from callscope.analysis.stored import documents
    from callscope.resources.kinds import ProjectSpec
    from scripts.fetch_real_speech import cache_dir
    from tests.analysis.voices import VOICE_PAIRS

    manifest = cache_dir() / "manifest.json"
    if not manifest.is_file():
        sys.exit(f"{manifest} does not exist: run scripts/fetch_real_speech.py first")
    clips = {c["id"]: c for c in json.loads(manifest.read_text())["clips"]}
    sources: dict[str, tuple[str, object]] = {name: (clips[name]["language"], cache_dir() / clips[name]["path"])
                                              for name in CLIPS}
    sources.update({name: ("en", turns) for name, turns in written_calls().items()})
    folder.mkdir(parents=True, exist_ok=True)
    pipeline = None
    calls = []
    for n, (name, (language, source)) in enumerate(sources.items()):
        kept = folder / f"{name}.json"
        if not kept.is_file():
            if pipeline is None:
                settings = Settings(llm_enabled=False)
                pipeline = Pipeline(settings, **{m: load_model(m, settings) for m in MODELS if m != "llm"}, llm=None)
            with tempfile.TemporaryDirectory(prefix="callscope-relevance-") as tmp:
                audio = source if isinstance(source, Path) else render(
                    source, VOICE_PAIRS[n % len(VOICE_PAIRS)], Path(tmp) / f"{name}.wav")
                started = time.perf_counter()
                result = pipeline.run(audio, ProjectSpec(name="search relevance", language=language))
            results, transcript = documents(result)
            kept.write_text(json.dumps({"language": language, "results": results, "transcript": transcript,
                                        "analysis_s": time.perf_counter() - started}))
            print(f"analysed {name}: {len(transcript['segments'])} segments in "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
        stored = json.loads(kept.read_text())
        calls.append(Call(name, stored["language"], stored["results"], stored["transcript"]))
    return calls


def show(calls: list[Call]) -> None:
    for call in calls:
        print(f"\n## {call.name} ({call.language})")
        for s in call.transcript["segments"]:
            print(f"{s['id']:>3} {s.get('role') or '-':<8} {s['start_ms'] / 1000:6.1f}  {s['text'].strip()}")
    total = sum(len(c.transcript["segments"]) for c in calls)
    print(f"\n{len(calls)} calls, {total} segments")


# ----- the queries ----------------------------------------------------------------------------------

def content(text: str, config: str) -> set[str]:
    """The stems of `text`'s words that carry content, in the stemmer `config`'s language."""
    stop = STOP_WORDS.get(config, set())
    return {stem(config, w) for w in words(text.replace("'", " ")) if w not in stop and not w.isdigit()} - {
        stem(config, w) for w in stop}


def checked(queries: list[dict], calls: list[Call]) -> list[str]:
    """What is wrong with the queries against the transcripts: an answer that is not (or no longer) the segment
    it names, a paraphrase sharing a content word with one of its answers."""
    segments = {(c.name, s["id"]): s["text"] for c in calls for s in c.transcript["segments"]}
    languages = {c.name: c.language for c in calls}
    wrong = []
    for query in queries:
        for answer in query["answers"]:
            said = segments.get((answer["call"], answer["segment"]))
            if said is None or said.strip() != answer["text"].strip():
                wrong.append(f"{query['id']}: {answer['call']}#{answer['segment']} is {said!r}, not "
                             f"{answer['text']!r}")
            elif query["kind"] == "paraphrase":
                config = configuration(languages[answer["call"]])
                if config not in STOP_WORDS:
                    wrong.append(f"{query['id']}: no stop words for {config}: a paraphrase cannot be checked")
                shared = content(query["q"], config) & content(said, config)
                if shared:
                    wrong.append(f"{query['id']}: shares {sorted(shared)} with {answer['call']}#{answer['segment']}")
    return wrong


# ----- searching -------------------------------------------------------------------------------------

def catalog_rows(calls: list[Call]) -> tuple[list[dict], list[dict]]:
    recordings, analyses = [], []
    for rid, call in enumerate(calls, 1):
        created = T0 + timedelta(minutes=rid)
        public_id = str(uuid.uuid4())
        segments = call.transcript["segments"]
        recordings.append({
            "id": rid, "public_id": public_id, "account": "acme", "project_id": 1, "operator_id": None,
            "name": call.name, "language": call.language, "status": "completed", "progress": 100,
            "duration_ms": max((s["end_ms"] for s in segments), default=0), "audio_format": "wav", "size_bytes": 1,
            "dialogues_count": len(segments), "goals_evaluated": False, "pauses_detected": 0,
            "processing_restricted": False, "conversation_id": public_id, "created_at": created,
            "updated_at": created})
        analyses.append({"recording_id": rid, "version": 1, "transcript_key": f"t/{rid}",
                         "results": json.dumps(call.results), "language": call.language, "completed_at": created})
    return recordings, analyses


async def run(database: str, postgres_url: str, calls: list[Call], queries: list[dict]) -> dict[str, dict]:
    """Per query id and mode: (recall@10, reciprocal rank, the first hits as call#segment)."""
    from benchmarks.search import scratch_catalog
    from callscope.runtime import Runtime
    from callscope.services import search, search_index
    from callscope.services.context import Principal

    with tempfile.TemporaryDirectory(prefix="callscope-relevance-db-") as tmp:
        url, drop = scratch_catalog(database, postgres_url, Path(tmp))
        try:
            catalog = Catalog(url)
            catalog.migrate()
            recordings, analyses = catalog_rows(calls)
            with catalog.session() as session:
                session.execute(insert(Recording), recordings)
                session.execute(insert(Analysis), analyses)
            catalog.dispose()
            runtime = Runtime(Settings(data_dir=Path(tmp) / "data", database_url=url, log_level="WARNING"))
            await runtime.start(background=False)
            try:
                ctx = runtime.ctx
                started = time.perf_counter()
                for rid, call in enumerate(calls, 1):
                    found = await search_index.entries(ctx, call.results, call.transcript, call.language)
                    await ctx.catalog.write(search_rows.index, rid, found.call, found.vectors)
                print(f"{database}: indexed {len(calls)} calls in {time.perf_counter() - started:.1f} s",
                      flush=True)
                named = await ctx.catalog.read(lambda s: {
                    sid: (calls[rid - 1].name, position) for sid, rid, position in
                    s.execute(select(SearchSegment.id, SearchSegment.recording_id, SearchSegment.position))})
                principal = Principal(account="acme", key_name="relevance", key_uid="relevance",
                                      permissions=frozenset({"read"}))
                figures: dict[str, dict] = {}
                for query in queries:
                    wanted = {(a["call"], a["segment"]) for a in query["answers"]}
                    for mode in MODES:
                        hits, _ = await search.search(ctx, principal, query["q"], mode, SearchFilters(), 0, TOP)
                        ranked = [named[h.row.segment_id] for h in hits]
                        first = next((i for i, key in enumerate(ranked, 1) if key in wanted), None)
                        figures.setdefault(query["id"], {})[mode] = {
                            "recall": len(wanted & set(ranked)) / min(len(wanted), TOP),
                            "rr": 1 / first if first else 0.0,
                            "hits": [f"{c}#{p}" for c, p in ranked[:3]]}
                return figures
            finally:
                await runtime.stop()
        finally:
            drop()


# ----- the table ---------------------------------------------------------------------------------------

def summary(queries: list[dict], figures: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Per mode, the mean recall@10 and MRR over each kind and over all."""
    table: dict[str, dict[str, float]] = {}
    for mode in MODES:
        row = {}
        for kind in (*KINDS, "all"):
            chosen = [q for q in queries if kind in ("all", q["kind"])]
            for metric in ("recall", "rr"):
                values = [figures[q["id"]][mode][metric] for q in chosen]
                row[f"{metric} {kind}"] = float(np.mean(values)) if values else float("nan")
        table[mode] = row
    return table


def print_table(table: dict, before: dict | None, counts: dict[str, int]) -> None:
    def cell(mode: str, key: str) -> str:
        now = f"{table[mode][key]:.2f}"
        return f"{before[mode][key]:.2f} > {now}" if before is not None and mode in before else now

    print(f"\n| mode | recall@10 literal ({counts['literal']}) | recall@10 paraphrase ({counts['paraphrase']}) | "
          f"recall@10 all ({counts['all']}) | MRR literal | MRR paraphrase | MRR all |")
    print("|---|---|---|---|---|---|---|")
    for mode in MODES:
        print(f"| {mode} | " + " | ".join(cell(mode, f"{metric} {kind}") for metric in ("recall", "rr")
                                          for kind in (*KINDS, "all")) + " |")


def misses(queries: list[dict], figures: dict[str, dict]) -> None:
    print()
    for query in queries:
        lost = [m for m in MODES if figures[query["id"]][m]["recall"] < 1]
        if lost:
            wanted = ", ".join(f"{a['call']}#{a['segment']}" for a in query["answers"])
            print(f"{query['id']} {query['kind']} {query['q']!r} (answers {wanted}): " + "; ".join(
                f"{m} {figures[query['id']][m]['recall']:.2f} [{', '.join(figures[query['id']][m]['hits'])}]"
                for m in lost))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transcripts", type=Path,
                        default=Path(tempfile.gettempdir()) / "callscope-search-relevance",
                        help="where the analysed calls are kept (analysed once)")
    parser.add_argument("--show", action="store_true", help="print the transcripts and stop")
    parser.add_argument("--queries", type=Path, default=QUERIES)
    parser.add_argument("--split", choices=["fit", "report", "all"], default="report")
    parser.add_argument("--db", nargs="+", choices=["sqlite", "postgres"], default=["sqlite"])
    parser.add_argument("--postgres-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--save", type=Path, help="write the figures as JSON")
    parser.add_argument("--baseline", type=Path, help="print the figures beside a saved run")
    parser.add_argument("--misses", action="store_true", help="list the queries not fully answered")
    args = parser.parse_args()

    calls = analysed(args.transcripts)
    if args.show:
        show(calls)
        return
    queries = json.loads(args.queries.read_text())["queries"]
    wrong = checked(queries, calls)
    if wrong:
        sys.exit("the queries do not fit the transcripts:\n" + "\n".join(wrong))
    chosen = [q for q in queries if args.split in ("all", q["split"])]
    counts = {kind: sum(q["kind"] == kind for q in chosen) for kind in KINDS} | {"all": len(chosen)}
    segments = sum(len(c.transcript["segments"]) for c in calls)
    print(f"{len(calls)} calls, {segments} segments; {len(chosen)} queries of the {args.split} split "
          f"({counts['literal']} literal, {counts['paraphrase']} paraphrases)")
    saved = json.loads(args.baseline.read_text()) if args.baseline else {}
    results = {}
    for database in args.db:
        figures = asyncio.run(run(database, args.postgres_url, calls, chosen))
        table = summary(chosen, figures)
        results[database] = {"table": table, "figures": figures}
        print(f"\n{database}, {args.split} split:")
        print_table(table, saved.get(database, {}).get("table"), counts)
        if args.misses:
            misses(chosen, figures)
    if args.save:
        args.save.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
