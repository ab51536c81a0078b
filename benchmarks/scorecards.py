"""Calibration of QA scorecards (issue 43): how often the automatic answers agree with answers written by hand, and
what scoring adds to a call's analysis time.

What it measures
----------------
The calls of ``benchmarks/data/scorecard_calls.json`` with their hand answers, written from each script before the
first run: 16 scripted support calls between two espeak-ng voices (tests/analysis/voices.py), rendered stereo (agent
left, customer right) with the silences, holds and overlaps the script says, and 4 clips of the real-speech set
(scripts/fetch_real_speech.py: the Italian, French and Spanish two-voice dialogues and the pyannote English call).
Each is analysed by the pipeline with the settings of the environment, without the language model (what the form's
questions read does not need it: goal verdicts, categories, pauses, numbers; --llm-analysis puts it back, summary
and explanations), and the project below, then scored against the form below: 13 questions, one or more of every
answer source (goal, category, pauses, talk_share, interruptions, longest_silence, hold, emotion, field, llm,
manual).

Printed: per question, the automatic answers that equal the hand answers (n/a equal to n/a; a null hand answer is
not counted), the target of 85 % on the questions answered from goals, categories, pauses and fields, and the
language-model and manual questions as they are (a manual question is unanswered by design); then scoring's share
of the analysis time: per call the seconds of `score_call` (the language-model question included, asked of the
pipeline's own model right after its analysis, as the worker would) over the seconds of the analysis. The language
model answers the ``llm`` question of the first --llm-calls calls (default all): on a loaded 2-core machine one
request can take minutes; the others are scored without it and their llm answers are not counted.

The analyses are cached in ~/.cache/callscope/scorecard-bench (one file per call, keyed by the script, the voices,
the project and the models; --fresh ignores them). A cached call is scored with a model that has not just read its
transcript (its prompt is evaluated whole), so its scoring time is an upper bound; the table says which.

How to run (repository root; needs espeak-ng, and the real-speech cache for the real clips)::

    .venv/bin/python -P scripts/fetch_real_speech.py     # once: the real-speech clips
    .venv/bin/python -P benchmarks/scorecards.py          # ~10 minutes on 2 cores the first time
    .venv/bin/python -P benchmarks/scorecards.py --verbose   # and every disagreement
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.analysis.*

from callscope.analysis.result import AnalysisResult
from callscope.analysis.runtime.pipeline import MODELS, Pipeline, load_model
from callscope.analysis.stages.scorecard import score_call
from callscope.config import Settings
from callscope.resources.kinds import ProjectSpec
from callscope.resources.scorecards import ScorecardForm
from tests.analysis import speech
from tests.analysis.voices import VOICE_PAIRS

DATA = Path(__file__).resolve().parent / "data" / "scorecard_calls.json"
CACHE = Path(os.environ.get("CALLSCOPE_CACHE_DIR", Path.home() / ".cache" / "callscope")) / "scorecard-bench"
REAL_SPEECH = Path(os.environ.get("CALLSCOPE_REAL_SPEECH_DIR", Path.home() / ".cache" / "callscope" / "real-speech"))
CACHE_VERSION = 1
TARGET = 0.85
TARGET_SOURCES = {"goal", "category", "pauses", "field"}

PROJECT = {
    "name": "Scorecard calibration", "language": "en", "long_pause_threshold_seconds": 3,
    "goals": [
        {"id": 1, "name": "Greeting", "description": "The agent thanks the caller for calling and gives their name.",
         "phrases": ["thank you for calling", "thanks for calling"], "speaker": "agent"},
        {"id": 2, "name": "Closing", "description": "The agent asks whether there is anything else they can help "
         "with.", "phrases": ["anything else"], "speaker": "agent"},
        {"id": 3, "name": "Identity", "description": "The agent verifies the caller's identity by asking for their "
         "date of birth.", "phrases": ["date of birth"], "speaker": "agent"}],
    "categories": [
        {"name": "Billing", "description": "A question or complaint about a bill, a charge or a refund.",
         "keywords": ["bill", "charged", "refund", "refunded", "invoice"]},
        {"name": "Cancellation", "description": "The customer cancels their subscription or contract.",
         "keywords": ["cancel", "cancelled", "cancellation"]}],
    "fields": [{"name": "refund_amount", "description": "The amount of money refunded to the customer, in dollars.",
                "type": "number"}],
}


def _q(qid: str, text: str, weight: int, answer: dict, **more: Any) -> dict:
    return {"id": qid, "text": text, "weight": weight, "answer": answer, **more}


FORM = {"sections": [
    {"name": "Opening", "weight": 25, "questions": [
        _q("greeting", "Did the agent thank the caller and give their name?", 50, {"source": "goal", "goal_id": 1}),
        _q("identity", "Did the agent verify the caller's identity?", 50, {"source": "goal", "goal_id": 3},
           auto_fail="section")]},
    {"name": "Handling", "weight": 45, "questions": [
        _q("pauses", "Were long silences announced as holds?", 15, {"source": "pauses"}),
        _q("hold_time", "Was every hold at most 8 seconds?", 15, {"source": "hold", "max_seconds": 8}),
        _q("longest_silence", "Was no silence longer than 8 seconds?", 10,
           {"source": "longest_silence", "max_seconds": 8}),
        _q("talk_share", "Did the agent talk at most 70 % of the time?", 15,
           {"source": "talk_share", "role": "agent", "max": 0.7}),
        _q("interruptions", "Did the agent let the customer finish?", 15,
           {"source": "interruptions", "role": "agent", "max": 0}),
        _q("refund_limit", "Was the refund within the agent's limit of 100 dollars?", 15,
           {"source": "field", "name": "refund_amount", "max": 100}, applies_when={"category": "Billing"}),
        _q("apology", "Did the agent apologise?", 15,
           {"source": "llm", "prompt": "Did the agent say sorry or apologise to the customer?"})]},
    {"name": "Outcome", "weight": 30, "questions": [
        _q("closing", "Did the agent offer further help before ending?", 30, {"source": "goal", "goal_id": 2}),
        _q("kept_customer", "Did the call end without a cancellation?", 25,
           {"source": "category", "name": "Cancellation", "yes_when": "absent"}),
        _q("calm_end", "Was the customer calm at the end of the call?", 25,
           {"source": "emotion", "role": "customer", "part": "end", "max": 0.5}),
        _q("empathy", "Did the agent show empathy?", 20, {"source": "manual"})]},
]}


def render(turns: list[list], voices: tuple[str, str], path: Path) -> Path:
    """A stereo call (agent left, customer right) of the script's turns: each turn after the silence the one before
    says, a negative silence making it start before that turn ends (talking over it)."""
    spoken = [speech.speak(text, voices[who]) for who, text, _ in turns]
    starts, pos = [], int(0.4 * speech.RATE)
    for (_, _, gap), samples in zip(turns, spoken, strict=True):
        starts.append(pos)
        pos = max(0, pos + len(samples) + int(gap * speech.RATE))
    length = max(s + len(x) for s, x in zip(starts, spoken, strict=True)) + int(0.5 * speech.RATE)
    channels = [np.zeros(length, dtype=np.float32), np.zeros(length, dtype=np.float32)]
    for (who, _, _), start, samples in zip(turns, starts, spoken, strict=True):
        channels[who][start:start + len(samples)] += samples
    return speech.write(path, channels)


def cache_key(call: dict, voices: tuple[str, str] | None, project: ProjectSpec, settings: Settings) -> str:
    models = [settings.whisper_model, settings.llm_enabled, settings.llm_model, settings.llm_endpoint]
    what = json.dumps([CACHE_VERSION, call.get("turns") or call.get("clip"), voices, project.model_dump(mode="json"),
                       [str(m) for m in models]], sort_keys=True)
    return f"{call['id']}-{hashlib.sha256(what.encode()).hexdigest()[:16]}"


def analysed(call: dict, n: int, settings: Settings, pipeline: Pipeline | None, folder: Path,
             fresh: bool) -> tuple[AnalysisResult, float, bool, Pipeline | None]:
    """The call's analysis, its seconds, whether it came from the cache; loads the pipeline when first needed."""
    voices = VOICE_PAIRS[n % len(VOICE_PAIRS)] if call["kind"] == "scripted" else None
    project = ProjectSpec.model_validate({**PROJECT, "language": call.get("language", "en")})
    cached = CACHE / f"{cache_key(call, voices, project, settings)}.json"
    if cached.is_file() and not fresh:
        stored = json.loads(cached.read_text())
        return AnalysisResult.model_validate(stored["result"]), stored["seconds"], True, pipeline
    if call["kind"] == "scripted":
        path = render(call["turns"], voices, folder / f"{call['id']}.wav")  # type: ignore[arg-type]
    else:
        path = REAL_SPEECH / call["clip"]
        if not path.is_file():
            sys.exit(f"{path}: missing; run scripts/fetch_real_speech.py first")
    if pipeline is None:
        pipeline = Pipeline(settings, **{name: load_model(name, settings) for name in MODELS})
    start = time.perf_counter()
    result = pipeline.run(path, project)
    seconds = time.perf_counter() - start
    CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps({"result": result.model_dump(mode="json"), "seconds": seconds,
                                  "loadavg": os.getloadavg()}))
    return result, seconds, False, pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-llm", action="store_true", help="leave the language model out of the scoring too")
    parser.add_argument("--llm-analysis", action="store_true", help="analyse with the language model (summary, "
                        "explanations) as the server does")
    parser.add_argument("--llm-calls", type=int, default=None, help="ask the language model on these many calls")
    parser.add_argument("--fresh", action="store_true", help="analyse again even where the cache has the call")
    parser.add_argument("--only", choices=("scripted", "real"), help="only these calls")
    parser.add_argument("--verbose", action="store_true", help="print every disagreement")
    args = parser.parse_args()
    if speech.ESPEAK is None:
        sys.exit(speech.SKIP_REASON)
    settings = Settings() if args.llm_analysis and not args.no_llm else Settings(llm_enabled=False)
    form = ScorecardForm.model_validate(FORM)
    calls = [c for c in json.loads(DATA.read_text())["calls"] if args.only in (None, c["kind"])]
    questions = form.questions()
    agree: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses: list[str] = []
    timings: list[tuple[str, float, float, float, bool, bool]] = []  # id, analysis, rules, scoring, cached, asked
    pipeline: Pipeline | None = None
    llm = embedder = None
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory(prefix="callscope-scorecards-") as tmp:
        for n, call in enumerate(calls):
            result, seconds, cached, pipeline = analysed(call, n, settings, pipeline, Path(tmp), args.fresh)
            asking = not args.no_llm and (args.llm_calls is None or n < args.llm_calls)
            if asking and llm is None:
                llm = (pipeline._model("llm") if pipeline is not None and settings.llm_enabled
                       else load_model("llm", Settings()))
                embedder = pipeline.embedder if pipeline is not None else load_model("embedder", settings)
            start = time.perf_counter()
            score_call(form, result, scorecard_id=1, name="Calibration", version=1, llm=None)
            rules = time.perf_counter() - start
            start = time.perf_counter()
            card = score_call(form, result, scorecard_id=1, name="Calibration", version=1, llm=llm if asking else None,
                              embedder=embedder)
            scoring = time.perf_counter() - start
            timings.append((call["id"], seconds, rules, scoring, cached, asking))
            for answer in card.answers:
                wanted = call["answers"].get(answer.question_id)
                if wanted is None or (answer.source == "llm" and not asking):
                    continue
                tally = agree[answer.question_id]
                tally[1] += 1
                if answer.answer == wanted:
                    tally[0] += 1
                else:
                    evidence = "; ".join(e.text for e in answer.evidence)[:160]
                    misses.append(f"{call['id']} {answer.question_id}: {answer.answer} (hand: {wanted}) "
                                  f"{answer.note} [{evidence}]")
            print(f"{call['id']}: analysis {seconds:.1f} s{' (cached)' if cached else ''}, scoring {scoring:.2f} s "
                  f"(without the model {rules * 1000:.1f} ms), score {card.score}", flush=True)

    print(f"\n{'question':<16} {'source':<16} {'agree':>9} {'share':>7}  target")
    by_source: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for question in questions:
        right, total = agree[question.id]
        source = question.answer.source
        by_source[source][0] += right
        by_source[source][1] += total
        share = f"{right / total:7.1%}" if total else "      -"
        target = (f"{TARGET:.0%}" if source in TARGET_SOURCES else
                  "as it is" if source == "llm" else "unanswered by design" if source == "manual" else "-")
        print(f"{question.id:<16} {source:<16} {right:>4}/{total:<4} {share}  {target}")
    right = sum(by_source[s][0] for s in TARGET_SOURCES)
    total = sum(by_source[s][1] for s in TARGET_SOURCES)
    print(f"goals, categories, pauses, fields together: {right}/{total} = {right / max(total, 1):.1%}")
    analysis = sum(t[1] for t in timings)
    print(f"\nanalysis ({'with' if settings.llm_enabled else 'without'} the language model): {analysis:.1f} s for "
          f"{len(timings)} calls; scoring without the model: {sum(t[2] for t in timings) * 1000:.1f} ms in all = "
          f"{sum(t[2] for t in timings) / analysis:.3%}")
    asked = [t for t in timings if t[5]]
    if asked:
        seconds, scoring = sum(t[1] for t in asked), sum(t[3] for t in asked)
        print(f"scoring with the language model's question, {len(asked)} calls: {scoring:.1f} s of their "
              f"{seconds:.1f} s of analysis = {scoring / seconds:.1%} (per call {min(t[3] for t in asked):.1f}-"
              f"{max(t[3] for t in asked):.1f} s; {sum(1 for t in asked if not t[4])} right after their analysis)")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.verbose:
        print("\n" + "\n".join(misses))


if __name__ == "__main__":
    main()
