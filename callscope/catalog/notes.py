"""Recordings' notes in the catalog (``recording_notes``). Called only with a recording already found in the caller's
scope; callscope/services/notes.py holds who may write and delete them."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from callscope.catalog.tables import RecordingNote


def of_recording(session: Session, recording_id: int) -> list[RecordingNote]:
    """The recording's notes, oldest first."""
    return list(session.scalars(select(RecordingNote).where(RecordingNote.recording_id == recording_id)
                                .order_by(RecordingNote.id)))


def insert(session: Session, note: RecordingNote) -> RecordingNote:
    session.add(note)
    session.flush()
    return note


def find(session: Session, recording_id: int, note_id: int) -> RecordingNote | None:
    """A note of the recording by id (a note of another recording is none of it)."""
    return session.scalar(select(RecordingNote).where(RecordingNote.recording_id == recording_id,
                                                      RecordingNote.id == note_id))


def remove(session: Session, note_id: int) -> None:
    session.execute(delete(RecordingNote).where(RecordingNote.id == note_id))
