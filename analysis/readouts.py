"""The public read-outs of an analysis, derived from its AnalysisResult here and nowhere else: the bodies of
GET /recordings/{id}/results, /transcription and /summary (api/schemas.py re-exports them for the OpenAPI
document), and the analysis sections of the ``recording.analyzed`` webhook, which are those same bodies, so that
a webhook consumer and a REST client read one shape.

A read-out is of a recording (``Subject``) and its current analysis: None before the first one completes, which
reads as empty lists and a null summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import Field

from callscope.analysis.result import (
    AnalysisResult,
    CallCharacteristics,
    CategoryResult,
    ExtractedValue,
    GoalResult,
    ModelUsed,
    Part,
    Pause,
    RedactionSummary,
    Role,
    ScorecardResult,
    SpeakerResult,
    TranscriptSegment,
)
from callscope.statuses import RecordingStatus

# The webhook sections taken from the results read-out (the others are the summary and transcription read-outs).
_RESULT_SECTIONS = ("goals", "categories", "extracted_data", "scorecards")


@dataclass(frozen=True)
class Subject:
    """The recording a read-out is of."""

    recording_id: int
    public_id: str
    status: RecordingStatus
    language: str

    @classmethod
    def of(cls, recording: Any, status: RecordingStatus | None = None) -> Subject:
        """A catalog Recording row's; with ``status`` instead of the row's (the status a completion moves it to)."""
        return cls(recording.id, recording.public_id, status or recording.status, recording.language)


class TrackerMoment(Part):
    """A transcript segment that matched a tracker."""

    dialogue_id: int = Field(description="The segment's id in the transcription.")
    start_ms: int
    end_ms: int


class TrackerResult(Part):
    """A tracker of the project (a saved search) that the call matched, and where."""

    name: str
    moments: list[TrackerMoment] = Field(description="The segments that matched, in time order.")


class LiveWord(Part):
    """A word live recognition confirmed, with its time since the call began."""

    start_ms: int
    end_ms: int
    text: str
    probability: float = Field(description="Recogniser confidence, 0 to 1.")


class LiveSegment(Part):
    """An utterance as live recognition closed it while the call lasted (a `final` event)."""

    speaker: str = Field(description="The track: `channel-0` (the agent on a two-channel call), `channel-1`.")
    role: Role
    start_ms: int
    end_ms: int
    text: str
    words: list[LiveWord]


class LiveTranscript(Part):
    """What live recognition heard while the call lasted (kept for comparison with the analysis's transcript)."""

    segments: list[LiveSegment] = Field(description="The call's finals, in the order they were sent.")


class RecordingScorecard(ScorecardResult):
    """A call's score on one QA form as it stands: the automatic answers of its analysis with reviewers' overrides
    (each marked `overridden`, its automatic answer and its history kept), and whether a reviewer marked it
    reviewed."""

    reviewed_by: str | None = Field(None, description="Who marked it reviewed (a member's email, or an API key's "
                                    "name); null: not reviewed.")
    reviewed_at: datetime | None = Field(None, description="When it was marked reviewed.")


class Results(Part):
    recording_id: int
    status: RecordingStatus
    goals: list[GoalResult] = Field(default_factory=list, description="Empty until the analysis has completed.")
    pauses: list[Pause] = Field(default_factory=list, description="Empty until the analysis has completed.")
    categories: list[CategoryResult] = Field(default_factory=list)
    extracted_data: list[ExtractedValue] = Field(default_factory=list)
    speakers: list[SpeakerResult] = Field(default_factory=list)
    characteristics: CallCharacteristics | None = None
    models: list[ModelUsed] = Field(default_factory=list, description="The model each analysis stage used.")
    redaction: RedactionSummary | None = Field(None, description="Spans redacted per entity type; null: none.")
    trackers: list[TrackerResult] = Field(
        default_factory=list, description="The project's trackers the call matched, and where; those the call has "
        "not been matched against yet (a tracker just added) are not listed.")
    analyzed_at: datetime | None = None
    live: LiveTranscript | None = Field(
        None, description="What live recognition heard while the call lasted, for comparison with the analysis's "
        "transcript: a live call's recording only (null for any other), there from when its audio is stored.")
    scorecards: list[RecordingScorecard] = Field(
        default_factory=list, description="The call scored against each QA form of its project (Scorecard), with "
        "reviewers' overrides; empty until the analysis has completed, and for a project without forms.")


class Transcription(Part):
    recording_id: int
    public_id: str
    status: RecordingStatus
    language: str
    speakers: list[SpeakerResult] = Field(description="Empty until the analysis has completed.")
    segments: list[TranscriptSegment] = Field(description="Empty until the analysis has completed.")
    redaction: RedactionSummary | None = Field(
        None, description="Spans redacted per entity type, when the project redacts: the segments read redacted.")


class Summary(Part):
    recording_id: int
    public_id: str
    status: RecordingStatus
    language: str | None = Field(description="Language of the summary.")
    summary: str | None = Field(description="null until the analysis has completed.")


# The results read-out shows the parts of the result of the same names (the scorecards as reviewers left them).
_RESULT_PARTS = tuple(name for name in Results.model_fields if name in AnalysisResult.model_fields
                      and name != "scorecards")


def results(subject: Subject, analysis: AnalysisResult | None, analyzed_at: datetime | None = None,
            trackers: list[TrackerResult] | None = None, live: dict[str, Any] | None = None,
            scorecards: list[RecordingScorecard] | None = None) -> Results:
    """`trackers`: the trackers the call matched, which the catalog keeps (not the analysis: they change with the
    project's trackers); `live`: the live transcript's document the catalog keeps (callscope/live/transcript.py);
    `scorecards`: the analysis's with the overrides the catalog keeps (api/scorecard_reviews.py)."""
    parts = {name: getattr(analysis, name) for name in _RESULT_PARTS} if analysis is not None else {}
    return Results(recording_id=subject.recording_id, status=subject.status, analyzed_at=analyzed_at,
                   trackers=trackers or [], live=live_transcript(live) if live is not None else None,
                   scorecards=scorecards or [], **parts)


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def live_transcript(document: dict[str, Any]) -> LiveTranscript:
    """A kept live transcript (format 1: the finals as sent, times in seconds) as the results show it."""
    return LiveTranscript(segments=[
        LiveSegment(speaker=f["speaker"], role=f["role"], start_ms=_ms(f["start"]), end_ms=_ms(f["end"]),
                    text=f["text"], words=[LiveWord(start_ms=_ms(w["start"]), end_ms=_ms(w["end"]), text=w["text"],
                                                    probability=w["probability"]) for w in f["words"]])
        for f in document["finals"]])


def transcription(subject: Subject, analysis: AnalysisResult | None) -> Transcription:
    return Transcription(
        recording_id=subject.recording_id, public_id=subject.public_id, status=subject.status,
        language=(analysis.language if analysis else None) or subject.language,  # None: the model detected it
        speakers=analysis.speakers if analysis else [], segments=analysis.segments if analysis else [],
        redaction=analysis.redaction if analysis else None)


def summary(subject: Subject, analysis: AnalysisResult | None) -> Summary:
    return Summary(recording_id=subject.recording_id, public_id=subject.public_id, status=subject.status,
                   language=analysis.summary_language if analysis else None,
                   summary=analysis.summary if analysis else None)


def sections(subject: Subject, analysis: AnalysisResult | None,
             scorecards: list[RecordingScorecard] | None = None) -> dict[str, Any]:
    """The webhook's analysis sections, JSON: ``summary`` and ``transcription`` are those read-outs, ``goals``,
    ``categories``, ``extracted_data`` and ``scorecards`` the lists of the results read-out."""
    found = results(subject, analysis, scorecards=scorecards).model_dump(mode="json")
    return {"summary": summary(subject, analysis).model_dump(mode="json"),
            "transcription": transcription(subject, analysis).model_dump(mode="json"),
            **{name: found[name] for name in _RESULT_SECTIONS}}
