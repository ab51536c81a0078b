"""Search across calls (`GET /search`): transcript segments found by their words (`keyword`), by their meaning
(`meaning`: the sentence embedding of each segment against the query's) or both fused by reciprocal rank (`hybrid`,
the default), within the key's scope and the filters. The index is written with each analysis (workers/outcomes.py)
and goes with its recording; the queries are catalog/search.py's."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np
from sqlalchemy.orm import Session

from callscope.catalog import search as search_rows
from callscope.catalog.recordings import Filters, Scope
from callscope.catalog.search import HitRow, Ranked, SearchFilters
from callscope.errors import ServiceUnavailable, ValidationFailed
from callscope.search.highlight import highlights
from callscope.search.syntax import Query, parse
from callscope.search.vectors import AccountVectors, Candidates
from callscope.services import scope as key_scope
from callscope.services.context import Context, Principal
from callscope.services.recordings import filters_visible
from callscope.services.shares import recording_page_url

Mode = Literal["keyword", "meaning", "hybrid"]
RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al., 2009): a hit scores the sum of 1 / (60 + its ranks)
FUSION_WINDOW = 1000  # hybrid fuses the best this many hits of each way: pages past them are empty
NO_MODEL = "Meaning search needs the text embedding model, which this service cannot load"


@dataclass(frozen=True)
class Hit:
    row: HitRow
    score: float
    highlights: list[tuple[int, int]]  # character ranges of row.text
    operator_id: int | None  # the speaker's operator, as the key may see it
    url: str  # the recording page, its player at the segment's start


def start_url(ctx: Context, public_id: str, start_ms: int) -> str:
    """The recording's page with its player at `start_ms` (`#t=` seconds)."""
    seconds = f"{start_ms / 1000:.3f}".rstrip("0").rstrip(".")
    return f"{recording_page_url(ctx, public_id)}#t={seconds}"


def fuse(*rankings: list[int]) -> list[Ranked]:
    """Reciprocal rank fusion of rankings of segment ids, best first (ties: in the order they were indexed)."""
    scores: dict[int, float] = defaultdict(float)
    for ranking in rankings:
        for rank, segment_id in enumerate(ranking, 1):
            scores[segment_id] += 1 / (RRF_K + rank)
    return sorted((Ranked(sid, score) for sid, score in scores.items()), key=lambda r: (-r.score, r.segment_id))


def _compare(session: Session, vectors: AccountVectors, vector: np.ndarray, scope: Scope, f: SearchFilters,
             query: Query, configs: list[str], min_similarity: float) -> Candidates:
    """In one read: the calls allowed, the vectors of those this process does not hold yet, the segments holding a
    word left out, then the comparison over every allowed segment."""
    calls = search_rows.calls(session, scope, f)
    excluded = search_rows.matching_ids(session, scope, f, query.excluded, configs)
    with vectors.lock:
        vectors.sync(calls, partial(search_rows.vectors, session))
        return vectors.search(vector, (rid for rid, _ in calls), f.role, f.emotion, min_similarity, excluded)


async def _meaning(ctx: Context, scope: Scope, f: SearchFilters, query: Query, configs: list[str]
                   ) -> Candidates | None:
    """The segments meaning what the query's words say, best first; None without the text embedding model."""
    vector = await ctx.embedder.embed_query(query.text) if ctx.embedder is not None else None
    if vector is None:
        return None
    return await ctx.catalog.read(_compare, ctx.vectors.of(scope.account), vector, scope, f, query, configs,
                                  ctx.settings.search_min_similarity)


async def _ranked(ctx: Context, scope: Scope, mode: Mode, f: SearchFilters, query: Query, offset: int, limit: int
                  ) -> tuple[list[Ranked], int]:
    configs = await ctx.catalog.read(search_rows.configs, scope)
    if mode == "keyword":
        return await ctx.catalog.read(search_rows.keyword, scope, f, query, configs, offset, limit)
    meaning = await _meaning(ctx, scope, f, query, configs)
    if mode == "meaning":
        if meaning is None:
            raise ServiceUnavailable(NO_MODEL)
        ids, scores = meaning.ids[offset : offset + limit], meaning.scores[offset : offset + limit]
        return [Ranked(int(i), float(s)) for i, s in zip(ids, scores, strict=True)], len(meaning.ids)
    words, _ = await ctx.catalog.read(search_rows.keyword, scope, f, query, configs, 0, FUSION_WINDOW)
    by_meaning = [int(i) for i in meaning.ids[:FUSION_WINDOW]] if meaning is not None else []
    fused = fuse([r.segment_id for r in words], by_meaning)
    return fused[offset : offset + limit], len(fused)


async def search(ctx: Context, principal: Principal, q: str, mode: Mode, f: SearchFilters, offset: int,
                 limit: int) -> tuple[list[Hit], int]:
    """A page of the segments `q` finds in the key's scope with the filters `f`, best first, and how many there are.
    ValidationFailed for a query that cannot be searched (syntax.parse); a project-scoped key naming another
    project is 403, as the recordings list says (an operator it cannot see finds nothing)."""
    query = parse(q)
    if f.goal_met is not None and f.goal_id is None:
        raise ValidationFailed("goal_met needs goal_id (the goal met or not)")
    if not filters_visible(ctx, principal, Filters(project_id=f.project_id, operator_id=f.operator_id)):
        return [], 0
    ranked, total = await _ranked(ctx, principal.scope, mode, f, query, offset, limit)
    rows = await ctx.catalog.read(search_rows.hits, [r.segment_id for r in ranked])
    return [Hit(row, r.score, highlights(row.text, row.config, query),
                key_scope.visible_operator_id(ctx, principal, row.operator_id),
                start_url(ctx, row.public_id, row.start_ms))
            for r in ranked if (row := rows.get(r.segment_id)) is not None], total  # gone meanwhile: not shown
