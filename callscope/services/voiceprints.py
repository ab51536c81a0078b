"""Operators' voiceprints in the catalog: enrol from a recording, list them for identification, forget them.

One voiceprint per (account, operator): enrolling again replaces it. The embedding is stored as float32 bytes
with the encoder model that made it; identification only compares voiceprints of the model it runs.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from sqlalchemy import delete, select

from callscope.analysis.speakers import KnownVoice, VoiceprintData
from callscope.catalog.db import Catalog
from callscope.catalog.tables import Voiceprint


def save(catalog: Catalog, account: str, operator_id: int, voiceprint: VoiceprintData,
         now: datetime | None = None) -> None:
    """Store (or replace) the operator's voiceprint."""
    row = Voiceprint(
        account=account, operator_id=operator_id, model=voiceprint.model,
        embedding=np.asarray(voiceprint.embedding, dtype="<f4").tobytes(), speech_ms=voiceprint.speech_ms,
        created_at=now or datetime.now(timezone.utc),
    )
    with catalog.session(write=True) as session:
        session.merge(row)


def known_voices(catalog: Catalog, account: str, model: str | None = None) -> list[KnownVoice]:
    """The account's voiceprints (of `model` only, when given), by operator id."""
    query = select(Voiceprint).where(Voiceprint.account == account).order_by(Voiceprint.operator_id)
    if model is not None:
        query = query.where(Voiceprint.model == model)
    with catalog.session() as session:
        rows = session.scalars(query).all()
    return [KnownVoice(operator_id=r.operator_id, embedding=np.frombuffer(r.embedding, dtype="<f4").copy(),
                       model=r.model) for r in rows]


def forget(catalog: Catalog, account: str, operator_id: int) -> bool:
    """Delete the operator's voiceprint; False when there was none."""
    with catalog.session() as session:
        result = session.execute(
            delete(Voiceprint).where(Voiceprint.account == account, Voiceprint.operator_id == operator_id))
    return bool(result.rowcount)


def enroll_file(catalog: Catalog, analyzer, account: str, operator_id: int, path: Path,
                channel: int = 0) -> VoiceprintData:
    """Decode `path`, find its speech (VAD) on `channel` and store the operator's voiceprint.

    `analyzer` is a `callscope.analysis.speakers.SpeakerAnalyzer`. Raises EnrollmentError under 10 s of speech,
    ValueError for a channel the file does not have, and the decoder's errors for an unreadable file.
    """
    from callscope.analysis import vad
    from callscope.analysis.decode import decode

    audio = decode(Path(path))
    if not 0 <= channel < len(audio.channels):
        raise ValueError(f"{path} has {len(audio.channels)} channel(s): no channel {channel}")
    voiceprint = analyzer.enroll(audio, vad.detect_speech(audio, channel), channel)
    save(catalog, account, operator_id, voiceprint)
    return voiceprint
