"""The summary of long calls: which quarters of the call it names, and what it costs, at 15 and 60 minutes.

What it measures
----------------
The written long calls of tests/analysis/long_transcripts.py: recordings "A" and "B", two colleagues on a weekly
call whose quarters each have a subject of their own, the first quarter (the shop's move) the same in both, each 15
and 60 minutes long (each quarter's exchange said again until the quarter is full). Written, not spoken: the
subjects of each quarter must be known, and an hour of ASR on 2 CPUs takes longer than all the rest measured here.
With ``--distinct``, also recording A at 60 minutes with every turn said once (numbered: "Point 17: ..."): the cost
of embedding an hour of different sentences (the digest's choice and the faithfulness check).

Per call, the summary stage alone (`summary.summarize`, the text embedder checking its sentences as the pipeline
does for an English call) with the language model's KV cache emptied first: wall and CPU seconds of the process
(all its threads, llama.cpp's and numpy's; where other work shares the cores, CPU seconds are the less disturbed
figure), the tokens of the request (prompt evaluated + generated) and the seconds they take on 2 quiet CPUs (25 ms
and 100 ms each), the subjects the summary names of the call's four quarters (`subjects_named`), its unsupported
sentences (faithfulness.py's checker), how it was made, and the summary; then whether A and B got the same summary.

``--map-reduce``: also a brief of each quarter (the quarter's own digest, the same prompt and schema as a call's),
then one brief of the four briefs (analysis/stages/summary.py's schema), for recording A at 60 minutes: the cost of
reading every part by map and reduce, five requests where the digest makes one. Its sentences are checked but not
repaired.

``--code DIR`` summarises with the `analysis` package in DIR (e.g. the previous commit's: ``git archive HEAD
analysis | tar -x -C /tmp/before``); the checker and the calls are this tree's. ``--save FILE`` writes the figures
as JSON, ``--baseline FILE`` prints them beside a saved run ("before > now").

How to run (repository root)::

    .venv/bin/python -P benchmarks/long_summaries.py --code /tmp/before --save /tmp/long-summaries-before.json
    .venv/bin/python -P benchmarks/long_summaries.py --baseline /tmp/long-summaries-before.json --distinct
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks.*, tests.analysis.*

from callscope.analysis.stages.faithfulness import SupportChecker, split_sentences
from callscope.config import Settings
from tests.analysis.long_transcripts import RECORDINGS, ROLES, long_call, subjects_named

QUIET_PROMPT_S, QUIET_TOKEN_S = 0.025, 0.1  # as benchmarks/summary_coverage.py
CALLS = {"A 15 min": ("A", 15), "B 15 min": ("B", 15), "A 60 min": ("A", 60), "B 60 min": ("B", 60)}


def distinct_call(minutes: float) -> list:
    """Recording A with every turn said once: each turn's text numbered."""
    return [s.model_copy(update={"text": f"Point {s.id}: {s.text}"}) for s in long_call("A", minutes)]


def _reset(llm) -> None:
    if getattr(llm, "_llama", None) is not None:
        llm._llama.reset()  # an empty KV cache: nothing of the previous call is reused


def _tokens(llm) -> list[int] | None:
    request = getattr(llm, "last_request", None)
    return [request.prompt_tokens - request.reused_tokens, request.generated_tokens] if request else None


def measure(recording: str, segments, llm, embedder) -> dict:
    from callscope.analysis.stages.summary import summarize

    _reset(llm)
    wall, cpu = time.perf_counter(), time.process_time()
    result = summarize(segments, "en", llm, roles=ROLES, embedder=embedder)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    checks = SupportChecker(segments, embedder, roles=ROLES).check(split_sentences(result.text))
    return {"wall_s": wall, "cpu_s": cpu, "tokens": _tokens(llm), "method": result.method, "summary": result.text,
            "named": subjects_named(result.text, RECORDINGS[recording]), "subjects": list(RECORDINGS[recording]),
            "unsupported": [c.sentence for c in checks if not c.supported()], "sentences": len(checks)}


def map_reduce(segments, llm, embedder) -> dict:
    """A brief of each quarter, then one of the briefs: the seconds, the tokens, the final brief (checked)."""
    from callscope.analysis.stages import summary

    end = max(s.end_ms for s in segments)
    quarters = [[s for s in segments if q * end / 4 <= s.start_ms < (q + 1) * end / 4] for q in range(4)]
    schema = summary.brief_schema("en", agent=False)
    _reset(llm)
    wall, cpu = time.perf_counter(), time.process_time()
    tokens, briefs = [0, 0], []
    for quarter in quarters:
        prompt, _, excerpt = summary.summary_prompt(quarter, llm, ROLES, embedder)
        answer = llm.generate_json(prompt + "\n" + summary._instruction("en", False, excerpt), schema,
                                   max_tokens=summary.BRIEF_MAX_TOKENS)
        briefs.append(" ".join(str(v) for v in answer.values()))
        tokens = [a + b for a, b in zip(tokens, _tokens(llm) or [0, 0], strict=True)]
    names = ("first", "second", "third", "last")
    prompt = ("Briefs of the four quarters of a long phone call, in order:\n"
              + "\n".join(f"{name} quarter: {brief}" for name, brief in zip(names, briefs, strict=True))
              + "\n[end of briefs]\n\nWrite a brief of the whole call from the briefs above, one short sentence for "
              "each part of the answer. State only facts from the briefs.")
    answer = llm.generate_json(prompt, schema, max_tokens=summary.BRIEF_MAX_TOKENS)
    tokens = [a + b for a, b in zip(tokens, _tokens(llm) or [0, 0], strict=True)]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    text = " ".join(summary.distinct(filter(None, (summary._whole_sentence(str(v)) for v in answer.values()))))
    checks = SupportChecker(segments, embedder, roles=ROLES).check(split_sentences(text))
    return {"wall_s": wall, "cpu_s": cpu, "tokens": tokens, "method": "map-reduce (5 requests)", "summary": text,
            "named": subjects_named(text, RECORDINGS["A"]), "subjects": list(RECORDINGS["A"]),
            "unsupported": [c.sentence for c in checks if not c.supported()], "sentences": len(checks)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, help="summarise with DIR/analysis (e.g. the previous commit's)")
    parser.add_argument("--calls", nargs="*", choices=list(CALLS), default=list(CALLS))
    parser.add_argument("--distinct", action="store_true", help="also A at 60 minutes, every turn said once")
    parser.add_argument("--map-reduce", action="store_true", help="also A at 60 minutes by map and reduce")
    parser.add_argument("--save", type=Path)
    parser.add_argument("--baseline", type=Path)
    args = parser.parse_args()
    from callscope.analysis.runtime.pipeline import load_model

    settings = Settings()
    embedder = load_model("embedder", settings)
    if args.code:
        from benchmarks.faithfulness import use_code

        use_code(args.code.resolve())
        from callscope.analysis.runtime.pipeline import load_model
    llm = load_model("llm", settings)
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; code: {args.code or 'this tree'}; "
          f"language model: {llm.info.name if llm else 'none'}")
    calls = {name: (recording, long_call(recording, minutes)) for name, (recording, minutes) in CALLS.items()
             if name in args.calls}
    if args.distinct:
        calls["A 60 min, every turn once"] = ("A", distinct_call(60))
    figures = {}
    for name, (recording, segments) in calls.items():
        figures[name] = measure(recording, segments, llm, embedder)
        print(f"  {name}: {figures[name]['wall_s']:.1f} s wall, {figures[name]['cpu_s']:.1f} CPU s", flush=True)
    if args.map_reduce and not args.code:
        figures["A 60 min, map and reduce"] = map_reduce(long_call("A", 60), llm, embedder)
    if args.save:
        args.save.write_text(json.dumps(figures, indent=1))
    report(figures, json.loads(args.baseline.read_text()) if args.baseline else None)


def report(now: dict, before: dict | None) -> None:
    def cells(f: dict) -> list[str]:
        tokens = f.get("tokens")
        quiet = (f"{tokens[0]}+{tokens[1]}={QUIET_PROMPT_S * tokens[0] + QUIET_TOKEN_S * tokens[1]:.1f}" if tokens
                 else "-")
        return [f"{len(f['named'])}/{len(f['subjects'])}", f"{len(f['unsupported'])}/{f['sentences']}",
                f"{f['wall_s']:.1f}", f"{f['cpu_s']:.1f}", quiet, f["method"]]

    heads = ["quarters named", "unsupported", "wall s", "CPU s", "tokens=quiet s", "method"]
    print("\nper call" + (" (before > now)" if before else ""))
    print(f"  {'call':28}" + "".join(f"{h:>24}" for h in heads))
    for call, f in now.items():
        old = (before or {}).get(call)
        row = [f"{o} > {n}" if old else n for n, o in zip(cells(f), cells(old) if old else cells(f), strict=True)]
        print(f"  {call:28}" + "".join(f"{c:>24}" for c in row))
    for minutes in (15, 60):
        a, b = now.get(f"A {minutes} min"), now.get(f"B {minutes} min")
        if a and b:
            print(f"  {minutes} min: A and B {'got the same summary' if a['summary'] == b['summary'] else 'differ'}")
    for call, f in now.items():
        print(f"\n  {call} (names {', '.join(f['named']) or 'none'} of {', '.join(f['subjects'])}): {f['summary']}")
        if before and call in before:
            print(f"    before: {before[call]['summary']}")
        for sentence in f["unsupported"]:
            print(f"    unsupported: {sentence}")


if __name__ == "__main__":
    main()
