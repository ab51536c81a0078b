"""The live transcripts kept beside recordings' analyses (``live_transcripts``): written once, read by recording.
Called only with a recording already found in the caller's scope (or just stored by its live call)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from callscope.catalog.tables import LiveTranscript


def put(session: Session, recording_id: int, document: str) -> None:
    session.add(LiveTranscript(recording_id=recording_id, document=document))
    session.flush()


def get(session: Session, recording_id: int) -> str | None:
    return session.scalar(select(LiveTranscript.document).where(LiveTranscript.recording_id == recording_id))
