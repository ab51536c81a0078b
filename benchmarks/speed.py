"""Real-time factors of the analysis pipeline, per stage and whole, on synthetic calls.

What it measures
----------------
Two synthetic calls of espeak-ng speech (tests/analysis/speech.py, voices.py): a stereo call (agent left, customer
right) and a mono call of the same two voices, each ``--minutes`` long (the scripted dialogue repeated, 0.6 s
between turns and a few long holds). The models are loaded first (their load times are printed on their own) and
each call is analysed once to warm up; then ``--runs`` timed runs. A stage's time is the wall time between the
progress reports the pipeline makes as each stage starts (analysis/runtime/pipeline.py), so the per-stage times add up
to the whole run. RTF = processing seconds / audio seconds (lower is faster; 0.1 = ten times faster than real time).

The settings come from the environment like the server's (CALLSCOPE_WHISPER_MODEL, CALLSCOPE_WHISPER_DEVICE,
CALLSCOPE_WHISPER_COMPUTE_TYPE, CALLSCOPE_ANALYSIS_THREADS, CALLSCOPE_LLM_*...), so the same command measures a GPU
machine where CTranslate2 sees one (``auto`` picks CUDA for Whisper).

How to run (repository root; needs espeak-ng)::

    .venv/bin/python -P benchmarks/speed.py                    # 1-minute calls, language model included
    .venv/bin/python -P benchmarks/speed.py --minutes 3 --runs 2
    CALLSCOPE_LLM_ENABLED=false .venv/bin/python -P benchmarks/speed.py
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.analysis.*

from callscope.analysis.result import AnalysisResult
from callscope.analysis.runtime.pipeline import MODELS, Pipeline, load_model
from callscope.config import Settings
from callscope.resources.kinds import Category, ExtractedField, Goal, ProjectSpec
from tests.analysis import speech
from tests.analysis.voices import AGENT, CUSTOMER, VOICE_PAIRS

PROJECT = ProjectSpec(
    name="Speed", language="en", long_pause_threshold_seconds=4,
    goals=[Goal(id=1, name="Greeting", description="The agent greets the caller and gives their name."),
           Goal(id=2, name="Closing", description="The agent asks whether there is anything else to help with.")],
    categories=[Category(name="Address change", description="The customer wants to change their address.")],
    fields=[ExtractedField(name="account_number", description="The customer's account number.", type="number")],
)


def dialogue(minutes: float) -> list[tuple[int, str, float]]:
    """(speaker index, sentence, silence after) turns filling about ``minutes`` of audio."""
    turns, seconds, i = [], 0.0, 0
    while seconds < minutes * 60:
        speaker, line = i % 2, (AGENT if i % 2 == 0 else CUSTOMER)[(i // 2) % len(AGENT)]
        gap = 5.0 if "hold" in line.lower() else 0.6
        turns.append((speaker, line, gap))
        seconds += len(line.split()) / 2.6 + gap  # espeak-ng at 150 wpm: about 2.6 words a second
        i += 1
    return turns


def make_calls(folder: Path, minutes: float) -> dict[str, tuple[Path, float]]:
    voices = VOICE_PAIRS[0]
    left, right, mono = [], [], []
    for speaker, line, gap in dialogue(minutes):
        spoken = speech.speak(line, voices[speaker])
        pause = speech.silence(gap)
        silent = np.zeros(len(spoken), dtype=np.float32)
        (left if speaker == 0 else right).append(spoken)
        (right if speaker == 0 else left).append(silent)
        left.append(pause)
        right.append(pause)
        mono += [spoken, pause]
    stereo_path = speech.write(folder / "stereo.wav", [np.concatenate(left), np.concatenate(right)])
    mono_samples = np.concatenate(mono)
    mono_path = speech.write(folder / "mono.wav", [mono_samples])
    seconds = len(mono_samples) / speech.RATE
    return {"stereo": (stereo_path, seconds), "mono": (mono_path, seconds)}


@dataclass
class Timing:
    """One timed analysis: wall seconds end to end, and per stage the wall and CPU seconds (all of the process's
    threads: less disturbed than wall time where other work shares the cores) between its progress reports."""

    total: float
    stages: dict[str, float]
    cpu: dict[str, float]
    result: AnalysisResult


def timed_run(pipeline: Pipeline, path: Path, project: ProjectSpec = PROJECT) -> Timing:
    marks: list[tuple[str, float, float]] = []
    start = time.perf_counter()
    result = pipeline.run(path, project,
                          lambda stage, _fraction: marks.append((stage, time.perf_counter(), time.process_time())))
    total = time.perf_counter() - start
    stages: dict[str, float] = {}
    cpu: dict[str, float] = {}
    for (stage, at, cpu_at), (_, until, cpu_until) in pairwise(marks):
        stages[stage] = stages.get(stage, 0.0) + until - at
        cpu[stage] = cpu.get(stage, 0.0) + cpu_until - cpu_at
    return Timing(total, stages, cpu, result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=1.0, help="length of each synthetic call")
    parser.add_argument("--runs", type=int, default=1, help="timed runs per call (after one warm-up)")
    args = parser.parse_args()
    if speech.ESPEAK is None:
        sys.exit(speech.SKIP_REASON)

    settings = Settings()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"threads per model {settings.analysis_threads}, whisper device {settings.whisper_device}")
    models = {}
    for name in MODELS:
        start = time.perf_counter()
        models[name] = load_model(name, settings)
        info = getattr(models[name], "info", None)
        print(f"load {name:<12} {time.perf_counter() - start:6.2f} s  "
              f"{f'{info.name} ({info.version})' if info else 'not installed or disabled'}")
    pipeline = Pipeline(settings, **models)

    with tempfile.TemporaryDirectory(prefix="callscope-speed-") as tmp:
        calls = make_calls(Path(tmp), args.minutes)
        for kind, (path, seconds) in calls.items():
            pipeline.run(path, PROJECT)  # warm-up: first-call allocations, caches
            totals, per_stage = [], {}
            for _ in range(args.runs):
                timing = timed_run(pipeline, path)
                totals.append(timing.total)
                for stage, spent in timing.stages.items():
                    per_stage.setdefault(stage, []).append(spent)
            total = float(np.median(totals))
            print(f"\n{kind} call, {seconds:.1f} s of audio: {total:.2f} s, RTF {total / seconds:.3f} "
                  f"(median of {args.runs})")
            for stage, spent in per_stage.items():
                median = float(np.median(spent))
                print(f"  {stage:<16} {median:7.2f} s  RTF {median / seconds:.4f}  {100 * median / total:5.1f} %")


if __name__ == "__main__":
    main()
