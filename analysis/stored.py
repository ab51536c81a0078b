"""An AnalysisResult as the catalog keeps it, and read back from any format written so far.

Two documents per analysis (workers/outcomes.py stores them in one step): the results document (the
``analyses`` row: the result without its segments) and the transcript document (a blob: the segments, most of a
result's size). Each says its ``format``:

* 1 (no ``format`` key): the transcript document holds ``dialogue``, segments without their speaker's role,
  beside copies of the result's ``language``, ``speakers``, ``duration_ms`` and ``channels``;
* 2: the transcript document holds ``segments``, each with its speaker's role.

The results document has the same keys in both (``summary`` and ``language`` among them, which the row also
keeps in columns).

While a first analysis runs, its transcript may be shown before the later stages end: the draft document (the
transcript document's shape, with the speakers) the pipeline hands out once the transcript is final.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from callscope.analysis.readouts import Subject, sections
from callscope.analysis.result import AnalysisResult, IdentifiedSpeaker, TranscriptSegment
from callscope.figures import CallFigures, figures
from callscope.statuses import RecordingStatus

FORMAT = 2


@dataclass(frozen=True)
class Completion:
    """A finished analysis as the catalog takes it: the two documents to store, the recording's counters, and the
    analysis sections of the ``recording.analyzed`` event (its read-outs once the recording is completed)."""

    results: dict[str, Any]  # the ``analyses`` row's document
    transcript: dict[str, Any]  # the transcript blob's document
    dialogues_count: int
    pauses_detected: int
    goals_evaluated: bool
    quality_score: float | None  # the mean goal score, None without goals
    figures: CallFigures  # what the account's trends add up
    readouts: dict[str, Any]
    redactions: dict[str, int]  # spans redacted per entity type (a usage metric), empty without redaction


def documents(result: AnalysisResult) -> tuple[dict[str, Any], dict[str, Any]]:
    """The (results, transcript) documents of a result, in the current format."""
    return ({"format": FORMAT, **result.model_dump(mode="json", exclude={"segments"})},
            {"format": FORMAT, "segments": [segment.model_dump(mode="json") for segment in result.segments]})


def draft_document(segments: list[TranscriptSegment], speakers: list[IdentifiedSpeaker]) -> dict[str, Any]:
    """The transcript before the stages after it: its segments (redacted where the project redacts) and speakers."""
    return {"format": FORMAT, "segments": [s.model_dump(mode="json") for s in segments],
            "speakers": [s.model_dump(mode="json") for s in speakers]}


def read(results: dict[str, Any], transcript: dict[str, Any] | None = None) -> AnalysisResult:
    """The result stored as these documents. Without the transcript document (a read-out that shows no segment
    need not fetch the blob) its segments are empty."""
    segments = _segments(transcript, results["speakers"]) if transcript is not None else []
    return AnalysisResult.model_validate({**results, "segments": segments})


def _segments(transcript: dict[str, Any], speakers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if transcript.get("format", 1) >= 2:
        return transcript["segments"]
    roles = {speaker["label"]: speaker["role"] for speaker in speakers}  # format 1: a segment's role is its speaker's
    return [{**segment, "role": roles.get(segment["speaker"], "unknown")} for segment in transcript["dialogue"]]


def completion(result: AnalysisResult, recording: Any) -> Completion:
    """What the analysis of ``recording`` (its catalog row) hands to the catalog (workers/outcomes.py): the documents,
    the recording's counters and the webhook's analysis sections, as they read once the recording is completed."""
    results, transcript = documents(result)
    return Completion(results=results, transcript=transcript, dialogues_count=len(result.segments),
                      pauses_detected=len(result.pauses), goals_evaluated=bool(result.goals),
                      quality_score=result.quality_score, figures=figures(results, transcript["segments"]),
                      redactions=dict(result.redaction.counts) if result.redaction else {},
                      readouts=sections(Subject.of(recording, RecordingStatus.COMPLETED), result))
