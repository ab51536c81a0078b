"""A live call's transcript kept beside its recording's analysis, for comparison: its finals (the words live
recognition confirmed, with their times, speaker and role), stored when the call's audio becomes the recording and
read back as `live` in the recording's results (analysis/readouts.py `live_transcript`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from callscope.catalog import live_transcripts as rows
from callscope.live.events import Event, Final
from callscope.services.context import Context

FORMAT = 1
_KEPT = {"speaker", "role", "start", "end", "text", "words"}  # of each final: times in seconds since the call began


def document(events: Sequence[Event]) -> dict[str, Any]:
    return {"format": FORMAT,
            "finals": [e.model_dump(mode="json", include=_KEPT) for e in events if isinstance(e, Final)]}


async def keep(ctx: Context, recording_id: int, events: Sequence[Event]) -> None:
    await ctx.catalog.write(rows.put, recording_id, json.dumps(document(events), separators=(",", ":")))


async def of_recording(ctx: Context, recording_id: int) -> dict[str, Any] | None:
    """The recording's live transcript document; None for a recording that was no live call."""
    found = await ctx.catalog.read(rows.get, recording_id)
    return json.loads(found) if found is not None else None
