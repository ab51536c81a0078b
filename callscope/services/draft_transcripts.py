"""A first analysis's transcript shown before its later stages end (goals, fields and the summary can take most of
a call's analysis): the pipeline hands it out once it is final (analysis/stored.py draft_document), the dispatcher
keeps it beside the recording's audio until the analysis is stored or fails, and the recording page shows it
meanwhile. Best effort: a draft that cannot be written or read is not shown, and the analysis goes on. A draft a
crash left behind is removed by the orphan sweep (no catalog row names it)."""

from __future__ import annotations

import json
from typing import Any

import structlog

from callscope.catalog.tables import Recording
from callscope.services.analyses import read_document
from callscope.services.context import Context
from callscope.services.recordings import blob_prefix

log = structlog.get_logger()


def draft_key(recording: Recording) -> str:
    return f"{blob_prefix(recording.account, recording.public_id)}transcript-draft.json"


async def store(ctx: Context, recording: Recording, document: dict[str, Any]) -> None:
    try:
        async with ctx.blobs.writer(draft_key(recording)) as writer:
            await writer.write(json.dumps(document, separators=(",", ":")).encode())
            await writer.commit()
    except Exception as exc:  # noqa: BLE001 - whatever the store says: a draft is a convenience, never the analysis
        log.warning("draft_transcript_not_stored", public_id=recording.public_id, error=str(exc)[:300])


async def read(ctx: Context, recording: Recording) -> dict[str, Any] | None:
    """The draft of a recording still being analysed for the first time; None when there is none (yet)."""
    try:
        return await read_document(ctx, draft_key(recording))
    except Exception as exc:  # noqa: BLE001 - the page shows the progress alone
        log.warning("draft_transcript_unreadable", public_id=recording.public_id, error=str(exc)[:300])
        return None


async def ready(ctx: Context, recording: Recording) -> bool:
    """Whether the recording has a draft to show (what the page's script asks as it polls)."""
    try:
        return await ctx.blobs.size(draft_key(recording)) is not None
    except Exception:  # noqa: BLE001 - not shown is the answer
        return False


async def drop(ctx: Context, recording: Recording) -> None:
    try:
        await ctx.blobs.delete(draft_key(recording))
    except Exception as exc:  # noqa: BLE001 - the orphan sweep removes it later
        log.warning("draft_transcript_not_deleted", public_id=recording.public_id, error=str(exc)[:300])
