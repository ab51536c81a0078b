"""Claim-level faithfulness: each sentence a language model wrote about a call is split into its claims, and the
language model, as a judge, gives the probability that the transcript states each; a claim below
STATED_PROBABILITY is not stated.

The similarity check of faithfulness.py passes an invention made of the call's own words ("Sheila and Texas agree to
the design"): only reading can tell what the words say. The judge reads the same transcript prefix the summary was
written from, so the language model's cache already holds it, and each claim is asked alone after it: a judgement
costs the claim's own tokens and one answer token, whose yes/no probability is read rather than sampled (a greedy
yes/no missed most inventions: the model says yes to what it half believes). Its prompt, threshold and figures:
benchmarks/RESULTS.md ("Claim-level faithfulness"); docs/analysis.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from callscope.analysis.models.language_model import LanguageModel

# Clauses joined by these are claims of their own ("The agent refunded the payment, and the customer agreed").
_CLAUSE_JOINS = re.compile(r"(?:,|;)\s+(?:and|but|so|while|then|and then)\s+|;\s+", re.IGNORECASE)
_MIN_CLAIM_WORDS = 3

# The judge's P(yes) under which a claim is not stated: the highest at which 95 % of the sentences it removes are
# inventions on the FIT sentences of tests/analysis/claim_labels.py (benchmarks/claim_check.py --fit). A removed
# sentence is replaced by a quote that may miss its point, so a removal must be almost always right.
STATED_PROBABILITY = 0.6

_QUESTION = (
    "Below is a statement someone wrote about the call above. Answer \"yes\" only if the transcript states it: a "
    "speaker said it, or it follows plainly from what they said. Answer \"no\" if it adds anything the speakers did "
    "not say, even in the call's own words: an event, an agreement, a decision, an offer, a promise, a feeling, a "
    "reason, who did what, a number, a day, a time or a name that belongs to something else.\n\nStatement: "
)
_ASK = "\nAnswer yes or no."


def claims_of(sentence: str) -> list[str]:
    """The claims of one written sentence: its clauses joined by "and", "but", "so", ";" when each says enough to be
    judged alone; else the sentence whole."""
    parts = [p.strip(" ,;") for p in _CLAUSE_JOINS.split(sentence)]
    parts = [p for p in parts if p]
    if len(parts) < 2 or any(len(p.split()) < _MIN_CLAIM_WORDS for p in parts):
        return [sentence.strip()]
    parts = [p[0].upper() + p[1:] for p in parts]  # each read as a sentence of its own
    return [p if p.endswith((".", "!", "?")) else f"{p}." for p in parts]


def stated_probabilities(llm: LanguageModel, transcript_prefix: str, claims: Sequence[str]) -> list[float]:
    """The judge's probability that the transcript states each claim, each asked alone after `transcript_prefix`
    (the prompt the claims were written from, so that its evaluation is reused). Raises LanguageModelError when
    the model cannot answer."""
    return llm.yes_probabilities(f"{transcript_prefix}\n{_QUESTION}", [f"{claim}{_ASK}" for claim in claims])


def entailed(llm: LanguageModel, transcript_prefix: str, claims: Sequence[str]) -> list[bool]:
    """Whether the transcript states each claim: its stated probability at least STATED_PROBABILITY."""
    return [p >= STATED_PROBABILITY for p in stated_probabilities(llm, transcript_prefix, claims)]
