"""The language-model stages local and served: the same GGUF through llama.cpp in this process and behind an
OpenAI-compatible server (CALLSCOPE_LLM_ENDPOINT), side by side.

What it measures
----------------
The embedded GGUF (or ``--gguf``) is loaded here (analysis/models/language_model.LlamaCppModel) and served by
llama-cpp-python's server in a child process (tests/analysis/llama_server.py) with the same context and threads.
On each written call of tests/analysis/transcripts.py, the summary stage (analysis/stages/summary.summarize) and the
fields stage (analysis/stages/fields.extract_fields, two string fields) run on each back end in turn, ``--runs`` times,
the best run kept. Printed per call and stage: seconds local, seconds served, and whether the answers are the same.

What differs by design: the served path adds an HTTP round trip per request, and llama-cpp-python's server
applies the JSON grammar to the whole vocabulary before each token where the local back end checks the best
token first (language_model._GrammarFirstSampler); llama.cpp's C++ server and vLLM sample under a grammar as the
local one does. Run it on a quiet machine: both back ends share its cores.

How to run (repository root)::

    .venv/bin/python -P benchmarks/served_model.py
    .venv/bin/python -P benchmarks/served_model.py --runs 3 --threads 2 --context 4096
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.analysis.*

from callscope.analysis.models.language_model import LlamaCppModel, OpenAICompatibleModel
from callscope.analysis.models.llm_file import embedded_gguf
from callscope.analysis.stages.fields import extract_fields
from callscope.analysis.stages.summary import summarize
from tests.analysis.llama_server import MODEL_ALIAS, llama_server
from tests.analysis.transcripts import BILLING_CALL, DENTAL_CALL, WRITTEN_FIELDS, WRITTEN_ROLES, segments

CALLS = {"billing": BILLING_CALL, "dental": DENTAL_CALL}
SAMPLE_AS_LOCAL = {"repeat_penalty": 1.0}  # llama-cpp-python's server's default is 1.1; the local back end's 1.0
STAGES = {
    "summary": lambda dialogue, llm: summarize(dialogue, "en", llm, roles=WRITTEN_ROLES).text,
    "fields": lambda dialogue, llm: [(v.name, v.value)
                                     for v in extract_fields(WRITTEN_FIELDS, dialogue, llm, roles=WRITTEN_ROLES)],
}


def measure(llm, runs: int) -> dict[tuple[str, str], tuple[float, object]]:
    """(call, stage) -> (best seconds, answer). Calls and stages in a fixed order: both back ends see the same
    sequence of prompts, so their KV caches hold the same prefixes."""
    found: dict[tuple[str, str], tuple[float, object]] = {}
    for _ in range(runs):
        for call, turns in CALLS.items():
            dialogue = segments(turns)
            for stage, run in STAGES.items():
                start = time.perf_counter()
                answer = run(dialogue, llm)
                seconds = time.perf_counter() - start
                best = found.get((call, stage), (float("inf"), None))[0]
                found[(call, stage)] = (min(best, seconds), answer)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", type=Path, help="a GGUF file (default: the embedded model)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--runs", type=int, default=2, help="runs per back end; the best is kept")
    args = parser.parse_args()
    gguf = args.gguf or embedded_gguf()

    local = measure(LlamaCppModel(gguf, threads=args.threads, n_ctx=args.context), args.runs)
    with llama_server(gguf, args.context, args.threads) as endpoint:
        served = measure(OpenAICompatibleModel(endpoint, MODEL_ALIAS, timeout=900, extra_body=SAMPLE_AS_LOCAL),
                         args.runs)

    print(f"{gguf.name}, {args.threads} threads, {args.context} context, best of {args.runs}")
    print(f"{'call':<10}{'stage':<10}{'local s':>9}{'served s':>10}  same answer")
    for (call, stage), (seconds, answer) in local.items():
        served_seconds, served_answer = served[(call, stage)]
        print(f"{call:<10}{stage:<10}{seconds:>9.1f}{served_seconds:>10.1f}  "
              f"{'yes' if answer == served_answer else 'NO'}")
        if answer != served_answer:
            print(f"    local:  {answer}\n    served: {served_answer}")


if __name__ == "__main__":
    main()
