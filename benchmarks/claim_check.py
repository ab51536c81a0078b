"""Claim-level faithfulness on hand-labelled summary sentences: precision and recall of the unsupported class.

What it measures
----------------
The 151 sentences of tests/analysis/claim_labels.py (FIT: the written billing and dental calls; REPORT: the support
and outage calls and the real pyannote.audio conversation), each labelled by hand supported or not by its call
before any run. Each is judged by

* similarity: analysis/stages/faithfulness.py's SupportChecker (names and numbers, meaning, content words), with the
  embedded text embedder;
* judge: analysis/stages/entailment.py, the embedded language model's probability that the transcript states each
  claim of the sentence, each asked alone after the transcript prefix a summary of the call is written from (the
  prefix evaluated once per call, as in the pipeline); a sentence is unsupported when one of its claims is under
  the threshold (entailment.STATED_PROBABILITY unless ``--threshold``);
* either: unsupported when either says so (what the summary stage does).

Printed per split and checker: precision and recall of "unsupported" (the class a checker must catch: precision is
how many of the sentences it removes were inventions, recall how many inventions it removed), the judge's ROC AUC,
its precision and recall at other thresholds (``--sweep``), the sentences misjudged (``--show-misses``), and its
cost (prompt tokens evaluated, seconds). ``--fit`` uses the highest threshold whose precision on FIT is at least
FIT_PRECISION, which is how STATED_PROBABILITY was chosen: choose on FIT, report on REPORT.

How to run (repository root; loads the embedded language model and embedder; about 2 minutes on 2 quiet CPUs)::

    .venv/bin/python -P benchmarks/claim_check.py
    .venv/bin/python -P benchmarks/claim_check.py --fit --sweep --show-misses
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.analysis.*

from callscope.analysis.stages.entailment import STATED_PROBABILITY, claims_of, stated_probabilities
from callscope.analysis.stages.faithfulness import SupportChecker
from callscope.analysis.stages.summary import named_roles, summary_prompt
from tests.analysis.claim_labels import CLAIM_FIT, CLAIM_REPORT
from tests.analysis.summary_claims import REAL_CALL
from tests.analysis.transcripts import WRITTEN_ROLES, segments

# A sentence the judge removes is replaced by a quote, which may not carry the sentence's point: a removal must be
# almost always right (at the balanced threshold, 0.76, the report calls of summary_coverage.py lost 4 of 29 key
# points to removed true sentences).
FIT_PRECISION = 0.95


def _pr(pairs: list[tuple[bool, bool]]) -> tuple[float, float]:
    """Precision and recall of 'unsupported' over (truly unsupported, judged unsupported) pairs."""
    caught = sum(1 for truth, judged in pairs if truth and judged)
    flagged = sum(1 for _, judged in pairs if judged)
    invented = sum(1 for truth, _ in pairs if truth)
    return (caught / flagged if flagged else 1.0), (caught / invented if invented else 1.0)


def _auc(scored: list[dict]) -> float:
    """The chance that an invented sentence gets a lower stated probability than a supported one."""
    stated = [r["stated"] for r in scored if not r["unsupported"]]
    invented = [r["stated"] for r in scored if r["unsupported"]]
    wins = sum(1.0 if i < s else 0.5 if i == s else 0.0 for i in invented for s in stated)
    return wins / (len(stated) * len(invented))


def score_split(sets, llm, embedder) -> tuple[list[dict], dict]:
    """Each labelled sentence with its lowest claim probability and the similarity check's verdict."""
    scored: list[dict] = []
    cost = {"prompt": 0, "reused": 0, "seconds": 0.0}
    for claims in sets:
        segs = segments(claims.call)
        roles = None if claims.call is REAL_CALL else WRITTEN_ROLES
        prefix, _, _ = summary_prompt(segs, llm, roles)  # as summarize: read by the results' roles, checked by named
        checker = SupportChecker(segs, embedder, roles=named_roles(segs, roles))
        labelled = [(s, False) for s in claims.supported] + [(s, True) for s in claims.unsupported]
        checks = checker.check([s for s, _ in labelled])
        split = [claims_of(s) for s, _ in labelled]
        began = time.perf_counter()
        stated = stated_probabilities(llm, prefix, [c for parts in split for c in parts])
        cost["seconds"] += time.perf_counter() - began
        request = getattr(llm, "last_request", None)
        if request is not None:
            cost["prompt"] += request.prompt_tokens - request.reused_tokens
            cost["reused"] += request.reused_tokens
        at = 0
        for (sentence, truth), parts, check in zip(labelled, split, checks, strict=True):
            scored.append({"sentence": sentence, "unsupported": truth, "stated": min(stated[at:at + len(parts)]),
                           "dissimilar": not check.supported(checker.threshold)})
            at += len(parts)
    return scored, cost


def precise_threshold(scored: list[dict], precision: float = FIT_PRECISION) -> float:
    """The highest threshold (in hundredths) at which at least `precision` of the sentences the judge removes are
    inventions: the most recall a removal this sure allows."""
    def removes_well(t: float) -> bool:
        return _pr([(r["unsupported"], r["stated"] < t) for r in scored])[0] >= precision
    return max((t / 100 for t in range(1, 100) if removes_well(t / 100)), default=0.0)


def report(name: str, scored: list[dict], cost: dict, threshold: float, sweep: bool, show: bool) -> None:
    print(f"\n{name}: {len(scored)} sentences, {sum(r['unsupported'] for r in scored)} unsupported; "
          f"judge threshold {threshold:.2f}, ROC AUC {_auc(scored):.3f}")
    print("| checker | precision (unsupported) | recall (unsupported) |\n|---|---|---|")
    rows = {"similarity": [(r["unsupported"], r["dissimilar"]) for r in scored],
            "judge": [(r["unsupported"], r["stated"] < threshold) for r in scored],
            "either": [(r["unsupported"], r["dissimilar"] or r["stated"] < threshold) for r in scored]}
    for checker, pairs in rows.items():
        precision, recall = _pr(pairs)
        print(f"| {checker} | {precision:.2f} | {recall:.2f} |")
    print(f"judge: {cost['prompt']} prompt tokens evaluated ({cost['reused']} reused from the cache), "
          f"{cost['seconds']:.1f} s")
    if sweep:
        print("| threshold | judge P / R | either P / R |\n|---|---|---|")
        for t in (0.3, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95):
            judge = _pr([(r["unsupported"], r["stated"] < t) for r in scored])
            either = _pr([(r["unsupported"], r["dissimilar"] or r["stated"] < t) for r in scored])
            print(f"| {t:.2f} | {judge[0]:.2f} / {judge[1]:.2f} | {either[0]:.2f} / {either[1]:.2f} |")
    if show:
        for r in sorted(scored, key=lambda r: r["stated"]):
            if (r["stated"] < threshold) != r["unsupported"]:
                print(f"  judge {'passed' if r['unsupported'] else 'removed'} ({r['stated']:.2f}): {r['sentence']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threshold", type=float, default=STATED_PROBABILITY,
                        help="the judge's stated probability under which a claim is not stated")
    parser.add_argument("--fit", action="store_true",
                        help=f"use the highest threshold with precision {FIT_PRECISION} on FIT")
    parser.add_argument("--sweep", action="store_true", help="print precision and recall at other thresholds")
    parser.add_argument("--show-misses", action="store_true", help="print each sentence the judge got wrong")
    args = parser.parse_args()

    from callscope.analysis.runtime.pipeline import load_model
    from callscope.config import Settings

    settings = Settings()
    llm = load_model("llm", settings)
    embedder = load_model("embedder", settings)
    fit, fit_cost = score_split(CLAIM_FIT, llm, embedder)
    threshold = precise_threshold(fit) if args.fit else args.threshold
    report("FIT", fit, fit_cost, threshold, args.sweep, args.show_misses)
    held_out, held_out_cost = score_split(CLAIM_REPORT, llm, embedder)
    report("REPORT", held_out, held_out_cost, threshold, args.sweep, args.show_misses)


if __name__ == "__main__":
    main()
