"""Writing search's entries of analysed calls: what an analysis stores with itself (workers/outcomes.py), and the
calls analysed before search existed, indexed from their stored documents (`callscope reindex`), which the tracker
pass then matches against their project's trackers (callscope/services/trackers.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog
from sqlalchemy.orm import Session

from callscope.catalog import recordings as recording_rows
from callscope.catalog import search as search_rows
from callscope.catalog import tracker_stamps
from callscope.search.entries import CallEntries, call_entries
from callscope.services.analyses import load_analysis
from callscope.services.context import Context

log = structlog.get_logger()

BATCH = 100


@dataclass(frozen=True)
class SearchEntries:
    """What search keeps of a call (its transcript as stored: redacted where the project redacts) and each segment's
    vector (None without the text embedder)."""

    call: CallEntries
    vectors: list[bytes] | None


async def entries(ctx: Context, results: dict[str, Any], transcript: dict[str, Any], language: str | None
                  ) -> SearchEntries:
    """The entries of a call's documents, each segment embedded (off the event loop)."""
    call = call_entries(results, transcript, language)
    embedded = await ctx.embedder.embed([e.text for e in call.segments]) if ctx.embedder and call.segments else None
    return SearchEntries(call, [row.tobytes() for row in embedded] if embedded is not None else None)


def _index(session: Session, recording_id: int, version: int, found: SearchEntries) -> bool:
    """The call's entries, written while its analysis is `version`; its trackers to be matched on them."""
    if not search_rows.index_version(session, recording_id, version, found.call, found.vectors):
        return False
    tracker_stamps.unmatched(session, [recording_id])
    return True


async def reindex(ctx: Context) -> int:
    """Index every analysed call that has no entries yet, from its stored documents; how many were indexed. A call
    re-analysed meanwhile is left to its new analysis, which indexes itself."""
    indexed = after = 0
    while batch := await ctx.catalog.read(search_rows.unindexed, after, BATCH):
        for recording_id in batch:
            recording = await ctx.catalog.read(recording_rows.by_id, recording_id)
            stored = await load_analysis(ctx, recording) if recording is not None else None
            if recording is not None and stored is not None and stored.transcript is not None:
                found = await entries(ctx, stored.results, stored.transcript, recording.language)
                indexed += await ctx.catalog.write(_index, recording_id, stored.row.version, found)
        after = batch[-1]
    log.info("search_reindexed", recordings=indexed)
    return indexed
