"""Claim-level faithfulness on hand-labelled summary sentences: precision and recall of the unsupported class.

What it measures
----------------
The 151 sentences of tests/analysis/claim_labels.py (FIT: the written billing and dental calls; REPORT: the support
and outage calls and the real pyannote.audio conversation), each labelled by hand supported or not by its call
before any run. Each is judged by

* similarity: analysis/stages/faithfulness.py's SupportChecker (names and numbers, meaning, content words), with the
  embedded text embedder;
* judge: analysis/stages/entailment.py, the embedded language model asked of each claim of the sentence, yes or no,
  after the transcript prefix a summary of the call is written from (the prefix evaluated once per call, as in the
  pipeline), the sentences put in groups of ``--batch`` as a summary's would be;
* either: unsupported when either says so (what the summary stage does).

Printed per split and checker: precision and recall of "unsupported" (the class a checker must catch: precision is
how many of the sentences it removes were inventions, recall how many inventions it removed), the sentences
misjudged, and the judge's cost (prompt tokens evaluated, tokens generated, seconds).

How to run (repository root; loads the embedded language model and embedder)::

    .venv/bin/python -P benchmarks/claim_check.py
    .venv/bin/python -P benchmarks/claim_check.py --batch 1 --show-misses
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.analysis.*

from callscope.analysis.stages.entailment import claims_of, entailed
from callscope.analysis.stages.faithfulness import SupportChecker
from callscope.analysis.stages.summary import named_roles, summary_prompt
from tests.analysis.claim_labels import CLAIM_FIT, CLAIM_REPORT
from tests.analysis.summary_claims import REAL_CALL
from tests.analysis.transcripts import WRITTEN_ROLES, segments


def _pr(verdicts: list[tuple[bool, bool]]) -> tuple[float, float]:
    """Precision and recall of 'unsupported' over (truly unsupported, judged unsupported) pairs."""
    caught = sum(1 for truth, judged in verdicts if truth and judged)
    flagged = sum(1 for _, judged in verdicts if judged)
    invented = sum(1 for truth, _ in verdicts if truth)
    return (caught / flagged if flagged else 1.0), (caught / invented if invented else 1.0)


def run_split(name: str, sets, llm, embedder, batch: int, show: bool) -> dict:
    rows: dict[str, list[tuple[bool, bool]]] = {"similarity": [], "judge": [], "either": []}
    cost = {"prompt": 0, "reused": 0, "generated": 0, "seconds": 0.0, "requests": 0}
    misses: list[str] = []
    for claims in sets:
        segs = segments(claims.call)
        roles = named_roles(segs, None if claims.call is REAL_CALL else WRITTEN_ROLES)
        prefix, _, _ = summary_prompt(segs, llm, roles)
        checker = SupportChecker(segs, embedder, roles=roles)
        labelled = [(s, False) for s in claims.supported] + [(s, True) for s in claims.unsupported]
        random.Random(0).shuffle(labelled)
        for start in range(0, len(labelled), batch):
            group = labelled[start:start + batch]
            sentences = [s for s, _ in group]
            similar = [not c.supported(checker.threshold) for c in checker.check(sentences)]
            split = [claims_of(s) for s in sentences]
            began = time.perf_counter()
            verdicts = entailed(llm, prefix, [c for parts in split for c in parts])
            cost["seconds"] += time.perf_counter() - began
            request = getattr(llm, "last_request", None)
            if request is not None:
                cost["prompt"] += request.prompt_tokens - request.reused_tokens
                cost["reused"] += request.reused_tokens
                cost["generated"] += request.generated_tokens
            cost["requests"] += 1
            at = 0
            for (sentence, truth), parts, sim in zip(group, split, similar, strict=True):
                judged = not all(verdicts[at:at + len(parts)])
                at += len(parts)
                rows["similarity"].append((truth, sim))
                rows["judge"].append((truth, judged))
                rows["either"].append((truth, judged or sim))
                if show and judged != truth:
                    misses.append(f"  judge {'passed' if truth else 'removed'}: {sentence}")
    print(f"\n{name}: {sum(1 for _ in rows['judge'])} sentences, "
          f"{sum(1 for t, _ in rows['judge'] if t)} unsupported")
    print("| checker | precision (unsupported) | recall (unsupported) |\n|---|---|---|")
    figures = {}
    for checker_name, verdicts in rows.items():
        precision, recall = _pr(verdicts)
        figures[checker_name] = (precision, recall)
        print(f"| {checker_name} | {precision:.2f} | {recall:.2f} |")
    print(f"judge: {cost['requests']} requests, {cost['prompt']} prompt tokens evaluated ({cost['reused']} reused "
          f"from the cache), {cost['generated']} generated, {cost['seconds']:.1f} s")
    for line in misses:
        print(line)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=5, help="sentences judged in one request (a summary's count)")
    parser.add_argument("--split", choices=["fit", "report", "both"], default="both")
    parser.add_argument("--show-misses", action="store_true", help="print each sentence the judge got wrong")
    args = parser.parse_args()

    from callscope.analysis.runtime.pipeline import load_model
    from callscope.config import Settings

    settings = Settings()
    llm = load_model("llm", settings)
    embedder = load_model("embedder", settings)
    if args.split in ("fit", "both"):
        run_split("FIT", CLAIM_FIT, llm, embedder, args.batch, args.show_misses)
    if args.split in ("report", "both"):
        run_split("REPORT", CLAIM_REPORT, llm, embedder, args.batch, args.show_misses)


if __name__ == "__main__":
    main()
