"""The fields stage alone: its CPU seconds per call length and its accuracy, with the language model, before and after.

What it measures
----------------
Speed (``--lengths``, minutes): the transcripts of `benchmarks/call_lengths.py`'s calls (the English real clips
joined turn after turn, `benchmarks/faithfulness.py`'s `real_call`), made once by the pipeline without the language
model from the longest call (a shorter call is its first minutes) and kept in ``--transcripts``; then, per length,
with the language model's KV cache emptied: `extract_fields` (the fields of `benchmarks/speed.py`'s PROJECT, which
`call_lengths.py` analyses, and FOUR_FIELDS: a number, a string, a boolean and an enum), and right after it the
summary (`summarize`, which may reuse the fields' transcript prefix from the KV cache). Printed: the CPU seconds of
the process (all its threads; the less disturbed figure where other work shares the cores) and the wall seconds of
each, per audio minute too, and the language model's tokens (prompt, reused from the cache, generated).

Accuracy: `cases`, written calls with each field's value labelled (None: not said), short ones and the same calls
said inside an unrelated conversation (2 to 7 minutes in, 2 minutes before its end); a value is right when it equals
the label (a string: contains it, case aside), as in `benchmarks/faithfulness.py`.

Before and after: ``--code DIR`` runs with the `analysis` package found in DIR (e.g. the previous commit's:
``git archive HEAD analysis | tar -x -C /tmp/before``), as `benchmarks/faithfulness.py` does; that code's
`extract_fields` is given the text model only where it takes one. ``--save``/``--baseline`` as there.

How to run (repository root; after scripts/fetch_real_speech.py)::

    .venv/bin/python -P benchmarks/field_spans.py --code /tmp/before --save /tmp/fields-before.json
    .venv/bin/python -P benchmarks/field_spans.py --baseline /tmp/fields-before.json
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks.*, scripts.*, tests.analysis.*

import callscope.analysis
from callscope.config import Settings
from callscope.resources.kinds import ExtractedField

F = ExtractedField
FOUR_FIELDS = [
    F(name="account_number", description="The customer's account number.", type="number"),
    F(name="agent_name", description="The first name the agent introduces themselves with.", type="string"),
    F(name="callback_requested", description="Whether the customer asked to be called back.", type="boolean"),
    F(name="topic", description="What the call is about.", type="enum", values=["billing", "outage", "moving"]),
]


def cases() -> list[tuple[str, list[tuple[str, str]], list[ExtractedField], dict]]:
    """(name, turns, fields, labels) of the written calls; "... in N min": the call set N minutes into filler."""
    from tests.analysis.summary_claims import SUPPORT_CALL
    from tests.analysis.transcripts import BILLING_CALL, DENTAL_CALL
    from tests.analysis.voices import OUTAGE_AGENT, OUTAGE_CUSTOMER

    outage = [(f"speaker-{i % 2 + 1}", (OUTAGE_AGENT if i % 2 == 0 else OUTAGE_CUSTOMER)[i // 2]) for i in range(12)]
    billing = [F(name="agent_name", description="The first name of the agent who answered.", type="string"),
               F(name="refund_promised", description="Whether the agent promised a refund.", type="boolean"),
               F(name="topic", description="What the call is about.", type="enum",
                 values=["billing", "outage", "sales"]),
               F(name="refund_reference", description="The refund reference the agent gave.", type="string"),
               F(name="flight_number", description="The flight number of the customer's booking.", type="string")]
    billing_labels = {"agent_name": "Maria", "refund_promised": True, "topic": "billing",
                      "refund_reference": "R7741", "flight_number": None}
    dental = [F(name="patient_name", description="The full name of the patient.", type="string"),
              F(name="new_appointment", description="The day and time of the new appointment.", type="string"),
              F(name="dentist", description="The dentist the appointment is with.", type="string"),
              F(name="insurance_card_needed", description="Whether the patient must bring or update an insurance "
                "card.", type="boolean")]
    dental_labels = {"patient_name": "Tom Becker", "new_appointment": "Monday", "dentist": "Lee",
                     "insurance_card_needed": True}
    support = [F(name="agent_name", description="The first name the agent introduces themselves with.",
                 type="string"),
               F(name="invoice_copy_requested", description="Whether the customer asked for a copy of an invoice.",
                 type="boolean"),
               F(name="request", description="What the customer wants.", type="enum",
                 values=["address change", "cancellation", "upgrade"]),
               F(name="order_number", description="The number of the customer's order.", type="number")]
    support_labels = {"agent_name": "Anna", "invoice_copy_requested": True, "request": "address change",
                      "order_number": None}
    outage_fields = [F(name="visit_time", description="When the technician will come.", type="string"),
                     F(name="works_from_home", description="Whether the customer works from home.", type="boolean"),
                     F(name="agent_name", description="The first name of the agent.", type="string")]
    outage_labels = {"visit_time": "tomorrow morning", "works_from_home": True, "agent_name": "Tom"}
    short = [("billing", BILLING_CALL, billing, billing_labels), ("dental", DENTAL_CALL, dental, dental_labels),
             ("support", SUPPORT_CALL, support, support_labels), ("outage", outage, outage_fields, outage_labels)]
    long = [(f"{name} in {minutes} min", inside(turns, minutes, minutes + 2), fields, labels)
            for (name, turns, fields, labels), minutes in zip(short, (7, 3, 5, 2), strict=True)]
    return [(name, list(turns), fields, labels) for name, turns, fields, labels in short + long]


def inside(turns: list[tuple[str, str]], at_minutes: float, minutes: float) -> list[tuple[str, str]]:
    """`turns` said `at_minutes` into `minutes` of a warehouse team's call (tests/analysis/transcripts.py)."""
    from tests.analysis.transcripts import WAREHOUSE

    def said(ts: list[tuple[str, str]]) -> float:
        return sum(len(t.split()) / 2.5 + 0.4 for _, t in ts)

    filler = WAREHOUSE * int(minutes * 60 / said(WAREHOUSE) + 1)
    before = next(i for i in range(len(filler)) if said(filler[:i]) >= at_minutes * 60)
    before += before % 2  # the filler's next turn is speaker-1's
    after = next((i for i in range(len(filler)) if said(filler[:i]) >= (minutes - at_minutes) * 60 - said(turns)),
                 len(filler))
    return filler[:before] + turns + filler[:after]


def use_code(folder: Path) -> None:
    for name in [n for n in sys.modules if n.startswith("callscope.analysis.")]:
        del sys.modules[name]
    callscope.analysis.__path__[:] = [str(folder / "analysis")]


def transcripts(path: Path, minutes: float) -> list[dict]:
    """The segments (as JSON) of the real call of `minutes`, analysed once without the language model."""
    if path.exists() and json.loads(path.read_text())["minutes"] >= minutes:
        return json.loads(path.read_text())["segments"]
    from benchmarks.faithfulness import real_call
    from callscope.analysis.runtime.pipeline import Pipeline

    with tempfile.TemporaryDirectory(prefix="callscope-fields-") as tmp:
        audio = real_call(Path(tmp), minutes)
        result = Pipeline(Settings(llm_enabled=False)).run(audio)
    segments = [s.model_dump(mode="json") for s in result.segments]
    path.write_text(json.dumps({"minutes": minutes, "segments": segments}))
    return segments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, help="run with DIR/analysis (e.g. the previous commit's)")
    parser.add_argument("--lengths", type=float, nargs="*", default=[1, 5, 15], help="call lengths (minutes)")
    parser.add_argument("--transcripts", type=Path, default=Path(tempfile.gettempdir()) / "callscope-fields.json")
    parser.add_argument("--no-accuracy", action="store_true")
    parser.add_argument("--separate", action="store_true", help="also ask each of several fields alone")
    parser.add_argument("--no-summary", action="store_true", help="the fields alone, not the summary after them")
    parser.add_argument("--save", type=Path)
    parser.add_argument("--baseline", type=Path)
    args = parser.parse_args()
    if args.code:
        use_code(args.code.resolve())
    raw = transcripts(args.transcripts, max(args.lengths)) if args.lengths else []
    from benchmarks.speed import PROJECT
    from callscope.analysis.models.language_model import language_model_from_settings
    from callscope.analysis.models.text_embedding import text_embedder_from_settings
    from callscope.analysis.result import TranscriptSegment
    from callscope.analysis.stages.fields import extract_fields
    from callscope.analysis.stages.summary import summarize
    from tests.analysis.transcripts import segments as timed

    settings = Settings()
    llm, embedder = language_model_from_settings(settings), text_embedder_from_settings(settings)
    takes_embedder = "embedder" in inspect.signature(extract_fields).parameters
    extra = {"embedder": embedder} if takes_embedder else {}
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; code: {args.code or 'this tree'}; "
          f"text model given to the fields: {takes_embedder}")

    def request() -> list[int] | None:
        r = llm.last_request
        return None if r is None else [r.prompt_tokens, r.reused_tokens, r.generated_tokens]

    figures: dict = {"speed": {}, "accuracy": {}}
    everything = [TranscriptSegment.model_validate(s) for s in raw]
    for minutes in args.lengths:
        segments = [s for s in everything if s.start_ms < minutes * 60_000]
        roles = {s.speaker: s.role or "unknown" for s in segments}
        audio_minutes = max(s.end_ms for s in segments) / 60_000
        for name, fields in (("project", PROJECT.fields), ("four fields", FOUR_FIELDS)):
            llm._llama.reset()  # nothing of the previous call in the KV cache
            llm.last_request = None
            row: dict = {"audio_minutes": audio_minutes}
            stages = (("fields", lambda s=segments, f=fields, r=roles: extract_fields(f, s, llm, roles=r, **extra)),
                      ("summary", lambda s=segments, r=roles: summarize(s, "en", llm, roles=r, embedder=embedder)))
            for stage, run in stages[:1] if args.no_summary else stages:
                llm.last_request = None
                cpu, wall = time.process_time(), time.perf_counter()
                out = run()
                row[stage] = {"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall,
                              "tokens": request()}
                if stage == "fields":
                    row["values"] = {v.name: v.value for v in out}
            if args.separate and len(fields) > 1:  # each field in a request of its own, for the one request's cost
                cpu, tokens = time.process_time(), []
                for f in fields:
                    llm._llama.reset()
                    llm.last_request = None
                    extract_fields([f], segments, llm, roles=roles, **extra)
                    tokens.append(request())
                row["separate"] = {"cpu": time.process_time() - cpu, "tokens": tokens}
                print(f"    each field alone: {row['separate']['cpu']:.1f} CPU s {tokens}", flush=True)
            figures["speed"][f"{minutes:g} min, {name}"] = row
            summary = (f"summary {row['summary']['cpu']:.1f} CPU s {row['summary']['tokens']}" if "summary" in row
                       else "")
            print(f"  {minutes:g} min, {name}: fields {row['fields']['cpu']:.1f} CPU s {row['fields']['tokens']}, "
                  f"{summary}; {row['values']}", flush=True)
    if not args.no_accuracy:
        for name, turns, fields, labels in cases():
            llm._llama.reset()
            llm.last_request = None
            call = timed(turns)
            roles = {"speaker-1": "agent", "speaker-2": "customer"}
            cpu = time.process_time()
            values = {v.name: v.value for v in extract_fields(fields, call, llm, roles=roles, **extra)}
            right = {f: (values[f] == want if not isinstance(want, str) or values[f] is None
                         else want.lower() in str(values[f]).lower()) for f, want in labels.items()}
            figures["accuracy"][name] = {"values": values, "right": right, "cpu": time.process_time() - cpu,
                                         "tokens": request()}
            print(f"  {name}: {sum(right.values())}/{len(right)} right, {time.process_time() - cpu:.1f} CPU s, "
                  f"{values}", flush=True)
    report(figures, json.loads(args.baseline.read_text()) if args.baseline else None)
    if args.save:
        args.save.write_text(json.dumps(figures, indent=1, default=str))


def report(now: dict, before: dict | None) -> None:
    def beside(value: str, old: str | None) -> str:
        return f"{old} > {value}" if old is not None else value

    if now["speed"]:
        print("\nspeed (before > now): CPU s, CPU s per audio minute, wall s; language model tokens "
              "[prompt, reused, generated]")
        for name, row in now["speed"].items():
            old = (before or {}).get("speed", {}).get(name)
            for stage in [st for st in ("fields", "summary") if st in row and (not old or st in old)]:
                cells = []
                for fmt, value in (("{:.1f}", lambda r, st=stage: r[st]["cpu"]),
                                   ("{:.2f}", lambda r, st=stage: r[st]["cpu"] / r["audio_minutes"]),
                                   ("{:.1f}", lambda r, st=stage: r[st]["wall"]),
                                   ("{}", lambda r, st=stage: r[st]["tokens"])):
                    cells.append(beside(fmt.format(value(row)), fmt.format(value(old)) if old else None))
                print(f"  {name:22} {stage:8}{cells[0]:>14}{cells[1]:>16}{cells[2]:>14}   {cells[3]}")
    if now["accuracy"]:
        print("\naccuracy (before > now): values right of labelled; CPU s")
        right_now = right_before = total = 0
        for name, row in now["accuracy"].items():
            old = (before or {}).get("accuracy", {}).get(name)
            right, count = sum(row["right"].values()), len(row["right"])
            right_now, total = right_now + right, total + count
            old_right = sum(old["right"].values()) if old else None
            right_before += old_right or 0
            cells = (beside(f"{right}/{count}", f"{old_right}/{count}" if old else None),
                     beside(f"{row['cpu']:.1f}", f"{old['cpu']:.1f}" if old else None))
            print(f"  {name:22}{cells[0]:>12}{cells[1]:>14}   {row['values']}")
        print(f"  {'all':22}{beside(f'{right_now}/{total}', f'{right_before}/{total}' if before else None):>12}")


if __name__ == "__main__":
    main()
