"""Coverage: the share of a call's reference key points that a summary states, the summary's usefulness measure
beside faithfulness (analysis/stages/faithfulness.py: how much of it is true).

A key point (`KeyPoint`, written by hand from the call's script or reference transcript) is stated when one sentence
of the summary has a word of each of its word groups (stems compared) and is at least ``COVERAGE_THRESHOLD``
similar in meaning to it. English only: the embedder reads English. The fit: docs/analysis.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from callscope.analysis.stages.evidence import tokens
from callscope.analysis.stages.faithfulness import claim_text, split_sentences, stem

# On the FIT pairs with the words present, the sentences not stating their point reach 0.51 ("The customer asked
# how long the refund will take"), the stated ones 0.72 and up but one paraphrase at 0.43 ("There were two payments
# of $49.99"): the lowest threshold that counts no FIT pair wrongly stated, so coverage errs on the low side.
COVERAGE_THRESHOLD = 0.52


@dataclass(frozen=True)
class KeyPoint:
    text: str
    words: tuple[tuple[str, ...], ...]  # each group: one of its words must be in the sentence


def has_words(sentence: str, point: KeyPoint) -> bool:
    stems = {stem(w) for w in tokens(sentence)}
    return all(any(stem(w) in stems for w in group) for group in point.words)


def similarities(sentences: Sequence[str], points: Sequence[KeyPoint], embedder: Any) -> np.ndarray:
    """Cosine similarity of each sentence (rows) to each key point (columns)."""
    vectors = np.asarray(embedder.embed([claim_text(s) for s in sentences] + [claim_text(p.text) for p in points]),
                         dtype=np.float32)
    return vectors[: len(sentences)] @ vectors[len(sentences):].T


def stated(summary: str, points: Sequence[KeyPoint], embedder: Any,
           threshold: float = COVERAGE_THRESHOLD) -> list[bool]:
    """For each key point, whether a sentence of `summary` states it."""
    sentences = split_sentences(summary)
    if not sentences or not points:
        return [False] * len(points)
    similarity = similarities(sentences, points, embedder)
    return [any(similarity[i, j] >= threshold and has_words(s, p) for i, s in enumerate(sentences))
            for j, p in enumerate(points)]


def coverage(summary: str, points: Sequence[KeyPoint], embedder: Any) -> float:
    """The share of `points` that `summary` states (0 to 1)."""
    return sum(stated(summary, points, embedder)) / len(points) if points else 1.0
