"""Public JSON shapes: request bodies (validated on the way in) and responses (built on the way out).
The OpenAPI document is generated from these same models."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from callscope.catalog.calls import CallRecord as RecentCall  # the call records' own shapes
from callscope.catalog.calls import NumberStats

T = TypeVar("T")

# Integers a client sends must fit the catalog's BIGINT columns.
Int = Annotated[int, Field(ge=-(2**63 - 1), le=2**63 - 1)]


class Shape(BaseModel):
    model_config = ConfigDict(extra="ignore")


# ----- envelopes and errors -------------------------------------------------------------------

class Data(Shape, Generic[T]):
    data: T


class Meta(Shape):
    current_page: int
    per_page: int
    total_pages: int
    total_count: int


class Page(Shape, Generic[T]):
    data: list[T]
    meta: Meta


class ErrorBody(Shape):
    error: str


class ErrorsBody(Shape):
    errors: list[str]


class RateLimitBody(Shape):
    error: str
    retry_after: int


# ----- projects -------------------------------------------------------------------------------

class ProjectFields(Shape):
    description: str | None = None
    industry: str | None = None
    goal_language: str | None = None
    summary_language: str | None = None
    long_pause_threshold_seconds: Int | None = Field(None, description="Minimum silence flagged as a long pause.")
    transcription_hints: str | None = None
    retention_days: Int | None = Field(None, description="Days recordings are kept; null disables retention.")
    quality_baseline_enabled: bool | None = None
    quality_baseline_pct: float | None = Field(None, description="Target percentile, 0 to 100.")


class ProjectCreate(ProjectFields):
    name: str | None = Field(None, description="Display name (required).")
    language: str | None = Field(None, description="Default ISO language code for transcription (required).")


class ProjectUpdate(ProjectCreate):
    """Same fields as create, all optional; only supplied fields change."""


class ProjectShort(Shape):
    id: int
    name: str
    language: str | None
    industry: str | None
    created_at: datetime
    updated_at: datetime


class ProjectDetail(ProjectShort):
    description: str | None
    goal_language: str | None
    summary_language: str | None
    long_pause_threshold_seconds: int | None
    transcription_hints: str | None
    retention_days: int | None
    quality_baseline_enabled: bool
    quality_baseline_pct: float | None
    recordings_count: int
    virtual_numbers_count: int


# ----- operators ------------------------------------------------------------------------------

class OperatorCreate(Shape):
    name: str | None = Field(None, description="Full display name (required); initials derive from it.")
    external_id: str | None = Field(None, description="Your own identifier; unique per account.")
    phone_number: str | None = Field(None, description="Normalised to E.164; unique per account.")
    email: str | None = None
    active: bool = True
    project_id: Int | None = Field(None, description="Links the new operator to this project.")


class OperatorUpdate(Shape):
    name: str | None = None
    phone_number: str | None = None
    email: str | None = Field(None, description="null clears it.")
    active: bool | None = None


class ProjectLink(Shape):
    project_id: Int | None = Field(None, description="Required for account-wide keys.")


class NumberOfOperator(Shape):
    id: int
    phone_number: str
    name: str | None
    active: bool


class OperatorListItem(Shape):
    id: int
    name: str
    phone_number: str | None
    email: str | None
    active: bool
    external_id: str | None
    initials: str
    virtual_numbers_count: int
    recording_project_ids: list[int]


class OperatorDetail(Shape):
    id: int
    name: str
    external_id: str | None
    phone_number: str | None
    email: str | None
    active: bool
    initials: str
    recording_project_ids: list[int]
    virtual_numbers: list[NumberOfOperator]


# ----- virtual numbers ------------------------------------------------------------------------

RoutingStrategy = Literal["priority", "round_robin", "simultaneous"]


class NumberUpdate(Shape):
    name: str | None = None
    active: bool | None = None
    recording: bool | None = None
    routing_strategy: str | None = Field(None, description="priority, round_robin or simultaneous.")


class NumberPurchase(Shape):
    phone_number: str | None = Field(None, description="E.164 (required).")
    country_code: str | None = None
    number_type: str | None = Field(None, description="mobile, local, toll-free or national.")
    name: str | None = None
    requirement_group_id: Int | None = Field(None, description="An approved requirement group.")
    upfront_cost: str | None = None
    monthly_cost: str | None = None


class AddOperator(Shape):
    operator_id: Int | None = Field(None, description="Shape A: an existing operator (wins over phone_number).")
    phone_number: str | None = Field(None, description="Shape B: create and attach a new operator.")
    name: str | None = Field(None, description="Shape B: the new operator's name (default Operator).")


class RemoveOperator(Shape):
    operator_id: Int | None = None


class OperatorBrief(Shape):
    id: int
    name: str
    initials: str


class OperatorAvailable(Shape):
    id: int
    name: str
    phone_number: str | None
    initials: str


class OperatorAttached(OperatorAvailable):
    priority: int


class NumberBase(Shape):
    id: int
    phone_number: str
    name: str | None
    country_code: str
    active: bool
    project_id: int | None


class NumberListItem(NumberBase):
    operators: list[OperatorBrief]
    operators_count: int


class NumberDetail(NumberBase):
    recording: bool
    routing_strategy: RoutingStrategy
    stats: NumberStats
    operators: list[OperatorAttached]
    available_operators: list[OperatorAvailable]
    recent_calls: list[RecentCall]


class RegionInformation(Shape):
    region_type: str
    region_name: str


class NumberCandidate(Shape):
    phone_number: str
    country_code: str
    number_type: str
    upfront_cost: str
    monthly_cost: str
    features: list[str]
    region_information: list[RegionInformation]


# ----- tags -----------------------------------------------------------------------------------

class TagCreate(Shape):
    name: str | None = Field(None, description="Required; surrounding whitespace is stripped.")
    project_id: Int | None = Field(None, description="Required for account-wide keys.")


class TagOut(Shape):
    id: int
    name: str
    color: str
    project_id: int
    recordings_count: int


# ----- app settings ---------------------------------------------------------------------------

class KeyInfo(Shape):
    name: str
    permissions: list[str]
    project_id: int | None
    expires_at: datetime | None
    rate_limit_per_minute: int | None


class AppSettings(Shape):
    account: str
    default_language: str
    audio_formats: list[str]
    upload_limits_bytes: dict[str, int]
    default_audio_retention_days: int
    emotion_classes: list[str]
    pagination: dict[str, int]
    rate_limiting_enabled: bool
    virtual_number_purchase_paused: bool
    api_key: KeyInfo


# ----- recordings -----------------------------------------------------------------------------

RecordingStatus = Literal["pending", "processing", "completed", "failed"]


class RecordingUpload(Shape):
    """multipart/form-data fields of POST /recordings (documentation of the form; parsed by hand)."""

    file: bytes = Field(description="The audio: MP3, WAV, FLAC, M4A, OGG or WebM.",
                        json_schema_extra={"format": "binary", "contentMediaType": "application/octet-stream"})
    project_id: Int | None = Field(None, description="Required for account-wide keys.")
    name: str | None = Field(None, description="Display name (default: the file name).")
    external_id: str | None = Field(None, description="Your id; a repeat in the project returns the first upload.")
    operator_id: Int | None = Field(None, description="Any operator of the account.")
    called_at: datetime | None = Field(None, description="When the call took place (ISO 8601).")
    language: str | None = Field(None, description="Language code (default: the project's).")
    recording_source: str | None = Field(None, description="Where the recording comes from, e.g. crm, pbx.")
    tag_ids: list[Int] | None = Field(None, alias="tag_ids[]", description="Tags of the project (repeatable).")
    conversation_id: str | None = Field(
        None, description="public_id of the other leg of an internal call: both legs then share one conversation.")


class RecordingOut(Shape):
    public_id: str
    name: str
    status: RecordingStatus
    language: str
    duration_ms: int
    created_at: datetime
    updated_at: datetime
    dialogues_count: int
    goals_evaluated: bool
    pauses_detected: int
    audio_attached: bool
    project_id: int
    external_id: str | None
    called_at: datetime | None
    recording_source: str | None
    operator_id: int | None
    tag_ids: list[int]
    processing_restricted: bool = Field(description="GDPR restriction: no further processing or sharing.")
    stage: str | None = Field(description="Current analysis stage while processing.")
    progress: int = Field(description="Analysis progress in percent.")
    status_reason: str | None = Field(description="Why processing failed.")
    audio_format: str
    size_bytes: int


class RecordingUpdate(Shape):
    name: str | None = None
    project_id: Int | None = Field(None, description="Move to another project (account-wide keys only).")
    operator_id: Int | None = None
    called_at: datetime | None = None
    tag_ids: list[Int] | None = Field(None, description="Replaces the set of tags.")
    processing_restricted: bool | None = None


class IdName(Shape):
    id: int
    name: str


class TagRef(IdName):
    color: str
    project_id: int


class Range(Shape):
    min: datetime | int | None
    max: datetime | int | None


class RecordingFilterOptions(Shape):
    projects: list[IdName]
    operators: list[IdName]
    tags: list[TagRef]
    statuses: list[RecordingStatus]
    status_counts: dict[str, int]
    languages: list[str]
    called_at: Range
    created_at: Range
    duration_ms: Range


class AudioUrl(Shape):
    url: str
    expires_at: datetime


Emotion = Literal["happy", "neutral", "calm", "sad", "angry", "fearful", "surprised", "disgust"]
Role = Literal["agent", "customer", "unknown"]


class TranscriptWord(Shape):
    start_ms: int
    end_ms: int
    text: str
    probability: float = Field(description="Recogniser confidence, 0 to 1.")


class TranscriptSegment(Shape):
    id: int = Field(description="Dialogue id; pauses and evidence refer to it (after_dialogue_id, dialogue_id).")
    speaker: str = Field(description='Speaker label: "speaker-1" speaks first (or is channel 1 of a stereo call).')
    role: Role
    channel: int
    start_ms: int
    end_ms: int
    text: str
    words: list[TranscriptWord]
    emotions: dict[Emotion, float] = Field(
        description="Probability of each of the eight emotions, 0 to 1, summing to about 1 (empty when not analysed)."
    )


class SpeakerResult(Shape):
    label: str
    role: Role
    role_confidence: float = Field(description="0 to 1.")
    operator_id: int | None = Field(description="The operator whose enrolled voice matched, or null.")
    operator_similarity: float | None = Field(description="Voice similarity to that operator, or null.")
    talk_ms: int


class Transcription(Shape):
    recording_id: int
    public_id: str
    status: RecordingStatus
    language: str
    speakers: list[SpeakerResult] = Field(description="Empty until the analysis has completed.")
    segments: list[TranscriptSegment] = Field(description="Empty until the analysis has completed.")


class Summary(Shape):
    recording_id: int
    public_id: str
    status: RecordingStatus
    language: str | None = Field(description="Language of the summary.")
    summary: str | None = Field(description="null until the analysis has completed.")


class Evidence(Shape):
    dialogue_id: int
    start_ms: int
    quote: str = Field(description="Text quoted verbatim from that dialogue segment.")


class GoalResult(Shape):
    goal_id: int
    goal_name: str
    met: bool
    score: float = Field(description="Confidence score, 0 to 1.")
    explanation: str
    evidence: list[Evidence] = Field(default_factory=list, description="The transcript lines the verdict rests on.")


class Pause(Shape):
    start_ms: int
    end_ms: int
    duration_ms: int
    compliant: bool
    after_dialogue_id: int
    long: bool = Field(description="At least the project's long_pause_threshold_seconds.")


class CategoryResult(Shape):
    name: str
    matched: bool
    score: float = Field(description="0 to 1.")
    evidence: list[Evidence] = Field(default_factory=list)


class ExtractedValue(Shape):
    name: str
    type: str
    value: str | float | bool | None = Field(description="Validated value; null when none was found.")
    evidence: list[Evidence] = Field(default_factory=list)


class SpeakerTraits(Shape):
    speaker: str
    channel: int
    talk_time_ms: int
    words: int
    words_per_minute: float
    interruptions: int


class CallCharacteristics(Shape):
    duration_ms: int
    talk_time_ms: int
    non_talk_time_ms: int
    speakers: list[SpeakerTraits]


class ModelUsed(Shape):
    stage: str
    name: str
    version: str


class Results(Shape):
    recording_id: int
    status: RecordingStatus
    goals: list[GoalResult] = Field(description="Empty until the analysis has completed.")
    pauses: list[Pause] = Field(description="Empty until the analysis has completed.")
    categories: list[CategoryResult] = Field(default_factory=list)
    extracted_data: list[ExtractedValue] = Field(default_factory=list)
    speakers: list[SpeakerResult] = Field(default_factory=list)
    characteristics: CallCharacteristics | None = None
    models: list[ModelUsed] = Field(default_factory=list, description="The model each analysis stage used.")
    analyzed_at: datetime | None = None


# ----- shares ---------------------------------------------------------------------------------

class ShareCreate(Shape):
    email: str | None = Field(None, description="An active member of the account (or send everyone).")
    everyone: bool | None = Field(None, description="true shares with every member (no email is sent).")
    message: str | None = Field(None, description="Plain text for the email, at most 1000 characters; not stored.")
    notify: bool | None = Field(None, description="false sends no email (default true).")


class ShareUser(Shape):
    email: str
    name: str


class SharedBy(Shape):
    type: str | None
    name: str


class ShareOut(Shape):
    id: int
    everyone: bool
    user: ShareUser | None
    shared_by: SharedBy
    created_at: datetime
    url: str
