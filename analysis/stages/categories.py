"""Categories of a call (callscope.resources.kinds.Category), from evidence in the transcript.

`classify` puts a call in a category when a sentence of it (or a segment as a whole) says one of its ``keywords``
(score 1.0) or is at least ``min_similarity`` similar to its name and description (unset: ``CATEGORY_THRESHOLD``;
the score maps the similarity to 0..1, at least 0.5 exactly when matched). The evidence is the strongest sentence of
each matching segment, at most ``MAX_EVIDENCE``. Rules: docs/analysis.md; the threshold: benchmarks/RESULTS.md.
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
