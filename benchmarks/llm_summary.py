"""Speed and memory of the summary stage on the embedded language model (llama.cpp, CPU).

What it measures
----------------
It loads the embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M (`analysis/models/llm_file.py`; joined from its part
packages on first use) with ``--threads`` threads, then summarises a written billing call of about 80 s
(tests/analysis/transcripts.py) twice:

* cold: nothing of the prompt evaluated yet, what the first stage reading a call pays;
* warm: the same call again with another instruction (the summary in German), as the next stage sharing
  the transcript prefix would: only the instruction after the transcript and the answer are evaluated.

For each it prints the wall time, the prompt tokens evaluated and their rate, the tokens generated and
their rate (llama.cpp's own counters), and the summary. Then the load time and the process's peak
resident memory (VmHWM). The machine's other load changes the figures: compare runs on a quiet machine.

How to run
----------
From the repository root::

    .venv/bin/python -P benchmarks/llm_summary.py
    .venv/bin/python -P benchmarks/llm_summary.py --threads 4 --context 8192
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.analysis.*

import llama_cpp

from callscope.analysis.models.language_model import LlamaCppModel
from callscope.analysis.models.llm_file import embedded_gguf
from callscope.analysis.stages.summary import summarize
from tests.analysis.transcripts import BILLING_CALL, segments


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context", type=int, default=8192)
    args = parser.parse_args()

    started = time.monotonic()
    path = embedded_gguf()
    joined = time.monotonic() - started
    started = time.monotonic()
    model = LlamaCppModel(path, threads=args.threads, n_ctx=args.context)
    loaded = time.monotonic() - started
    ctx = model._llama._ctx.ctx  # llama.cpp's per-context counters, for the token rates
    call = segments(BILLING_CALL)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {model.info.version}")
    print(f"call: {len(call)} turns, {sum(len(s.text.split()) for s in call)} words, {call[-1].end_ms / 1000:.0f} s")
    for run, language in (("cold", "en"), ("warm", "de")):
        llama_cpp.llama_perf_context_reset(ctx)
        started = time.monotonic()
        result = summarize(call, language, model)
        wall = time.monotonic() - started
        perf = llama_cpp.llama_perf_context(ctx)
        prompt_rate = perf.n_p_eval / (perf.t_p_eval_ms / 1000) if perf.t_p_eval_ms else float("nan")
        gen_rate = perf.n_eval / (perf.t_eval_ms / 1000) if perf.t_eval_ms else float("nan")
        print(
            f"{run}: {wall:.1f} s; prompt {perf.n_p_eval} tokens at {prompt_rate:.1f} tokens/s; "
            f"generated {perf.n_eval} tokens at {gen_rate:.1f} tokens/s"
        )
        print(f"  {result.language}: {result.text}")
    print(f"GGUF ready in {joined:.1f} s, model loaded in {loaded:.1f} s; peak RSS {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
