"""Public JSON shapes: request bodies, form fields and query strings (validated on the way in) and
responses (built on the way out). The OpenAPI document is generated from these same models, so it states
exactly what the server accepts; the limits of text values come from callscope.validation, which the
resource models (and so the CRDs) share."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, RootModel
from pydantic_core import PydanticCustomError

from callscope import validation as v
from callscope.analysis.readouts import RecordingScorecard as RecordingScorecard
from callscope.analysis.readouts import Results as Results  # the analysis read-outs, declared once with the result
from callscope.analysis.readouts import Summary as Summary
from callscope.analysis.readouts import Transcription as Transcription
from callscope.analysis.result import Emotion
from callscope.analysis.stages.scorecard import AnswerOverride
from callscope.api import schema_examples as ex
from callscope.catalog.calls import CallRecord as RecentCall  # the call records' own shapes
from callscope.catalog.calls import NumberStats
from callscope.catalog.tables import BIGINT_MAX
from callscope.config import MODEL_NAME
from callscope.resources.kinds import (
    ANSWER_SECONDS_DEFAULT,
    TRACKERS_MAX,
    NumberType,
    RedactionEntity,
    RedactionMode,
    RoutingStrategy,
    TrackerMode,
    TrackerName,
    TrackerQuery,
    unique_entities,
    unique_tracker_names,
)
from callscope.resources.scorecard_kind import SCORECARD_PROJECTS_MAX, ReviewPeriod
from callscope.resources.scorecards import QUESTIONS_MAX, SECTIONS_MAX
from callscope.search.syntax import MAX_CHARS as QUERY_MAX_CHARS
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
NameIn = Annotated[v.Line, _NON_BLANK_IN_DOCUMENT]  # a recording's: the file name's characters, whatever they are
# The display name of a project, operator or tag: no invisible formatting characters either (v.Name, which the
# resource stores), so a name cannot look like another.
DisplayNameIn = Annotated[v.DisplayLine, Field(json_schema_extra={"pattern": v.NON_BLANK_DISPLAY_LINE})]


def examples(*values: Any) -> ConfigDict:
    """The model's examples in the document (values the server could answer, or a request it accepts)."""
    return ConfigDict(json_schema_extra={"examples": list(values)})


def required_in_document(*names: str, example: dict[str, Any] | None = None) -> ConfigDict:
    """Fields the services require, answering their absence with the spec's messages (`Name can't be blank`,
    `project_id is required for account-wide API keys`): optional to pydantic, required in the document.
    A project-scoped key may leave out its own project_id; the document describes what every key may send."""
    def extra(schema: dict[str, Any]) -> None:
        schema["required"] = [*schema.get("required", []), *names]
        if example is not None:
            schema["examples"] = [example]
    return ConfigDict(json_schema_extra=extra)


class Shape(BaseModel):
    # Python's `re` reads patterns as JSON Schema validators do (schemathesis, jsonschema), so the server
    # and its document agree on every pattern.
    model_config = ConfigDict(extra="ignore", regex_engine="python-re")


# ----- envelopes and errors -------------------------------------------------------------------

class Data(Shape, Generic[T]):
    data: T


class Meta(Shape):
    """Where a page stands in the whole list."""

    model_config = examples(ex.META)

    current_page: int
    per_page: int
    total_pages: int
    total_count: int


class Page(Shape, Generic[T]):
    data: list[T]
    meta: Meta


class ErrorBody(Shape):
    """An error other than a validation failure: one message."""

    model_config = examples({"error": "Resource not found"})

    error: str


class ErrorsBody(Shape):
    """A validation failure (422): every problem of the request, each naming its field."""

    model_config = examples({"errors": ["name can't be blank", "retention_days must be an integer"]})

    errors: list[str]


class RateLimitBody(Shape):
    """The key's rate limit is used up: retry after `retry_after` seconds."""

    model_config = examples({"error": "Rate limit exceeded", "retry_after": 12})

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
    mode: RedactionMode = Field(
        "precise", description="precise: the values the rules read in the words. strict: as well, every answer to "
        "a request for a sensitive value, whole, and every run of spoken digits, whatever the recogniser heard.")
    max_answer_seconds: Annotated[int, Field(ge=5, le=120), BeforeValidator(_integral)] = Field(
        ANSWER_SECONDS_DEFAULT, description="strict: the longest answer redacted whole, in seconds.")


class ProjectTranscription(Shape):
    """How the project's calls are transcribed."""

    model: str | None = Field(
        None, pattern=f"^{MODEL_NAME.pattern}$", description="One of the Whisper models the site configures "
        "(CALLSCOPE_WHISPER_MODELS), by name: used for this project's calls only; null: the site's default model. "
        "A name the site does not configure is refused (422), the message naming those it does.")


class ProjectTracker(Shape):
    """A saved search: each analysed call of the project records where it matched it (its results' `trackers`), and
    the Trends page charts the share of calls that did."""

    name: TrackerName = Field(description="Unique within the project.")
    query: TrackerQuery = Field(description="In search's syntax (`GET /search`'s `q`): words, \"phrases\", "
                                "-excluded, OR.")
    mode: TrackerMode = Field("keyword", description="keyword: the words; meaning: what is said, in any words.")


ProjectTrackers = Annotated[list[ProjectTracker], AfterValidator(unique_tracker_names)]


class ProjectUpdate(Shape):
    """The fields of a project, all optional; only supplied fields change."""

    model_config = examples({"summary_language": "de", "long_pause_threshold_seconds": 5})

    name: DisplayNameIn = Field(None, description="Display name.")
    language: v.Language = Field(None, description="Default language of transcription: a BCP 47 tag (en, en-US), or "
                                 "auto: the transcription model identifies each recording's language.")
    description: v.Text | None = None
    industry: v.Line | None = None
    goal_language: v.Language | None = Field(None, description="BCP 47; null: the project's language.")
    summary_language: v.Language | None = Field(None, description="BCP 47; null: the project's language.")
    long_pause_threshold_seconds: Annotated[v.PauseSeconds, BeforeValidator(_integral)] | None = Field(
        None, description="Minimum silence flagged as a long pause.")
    transcription_hints: v.Text | None = None
    transcription: ProjectTranscription | None = Field(
        None, description="How the project's calls are transcribed, replaced whole; null: the default model.")
    retention_days: Annotated[v.RetentionDays, BeforeValidator(_integral)] | None = Field(
        None, description="Days recordings are kept; null disables retention.")
    quality_baseline_enabled: bool | None = Field(None, description="null: false.")
    quality_baseline_pct: v.Percent | None = Field(None, description="Target percentile, 0 to 100.")
    redaction: ProjectRedaction | None = Field(
        None, description="What to redact from each call, replaced whole; null: nothing is redacted.")
    trackers: ProjectTrackers | None = Field(
        None, max_length=TRACKERS_MAX, description="The project's saved searches, replaced whole; null: none.")
    live: bool | None = Field(None, description="Calls to the project's virtual numbers are transcribed while they "
                              "last (the carrier streams their audio); null: false.")


class ProjectCreate(ProjectUpdate):
    """The same fields; name and language are required."""

    model_config = required_in_document("name", "language", example={
        "name": "Support line", "language": "en", "industry": "Retail", "retention_days": 365,
        "redaction": {"entities": ["payment_card", "email"], "audio": True},
        "trackers": [{"name": "Refund promised", "query": '"refund" -"no refund"', "mode": "keyword"}]})


class ProjectShort(Shape):
    """A project as the list shows it."""

    model_config = examples(ex.PROJECT_SHORT)

    id: int
    name: str
    language: str | None
    industry: str | None
    created_at: datetime
    updated_at: datetime


class ProjectDetail(ProjectShort):
    """A project with its settings and counts."""

    model_config = examples(ex.PROJECT)

    description: str | None
    goal_language: str | None
    summary_language: str | None
    long_pause_threshold_seconds: int | None
    transcription_hints: str | None
    transcription: ProjectTranscription | None = Field(description="How its calls are transcribed; null: with the "
                                                       "site's default model.")
    retention_days: int | None
    quality_baseline_enabled: bool
    quality_baseline_pct: float | None
    redaction: ProjectRedaction | None = Field(description="What is redacted from each call; null: nothing.")
    trackers: list[ProjectTracker] = Field(description="The project's saved searches.")
    live: bool = Field(description="Whether its virtual numbers' calls are transcribed while they last.")
    recordings_count: int
    virtual_numbers_count: int


# ----- operators ------------------------------------------------------------------------------

class OperatorCreate(Shape):
    """A new operator of the account, linked to a project when project_id is given."""

    model_config = required_in_document("name", example={
        "name": "Jane Doe", "email": "jane@example.com", "phone_number": "+14155552671", "project_id": 1})

    name: DisplayNameIn = Field(None, description="Full display name; initials derive from it.")
    external_id: v.ExternalId | None = Field(None, description="Your own identifier; unique per account.")
    phone_number: v.PhoneInput | None = Field(None, description="Normalised to E.164; unique per account.")
    email: v.Email | None = None
    active: bool = True
    project_id: Int | None = Field(None, description="Links the new operator to this project.")


class OperatorUpdate(Shape):
    """The fields of an operator, all optional; only supplied fields change."""

    model_config = examples({"active": False})

    name: DisplayNameIn = None
    phone_number: v.PhoneInput | None = Field(None, description="null clears it.")
    email: v.Email | None = Field(None, description="null clears it.")
    active: bool = None


class ProjectLink(Shape):
    """The project to link (or unlink)."""

    model_config = required_in_document("project_id", example={"project_id": 1})

    project_id: Int = Field(None, description="A project-scoped key may leave out its own project.")


class ProjectQuery(ProjectLink):
    """project_id as a query parameter."""

    project_id: TextInt = Field(None, description="A project-scoped key may leave out its own project.")


class NumberOfOperator(Shape):
    """A virtual number that rings the operator."""

    id: int
    phone_number: str
    name: str | None
    active: bool


class OperatorListItem(Shape):
    """An operator as the list shows it."""

    model_config = examples(ex.OPERATOR_LIST_ITEM)

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
    """An operator with the virtual numbers that ring them."""

    model_config = examples(ex.OPERATOR)

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
    """The fields of a virtual number, all optional; only supplied fields change."""

    model_config = examples({"name": "Support", "routing_strategy": "priority"})

    name: v.DisplayLine | None = Field(None, description="null or empty clears it.")
    active: bool = None
    recording: bool = None
    routing_strategy: RoutingStrategy = None


class NumberPurchase(Shape):
    """A number of the available list to buy."""

    model_config = required_in_document("phone_number", example={"phone_number": "+12025550143", "name": "Support"})

    phone_number: Annotated[v.PhoneInput, _NON_BLANK_IN_DOCUMENT] = Field(None, description="E.164.")
    country_code: Country | None = Field(None, description="ISO 3166-1 alpha-2 (default: the number's).")
    number_type: NumberType | None = Field(None, description="Default mobile.")
    name: v.DisplayLine | None = None
    requirement_group_id: Int | None = Field(None, description="An approved requirement group.")
    upfront_cost: v.Cost | None = None
    monthly_cost: v.Cost | None = None


class AvailableQuery(Shape):
    country: Country = Field("US", description="ISO 3166-1 alpha-2, any case.")
    number_type: NumberType = "mobile"


def _one_shape_of_add_operator(schema: dict[str, Any]) -> None:
    schema["examples"] = [{"operator_id": 1}]
    schema["anyOf"] = [{"required": ["operator_id"], "properties": {"operator_id": {"type": "integer"}}},
                       {"required": ["phone_number"], "properties": {"phone_number": {"type": "string",
                                                                                       "pattern": r"\S"}}}]


class AddOperator(Shape):
    """Either shape A (operator_id) or shape B (phone_number, name)."""

    model_config = ConfigDict(json_schema_extra=_one_shape_of_add_operator)  # examples: _one_shape_of_add_operator

    operator_id: Int | None = Field(None, description="Shape A: an existing operator (wins over phone_number).")
    phone_number: v.PhoneInput | None = Field(None, description="Shape B: create and attach a new operator.")
    name: v.DisplayLine | None = Field(None, description="Shape B: the new operator's name (default Operator).")


class OperatorQuery(Shape):
    model_config = required_in_document("operator_id")

    operator_id: TextInt = None


class RemoveOperator(Shape):
    """operator_id in a JSON body, which the spec allows besides the query string (OperatorQuery)."""

    operator_id: Int | None = None


class OperatorBrief(Shape):
    """An operator the number rings, in brief."""

    id: int
    name: str
    initials: str


class OperatorAvailable(Shape):
    """An operator that could be attached to the number."""

    id: int
    name: str
    phone_number: str | None
    initials: str


class OperatorAttached(OperatorAvailable):
    """An operator the number rings, in order of priority (0 first)."""

    priority: int


class NumberBase(Shape):
    """The fields every form of a virtual number has."""

    id: int
    phone_number: str
    name: str | None
    country_code: str
    active: bool
    project_id: int | None


class NumberListItem(NumberBase):
    """A virtual number as the list shows it."""

    model_config = examples(ex.NUMBER_LIST_ITEM)

    operators: list[OperatorBrief]
    operators_count: int


class NumberDetail(NumberBase):
    """A virtual number with its routing, operators, call counts and recent calls."""

    model_config = examples(ex.NUMBER)

    recording: bool
    routing_strategy: RoutingStrategy
    stats: NumberStats
    operators: list[OperatorAttached]
    available_operators: list[OperatorAvailable]
    recent_calls: list[RecentCall]


class RegionInformation(Shape):
    """Where a number is: its country, locality and the like."""

    region_type: str
    region_name: str


class NumberCandidate(Shape):
    """A number the provider offers for purchase, with its costs."""

    model_config = examples(ex.NUMBER_CANDIDATE)

    phone_number: str
    country_code: str
    number_type: str
    upfront_cost: str
    monthly_cost: str
    features: list[str]
    region_information: list[RegionInformation]


# ----- tags -----------------------------------------------------------------------------------

class TagCreate(Shape):
    """A tag of a project."""

    model_config = required_in_document("name", "project_id", example={"name": "complaint", "project_id": 1})

    name: DisplayNameIn = Field(None, description="Surrounding whitespace is stripped.")
    project_id: Int = Field(None, description="A project-scoped key may leave out its own project.")


class TagDetail(Shape):
    """A tag of a project, with the number of recordings that carry it."""

    model_config = examples(ex.TAG)

    id: int
    name: str
    color: str
    project_id: int
    recordings_count: int


# ----- app settings ---------------------------------------------------------------------------

class KeyInfo(Shape):
    """The API key making the request."""

    name: str
    permissions: list[str]
    project_id: int | None
    expires_at: datetime | None
    rate_limit_per_minute: int | None


class AppSettingsDetail(Shape):
    """The account's processing settings and the calling key's own."""

    model_config = examples(ex.APP_SETTINGS)

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


class RecordingDetail(Shape):
    """A recording: its metadata and where its analysis stands."""

    model_config = examples(ex.RECORDING)

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
    """The fields of a recording that can change, all optional; only supplied fields change."""

    model_config = examples({"name": "Call with Alex Smith", "operator_id": 1, "tag_ids": [1]})

    name: NameIn = None
    project_id: Int = Field(None, description="Move to another project (account-wide keys only).")
    operator_id: Int | None = Field(None, description="null unsets it.")
    called_at: Time | None = Field(None, description="null unsets it.")
    tag_ids: list[Int] | None = Field(None, description="Replaces the set of tags (null: none).")
    processing_restricted: bool = None


class IdName(Shape):
    """An object's id and name."""

    id: int
    name: str


class TagRef(IdName):
    """A tag the recordings can be filtered on."""

    color: str
    project_id: int


class Range(Shape):
    """The least and greatest value present (null: no recording has one)."""

    min: datetime | int | None
    max: datetime | int | None


class RecordingFilterOptions(Shape):
    """The values the recordings list can be filtered on, among the recordings the key can see."""

    model_config = examples(ex.RECORDING_FILTERS)

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
    """A time-limited URL of the recording's audio (Range requests supported)."""

    model_config = examples(ex.AUDIO_URL)

    url: str
    expires_at: datetime


# ----- search ---------------------------------------------------------------------------------

if TYPE_CHECKING:  # to mypy a parameter left out is None; pydantic reads the types that check one sent
    _Int = int | None
    _Time = datetime | None
    _Speaker = str | None
    _Name = str | None
    _Flag = bool | None
    _Emotion = str | None
    _Status = str | None
else:
    _Int, _Time, _Speaker, _Flag, _Emotion, _Status = (TextInt, TextTime, Literal["agent", "customer"], bool, Emotion,
                                                       RecordingStatus)
    _Name = v.line(pattern=v.NON_BLANK_LINE)


class SearchQuery(PageQuery):
    q: str = Field(max_length=QUERY_MAX_CHARS, pattern=v.NON_BLANK_LINE,
                   description='The words to find, as typed into a search box: `refund today` (both words), `"refund '
                   'today"` (the phrase), `cancel -subscription` (without the word), `refund OR credit` (either); '
                   f'case and accents do not matter, and each call\'s language stems the words. At most '
                   f'{QUERY_MAX_CHARS} characters.')
    mode: Literal["keyword", "meaning", "hybrid"] = Field(
        "hybrid", description="keyword: by the words; meaning: by what the segments mean (sentence embeddings); "
        "hybrid: both, fused by reciprocal rank.")
    project_id: _Int = None
    operator_id: _Int = Field(None, description="The recording's operator.")
    speaker: _Speaker = Field(None, description="The role of the segment's speaker: agent or customer.")
    tag: _Int = Field(None, description="A tag id: calls carrying it.")
    category: _Name = Field(None, description="A category's name: calls it was found in.")
    goal_id: _Int = Field(None, description="Calls that evaluated this goal of their project (see goal_met).")
    goal_met: _Flag = Field(None, description="With goal_id: calls that met it (true) or did not (false).")
    emotion: _Emotion = Field(None, description="The segment's strongest emotion.")
    created_from: _Time = None
    created_to: _Time = None
    status: _Status = None


class SearchRecording(Shape):
    """The recording a hit is in."""

    public_id: str
    name: str


class Highlight(Shape):
    """A word of `text` the query sought: its characters from `start` (inclusive) to `end` (exclusive)."""

    start: int
    end: int


class SearchHit(Shape):
    """A transcript segment found: where it is, who said it, its text with the words sought marked."""

    model_config = examples(ex.SEARCH_HIT)

    recording: SearchRecording
    start: float = Field(description="Seconds from the start of the call.")
    end: float = Field(description="Seconds from the start of the call.")
    speaker: str = Field(description="The speaker's label (speaker-1, speaker-2...).")
    role: Literal["agent", "customer", "unknown"]
    operator_id: int | None = Field(description="The operator whose enrolled voice the speaker's matched, or null.")
    emotion: Emotion | None = Field(description="The segment's strongest emotion, or null.")
    text: str = Field(description="The segment's text (as stored: redacted where the project redacts).")
    highlights: list[Highlight]
    score: float = Field(description="Higher is better, within one search: keyword, the engine's text rank; meaning, "
                         "the cosine similarity; hybrid, the reciprocal-rank-fusion score.")
    url: str = Field(description="The recording's page, its player at the segment's start (`#t=` seconds).")


# ----- shares ---------------------------------------------------------------------------------

SHARE_MESSAGE_MAX = 1000


_MESSAGE = Field(None, max_length=SHARE_MESSAGE_MAX,
                 description="Plain text for the email of a new share to a person; not stored.")
_NOTIFY = Field(None, description="false sends no email (default true).")


class ShareWithMember(Shape):
    """A share with one active member of the account, who gets an email with the link (unless notify is false)."""

    model_config = examples({"email": "sam@example.com", "message": "The call we talked about."})

    email: str = Field(description="An active member of the account.")
    everyone: Literal[False] | None = Field(None, description="Leave out (or false, or null).")
    message: str | None = _MESSAGE
    notify: bool | None = _NOTIFY


class ShareWithEveryone(Shape):
    """A share with every member of the account (no email is sent)."""

    model_config = examples({"everyone": True})

    everyone: Literal[True]
    email: None = Field(None, description="Leave out (or null).")
    message: str | None = _MESSAGE
    notify: bool | None = _NOTIFY


def _one_of_the_shares(schema: dict[str, Any]) -> None:
    schema["oneOf"] = schema.pop("anyOf")
    schema["examples"] = [{"email": "sam@example.com", "message": "The call we talked about."}]


class ShareCreate(RootModel[ShareWithMember | ShareWithEveryone]):
    """Exactly one of email and everyone (400 `Send either email or everyone` otherwise): a share with a member,
    or with everyone. (The resource reads the body itself, to answer the spec's 400s; this states the shapes.)"""

    model_config = ConfigDict(json_schema_extra=_one_of_the_shares)


class ShareUser(Shape):
    """The member a share is with."""

    email: str
    name: str


class SharedBy(Shape):
    """Who made the share: a member, or an API key (type api_key)."""

    type: str | None
    name: str


class ShareDetail(Shape):
    """A share of a recording's conversation: with a member (user) or with everyone."""

    model_config = examples(ex.SHARE)

    id: int
    everyone: bool
    user: ShareUser | None
    shared_by: SharedBy
    created_at: datetime
    url: str


# ----- response bodies ------------------------------------------------------------------------
# Each answer is `{"data": ...}` (lists of recordings add `meta`); these are their names in the document, and so
# in a generated client: `list_projects` answers a ProjectList, `get_recording_transcription` a RecordingTranscription.


def _list_of(*items: Any) -> ConfigDict:
    return examples({"data": list(items)})


def _one(item: Any) -> ConfigDict:
    return examples({"data": item})


class ProjectList(Data[list[ProjectShort]]):
    """The projects the key can see, ordered by name."""

    model_config = _list_of(ex.PROJECT_SHORT)


class Project(Data[ProjectDetail]):
    """A project."""

    model_config = _one(ex.PROJECT)


class OperatorList(Data[list[OperatorListItem]]):
    """The operators the key can see, ordered by name."""

    model_config = _list_of(ex.OPERATOR_LIST_ITEM)


class Operator(Data[OperatorDetail]):
    """An operator."""

    model_config = _one(ex.OPERATOR)


class VirtualNumberList(Data[list[NumberListItem]]):
    """The virtual numbers the key can see."""

    model_config = _list_of(ex.NUMBER_LIST_ITEM)


class VirtualNumber(Data[NumberDetail]):
    """A virtual number."""

    model_config = _one(ex.NUMBER)


class PurchasedVirtualNumber(Data[NumberListItem]):
    """The virtual number just bought."""

    model_config = _one(ex.NUMBER_LIST_ITEM)


class AvailableNumberList(Data[list[NumberCandidate]]):
    """Numbers the provider offers for purchase."""

    model_config = _list_of(ex.NUMBER_CANDIDATE)


class TagList(Data[list[TagDetail]]):
    """A project's tags, ordered by name."""

    model_config = _list_of(ex.TAG)


class Tag(Data[TagDetail]):
    """A tag."""

    model_config = _one(ex.TAG)


class AppSettings(Data[AppSettingsDetail]):
    """The account's processing settings."""

    model_config = _one(ex.APP_SETTINGS)


class RecordingList(Page[RecordingDetail]):
    """A page of recordings, newest first, with where the page stands (meta)."""

    model_config = examples({"data": [ex.RECORDING], "meta": ex.META})


class Recording(Data[RecordingDetail]):
    """A recording."""

    model_config = _one(ex.RECORDING)


class RecordingFilters(Data[RecordingFilterOptions]):
    """The values the recordings list can be filtered on."""

    model_config = _one(ex.RECORDING_FILTERS)


class RecordingAudioUrl(Data[AudioUrl]):
    """A time-limited URL of the recording's audio."""

    model_config = _one(ex.AUDIO_URL)


class RecordingTranscription(Data[Transcription]):
    """The recording's transcript (segments empty until its analysis has completed)."""

    model_config = _one(ex.TRANSCRIPTION)


class RecordingResults(Data[Results]):
    """The recording's analysis results (empty lists until its analysis has completed)."""

    model_config = _one(ex.RESULTS)


class RecordingSummary(Data[Summary]):
    """The recording's AI summary (null until its analysis has completed)."""

    model_config = _one(ex.SUMMARY)


class SearchHitList(Page[SearchHit]):
    """A page of the segments found, best first, with where the page stands (meta)."""

    model_config = examples({"data": [ex.SEARCH_HIT], "meta": ex.META})


class Share(Data[ShareDetail]):
    """A share."""

    model_config = _one(ex.SHARE)


class ShareList(Data[list[ShareDetail]]):
    """The shares of the recording's conversation, oldest first."""

    model_config = _list_of(ex.SHARE)


# ----- scorecards (QA forms) ------------------------------------------------------------------------------------------

class ScorecardReview(Shape):
    """Which calls of each attached project wait for a reviewer (the review queue)."""

    calls_per_agent: Annotated[int, Field(ge=0, le=1000), BeforeValidator(_integral)] = Field(
        5, description="Calls of each agent sampled per period (0: none).")
    period: ReviewPeriod = Field("month", description="week (from Monday, UTC) or month.")
    below_score: v.Percent | None = Field(60, description="Calls scoring below this (0 to 100) wait as well; null: "
                                          "none for their score.")


_SECTIONS_DESCRIPTION = (
    "The form's sections (at most two levels: a section holds questions and/or sections of questions), each with "
    "a name and a weight; the weights in one place add up to 100. A question: `id` (a slug, unique in the form), "
    "`text`, `type` (yes_no, choice with `options` [{value, points}], number with `ranges` [{min, max, points}]), "
    "`weight`, `auto_fail` (none, section, form; false/true), `applies_when` (phrases, long_pause, category, "
    "goal_id, field, or another question's `answers`) and `answer`, how it is answered automatically: "
    "{source: goal, goal_id}, {source: category, name, yes_when}, {source: pauses}, {source: talk_share, role, max, "
    "min}, {source: interruptions, role, max}, {source: longest_silence, max_seconds}, {source: hold, max_seconds}, "
    "{source: emotion, role, emotions, part, max, min}, {source: field, name, equals, min, max}, {source: llm, "
    "prompt} or {source: manual}. The Scorecard resource's schema (crds/scorecards.callscope.io.yaml) has every "
    "field; goals, categories and fields named must exist in every attached project.")


class ScorecardUpdate(Shape):
    """The fields of a form, all optional; only supplied fields change, each replaced whole."""

    model_config = examples({"project_ids": [1, 2]})

    name: DisplayNameIn = Field(None, description="Display name, shown with each call's score.")
    project_ids: list[Int] | None = Field(None, max_length=SCORECARD_PROJECTS_MAX,
                                          description="The projects whose analysed calls the form scores.")
    sections: list[dict[str, Any]] | None = Field(None, min_length=1, max_length=SECTIONS_MAX,
                                                  description=_SECTIONS_DESCRIPTION)
    review: ScorecardReview | None = Field(None, description="Which calls wait for a reviewer.")


class ScorecardCreate(ScorecardUpdate):
    """A new form; name and sections are required (a project-scoped key's form is attached to its project)."""

    sections: list[dict[str, Any]] = Field(None, min_length=1, max_length=SECTIONS_MAX,  # type: ignore[arg-type]
                                           description=_SECTIONS_DESCRIPTION)

    model_config = required_in_document("name", "sections", example={
        "name": "Support QA", "project_ids": [1], "sections": [{"name": "Opening", "weight": 100, "questions": [{
            "id": "greeting", "text": "Did the agent greet the caller and give their name?", "type": "yes_no",
            "weight": 100, "auto_fail": False, "answer": {"source": "goal", "goal_id": 1}}]}]})


class ScorecardDetail(Shape):
    """A QA form."""

    model_config = examples(ex.SCORECARD)

    id: int
    name: str
    version: int = Field(description="One more with every change of the form; each call's score names the version "
                         "it was scored with.")
    project_ids: list[int] = Field(description="The attached projects (those the key can see).")
    sections: list[dict[str, Any]] = Field(description=_SECTIONS_DESCRIPTION)
    review: ScorecardReview
    created_at: datetime
    updated_at: datetime


class ScorecardReviewBody(Shape):
    """Reviewers' answers to a recording's scorecard, and whether it is now reviewed."""

    model_config = required_in_document("scorecard_id", example={
        "scorecard_id": 4, "answers": [{"question_id": "greeting", "answer": "no",
                                        "comment": "The agent did not give their name."}], "reviewed": True})

    scorecard_id: Int = Field(None, description="The form (a scorecard of the recording's results).")  # type: ignore[assignment]
    answers: list[AnswerOverride] = Field(
        default_factory=list, max_length=QUESTIONS_MAX, description="Answers that replace the current ones: yes, "
        "no or n/a (yes_no), an option (choice), a number (number); each kept in the answer's history with who, "
        "when, from, to and the comment.")
    reviewed: bool = Field(False, description="true marks the scorecard reviewed (by the caller, now).")


class ScorecardList(Data[list[ScorecardDetail]]):
    """The forms the key can see, ordered by name."""

    model_config = _list_of(ex.SCORECARD)


class Scorecard(Data[ScorecardDetail]):
    """A QA form."""

    model_config = _one(ex.SCORECARD)


class RecordingScorecardList(Data[list[RecordingScorecard]]):
    """The recording's scorecards: one per form of its project, with reviewers' overrides."""

    model_config = _list_of(ex.RECORDING_SCORECARD)


class RecordingScorecardReviewed(Data[RecordingScorecard]):
    """The reviewed scorecard, recomputed."""

    model_config = _one(ex.RECORDING_SCORECARD)


def _day_from_text(value: Any) -> Any:
    """A day as a query parameter: YYYY-MM-DD only (pydantic would also read a number of seconds as a date)."""
    if isinstance(value, str) and not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        raise PydanticCustomError("date_parsing", "not a day")
    return value


Day = Annotated[date, BeforeValidator(_day_from_text)]


class ScorecardQueueQuery(Shape):
    """Which period and project of the form's review queue."""

    on: Day = Field(None, description="A day (YYYY-MM-DD) of the period to list; default today (UTC).")  # type: ignore[assignment]
    project_id: int | None = Field(None, ge=1, le=INT64_MAX,
                                   description="One of the form's projects; default all the key can see.")


class QueuedCall(Shape):
    """A call waiting for review (or reviewed) in the period, and why it is in the queue."""

    recording_id: int
    public_id: str
    project_id: int
    operator_id: int | None = Field(description="The call's agent; null: none known.")
    called_at: datetime = Field(description="When the call was made (its upload, where that is unknown).")
    score: float | None = Field(description="The score as it stands (0 to 100), reviewers' overrides counted.")
    auto_failed: bool
    reasons: list[Literal["sample", "auto_failed", "low_score"]] = Field(
        description="sample: picked at random among the agent's calls of the period (the same all the period); "
                    "auto_failed; low_score: below the form's review.below_score.")
    reviewed_by: str | None = Field(description="Who marked it reviewed; null: waiting.")
    reviewed_at: datetime | None


class ScorecardQueueDetail(Shape):
    """A form's review queue for one period."""

    period_start: datetime
    period_end: datetime = Field(description="The first instant after the period.")
    calls: list[QueuedCall] = Field(description="In the order they were made.")


class ScorecardQueue(Data[ScorecardQueueDetail]):
    """The form's review queue for the period."""

    model_config = _one({
        "period_start": "2026-12-01T00:00:00Z", "period_end": "2027-01-01T00:00:00Z", "calls": [{
            "recording_id": 12, "public_id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "project_id": 1, "operator_id": 3,
            "called_at": "2026-12-02T09:30:00Z", "score": 40.0, "auto_failed": True,
            "reasons": ["sample", "auto_failed", "low_score"], "reviewed_by": None, "reviewed_at": None}]})


# ----- notes on a recording -------------------------------------------------------------------------------------------

class NoteCreate(Shape):
    """A note on the recording (blank is refused: 422 `text must not be empty`)."""

    model_config = examples({"text": ex.NOTE["text"]})

    text: Annotated[v.Text, Field(json_schema_extra={"pattern": v.NON_BLANK_MULTI_LINE})] = Field(
        description=f"The note: several lines allowed, at most {v.TEXT_MAX} characters.")


class NoteAuthor(Shape):
    """Who wrote a note: a member, or an API key (type api_key), by the name they had then."""

    type: Literal["member", "api_key"]
    name: str


class NoteDetail(Shape):
    """A note on a recording."""

    model_config = examples(ex.NOTE)

    id: int
    text: str
    author: NoteAuthor
    created_at: datetime


class Note(Data[NoteDetail]):
    """A note."""

    model_config = _one(ex.NOTE)


class NoteList(Data[list[NoteDetail]]):
    """The recording's notes, oldest first."""

    model_config = _list_of(ex.NOTE)
