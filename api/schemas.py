"""Public JSON shapes: request bodies, form fields and query strings (validated on the way in) and
responses (built on the way out). The OpenAPI document is generated from these same models, so it states
exactly what the server accepts; the limits of text values come from callscope.validation, which the
resource models (and so the CRDs) share."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated, Any, Generic, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from callscope import validation as v
from callscope.analysis.readouts import Results as Results  # the analysis read-outs, declared once with the result
from callscope.analysis.readouts import Summary as Summary
from callscope.analysis.readouts import Transcription as Transcription
from callscope.catalog.calls import CallRecord as RecentCall  # the call records' own shapes
from callscope.catalog.calls import NumberStats
from callscope.catalog.tables import BIGINT_MAX
from callscope.resources.kinds import NumberType, RedactionEntity, RoutingStrategy, unique_entities
from callscope.statuses import AudioRedaction, RecordingStatus

T = TypeVar("T")

INT64_MAX = BIGINT_MAX
DEFAULT_PER_PAGE = 20
MAX_PER_PAGE = 100
MAX_PAGE = INT64_MAX // MAX_PER_PAGE  # so that the list's OFFSET, (page - 1) * per_page, fits a BIGINT


def _integral(value: Any) -> Any:
    """JSON Schema counts 1e11 and 10.0 as integers, so the API does too."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _int_from_text(value: Any) -> Any:
    """A query parameter or form field that must be an integer: `12`, or written as JSON Schema still counts
    an integer (`12.0`, `1.2e1`). An empty value is not one."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if len(text) > 64 or not _NUMBER_TEXT.fullmatch(text):
        raise PydanticCustomError("int_parsing", "not an integer")
    number = Decimal(text)
    if number.is_zero():
        return 0
    if number.adjusted() > 20:  # far past any bound: no need to build the whole int
        return int((Decimal(10) ** 21).copy_sign(number))
    if number.adjusted() < 0 or number != number.to_integral_value():
        raise PydanticCustomError("int_parsing", "not an integer")
    return int(number)


def _datetime_from_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise PydanticCustomError("datetime_parsing", "not an ISO 8601 timestamp") from None
    return value


def _utc(value: datetime) -> datetime:
    """In UTC, as the catalog stores it; a naive time is taken as UTC. Offsets that push a time past year
    1 or 9999 are refused here rather than by the database."""
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:
        raise PydanticCustomError("out_of_range", "out of range") from None


def text_int(ge: int = -INT64_MAX, le: int = INT64_MAX) -> Any:
    """An integer sent as text: a query parameter or a multipart form field."""
    return Annotated[int, Field(ge=ge, le=le), BeforeValidator(_int_from_text)]


# Integers a client sends must fit the catalog's BIGINT columns.
Int = Annotated[int, Field(ge=-INT64_MAX, le=INT64_MAX), BeforeValidator(_integral)]
Time = Annotated[datetime, AfterValidator(_utc)]
# The same, sent as text: query parameters and multipart form fields.
TextInt = text_int()
TextTime = Annotated[datetime, BeforeValidator(_datetime_from_text), AfterValidator(_utc)]

# The services answer a blank name (or purchase phone number) with the spec's own words (`Name can't be blank`,
# `name is required`, `phone_number is required`), so to pydantic it is any line of text; the document states
# the rule they enforce.
_NON_BLANK_IN_DOCUMENT = Field(json_schema_extra={"pattern": v.NON_BLANK_LINE})
NameIn = Annotated[v.Line, _NON_BLANK_IN_DOCUMENT]


def required_in_document(*names: str) -> ConfigDict:
    """Fields the services require, answering their absence with the spec's messages (`Name can't be blank`,
    `project_id is required for account-wide API keys`): optional to pydantic, required in the document.
    A project-scoped key may leave out its own project_id; the document describes what every key may send."""
    def extra(schema: dict[str, Any]) -> None:
        schema["required"] = [*schema.get("required", []), *names]
    return ConfigDict(json_schema_extra=extra)


class Shape(BaseModel):
    # Python's `re` reads patterns as JSON Schema validators do (schemathesis, jsonschema), so the server
    # and its document agree on every pattern.
    model_config = ConfigDict(extra="ignore", regex_engine="python-re")


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

def _no_repeats(entities: list[str]) -> list[str]:
    try:
        return unique_entities(entities)
    except ValueError:
        raise PydanticCustomError("repeated", "must not repeat an entity") from None


class ProjectRedaction(Shape):
    """Card numbers and personal data taken out of each call's transcript and results (and, with audio, its
    audio)."""

    entities: Annotated[list[RedactionEntity], AfterValidator(_no_repeats)] = Field(
        min_length=1, json_schema_extra={"uniqueItems": True},
        description="What to redact, each at most once: payment_card, bank_account, national_id, date_of_birth, "
        "email, phone_number, person_name, address.")
    audio: bool = Field(True, description="Silence the redacted words in the audio as well.")


class ProjectUpdate(Shape):
    """The fields of a project, all optional; only supplied fields change."""

    name: NameIn = Field(None, description="Display name.")
    language: v.Language = Field(None, description="Default language of transcription: a BCP 47 tag (en, en-US), or "
                                 "auto: the transcription model identifies each recording's language.")
    description: v.Text | None = None
    industry: v.Line | None = None
    goal_language: v.Language | None = Field(None, description="BCP 47; null: the project's language.")
    summary_language: v.Language | None = Field(None, description="BCP 47; null: the project's language.")
    long_pause_threshold_seconds: Annotated[v.PauseSeconds, BeforeValidator(_integral)] | None = Field(
        None, description="Minimum silence flagged as a long pause.")
    transcription_hints: v.Text | None = None
    retention_days: Annotated[v.RetentionDays, BeforeValidator(_integral)] | None = Field(
        None, description="Days recordings are kept; null disables retention.")
    quality_baseline_enabled: bool | None = Field(None, description="null: false.")
    quality_baseline_pct: v.Percent | None = Field(None, description="Target percentile, 0 to 100.")
    redaction: ProjectRedaction | None = Field(
        None, description="What to redact from each call, replaced whole; null: nothing is redacted.")


class ProjectCreate(ProjectUpdate):
    """The same fields; name and language are required."""

    model_config = required_in_document("name", "language")


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
    redaction: ProjectRedaction | None = Field(description="What is redacted from each call; null: nothing.")
    recordings_count: int
    virtual_numbers_count: int


# ----- operators ------------------------------------------------------------------------------

class OperatorCreate(Shape):
    model_config = required_in_document("name")

    name: NameIn = Field(None, description="Full display name; initials derive from it.")
    external_id: v.ExternalId | None = Field(None, description="Your own identifier; unique per account.")
    phone_number: v.PhoneInput | None = Field(None, description="Normalised to E.164; unique per account.")
    email: v.Email | None = None
    active: bool = True
    project_id: Int | None = Field(None, description="Links the new operator to this project.")


class OperatorUpdate(Shape):
    name: NameIn = None
    phone_number: v.PhoneInput | None = Field(None, description="null clears it.")
    email: v.Email | None = Field(None, description="null clears it.")
    active: bool = None


class ProjectLink(Shape):
    model_config = required_in_document("project_id")

    project_id: Int = Field(None, description="A project-scoped key may leave out its own project.")


class ProjectQuery(ProjectLink):
    """project_id as a query parameter."""

    project_id: TextInt = Field(None, description="A project-scoped key may leave out its own project.")


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

Country = Annotated[str, Field(pattern=r"^[A-Za-z]{2}$"), AfterValidator(lambda code: code.strip().upper())]


class NumberUpdate(Shape):
    name: v.Line | None = Field(None, description="null or empty clears it.")
    active: bool = None
    recording: bool = None
    routing_strategy: RoutingStrategy = None


class NumberPurchase(Shape):
    model_config = required_in_document("phone_number")

    phone_number: Annotated[v.PhoneInput, _NON_BLANK_IN_DOCUMENT] = Field(None, description="E.164.")
    country_code: Country | None = Field(None, description="ISO 3166-1 alpha-2 (default: the number's).")
    number_type: NumberType | None = Field(None, description="Default mobile.")
    name: v.Line | None = None
    requirement_group_id: Int | None = Field(None, description="An approved requirement group.")
    upfront_cost: v.Cost | None = None
    monthly_cost: v.Cost | None = None


class AvailableQuery(Shape):
    country: Country = Field("US", description="ISO 3166-1 alpha-2, any case.")
    number_type: NumberType = "mobile"


def _one_shape_of_add_operator(schema: dict[str, Any]) -> None:
    schema["anyOf"] = [{"required": ["operator_id"], "properties": {"operator_id": {"type": "integer"}}},
                       {"required": ["phone_number"], "properties": {"phone_number": {"type": "string",
                                                                                       "pattern": r"\S"}}}]


class AddOperator(Shape):
    """Either shape A (operator_id) or shape B (phone_number, name)."""

    model_config = ConfigDict(json_schema_extra=_one_shape_of_add_operator)

    operator_id: Int | None = Field(None, description="Shape A: an existing operator (wins over phone_number).")
    phone_number: v.PhoneInput | None = Field(None, description="Shape B: create and attach a new operator.")
    name: v.Line | None = Field(None, description="Shape B: the new operator's name (default Operator).")


class OperatorQuery(Shape):
    model_config = required_in_document("operator_id")

    operator_id: TextInt = None


class RemoveOperator(Shape):
    """operator_id in a JSON body, which the spec allows besides the query string (OperatorQuery)."""

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
    model_config = required_in_document("name", "project_id")

    name: NameIn = Field(None, description="Surrounding whitespace is stripped.")
    project_id: Int = Field(None, description="A project-scoped key may leave out its own project.")


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

Source = v.line(v.SOURCE_MAX)
PublicId = Annotated[v.line(36), Field(json_schema_extra={"format": "uuid"})]


class UploadForm(Shape):
    """The text fields of POST /recordings (multipart/form-data); they are checked as they arrive, so a
    form that sends them before the file is refused before the audio streams in."""

    model_config = required_in_document("project_id")

    project_id: TextInt = Field(None, description="A project-scoped key may leave out its own project.")
    name: v.Line = Field(None, description="Display name (default: the file name).")
    external_id: v.ExternalId = Field(None, description="Your id; a repeat in the project returns the first upload.")
    operator_id: TextInt = Field(None, description="Any operator of the account.")
    called_at: TextTime = Field(None, description="When the call took place (ISO 8601).")
    language: v.Language = Field(None, description="BCP 47 language tag, or auto (the transcription model identifies "
                                 "it; the recording then shows the language found); default: the project's language.")
    recording_source: Source = Field(None, description="Where the recording comes from, e.g. crm, pbx.")
    tag_ids: list[TextInt] = Field(default_factory=list, alias="tag_ids[]",
                                   description="Tags of the project (repeatable; also accepted as tag_ids).")
    conversation_id: PublicId = Field(
        None, description="public_id of the other leg of an internal call: both legs then share one conversation.")


class RecordingUpload(UploadForm):
    """The whole form, as the document shows it."""

    file: bytes = Field(description=f"The audio: MP3, WAV, FLAC, M4A, OGG or WebM. Its file name (at most "
                                    f"{v.FILENAME_MAX} characters, no control characters) is kept.",
                        json_schema_extra={"format": "binary", "contentMediaType": "application/octet-stream"})


Filename = v.line(v.FILENAME_MAX)


class PageQuery(Shape):
    page: text_int(1, MAX_PAGE) = Field(1, description="1-indexed.")
    per_page: text_int(1) = Field(DEFAULT_PER_PAGE, description=f"At most {MAX_PER_PAGE} (larger values are capped).")


class RecordingListQuery(PageQuery):
    tag_ids: list[TextInt] = Field(default_factory=list, alias="tag_ids[]",
                                   description="Recordings carrying any of these tags (also accepted as tag_ids).")
    project_id: TextInt = None
    status: RecordingStatus = None
    operator_id: TextInt = None
    language: v.Language = None
    external_id: v.ExternalId = None
    called_from: TextTime = None
    called_to: TextTime = None
    created_from: TextTime = None
    created_to: TextTime = None
    min_duration_ms: TextInt = None
    max_duration_ms: TextInt = None
    q: v.Line = Field(None, description="Case-insensitive search in the name.")


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
    audio_format: str = Field(description="Format of the stored audio: the upload's, or flac once the audio is "
                              "redacted.")
    size_bytes: int
    audio_redaction: AudioRedaction | None = Field(
        description="Where the project redacts audio: pending (the audio waits for its redacted copy and is not "
        "served) or done (only the redacted copy is served); null where no audio is redacted.")


class RecordingUpdate(Shape):
    name: NameIn = None
    project_id: Int = Field(None, description="Move to another project (account-wide keys only).")
    operator_id: Int | None = Field(None, description="null unsets it.")
    called_at: Time | None = Field(None, description="null unsets it.")
    tag_ids: list[Int] | None = Field(None, description="Replaces the set of tags (null: none).")
    processing_restricted: bool = None


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


# ----- shares ---------------------------------------------------------------------------------

SHARE_MESSAGE_MAX = 1000


def _email_or_everyone(schema: dict[str, Any]) -> None:
    schema["oneOf"] = [
        {"required": ["email"], "properties": {"email": {"type": "string"}, "everyone": {"enum": [False, None]}}},
        {"required": ["everyone"], "properties": {"everyone": {"const": True}, "email": {"type": "null"}}},
    ]


class ShareCreate(Shape):
    """Exactly one of email and everyone (400 `Send either email or everyone` otherwise)."""

    model_config = ConfigDict(json_schema_extra=_email_or_everyone)

    email: str | None = Field(None, description="An active member of the account.")
    everyone: bool | None = Field(None, description="true shares with every member (no email is sent).")
    message: str | None = Field(None, max_length=SHARE_MESSAGE_MAX,
                                description="Plain text for the email of a new share to a person; not stored.")
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
