"""Recordings with their trend figures, written straight into a catalog through the write the worker uses (the
trends' tests need calls analysed, not the models that analyse them)."""

from __future__ import annotations

import uuid
from datetime import datetime

from callscope.catalog import trend_sums
from callscope.catalog.db import Catalog
from callscope.catalog.tables import Recording
from callscope.figures import CallFigures


def fig(pause: float, agent: int, customer: int, emotion: str | None, goals: dict[int, bool]) -> CallFigures:
    return CallFigures(pause, agent, customer, emotion, goals)


def add(catalog: Catalog, *, account: str = "acme", project_id: int = 1, operator_id: int | None = 5,
        status: str = "completed", created_at: datetime, found: CallFigures | None = None, name: str = "") -> str:
    """A recording, analysed (its figures and goals met recorded) when `found`; its public_id."""
    public_id = str(uuid.uuid4())
    with catalog.session() as session:
        row = Recording(public_id=public_id, account=account, project_id=project_id, operator_id=operator_id,
                        name=name or f"call {public_id[:8]}", language="en", status=status, progress=0,
                        duration_ms=1000, audio_format="wav", size_bytes=10, dialogues_count=0,
                        goals_evaluated=False, pauses_detected=0, processing_restricted=False,
                        conversation_id=public_id, created_at=created_at, updated_at=created_at)
        session.add(row)
        session.flush()
        if found:
            trend_sums.record(session, row.id, found)
    return public_id
