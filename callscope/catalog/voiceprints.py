"""Operators' voiceprints (table ``voiceprints``): one per (account, operator), replaced on re-enrolment. The
embedding is stored as little-endian float32 bytes with the encoder model that made it."""

from __future__ import annotations

from datetime import datetime

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from callscope.catalog.tables import Voiceprint


def save(session: Session, account: str, operator_id: int, model: str, embedding: np.ndarray, speech_ms: int,
         now: datetime) -> None:
    """Store (or replace) the operator's voiceprint."""
    session.merge(Voiceprint(account=account, operator_id=operator_id, model=model,
                             embedding=np.asarray(embedding, dtype="<f4").tobytes(), speech_ms=speech_ms,
                             created_at=now))


def of_account(session: Session, account: str, model: str | None = None) -> list[Voiceprint]:
    """The account's voiceprints (of `model` only, when given), by operator id."""
    query = select(Voiceprint).where(Voiceprint.account == account).order_by(Voiceprint.operator_id)
    if model is not None:
        query = query.where(Voiceprint.model == model)
    return list(session.scalars(query))


def embedding(row: Voiceprint) -> np.ndarray:
    return np.frombuffer(row.embedding, dtype="<f4").copy()


def forget(session: Session, account: str, operator_id: int) -> bool:
    """Delete the operator's voiceprint; False when there was none."""
    return bool(session.execute(delete(Voiceprint).where(Voiceprint.account == account,
                                                         Voiceprint.operator_id == operator_id)).rowcount)
