"""The current analysis of each recording (table ``analyses``): one row per recording, replaced per version."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from callscope.catalog.tables import Analysis, Recording
from callscope.validation import AUTO_LANGUAGE


@dataclass(frozen=True)
class Current:
    recording: Recording
    version: int  # 0 before the first analysis
    transcript_key: str | None


def current(session: Session, recording_id: int) -> Current | None:
    """The recording and the version and transcript of its analysis; None when the recording is gone."""
    recording = session.get(Recording, recording_id)
    if recording is None:
        return None
    analysis = session.get(Analysis, recording_id)
    return Current(recording, analysis.version if analysis else 0, analysis.transcript_key if analysis else None)


def get(session: Session, recording_id: int) -> Analysis | None:
    return session.get(Analysis, recording_id)


@dataclass(frozen=True)
class RedactedBefore:
    """What the redacted copy of a recording's audio no longer says: the spans per entity type and the keypad tones
    the analysis that made it took out."""

    counts: dict[str, int]
    tones: int


def redacted_audio_counts(session: Session, recording_id: int) -> RedactedBefore | None:
    """The redaction counts (spans per entity type, and tones) of the recording's current analysis when that
    analysis stored the redacted copy of the audio (its ``redaction.audio``: the completion that stored it made the
    copy the recording's audio in the same transaction); None otherwise. Where no unredacted audio is kept, the
    recording's audio is then that copy."""
    analysis = session.get(Analysis, recording_id)
    redaction = json.loads(analysis.results).get("redaction") if analysis is not None else None
    if not (isinstance(redaction, dict) and redaction.get("audio")):
        return None
    return RedactedBefore({str(entity): int(spans) for entity, spans in (redaction.get("counts") or {}).items()},
                          int(redaction.get("tones") or 0))


def store(session: Session, recording_id: int, expected_version: int, transcript_key: str, results: dict[str, Any],
          now: datetime) -> bool:
    """Write version ``expected_version + 1`` in the caller's transaction; False when another writer got there
    first (the stored version is not the one the caller started from)."""
    analysis = session.get(Analysis, recording_id)
    if (analysis.version if analysis else 0) != expected_version:
        return False
    if analysis is None:
        analysis = Analysis(recording_id=recording_id)
        session.add(analysis)
    analysis.version = expected_version + 1
    analysis.transcript_key = transcript_key
    analysis.results = json.dumps(results, separators=(",", ":"))
    analysis.summary = results.get("summary") if isinstance(results.get("summary"), str) else None
    analysis.language = results.get("language")
    analysis.completed_at = now
    recording = session.get(Recording, recording_id)
    if recording.language == AUTO_LANGUAGE and analysis.language:  # the language the model identified
        recording.language = analysis.language
    return True
