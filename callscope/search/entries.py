"""What search keeps of an analysed call, read from its stored documents (analysis/stored.py): each transcript
segment with its speaker, role, operator and strongest emotion, and the categories the call was found in. The text is
the stored transcript's, so a call analysed with redaction is indexed from its redacted text only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from callscope.search.words import configuration


@dataclass(frozen=True)
class Entry:
    position: int  # the segment's dialogue id
    start_ms: int
    end_ms: int
    speaker: str
    role: str
    operator_id: int | None
    emotion: str | None  # the segment's most probable emotion; None where not analysed
    text: str


@dataclass(frozen=True)
class CallEntries:
    config: str  # the stemmer of the call's language (words.configuration)
    segments: list[Entry]
    categories: list[str]  # the names of the categories found in the call


def _strongest(emotions: dict[str, float] | None) -> str | None:
    return max(emotions, key=emotions.__getitem__) if emotions else None


def call_entries(results: dict[str, Any], transcript: dict[str, Any], language: str | None) -> CallEntries:
    """The entries of a call's results and transcript documents (of any format analysis/stored.py reads), in the
    call's language."""
    speakers = results.get("speakers") or []
    operators = {s["label"]: s.get("operator_id") for s in speakers}
    roles = {s["label"]: s.get("role") for s in speakers}  # format 1: a segment's role is its speaker's
    segments = transcript.get("segments", transcript.get("dialogue")) or []
    entries = [Entry(position=int(s["id"]), start_ms=int(s["start_ms"]), end_ms=int(s["end_ms"]),
                     speaker=str(s["speaker"]), role=str(s.get("role") or roles.get(s["speaker"]) or "unknown"),
                     operator_id=operators.get(s["speaker"]), emotion=_strongest(s.get("emotions")),
                     text=str(s["text"]))
               for s in segments if str(s.get("text") or "").strip()]
    categories = sorted({str(c["name"]) for c in results.get("categories") or [] if c.get("matched")})
    return CallEntries(configuration(results.get("language") or language), entries, categories)
