"""A site model (CALLSCOPE_WHISPER_MODELS) loaded only while used, inline: what its idle unloading gives back and what
the next call pays for it.

What it measures
----------------
A Pipeline whose only site model is `--model` (default: the embedded Whisper base, as a site model) with
CALLSCOPE_SITE_MODEL_IDLE_SECONDS=`--idle`. Per cycle: the model is used once (`Pipeline.transcriber_for`, which loads
it where it is not loaded: the seconds a call waits for it), then left unused until the idle timer drops it. The
process's resident memory (/proc/self/statm) is read before the first load, with the model loaded, and once it was
dropped, over `--cycles` cycles: once as the product runs (the freed heap handed back to the system,
analysis/runtime/idle.py `_return_memory`), once without that step (glibc keeps the freed pages), to show what it
is for. Whether the memory a GPU model holds is freed is not measured here (no GPU on the machine it was written on).

How to run (repository root)::

    .venv/bin/python -P benchmarks/site_models.py
    .venv/bin/python -P benchmarks/site_models.py --model /models/whisper-large-v3 --cycles 3
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from callscope.analysis.models.files import embedded_whisper_dir
from callscope.analysis.runtime import idle
from callscope.analysis.runtime.pipeline import Pipeline
from callscope.config import Settings
from callscope.resources.kinds import ProjectSpec, TranscriptionSpec

NAME = "site"


def resident_mib() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 / 2**20


def cycles(model: str, idle_seconds: float, count: int) -> list[tuple[float, float, float]]:
    """(seconds to load, MiB loaded, MiB once dropped) per cycle."""
    settings = Settings(llm_enabled=False, whisper_models={NAME: model}, site_model_idle_seconds=idle_seconds,
                        log_level="WARNING")
    pipeline = Pipeline(settings, transcriber=None, speakers=None, embedder=None, llm=None)
    spec = ProjectSpec(name="Bench", language="en", transcription=TranscriptionSpec(model=NAME))
    out = []
    for _ in range(count):
        started = time.perf_counter()
        with pipeline.transcriber_for(spec):
            loaded, seconds = resident_mib(), time.perf_counter() - started
        while NAME in pipeline.site_models:
            time.sleep(0.05)
        time.sleep(0.5)  # the drop hands the heap back just after the name is gone
        out.append((seconds, loaded, resident_mib()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="a CTranslate2 Whisper directory; default: the embedded base")
    parser.add_argument("--idle", type=float, default=1.0, help="CALLSCOPE_SITE_MODEL_IDLE_SECONDS of the run")
    parser.add_argument("--cycles", type=int, default=5)
    args = parser.parse_args()
    model = args.model or str(embedded_whisper_dir("base"))
    print(f"site model {model}, idle {args.idle:g} s, {args.cycles} cycles; resident MiB before any load: "
          f"{resident_mib():.0f}")
    trim = idle._return_memory
    for label, returned in (("heap handed back (as the product runs)", trim), ("heap kept (without that step)",
                                                                              lambda: None)):
        idle._return_memory = returned
        rows = cycles(model, args.idle, args.cycles)
        print(f"\n{label}\n cycle  load s  loaded MiB  dropped MiB")
        for i, (seconds, loaded, dropped) in enumerate(rows):
            print(f" {i:5d}  {seconds:6.2f}  {loaded:10.0f}  {dropped:11.0f}")
    idle._return_memory = trim


if __name__ == "__main__":
    main()
