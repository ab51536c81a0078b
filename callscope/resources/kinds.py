"""The seven configuration kinds. Their pydantic models are the single source of the CRD schemas,
of what the stores accept, and of what `callscope apply` validates.

References between objects are by metadata.name within the account's namespace (GitOps-friendly);
the REST API translates them to and from the integer ids in status.id.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from callscope.catalog.tables import RecordingTracker
from callscope.config import MODEL_NAME
from callscope.errors import ValidationFailed
from callscope.resources.meta import BaseStatus, CamelModel, Resource
from callscope.search.syntax import MAX_CHARS as QUERY_MAX_CHARS
from callscope.search.syntax import parse
from callscope.validation import (
    NON_BLANK_DISPLAY_LINE,
    NON_BLANK_LINE,
    Cost,
    DisplayLine,
    Email,
    ExternalId,
    Language,
    Line,
    MemberEmail,
    Name,
    PauseSeconds,
    Percent,
    PositiveInt64,
    RetentionDays,
    SecretKey,
    SecretName,
    Text,
    UtcDatetime,
    WebhookUrl,
    line,
)

E164_PATTERN = r"^\+[1-9]\d{1,14}$"
Permission = Literal["read", "write", "delete"]
Role = Literal["admin", "member", "reviewer"]
RoutingStrategy = Literal["priority", "round_robin", "simultaneous"]
NumberType = Literal["mobile", "local", "toll-free", "national"]


class AccountSpec(CamelModel):
    display_name: DisplayLine = Field(description="Account name, shown as shared_by of shares made through the API.")
    default_language: Language = Field("en", description="Language for projects that set none (BCP 47).")
    audio_retention_days: RetentionDays | None = Field(
        None, description="Default audio retention for projects without retention_days."
    )


class Account(Resource[AccountSpec, BaseStatus]):
    KIND = "Account"
    PLURAL = "accounts"
    SHORT_NAMES = ("csaccount",)
    kind: Literal["Account"] = "Account"
    spec: AccountSpec
    status: BaseStatus = Field(default_factory=BaseStatus)


class MemberSpec(CamelModel):
    email: MemberEmail = Field(description="Sign-in email of the person.")
    name: Name = Field(description="Display name.")
    locked: bool = Field(False, description="A locked member loses access to everything shared with them.")
    role: Role = Field("member", description="admin: also the account's Settings pages (API keys, members) and "
                                             "reviewing calls' scorecards; reviewer: recordings, and reviewing "
                                             "their scorecards (overriding answers); member: recordings only.")


class Member(Resource[MemberSpec, BaseStatus]):
    KIND = "Member"
    PLURAL = "members"
    SHORT_NAMES = ("csmember",)
    kind: Literal["Member"] = "Member"
    spec: MemberSpec
    status: BaseStatus = Field(default_factory=BaseStatus)


GoalSpeaker = Literal["agent", "customer", "any"]
FieldType = Literal["string", "number", "boolean", "date", "email", "phone", "enum"]


class GoalSituation(CamelModel):
    """When a goal applies at all (hold etiquette: only where there was a hold). A goal whose situation did not occur
    in a call is reported as not applicable (`applicable: false`) rather than not met, and counts in no rate."""

    phrases: list[Name] = Field(
        default_factory=list, description="Any of these said, by anyone, is the situation (whole words, case and "
        "punctuation ignored), e.g. \"hold\", \"one moment\"."
    )
    long_pause: bool = Field(
        False, description="A pause at least the project's longPauseThresholdSeconds long is the situation."
    )


class Goal(CamelModel):
    id: PositiveInt64 = Field(description="Goal id reported as goal_id in results; unique within the project.")
    name: Name = Field(description="Short name reported as goal_name.")
    description: Text = Field(min_length=1, description="What the call must achieve; the evaluator reads this.")
    phrases: list[Name] = Field(
        default_factory=list, description="Any of these said meets the goal (whole words, case and punctuation "
        "ignored); the description is also matched by meaning."
    )
    speaker: GoalSpeaker = Field("any", description="Who must say it: agent, customer or any.")
    within_seconds: PositiveInt64 | None = Field(
        None, description="Only what is said within the first N seconds of the call counts."
    )
    min_similarity: float | None = Field(
        None, ge=0, le=1, description="Similarity (0 to 1) of a sentence to the description that meets the goal; "
        "unset: the measured default (0.45); 1 turns matching by meaning off."
    )
    applies_when: GoalSituation | None = Field(
        None, description="The situation the goal is about; unset: every call. A call without it reports the goal "
        "as not applicable."
    )


class Category(CamelModel):
    name: Name = Field(description="Category a call can be put in.")
    description: Text = Field("", description="When a call belongs to this category.")
    keywords: list[Name] = Field(
        default_factory=list, description="Any of these said puts the call in the category (whole words, case and "
        "punctuation ignored); name and description are also matched by meaning."
    )
    min_similarity: float | None = Field(
        None, ge=0, le=1, description="Similarity (0 to 1) of a sentence to name and description that matches; "
        "unset: the measured default (0.40); 1 turns matching by meaning off."
    )


class ExtractedField(CamelModel):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,62}$", description="Key of the value in the results.")
    description: Text = Field(min_length=1, description="What to extract from the conversation.")
    type: FieldType = Field(
        "string", description="Type of the value: string, number, boolean, date (ISO 8601), email, phone (E.164) "
        "or enum (one of values)."
    )
    values: list[Name] = Field(default_factory=list, description="The allowed values of an enum field.")

    @model_validator(mode="after")
    def _enum_has_values(self) -> ExtractedField:
        # The CRD says the same in CEL (crd.py _VALIDATIONS["ExtractedField"]).
        if self.type == "enum" and not self.values:
            raise ValueError("an enum field needs values")
        return self


class SecretKeyRef(CamelModel):
    name: SecretName = Field(description="Secret in the account's namespace.")
    key: SecretKey = Field("signing-secret", description="Key within the Secret.")


WebhookSection = Literal["metadata", "summary", "transcription", "goals", "categories", "extracted_data",
                         "scorecards"]
WebhookEventType = Literal["recording.analyzed", "recording.live_alert"]


def _analyzed_only() -> list[WebhookEventType]:
    return ["recording.analyzed"]  # what a webhook got before it could choose


def _metadata_only() -> list[WebhookSection]:
    return ["metadata"]


class Webhook(CamelModel):
    url: WebhookUrl = Field(description="Endpoint that receives the events (HTTPS in production).")
    events: list[WebhookEventType] = Field(
        default_factory=_analyzed_only, min_length=1,
        description="The events sent: recording.analyzed (each analysed call), recording.live_alert (each alert of a "
        "live call, as it happens).")
    sections: list[WebhookSection] = Field(
        default_factory=_metadata_only, description="Payload sections of recording.analyzed to include."
    )
    signing_secret_ref: SecretKeyRef | None = Field(
        None, description="Secret holding the Standard Webhooks signing key (whsec_...)."
    )


RedactionEntity = Literal["payment_card", "bank_account", "national_id", "date_of_birth", "email", "phone_number",
                          "person_name", "address"]


RedactionMode = Literal["precise", "strict"]
# A card number, its expiry and its code read with pauses and an agent's read-back in between take up to ~25 s on
# the benchmark's calls; 30 s covers them without blanking the rest of a call where the turn change was missed.
ANSWER_SECONDS_DEFAULT = 30


def unique_entities(entities: list[str]) -> list[str]:
    """The entities, refused when one repeats (the API's shape and the CRD's rule say the same)."""
    if len(set(entities)) != len(entities):
        raise ValueError("entities must not repeat")
    return entities


class Redaction(CamelModel):
    entities: list[RedactionEntity] = Field(
        min_length=1, description="What is taken out of transcripts and results (and, with audio, the audio): "
        "payment_card, bank_account, national_id, date_of_birth, email, phone_number, person_name, address.")
    audio: bool = Field(True, description="Silence the redacted words in the recording's audio as well.")
    mode: RedactionMode = Field(
        "precise", description="precise: the values the rules read in the words. strict: as well, every answer to "
        "a request for a sensitive value, whole, and every run of spoken digits, whatever the recogniser heard "
        "(docs/analysis.md, Redaction).")
    max_answer_seconds: int = Field(
        ANSWER_SECONDS_DEFAULT, ge=5, le=120, description="strict: the longest answer to a request redacted whole, "
        "in seconds from the end of the request.")

    @field_validator("entities")
    @classmethod
    def _entities_do_not_repeat(cls, entities: list[str]) -> list[str]:
        # The CRD says the same in CEL (crd.py _VALIDATIONS["Redaction"]).
        return unique_entities(entities)


class TranscriptionSpec(CamelModel):
    model: str | None = Field(
        None, pattern=f"^{MODEL_NAME.pattern}$", description="One of the Whisper models the site configures "
        "(CALLSCOPE_WHISPER_MODELS) by its name, used for this project's calls only; null: the default model.")


TRACKER_NAME_MAX = RecordingTracker.tracker.type.length
TRACKERS_MAX = 50  # each is a query per analysed call, and a chart on the Trends page
TrackerMode = Literal["keyword", "meaning"]


def _searchable(query: str) -> str:
    """A tracker's query, refused as search refuses it (the same parser: callscope/search/syntax.py)."""
    try:
        parse(query)
    except ValidationFailed as exc:
        raise PydanticCustomError("unusable", "{problem}", {"problem": exc.errors[0].removeprefix("q ")}) from None
    return query


if TYPE_CHECKING:  # to mypy, the text they hold
    TrackerName = str
    TrackerQuery = str
else:
    TrackerName = line(TRACKER_NAME_MAX, NON_BLANK_DISPLAY_LINE)
    TrackerQuery = Annotated[line(QUERY_MAX_CHARS, NON_BLANK_LINE), AfterValidator(_searchable)]


def unique_tracker_names(trackers: list) -> list:
    """The trackers, refused when a name repeats (the API's shape and the CRD's rule say the same)."""
    names = [t.name for t in trackers]
    if len(set(names)) != len(names):
        raise PydanticCustomError("repeated", "must not repeat a name ({name})",
                                  {"name": next(n for n in names if names.count(n) > 1)})
    return trackers


class Tracker(CamelModel):
    name: TrackerName = Field(description="Name of the saved search; unique within the project.")
    query: TrackerQuery = Field(description="What to find, in search's syntax (words, \"phrases\", -excluded, OR).")
    mode: TrackerMode = Field("keyword", description="keyword: the words; meaning: what is said, in any words.")


class LiveAlert(CamelModel):
    name: Name = Field(description="What the alert is called in the live call's events.")
    phrases: list[Name] = Field(min_length=1, description="Any of these said in a live call raises the alert (whole "
                                "words, case and punctuation ignored), each time it is said.")
    speaker: GoalSpeaker = Field("any", description="Whose words count: agent, customer or any.")


class ProjectSpec(CamelModel):
    name: Name = Field(description="Display name.")
    language: Language = Field(description="Default language of transcription (BCP 47), or auto: the transcription "
                               "model identifies each recording's language.")
    description: Text | None = Field(None, description="Free-form description.")
    industry: Line | None = Field(None, description="Industry tag.")
    goal_language: Language | None = Field(
        None, description="Language of goal-evaluation prompts (BCP 47); defaults to language.")
    summary_language: Language | None = Field(
        None, description="Language of call summaries (BCP 47); defaults to language.")
    long_pause_threshold_seconds: PauseSeconds | None = Field(
        None, description="Minimum silence in seconds that is flagged as a long pause."
    )
    transcription_hints: Text | None = Field(None, description="Domain vocabulary that biases transcription.")
    transcription: TranscriptionSpec | None = Field(
        None, description="How this project's calls are transcribed; null: with the site's default model.")
    retention_days: RetentionDays | None = Field(None, description="Days recordings are kept; null disables retention.")
    quality_baseline_enabled: bool = Field(False, description="Compute a quality baseline across recordings.")
    quality_baseline_pct: Percent | None = Field(None, description="Target percentile, 0 to 100.")
    goals: list[Goal] = Field(default_factory=list, description="Goals each call is evaluated against.")
    categories: list[Category] = Field(default_factory=list, description="Categories calls are sorted into.")
    fields: list[ExtractedField] = Field(default_factory=list, description="Values extracted from each call.")
    webhook: Webhook | None = Field(None, description="Where recording.analyzed events are delivered.")
    redaction: Redaction | None = Field(
        None, description="Card numbers and personal data to redact from each call; null: nothing is redacted.")
    trackers: Annotated[list[Tracker], AfterValidator(unique_tracker_names)] = Field(
        default_factory=list, max_length=TRACKERS_MAX, description="Saved searches: each call records where it "
        "matched them; the Trends page charts the share of calls that do.")
    live: bool = Field(False, description="Calls to the project's virtual numbers are transcribed while they last "
                       "(the carrier streams their audio): live transcript, goals and alerts.")
    live_alerts: list[LiveAlert] = Field(
        default_factory=list, description="Phrases that raise an alert when said in a live call (forbidden words, a "
        "customer asking to cancel); a silence longer than the pause threshold is an alert too.")

    @property
    def live_allowed(self) -> bool:
        """Whether its calls may be transcribed live: not where redaction is asked (live events are not redacted)."""
        return not (self.redaction and self.redaction.entities)

    @property
    def transcription_model(self) -> str | None:
        """The site model (CALLSCOPE_WHISPER_MODELS) that transcribes its calls; None: the default model."""
        return self.transcription.model if self.transcription else None

    @property
    def redacts_audio(self) -> bool:
        """Whether the audio of this project's calls is redacted (and never served before it is)."""
        return bool(self.redaction and self.redaction.entities and self.redaction.audio)


class Project(Resource[ProjectSpec, BaseStatus]):
    KIND = "Project"
    PLURAL = "projects"
    SHORT_NAMES = ("csproject", "csproj")
    kind: Literal["Project"] = "Project"
    spec: ProjectSpec
    status: BaseStatus = Field(default_factory=BaseStatus)


class OperatorSpec(CamelModel):
    name: Name = Field(description="Full display name; initials derive from it.")
    external_id: ExternalId | None = Field(None, description="The customer's own identifier; unique per account.")
    phone_number: str | None = Field(None, pattern=E164_PATTERN, description="E.164; unique per account.")
    email: Email | None = Field(None, description="Contact email.")
    active: bool = Field(True, description="Whether the operator can receive routed calls.")
    projects: list[str] = Field(default_factory=list, description="Names of the projects the operator is linked to.")


class Operator(Resource[OperatorSpec, BaseStatus]):
    KIND = "Operator"
    PLURAL = "operators"
    SHORT_NAMES = ("csoperator", "csop")
    kind: Literal["Operator"] = "Operator"
    spec: OperatorSpec
    status: BaseStatus = Field(default_factory=BaseStatus)

    def references(self) -> list[tuple[str, str]]:
        return [(Project.KIND, name) for name in self.spec.projects]


class VirtualNumberSpec(CamelModel):
    phone_number: str = Field(pattern=E164_PATTERN, description="E.164; unique per account.")
    name: DisplayLine | None = Field(None, description="Display name.")
    country_code: str = Field(pattern=r"^[A-Z]{2}$", description="ISO 3166-1 alpha-2.")
    number_type: NumberType = Field("mobile", description="mobile, local, toll-free or national.")
    active: bool = Field(True, description="Whether the number receives calls.")
    recording: bool = Field(True, description="Whether inbound calls are recorded.")
    routing_strategy: RoutingStrategy = Field("priority", description="How calls reach the attached operators.")
    project: str | None = Field(None, description="Name of the project the number is attached to.")
    operators: list[str] = Field(
        default_factory=list, description="Names of the attached operators, highest priority first."
    )


class VirtualNumberStatus(BaseStatus):
    provider: str | None = Field(None, description="Phone-number provider that sold the number.")
    provider_ref: str | None = Field(None, description="The provider's identifier of the number.")
    upfront_cost: Cost | None = Field(None, description="One-time cost, a decimal string.")
    monthly_cost: Cost | None = Field(None, description="Monthly cost, a decimal string.")


class VirtualNumber(Resource[VirtualNumberSpec, VirtualNumberStatus]):
    KIND = "VirtualNumber"
    PLURAL = "virtualnumbers"
    SHORT_NAMES = ("vnum",)
    kind: Literal["VirtualNumber"] = "VirtualNumber"
    spec: VirtualNumberSpec
    status: VirtualNumberStatus = Field(default_factory=VirtualNumberStatus)

    def references(self) -> list[tuple[str, str]]:
        project = [(Project.KIND, self.spec.project)] if self.spec.project is not None else []
        return project + [(Operator.KIND, name) for name in self.spec.operators]


class TagSpec(CamelModel):
    name: Name = Field(description="Tag name; unique within its project, case-insensitively.")
    project: str = Field(min_length=1, description="Name of the owning project.")


class TagStatus(BaseStatus):
    color: str | None = Field(None, description="Hex colour from the project's ten-colour palette.")


class Tag(Resource[TagSpec, TagStatus]):
    KIND = "Tag"
    PLURAL = "tags"
    SHORT_NAMES = ("cstag",)
    kind: Literal["Tag"] = "Tag"
    spec: TagSpec
    status: TagStatus = Field(default_factory=TagStatus)

    def references(self) -> list[tuple[str, str]]:
        return [(Project.KIND, self.spec.project)]


class ApiKeySpec(CamelModel):
    permissions: list[Permission] = Field(min_length=1, description="Any combination of read, write, delete.")
    project: str | None = Field(None, description="Name of the project a project-scoped key is bound to.")
    expires_at: UtcDatetime | None = Field(None, description="The key is invalid after this time (UTC when it says "
                                           "no offset).")
    revoked: bool = Field(False, description="A revoked key is invalid at once.")
    rate_limit_per_minute: PositiveInt64 | None = Field(None, description="Requests per minute when limiting is on.")


class ApiKeyStatus(BaseStatus):
    key_hash: str | None = Field(None, description="SHA-256 of the key; the key itself is never stored.")
    key_hint: str | None = Field(None, description="Prefix and last four characters, to recognise a key.")
    rotated_at: datetime | None = Field(None, description="When the current key material was made.")


class ApiKey(Resource[ApiKeySpec, ApiKeyStatus]):
    KIND = "ApiKey"
    PLURAL = "apikeys"
    SHORT_NAMES = ("csapikey",)
    kind: Literal["ApiKey"] = "ApiKey"
    spec: ApiKeySpec
    status: ApiKeyStatus = Field(default_factory=ApiKeyStatus)

    def references(self) -> list[tuple[str, str]]:
        return [(Project.KIND, self.spec.project)] if self.spec.project is not None else []


KINDS: dict[str, type[Resource]] = {
    cls.KIND: cls for cls in (Account, Member, Project, Operator, VirtualNumber, Tag, ApiKey)
}


def register(cls: type[Resource]) -> None:
    """Add a kind declared in a module of its own that builds on this one (Scorecard: scorecard_kind.py, which
    callscope/resources/__init__.py imports, so that every reader of KINDS finds it)."""
    KINDS[cls.KIND] = cls


def kind_class(name: str) -> type[Resource]:
    """Resolve a kind by Kind, plural or short name, case-insensitively (as kubectl does)."""
    wanted = name.lower()
    for cls in KINDS.values():
        if wanted in (cls.KIND.lower(), cls.PLURAL, cls.PLURAL.rstrip("s"), *cls.SHORT_NAMES):
            return cls
    raise KeyError(name)
