"""Reading the current analysis of a recording, and queueing re-analyses. (Storing an analysis job's outcome is
the dispatcher's: workers/outcomes.py.)"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from callscope.catalog import analyses as analysis_rows
from callscope.catalog import jobs
from callscope.catalog import recordings as recording_rows
from callscope.catalog.tables import Analysis, Recording
from callscope.errors import NotFound
from callscope.services.context import Context
from callscope.statuses import RecordingStatus


@dataclass(frozen=True)
class StoredAnalysis:
    """The current analysis of a recording as the catalog keeps it: its row (version, completion time, transcript
    key) and its two documents, each parsed from JSON once (analysis/stored.py reads them into the result)."""

    row: Analysis
    results: dict[str, Any]
    transcript: dict[str, Any] | None  # None unless asked for


# ----- reading --------------------------------------------------------------------------------

async def load_analysis(ctx: Context, recording: Recording, transcript: bool = True) -> StoredAnalysis | None:
    """The recording's current analysis, with its transcript document when ``transcript``; None before the first."""
    reads_left = 3  # a re-analysis may replace the row (and delete its blob) between the two reads: read again
    while True:
        analysis = await ctx.catalog.read(analysis_rows.get, recording.id)
        if analysis is None:
            return None
        reads_left -= 1
        document = await read_document(ctx, analysis.transcript_key) if transcript else None
        if document is not None or not transcript or not reads_left:
            return StoredAnalysis(analysis, json.loads(analysis.results), document)


async def read_document(ctx: Context, key: str) -> dict[str, Any] | None:
    """The JSON document under ``key`` (a transcript); None when it is not there (a re-analysis deleted it
    meanwhile)."""
    try:
        stream = await ctx.blobs.open(key)
    except NotFound:
        return None
    async with stream:
        return json.loads(b"".join([chunk async for chunk in stream]))


# ----- re-analysis ----------------------------------------------------------------------------

async def reanalyze(ctx: Context, recording_ids: list[int]) -> list[int]:
    """Queue a re-analysis of each completed or failed recording; the ids that got one (others are skipped: not
    finished yet, already queued, or unknown). Results are replaced only when the new analysis completes."""
    return await ctx.catalog.write(jobs.enqueue_many, recording_ids, jobs.REANALYZE, ctx.clock())


async def reanalyze_project(ctx: Context, account: str, project_id: int,
                            statuses: tuple[str, ...] = (RecordingStatus.COMPLETED,)) -> list[int]:
    """Queue a re-analysis of the project's recordings in ``statuses`` (e.g. after its goals changed)."""
    ids = await ctx.catalog.read(recording_rows.ids_in_project, account, project_id, statuses)
    return await reanalyze(ctx, ids)
