"""What the recording page shows, derived from the public read-outs of the recording's analysis (the same
transcription, results and summary an API client gets: api/presenters.py), plus the names of its project,
operator and tags. Positions on the timeline are percentages of the call's duration."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from callscope.analysis.result import (
    CategoryResult,
    ExtractedValue,
    GoalResult,
    IdentifiedSpeaker,
    Pause,
    RedactionSummary,
    TranscriptSegment,
)
from callscope.analysis.stages.evidence import DOUBTFUL_WORD_PROBABILITY, doubtful
from callscope.api import presenters
from callscope.catalog.recordings import Found
from callscope.catalog.tables import Recording
from callscope.errors import NotFound
from callscope.live.calls import LiveCall
from callscope.resources import Operator, Project, Tag
from callscope.resources.kinds import Goal
from callscope.services import draft_transcripts, scope
from callscope.services.audio_urls import audio_url
from callscope.services.context import Context, Principal
from callscope.statuses import FINISHED, AudioRedaction, RecordingStatus

# One colour per emotion class (the legend names them; colour is never the only cue).
EMOTION_COLOURS = {"happy": "#2e7d32", "calm": "#0277bd", "neutral": "#8a8f98", "sad": "#5c6bc0",
                   "angry": "#c62828", "fearful": "#7b1fa2", "surprised": "#b7791f", "disgust": "#6d4c41"}


@dataclass
class SpeakerView:
    label: str
    title: str  # "Agent", "Customer", or "Speaker 2" when the role is unknown
    role: str
    index: int  # its lane on the timeline and its colour in the transcript
    channel: int | None = None
    talk_ms: int = 0
    words: int = 0
    words_per_minute: float = 0.0
    interruptions: int = 0


@dataclass(frozen=True)
class WordView:
    text: str
    entity: str | None  # a redaction's token: its entity type
    doubt: int | None  # a word the recogniser doubted (evidence.doubtful): its probability, in percent


@dataclass
class SegmentView:
    id: int
    speaker: SpeakerView
    start_ms: int
    end_ms: int
    text: str
    words: list[WordView]
    offsets: str  # word starts, ms after the segment's start, comma-separated (the script seeks with them)
    emotion: str | None
    emotion_pct: int
    left: float
    width: float
    pause: Pause | None = None  # the pause after this segment


@dataclass
class RecordingView:
    public_id: str
    name: str
    status: str
    stage: str | None
    progress: int | None
    status_reason: str | None
    duration_ms: int
    language: str | None
    called_at: datetime | None
    created_at: datetime
    project: str | None
    operator: str | None
    tags: list[tuple[str, str]]
    audio_url: str | None
    stereo: bool = False
    summary: str | None = None
    speakers: list[SpeakerView] = field(default_factory=list)
    segments: list[SegmentView] = field(default_factory=list)
    pauses: list[tuple[Pause, float, float]] = field(default_factory=list)  # with left and width on the timeline
    goals: list[GoalResult] = field(default_factory=list)
    categories: list[CategoryResult] = field(default_factory=list)
    fields: list[ExtractedValue] = field(default_factory=list)
    uncertain_fields: set[str] = field(default_factory=set)  # heard only in words the recogniser doubted
    talk_time_ms: int = 0
    non_talk_time_ms: int = 0
    redaction: RedactionSummary | None = None
    audio_unredacted: bool = False  # the audio waits for its redacted copy: not served yet
    draft: bool = False  # the segments are the transcript of a first analysis still running (the rest to come)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def redacted(self) -> list[tuple[str, int]]:
        """The entity types redacted from the call that it held, with their numbers of spans."""
        counts = self.redaction.counts if self.redaction else {}
        return [(entity, counts[entity]) for entity in (self.redaction.entities if self.redaction else [])
                if counts.get(entity)]

    @property
    def unheard_seconds(self) -> float:
        """The speech strict redaction found no words for (taken out of the audio where the audio is redacted)."""
        return sum(end - start for start, end in self.redaction.unheard) / 1000 if self.redaction else 0.0


def _pct(ms: int, duration_ms: int) -> float:
    return round(min(max(ms / duration_ms * 100, 0.0), 100.0), 3) if duration_ms else 0.0


def speaker_views(speakers, traits) -> dict[str, SpeakerView]:
    """Each speaker of the transcript by label, titled as the page names them ("Agent", "Customer", "Speaker 2")."""
    by_label = {t.speaker: t for t in traits}
    views: dict[str, SpeakerView] = {}
    for i, s in enumerate(speakers):
        title = s.role.capitalize() if s.role != "unknown" else f"Speaker {i + 1}"
        if any(v.title == title for v in views.values()):
            title = f"{title} {i + 1}"
        t = by_label.get(s.label)
        views[s.label] = SpeakerView(s.label, title, s.role, i, *(
            (t.channel, t.talk_time_ms, t.words, t.words_per_minute, t.interruptions) if t else ()))
    return views


def _segment(segment, speaker: SpeakerView, duration_ms: int) -> SegmentView:
    emotion, share = max(segment.emotions.items(), key=lambda kv: kv[1]) if segment.emotions else (None, 0.0)
    words = [WordView(w.text.strip(), w.entity if w.redacted else None,
                      round(w.probability * 100) if not w.redacted and doubtful(w) else None)
             for w in segment.words if w.text.strip()]
    offsets = ",".join(str(max(w.start_ms - segment.start_ms, 0)) for w in segment.words if w.text.strip())
    return SegmentView(segment.id, speaker, segment.start_ms, segment.end_ms, segment.text.strip(), words, offsets,
                       emotion, round(share * 100), _pct(segment.start_ms, duration_ms),
                       max(_pct(segment.end_ms - segment.start_ms, duration_ms), 0.15))


def _name(obj) -> str | None:
    return obj.spec.name if obj is not None else None


async def recording_view(ctx: Context, principal: Principal, found: Found) -> RecordingView:
    r = found.recording
    account = principal.account
    tags = [(t.spec.name, t.status.color or "#8a8f98") for t in (scope.by_id(ctx, Tag, account, i)
                                                                 for i in found.tag_ids) if t is not None]
    try:
        url = (await audio_url(ctx, r))[0]
    except NotFound:  # the audio is gone (retention; the results stay), or waits for its redacted copy
        url = None
    view = RecordingView(
        public_id=r.public_id, name=r.name, status=r.status, stage=r.stage, progress=r.progress,
        status_reason=r.status_reason, duration_ms=r.duration_ms or 0, language=r.language, called_at=r.called_at,
        created_at=r.created_at, project=_name(scope.by_id(ctx, Project, account, r.project_id)),
        operator=_name(scope.by_id(ctx, Operator, account, r.operator_id)) if r.operator_id else None,
        tags=tags, audio_url=url, audio_unredacted=r.audio_redaction == AudioRedaction.PENDING)
    if r.status != RecordingStatus.COMPLETED:
        return await _with_draft(ctx, view, r) if r.status == RecordingStatus.PROCESSING else view
    analysed = await presenters.current_analysis(ctx, r)
    if analysed.result is None:
        return view
    transcription = presenters.transcription_out(r, analysed)
    results = presenters.results_out(r, analysed)
    duration = (results.characteristics.duration_ms if results.characteristics else 0) or view.duration_ms
    traits = results.characteristics.speakers if results.characteristics else []
    view.duration_ms = duration
    _with_transcript(view, transcription.segments, transcription.speakers, traits)
    by_id = {s.id: s for s in view.segments}
    for pause in results.pauses:
        if pause.after_dialogue_id in by_id:
            by_id[pause.after_dialogue_id].pause = pause
    view.summary = presenters.summary_out(r, analysed).summary
    view.pauses = [(p, _pct(p.start_ms, duration), max(_pct(p.duration_ms, duration), 0.2)) for p in results.pauses]
    view.goals, view.categories, view.fields = results.goals, results.categories, results.extracted_data
    view.uncertain_fields = {f.name for f in results.extracted_data
                             if f.confidence is not None and f.confidence < DOUBTFUL_WORD_PROBABILITY}
    view.redaction = results.redaction
    if results.characteristics:
        view.talk_time_ms = results.characteristics.talk_time_ms
        view.non_talk_time_ms = results.characteristics.non_talk_time_ms
    return view


async def _with_draft(ctx: Context, view: RecordingView, recording: Recording) -> RecordingView:
    """A first analysis's transcript, once final, while its later stages run
    (callscope/services/draft_transcripts.py)."""
    document = await draft_transcripts.read(ctx, recording)
    if document is None:
        return view
    _with_transcript(view, [TranscriptSegment.model_validate(s) for s in document["segments"]],
                     [IdentifiedSpeaker.model_validate(s) for s in document["speakers"]], [])
    view.draft = True
    return view


def _with_transcript(view: RecordingView, segments: Sequence[Any], speakers: Sequence[Any], traits: Sequence[Any]
                     ) -> None:
    """The transcript's segments and a lane per speaker (`view.duration_ms` places them on the timeline)."""
    lanes = speaker_views(speakers, traits)
    for segment in segments:  # a label the speaker list lacks still gets a lane
        lanes.setdefault(segment.speaker, SpeakerView(segment.speaker, segment.speaker, segment.role, len(lanes)))
    view.segments = [_segment(s, lanes[s.speaker], view.duration_ms) for s in segments]
    view.speakers = list(lanes.values())
    view.stereo = len({s.channel for s in segments}) > 1


@dataclass
class LiveView:
    """A call still going on (its recording not stored yet): what the page shows before the events fill it in."""

    public_id: str
    name: str
    project: str
    called_at: datetime | None
    speakers: list[SpeakerView]
    goals: list[Goal]  # the project's, in order: those with phrases are met live, the others after the call
    ended: bool


def live_view(call: LiveCall) -> LiveView:
    speakers = [SpeakerView(label, role.capitalize() if role != "unknown" else "Speaker", role, i)
                for i, (label, role) in enumerate(call.tracks)]
    return LiveView(public_id=call.session.public_id, name=call.fields.name or "", project=call.project.spec.name,
                    called_at=call.fields.called_at, speakers=speakers, goals=list(call.project.spec.goals),
                    ended=call.session.ended_at is not None)
