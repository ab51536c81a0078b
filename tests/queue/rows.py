"""Recording rows in a real catalog (SQLite and PostgreSQL through the `catalog` fixture) for the queue tests."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from callscope.catalog.tables import Job, Recording

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def add_recording(catalog, *, status: str = "pending", job: bool = True, account: str = "acme",
                  project_id: int = 1, now: datetime = T0, language: str = "en") -> int:
    """A recording row (and, like an upload, its queued analyze job); its id."""
    public_id = str(uuid.uuid4())
    with catalog.session() as session:
        row = Recording(public_id=public_id, account=account, project_id=project_id, name="call", language=language,
                        status=status, progress=0, duration_ms=1000, audio_format="wav", size_bytes=10,
                        blob_key=f"accounts/{account}/recordings/{public_id}/audio", dialogues_count=0,
                        goals_evaluated=False, pauses_detected=0, processing_restricted=False,
                        conversation_id=public_id, created_at=now, updated_at=now)
        session.add(row)
        session.flush()
        if job:
            session.add(Job(recording_id=row.id, kind="analyze", state="queued", attempts=0, available_at=now,
                            created_at=now, updated_at=now))
        return row.id


def recording(catalog, recording_id: int) -> Recording:
    with catalog.session() as session:
        return session.get(Recording, recording_id)


def job_of(catalog, recording_id: int) -> Job:
    from sqlalchemy import select

    with catalog.session() as session:
        return session.scalars(select(Job).where(Job.recording_id == recording_id).order_by(Job.id.desc())).first()

