"""Claim-level faithfulness: each sentence a language model wrote about a call is split into its claims, and the
language model, as a judge constrained to yes or no, says of each whether the transcript states it.

The similarity check of faithfulness.py passes an invention made of the call's own words ("Sheila and Texas agree to
the design"): only reading can tell what the words say. The judge reads the same transcript prefix the summary was
written from, so the language model's cache already holds it and a judgement costs only its question. Its prompt
and figures: benchmarks/RESULTS.md ("Claim-level faithfulness"); docs/analysis.md.
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
JUDGE_TOKENS_PER_CLAIM = 8  # '"3": "yes", ' and the braces

_QUESTION = (
    "Below are statements someone wrote about the call above. For each one, answer \"yes\" only if the transcript "
    "states it: a speaker said it, or it follows plainly from what they said. Answer \"no\" if it adds anything the "
    "speakers did not say, even in the call's own words: an event, an agreement, a decision, an offer, a promise, "
    "a feeling, a reason, who did what, a number, a day, a time or a name that belongs to something else.\n"
)


def claims_of(sentence: str) -> list[str]:
    """The claims of one written sentence: its clauses joined by "and", "but", "so", ";" when each says enough to be
    judged alone; else the sentence whole."""
    parts = [p.strip(" ,;") for p in _CLAUSE_JOINS.split(sentence)]
    parts = [p for p in parts if p]
    if len(parts) < 2 or any(len(p.split()) < _MIN_CLAIM_WORDS for p in parts):
        return [sentence.strip()]
    parts = [p[0].upper() + p[1:] for p in parts]  # each read as a sentence of its own
    return [p if p.endswith((".", "!", "?")) else f"{p}." for p in parts]


def judge_schema(count: int) -> dict:
    keys = [str(i) for i in range(1, count + 1)]
    return {"type": "object", "properties": {k: {"enum": ["yes", "no"]} for k in keys}, "required": keys,
            "additionalProperties": False}


def judge_prompt(transcript_prefix: str, claims: Sequence[str]) -> str:
    listed = "\n".join(f"{i}. {claim}" for i, claim in enumerate(claims, 1))
    return f"{transcript_prefix}\n{_QUESTION}\n{listed}"


def entailed(llm: LanguageModel, transcript_prefix: str, claims: Sequence[str]) -> list[bool]:
    """Whether the transcript states each claim, by the language model's judgement in one request after
    `transcript_prefix` (the prompt the claims were written from, so that its evaluation is reused). Raises
    LanguageModelError when the model gives no usable answer."""
    if not claims:
        return []
    answer = llm.generate_json(judge_prompt(transcript_prefix, claims), judge_schema(len(claims)),
                               max_tokens=JUDGE_TOKENS_PER_CLAIM * len(claims) + 8)
    return [answer[str(i)] == "yes" for i in range(1, len(claims) + 1)]
