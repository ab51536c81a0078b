"""Categories of a call (callscope.resources.kinds.Category), from evidence in the transcript.

A call is in a category when a sentence of it (or a segment as a whole):

1. contains one of the category's ``keywords`` (whole words, case and punctuation ignored, as goal phrases), or
2. is at least ``min_similarity`` similar (cosine of all-MiniLM-L6-v2 embeddings) to the category's name and
   description (role words such as "the customer" taken out, as for goals). Unset, ``CATEGORY_THRESHOLD``;
   1 turns matching by meaning off.

**Score** (0..1, at least 0.5 exactly when matched): a keyword is 1.0; a similarity maps piecewise linearly,
0.10 -> 0, the threshold -> 0.5, ``CATEGORY_CEILING`` -> 1. The evidence is the strongest sentence of each
segment that matched, at most ``MAX_EVIDENCE``, in time order.

Threshold: measured on 27 utterances that belong to one of 11 categories and 320 (category, utterance) pairs
that do not (the other categories' utterances and ordinary call talk), in two sets written apart (telecom;
clinic, bank, shop, insurance): at 0.40, 63 % of the utterances match and no negative pair does; 0.35 lets
one through (relocation for "I'm moving to another provider") and 0.30 six. A category is about a topic,
which this model captures better than the act a goal asks for, hence a lower threshold than goals' 0.45.
The labelled pairs are in tests/analysis/test_categories.py, which re-measures them with the real model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from callscope.analysis.result import CategoryResult, Evidence, TranscriptSegment
from callscope.analysis.stages.evidence import (
    Similarities,
    excerpt,
    find_words,
    query_text,
    similarity_score,
    threshold_of,
    tokens,
    word_time,
)

if TYPE_CHECKING:
    from callscope.resources.kinds import Category

CATEGORY_THRESHOLD = 0.40
CATEGORY_CEILING = 0.60  # about the 90th percentile of the labelled positives
MAX_EVIDENCE = 3


def _keyword_hits(category: Category, segments: Sequence[TranscriptSegment]) -> list[tuple[float, Evidence]]:
    hits = []
    for keyword in category.keywords:
        wanted = tokens(keyword)
        for segment in segments:
            at = find_words(tokens(segment.text), wanted)
            if at >= 0:
                quote, _ = excerpt(segment, at, len(wanted))
                hits.append((1.0, Evidence(dialogue_id=segment.id, start_ms=word_time(segment, at), quote=quote)))
    return hits


def classify_one(category: Category, segments: Sequence[TranscriptSegment],
                 similarities: Similarities) -> CategoryResult:
    """One category's result: whether it matched, its score and its evidence."""
    found = _keyword_hits(category, segments)
    best = 1.0 if found else 0.0
    threshold = threshold_of(category.min_similarity, CATEGORY_THRESHOLD)
    if threshold is not None:
        query = query_text(category.name, category.description)
        # strict=False: without an embedder there are no similarities, and no unit matches by meaning
        for unit, similarity in zip(similarities.units, similarities(query), strict=False):
            strength = similarity_score(float(similarity), threshold, ceiling=CATEGORY_CEILING)
            best = max(best, strength)
            if similarity >= threshold:
                quote, _ = excerpt(unit.segment, unit.first, len(tokens(unit.text)))
                found.append((max(strength, 0.5), Evidence(dialogue_id=unit.segment.id,
                                                           start_ms=word_time(unit.segment, unit.first), quote=quote)))
    strongest: dict[int, tuple[float, Evidence]] = {}  # one piece of evidence per segment
    for strength, piece in sorted(found, key=lambda f: -f[0]):
        strongest.setdefault(piece.dialogue_id, (strength, piece))
    chosen = sorted(strongest.values(), key=lambda f: -f[0])[:MAX_EVIDENCE]
    evidence = [e for _, e in sorted(chosen, key=lambda f: (f[1].start_ms, f[1].dialogue_id))]
    matched = bool(evidence)
    return CategoryResult(name=category.name, matched=matched,
                          score=round(max(0.5, best) if matched else min(0.49, best), 3), evidence=evidence)


def classify(categories: Sequence[Category], segments: Sequence[TranscriptSegment],
             embedder: Any | None) -> list[CategoryResult]:
    """Each category's result, in the order of categories. embedder: anything with `embed(texts) -> (n, dim)`
    of L2-normalised rows (TextEmbedder), or None for keywords only."""
    similarities = Similarities(embedder, segments)
    similarities.prepare([query_text(c.name, c.description) for c in categories
                          if threshold_of(c.min_similarity, CATEGORY_THRESHOLD) is not None])
    return [classify_one(category, segments, similarities) for category in categories]


__all__ = ["CATEGORY_THRESHOLD", "classify"]
