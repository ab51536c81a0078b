"""Faithfulness, verdict accuracy and speed of the text stages, on synthetic and real speech, in one run.

What it measures
----------------
Calls (all mono, English):

* synthetic: espeak-ng speech of the support-call dialogue of benchmarks/speed.py (the agent greets and gives her
  name, asks for the account number, changes an address, asks whether there is anything else), 1 and 5 minutes;
* real: the pyannote.audio sample (`en-call-mono` of scripts/fetch_real_speech.py: 30 s of a real phone
  conversation, "This is Diane in New Jersey..."), and for speed the English real clips (that call and the two
  read-speech clips) joined in turn to 1 and 5 minutes: real voices, though not one conversation.

Quality, on the 1-minute synthetic call and on en-call-mono, with PROJECT's goals, categories and fields and the
labels in LABELS:

* unsupported: the share of the summary's sentences (and of the explanations' sentences of goals met) that the
  checker of analysis/stages/faithfulness.py finds unsupported by the call's transcript (names/numbers not in it, or no
  stretch of the call close enough in meaning); the summary sentences are printed, to be read (the checker is
  a similarity: it misses inventions that reuse the call's words). A goal not met has no sentence to support its
  explanation: "model claims" counts the explanations of goals not met that are not the evidence template
  ("no sentence says ...; closest: ...") but a model's claim about what the call lacks;
* goals, categories, fields: the share of verdicts / values equal to the label (a string field: the label is
  contained in the value, case aside).

Speed: each call analysed whole (`Pipeline.run`, models loaded beforehand) ``--runs`` times, best run kept (the CPU
is shared: timings are noisy, the best is the least disturbed); the language model's KV cache is emptied before
each run, so no call reuses another's evaluated prompt. Beside it Whisper alone on the same audio, and the language
model's part: the time of the stages that ask it (goals, fields, summary). Targets on a 2-CPU machine: 1 minute
in at most 20 s, 5 minutes in at most 60 s.

Before and after: ``--code DIR`` analyses with the `analysis` package found in DIR instead of this tree's (e.g.
the previous commit's: ``git archive HEAD analysis | tar -x -C /tmp/before``); the checker and labels are this
tree's in both cases. ``--save FILE`` writes the figures as JSON, ``--baseline FILE`` prints them beside a saved run.

How to run (repository root; after scripts/fetch_real_speech.py; needs espeak-ng)::

    .venv/bin/python -P benchmarks/faithfulness.py --code /tmp/before --save /tmp/faith-before.json
    .venv/bin/python -P benchmarks/faithfulness.py --baseline /tmp/faith-before.json --runs 2
    .venv/bin/python -P benchmarks/faithfulness.py --requests   # and each language-model request's tokens and time
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks.*, scripts.*, tests.analysis.*

import callscope.analysis
from callscope.analysis.stages.faithfulness import SupportChecker, split_sentences
from callscope.config import Settings
from callscope.resources.kinds import Category, ExtractedField, Goal, ProjectSpec

PROJECT = ProjectSpec(
    name="Faithfulness", language="en",
    goals=[Goal(id=1, name="Greeting", description="The speaker greets the other party and introduces themselves."),
           Goal(id=2, name="Closing", description="The agent asks whether there is anything else to help with.")],
    categories=[Category(name="Address change", description="The customer wants to change their address."),
                Category(name="Small talk", description="Casual conversation between two people.")],
    fields=[ExtractedField(name="account_number", description="The customer's account number.", type="number"),
            ExtractedField(name="agent_name", description="The first name the agent introduces themselves with.",
                           type="string")],
)
# Per labelled call: goal id -> met, category -> matched, field -> value (None: not said).
LABELS = {
    "synthetic": {"goals": {1: True, 2: True}, "categories": {"Address change": True, "Small talk": False},
                  "fields": {"account_number": 457219, "agent_name": "Anna"}},
    "real": {"goals": {1: True, 2: False}, "categories": {"Address change": False, "Small talk": True},
             "fields": {"account_number": None, "agent_name": "Diane"}},
}
REAL_CALL = "en-call-mono"
REAL_CLIPS = ("en-call-mono", "en-read-a-mono", "en-read-b-mono")
LM_STAGES = ("goals", "fields", "summary")


def use_code(folder: Path) -> None:
    """Import the analysis modules from folder/analysis from now on; only this tree's checker stays."""
    for name in [n for n in sys.modules if n.startswith("callscope.analysis.") and not n.endswith(".faithfulness")]:
        del sys.modules[name]
    callscope.analysis.__path__[:] = [str(folder / "analysis")]


def synthetic_call(folder: Path, minutes: float) -> Path:
    from benchmarks.speed import dialogue
    from tests.analysis import speech
    from tests.analysis.voices import VOICE_PAIRS

    voices, pieces = VOICE_PAIRS[0], []
    for speaker, line, gap in dialogue(minutes):
        pieces += [speech.speak(line, voices[speaker]), speech.silence(gap)]
    return speech.write(folder / f"synthetic-{minutes:g}min.wav", [np.concatenate(pieces)])


def real_call(folder: Path, minutes: float | None) -> Path:
    """en-call-mono itself (minutes None), or the English real clips joined in turn to `minutes`."""
    from callscope.analysis.stages.decode import decode
    from scripts.fetch_real_speech import cache_dir
    from tests.analysis import speech

    clips = cache_dir() / "clips"
    if minutes is None:
        return clips / f"{REAL_CALL}.wav"
    audio = [decode(clips / f"{name}.wav").channels[0] for name in REAL_CLIPS]
    pieces, n, i = [], 0, 0
    while n < minutes * 60 * speech.RATE:
        pieces += [audio[i % len(audio)], speech.silence(0.6)]
        n += len(pieces[-2]) + len(pieces[-1])
        i += 1
    return speech.write(folder / f"real-{minutes:g}min.wav",
                        [np.concatenate(pieces)[: int(minutes * 60 * speech.RATE)]])


def timed(pipeline, path: Path, llm) -> tuple[float, dict[str, float], object]:
    if getattr(llm, "_llama", None) is not None:
        llm._llama.reset()  # an empty KV cache: this call reuses nothing of the previous one
    marks: list[tuple[str, float]] = []
    start = time.perf_counter()
    result = pipeline.run(path, PROJECT, lambda stage, _f: marks.append((stage, time.perf_counter())))
    total = time.perf_counter() - start
    stages: dict[str, float] = {}
    for (stage, at), (_, until) in pairwise(marks):
        stages[stage] = stages.get(stage, 0.0) + until - at
    return total, stages, result


def whisper_alone(transcriber, path: Path) -> float:
    from callscope.analysis.stages.decode import decode

    audio = decode(path)
    start = time.perf_counter()
    transcriber.transcribe(audio, 0, "en", None)
    return time.perf_counter() - start


# The evidence template's own parts: a time, a similarity, the phrase matched (numbers the transcript lacks).
_TEMPLATE = re.compile(r"\bat \d+:\d\d\b|\((?:similarity|phrase)[^)]*\)|,? similarity \d\.\d+|; and \d+ more")
# How the evidence template explains a goal not met (analysis/stages/goals.py not_met_explanation).
_NOT_MET_TEMPLATE = ("Not met: no sentence", "Not met: the call has no speech", "Not met: nothing can show it")


def explanation_sentences(text: str) -> list[str]:
    """The sentences of a met goal's explanation, without "Met:" and the template's times and similarities (and the
    lone "." a quote ending in "?" leaves once its similarity is taken out)."""
    return [s for s in split_sentences(_TEMPLATE.sub("", text.split(":", 1)[1] if ":" in text[:8] else text))
            if re.search(r"\w", s)]


def unfounded_not_met(q: dict) -> list[str]:
    """Explanations of goals not met that are not the evidence template: a model's claims about what the call
    lacks, which no sentence of it can support ("The transcript does not contain any greeting")."""
    return [e for e, (met, _) in zip(q["explanations"], q["goals"].values(), strict=True)
            if not met and not e.startswith(_NOT_MET_TEMPLATE)]


def quality(result, labels: dict, embedder) -> dict:
    checker = SupportChecker(result.segments, embedder)
    summary = split_sentences(result.summary or "")
    summary_checks = checker.check(summary)
    explanations = [s for g in result.goals if g.met for s in explanation_sentences(g.explanation)]
    explanation_checks = checker.check(explanations)
    goals = [g.met == labels["goals"][g.goal_id] for g in result.goals]
    categories = [c.matched == labels["categories"][c.name] for c in result.categories]
    fields = []
    for f in result.extracted_data:
        want = labels["fields"][f.name]
        fields.append(f.value == want if not isinstance(want, str) or f.value is None
                      else want.lower() in str(f.value).lower())
    return {
        "summary": result.summary, "summary_sentences": len(summary),
        "summary_unsupported": [c.sentence for c in summary_checks if not c.supported()],
        "explanations": [g.explanation for g in result.goals],
        "explanation_sentences": len(explanations),
        "explanation_unsupported": [c.sentence for c in explanation_checks if not c.supported()],
        "goal_accuracy": float(np.mean(goals)), "category_accuracy": float(np.mean(categories)),
        "field_accuracy": float(np.mean(fields)),
        "goals": {g.goal_name: [g.met, g.score] for g in result.goals},
        "fields": {f.name: f.value for f in result.extracted_data},
        "summary_stage": next((s.detail for s in result.stages if s.name == "summary"), ""),
    }


def share(bad: list, total: int) -> str:
    return f"{len(bad)}/{total}" + (f" ({100 * len(bad) / total:.0f} %)" if total else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, help="analyse with DIR/analysis (e.g. the previous commit's)")
    parser.add_argument("--runs", type=int, default=1, help="timed runs of each call; the best is kept")
    parser.add_argument("--minutes", type=float, nargs="*", default=[1, 5], help="lengths timed (none: no timing)")
    parser.add_argument("--save", type=Path)
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--requests", action="store_true",
                        help="print each language-model request: prompt tokens, reused from the KV cache, generated, s")
    args = parser.parse_args()
    if args.requests:
        logging.basicConfig(format="    %(message)s")
        logging.getLogger("callscope.analysis.models.language_model").setLevel(logging.DEBUG)
    if args.code:
        use_code(args.code.resolve())
    from callscope.analysis.runtime.pipeline import MODELS, Pipeline, load_model

    settings = Settings()
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; code: {args.code or 'this tree'}")
    models = {name: load_model(name, settings) for name in MODELS}
    llm = models["llm"]
    print(f"language model: {llm.info.name if llm else 'none'}")
    pipeline = Pipeline(settings, **models)
    figures: dict = {"quality": {}, "speed": {}}
    with tempfile.TemporaryDirectory(prefix="callscope-faith-") as tmp:
        folder = Path(tmp)
        labelled = {"synthetic": synthetic_call(folder, 1), "real": real_call(folder, None)}
        pipeline.run(labelled["real"], PROJECT)  # warm-up: first-call allocations
        for kind, path in labelled.items():
            _, _, result = timed(pipeline, path, llm)
            figures["quality"][kind] = quality(result, LABELS[kind], models["embedder"])
            print(f"  quality of the {kind} call measured", flush=True)
        calls = {f"{kind} {m:g} min": (kind, m) for m in args.minutes for kind in ("synthetic", "real")}
        paths = {name: (synthetic_call(folder, m) if kind == "synthetic" else real_call(folder, m))
                 for name, (kind, m) in calls.items()}
        best: dict[str, tuple[float, dict[str, float]]] = {}
        for _ in range(args.runs):
            for name, path in paths.items():  # in turn: the previous call is always another one
                total, stages, _ = timed(pipeline, path, llm)
                print(f"  {name}: {total:.1f} s", flush=True)  # progress: a 5-minute call takes a while
                if name not in best or total < best[name][0]:
                    best[name] = (total, stages)
        for name, path in paths.items():
            total, stages = best[name]
            figures["speed"][name] = {"total": total, "whisper": whisper_alone(models["transcriber"], path),
                                      "language_model": sum(stages.get(s, 0.0) for s in LM_STAGES),
                                      "stages": stages}
    report(figures, json.loads(args.baseline.read_text()) if args.baseline else None)
    if args.save:
        args.save.write_text(json.dumps(figures, indent=1))


def report(now: dict, before: dict | None) -> None:
    def beside(value: str, old: str | None) -> str:
        return f"{old} > {value}" if old is not None else value

    print("\nquality (before > now)" if before else "\nquality")
    rows = [("unsupported summary sentences", lambda q: share(q["summary_unsupported"], q["summary_sentences"])),
            ("unsupported sentences, met goals",
             lambda q: share(q["explanation_unsupported"], q["explanation_sentences"])),
            ("model claims, goals not met", lambda q: share(unfounded_not_met(q), len(q["goals"]))),
            ("goal verdict accuracy", lambda q: f"{q['goal_accuracy']:.2f}"),
            ("category accuracy", lambda q: f"{q['category_accuracy']:.2f}"),
            ("field accuracy", lambda q: f"{q['field_accuracy']:.2f}")]
    kinds = list(now["quality"])
    print(f"  {'':36}" + "".join(f"{k:>24}" for k in kinds))
    for label, fn in rows:
        cells = [beside(fn(now["quality"][k]), fn(before["quality"][k]) if before else None) for k in kinds]
        print(f"  {label:36}" + "".join(f"{c:>24}" for c in cells))
    for kind, q in now["quality"].items():
        print(f"\n  {kind}: summary ({q['summary_stage'] or 'as written'}): {q['summary']}")
        for sentence in q["summary_unsupported"]:
            print(f"    unsupported: {sentence}")
        for explanation in q["explanations"]:
            print(f"    goal: {explanation}")
        print(f"    goals {q['goals']}; fields {q['fields']}")
    if not now["speed"]:
        return
    print("\nspeed, seconds (best of the runs; before > now)" if before else "\nspeed, seconds (best of the runs)")
    print(f"  {'call':20}{'whole':>16}{'whisper alone':>16}{'language model':>18}{'model share':>16}")
    for name, s in now["speed"].items():
        old = (before or {}).get("speed", {}).get(name)

        def cell(key: str, fmt: str = "{:.1f}", s=s, old=old) -> str:
            return beside(fmt.format(s[key]), fmt.format(old[key]) if old else None)

        shares = beside(f"{100 * s['language_model'] / s['total']:.0f} %",
                        f"{100 * old['language_model'] / old['total']:.0f} %" if old else None)
        print(f"  {name:20}{cell('total'):>16}{cell('whisper'):>16}{cell('language_model'):>18}{shares:>16}")


if __name__ == "__main__":
    main()
