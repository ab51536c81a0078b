"""Seconds and memory of the whole analysis per call length, per stage, against the spec's indicative times.

What it measures
----------------
Mono calls of real speech 1, 5, 15 and 60 minutes long (``--lengths``): the English clips of the real-speech set
(en-call-mono, en-read-a-mono, en-read-b-mono: `scripts/fetch_real_speech.py`) joined turn after turn, 0.6 s apart,
and repeated to the length (`benchmarks/faithfulness.py`'s `real_call`: the same call every run), as a user uploads
them. Each call is analysed once with the default install's models, the language model on, and a project with two
goals, a category and a field (`benchmarks/speed.py`'s PROJECT), in a fresh Python process of its own: its peak
RSS is that length's (models, decoded audio and every stage), and the language model's cache starts empty.

Printed per length: seconds end to end (the models' load is not counted; it is printed on its own) against this
machine's target and the spec's indicative time for a call of that length; per stage the wall seconds between the
pipeline's progress reports (`benchmarks/speed.py`'s `timed_run`) and the CPU seconds of the process meanwhile
(all its threads; where other work shares the cores, CPU seconds are the less disturbed figure), and the CPU
seconds per minute of audio, which stay flat across lengths for a stage whose cost grows with the audio; the peak
RSS of the process and its RSS once the models were loaded.

`--save FILE` writes the figures as JSON; `--baseline FILE` prints each beside the saved one ("before > now").

How to run (repository root; after `scripts/fetch_real_speech.py`; about 15 minutes on 2 CPUs)::

    .venv/bin/python -P benchmarks/call_lengths.py --save /tmp/lengths-before.json
    .venv/bin/python -P benchmarks/call_lengths.py --baseline /tmp/lengths-before.json
    .venv/bin/python -P benchmarks/call_lengths.py --lengths 1 5
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks.*, scripts.*, tests.*

LENGTHS = (1, 5, 15, 60)
# This machine's targets (seconds) per call length in minutes; the spec's indicative times are spec_for's
TARGETS = {1: 20, 5: 60, 15: 180, 60: 480}


def spec_for(minutes: float) -> tuple[str, int]:
    """The spec's indicative time for a call of `minutes` (under 5, 5-15, 15-60, over 60) and its upper end (s)."""
    if minutes < 5:
        return "30-60 s", 60
    if minutes < 15:
        return "1-3 min", 180
    return ("3-10 min", 600) if minutes <= 60 else ("10-20 min", 1200)


def met(seconds: float, minutes: float) -> str:
    """Whether `seconds` meet this machine's target and the spec's indicative time: "yes / yes"."""
    return " / ".join("yes" if seconds <= limit else "NO"
                      for limit in (TARGETS.get(minutes, float("inf")), spec_for(minutes)[1]))


def _rss_mb(field: str) -> float:
    """VmRSS or VmHWM (peak) of this process, in MB."""
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith(field))
    return int(line.split()[1]) / 1024


def analyse(path: Path) -> dict:
    """Load the models, analyse `path` once; the figures of this process (run in a child of its own)."""
    from benchmarks.speed import PROJECT, timed_run
    from callscope.analysis.runtime.pipeline import MODELS, Pipeline, load_model
    from callscope.config import Settings

    settings = Settings()
    start = time.perf_counter()
    pipeline = Pipeline(settings, **{name: load_model(name, settings) for name in MODELS})
    load = time.perf_counter() - start
    loaded_mb = _rss_mb("VmRSS")
    timing = timed_run(pipeline, path, PROJECT)
    result = timing.result
    return {"audio_s": result.duration_ms / 1000, "load_s": load, "total_s": timing.total, "stages": timing.stages,
            "cpu": timing.cpu, "loaded_mb": loaded_mb,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "segments": len(result.segments), "skipped": [s.name for s in result.stages if not s.ran],
            "summary": result.summary}  # to be read: does it say why the call happened and how it ended?


def cell(now: float | None, before: float | None, fmt: str) -> str:
    text = "-" if now is None else format(now, fmt)
    return text if before is None else f"{format(before, fmt)} > {text}"


def table(rows: dict[str, dict], before: dict[str, dict]) -> None:
    lengths = list(rows)
    width = 17 if before else 11  # "yes / yes" and a space
    head = "".join(f"{f'{m} min':>{width}}" for m in lengths)

    def line(label: str, value, fmt: str) -> None:
        print(f"{label:<28}"
              + "".join(f"{cell(value(rows[m]), value(before[m]) if m in before else None, fmt):>{width}}"
                                       for m in lengths))

    print(f"\n{'':<28}{head}")
    line("audio (s)", lambda r: r["audio_s"], ".0f")
    line("end to end (s)", lambda r: r["total_s"], ".1f")
    print(f"{'target on 2 CPUs (s)':<28}" + "".join(f"{TARGETS.get(float(m), '-'):>{width}}" for m in lengths))
    print(f"{'spec indicative':<28}" + "".join(f"{spec_for(float(m))[0]:>{width}}" for m in lengths))
    print(f"{'met (target / spec)':<28}" + "".join(f"{met(rows[m]['total_s'], float(m)):>{width}}" for m in lengths))
    line("peak RSS (MB)", lambda r: r["peak_mb"], ".0f")
    line("RSS, models loaded (MB)", lambda r: r["loaded_mb"], ".0f")
    line("models' load (s)", lambda r: r["load_s"], ".1f")
    stages = list(dict.fromkeys(s for r in rows.values() for s in r["stages"]))
    for title, key, per_minute in (("wall s", "stages", False), ("CPU s", "cpu", False),
                                   ("CPU s per audio minute", "cpu", True)):
        print(f"{title}:")
        for stage in stages:
            line(f"  {stage}", lambda r, s=stage, k=key, p=per_minute: (
                None if s not in r[k] else r[k][s] / (r["audio_s"] / 60 if p else 1)), ".2f" if per_minute else ".1f")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=float, nargs="+", default=LENGTHS, help="call lengths in minutes")
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--baseline", type=Path, help="a JSON file written by --save: print it beside")
    parser.add_argument("--analyse", type=Path, help=argparse.SUPPRESS)  # the child: one call, JSON out
    args = parser.parse_args()
    if args.analyse:
        print(json.dumps(analyse(args.analyse)))
        return

    from benchmarks.faithfulness import real_call

    before = json.loads(args.baseline.read_text())["lengths"] if args.baseline else {}
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="callscope-lengths-") as tmp:
        for minutes in args.lengths:
            path = real_call(Path(tmp), minutes)
            child = subprocess.run([sys.executable, "-P", __file__, "--analyse", str(path)], capture_output=True,
                                   text=True)
            if child.returncode:
                sys.exit(f"{minutes:g} min: the analysis failed:\n{child.stderr[-3000:]}")
            rows[f"{minutes:g}"] = row = json.loads(child.stdout.strip().splitlines()[-1])
            path.unlink()
            print(f"{minutes:g} min: {row['total_s']:.1f} s, peak RSS {row['peak_mb']:.0f} MB", flush=True)
            print(f"  summary: {row.get('summary')}", flush=True)
            if args.save:  # after each length: an unattended run stopped early keeps what it measured
                args.save.write_text(json.dumps({"lengths": rows}, indent=1))
    table(rows, before)
    if args.save:
        print(f"saved {args.save}")


if __name__ == "__main__":
    main()
