"""Analysed calls for the search tests: a recording uploaded through the API, whose analysis job is completed with a
hand-written result through the worker's own completion (workers/outcomes.py), so that the index is written where
it is in production. The models do not run, save the text embedder (loaded once per session)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from callscope.analysis.result import AnalysisResult, TranscriptSegment
from callscope.analysis.stored import completion
from callscope.catalog import jobs
from callscope.catalog import recordings as recording_rows
from callscope.catalog.tables import Recording
from callscope.search.embedding import SearchEmbedder
from callscope.services import analyses
from callscope.workers import outcomes

SECONDS = 5_000  # each line of a call lasts this long


@pytest.fixture(scope="session")
def text_embedder():
    """The text embedding model the analysis ships, loaded once."""
    from callscope.analysis.models.text_embedding import text_embedder_from_settings
    from callscope.config import Settings

    return text_embedder_from_settings(Settings())


def segments(lines: list[tuple]) -> list[TranscriptSegment]:
    """Lines of (role, text[, emotion]): agent lines by speaker-1, customer lines by speaker-2."""
    return [TranscriptSegment(id=i, speaker="speaker-1" if line[0] == "agent" else "speaker-2", role=line[0],
                              channel=0, start_ms=i * SECONDS, end_ms=(i + 1) * SECONDS - 500, text=line[1],
                              emotions={line[2]: 0.9, "neutral": 0.1} if len(line) > 2 else {})
            for i, line in enumerate(lines)]


def result(lines: list[tuple] | list[TranscriptSegment], *, language: str | None = "en",
           categories: tuple[str, ...] = (), goals: dict[int, bool] | None = None,
           agent_operator: int | None = None) -> AnalysisResult:
    said = lines if lines and isinstance(lines[0], TranscriptSegment) else segments(lines)  # type: ignore[arg-type]
    duration = len(said) * SECONDS
    speaker = {"role_confidence": 1.0, "operator_similarity": None, "talk_ms": 1000, "role_evidence": [],
               "decided_by": "channel"}
    document: dict[str, Any] = {
        "duration_ms": duration, "channels": 1, "language": language,
        "speakers": [{**speaker, "label": "speaker-1", "role": "agent", "operator_id": agent_operator},
                     {**speaker, "label": "speaker-2", "role": "customer", "operator_id": None}],
        "segments": [s.model_dump() for s in said], "pauses": [], "pause_rules": {},
        "characteristics": {"duration_ms": duration, "talk_time_ms": duration, "non_talk_time_ms": 0, "speakers": []},
        "goals": [{"goal_id": goal, "goal_name": f"goal {goal}", "met": met, "score": 1.0 if met else 0.0,
                   "explanation": "", "evidence": []} for goal, met in (goals or {}).items()],
        "categories": [{"name": name, "matched": True, "score": 1.0, "evidence": []} for name in categories],
        "models": [], "stages": [],
    }
    return AnalysisResult.model_validate(document)


def use_embedder(runtime, text_embedder) -> None:
    runtime.ctx.embedder = SearchEmbedder(lambda: text_embedder)


async def analyse(runtime, public_id: str, analysis: AnalysisResult, *, again: bool = False) -> None:
    """Complete the recording's queued analysis (`again`: queue a re-analysis first) with `analysis`."""
    ctx = runtime.ctx
    with ctx.catalog.session() as session:
        rid = session.scalar(select(Recording.id).where(Recording.public_id == public_id))
    if again:
        assert await analyses.reanalyze(ctx, [rid]) == [rid]
    [claimed] = ctx.catalog.change(jobs.claim, 1, "test", 60, ctx.clock(), 3)
    assert claimed.recording_id == rid
    row = ctx.catalog.query(recording_rows.by_id, rid)
    assert await outcomes.complete(ctx, claimed, completion(analysis, row))

