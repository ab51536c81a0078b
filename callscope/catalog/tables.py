"""SQLAlchemy models of the catalog database.

Every change here needs an Alembic revision in ``migrations/versions`` (tests/catalog/test_catalog_migrations.py
fails on drift). Timestamps are stored in UTC and always read back timezone-aware (:class:`UTCDateTime`).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from callscope.statuses import RecordingStatus

# Deterministic constraint/index names, so later migrations can refer to (and drop) them on every back end.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """``TIMESTAMP WITH TIME ZONE``; naive values are taken as UTC; values read back are aware UTC.

    SQLite has no time zones: values are stored as UTC text, which also keeps their text order the time order.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if isinstance(value, datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=UTC)
            value = value.astimezone(UTC)
            if dialect.name == "sqlite":
                value = value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if isinstance(value, datetime):
            value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


BIGINT_MAX = 2**63 - 1  # the largest BIGINT: a larger integer is no id of the catalog's, on either dialect
INTEGER_MAX = 2**31 - 1  # the largest INTEGER (durations, counts, attempts)


def _serial() -> BigInteger:
    """An auto-incrementing BIGINT key (SQLite autoincrements only an INTEGER PRIMARY KEY)."""
    return BigInteger().with_variant(Integer, "sqlite")



class IdSequence(Base):
    """One row per kind of object with integer ids; see callscope.catalog.ids.allocate_id."""

    __tablename__ = "id_sequences"

    kind: Mapped[str] = mapped_column(String(64), primary_key=True)
    last_value: Mapped[int] = mapped_column(BigInteger, nullable=False)


class IdClaim(Base):
    """To which object the allocator handed an integer id. The reconciler adopts a `callscope.io/id` label
    only when its claim names that very object, so a label a user wrote can never take another's id."""

    __tablename__ = "id_claims"

    kind: Mapped[str] = mapped_column(String(64), primary_key=True)
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    account: Mapped[str] = mapped_column(String(128), nullable=False)
    name: Mapped[str] = mapped_column(String(253), nullable=False)


class ApiKeyUsage(Base):
    """Request and error counters of an API key, per endpoint (written by UsageRecorder.flush)."""

    __tablename__ = "api_key_usage"

    key_uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    endpoint: Mapped[str] = mapped_column(String(200), primary_key=True)
    account: Mapped[str] = mapped_column(String(128), nullable=False)
    key_name: Mapped[str] = mapped_column(String(255), nullable=False)
    requests: Mapped[int] = mapped_column(BigInteger, nullable=False)
    errors: Mapped[int] = mapped_column(BigInteger, nullable=False)
    last_used_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class ApiKeyUsageHourly(Base):
    """Requests and errors of an API key per hour (UTC, the hour's start): its usage over time."""

    __tablename__ = "api_key_usage_hourly"

    key_uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    hour: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    account: Mapped[str] = mapped_column(String(128), nullable=False)
    requests: Mapped[int] = mapped_column(BigInteger, nullable=False)
    errors: Mapped[int] = mapped_column(BigInteger, nullable=False)


class RateLimitWindow(Base):
    """Fixed-window request counter of a rate-limit bucket; window_start is epoch seconds."""

    __tablename__ = "rate_limit_windows"
    __table_args__ = (Index("ix_rate_limit_windows_window_start", "window_start"),)  # cleanup of old windows

    bucket: Mapped[str] = mapped_column(String(255), primary_key=True)
    window_start: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    count: Mapped[int] = mapped_column(Integer, nullable=False)


class Call(Base):
    """A call to or from a virtual number (number stats and recent calls read these).

    A call the carrier's webhooks bring (callscope/services/phone_calls.py) also keeps the carrier's call id, the
    operators to dial in order and which attempt is ringing, the operator who answered and its recording."""

    __tablename__ = "calls"
    __table_args__ = (
        Index("ix_calls_virtual_number_id_created_at", "virtual_number_id", "created_at"),
        UniqueConstraint("account", "provider_call_id", name="uq_calls_account_provider_call_id"),
        Index("ix_calls_provider_call_id", "provider_call_id"),  # callbacks name the call, not the account
    )

    id: Mapped[int] = mapped_column(_serial(), primary_key=True, autoincrement=True)
    account: Mapped[str] = mapped_column(String(128), nullable=False)
    virtual_number_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    phone_number: Mapped[str] = mapped_column(String(32), nullable=False)
    caller_name: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    call_status: Mapped[str] = mapped_column(String(32), nullable=False)
    call_duration: Mapped[int] = mapped_column(Integer, nullable=False, default=0)  # seconds
    direction: Mapped[str] = mapped_column(String(16), nullable=False)
    ai_handled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    transcript_summary: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    provider_call_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    dial_order: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON list of operator ids
    dial_attempt: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    operator_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)  # who answered
    recording_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)  # recordings.id; its summary


class RoutingCursor(Base):
    """Round robin: the operator a number's last call tried first, shared by every API replica."""

    __tablename__ = "routing_cursors"

    account: Mapped[str] = mapped_column(String(128), primary_key=True)
    virtual_number_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    operator_id: Mapped[int] = mapped_column(BigInteger, nullable=False)


class Recording(Base):
    """An uploaded call. `id` is the legacy integer id that paths accept; `public_id` is the UUIDv7."""

    __tablename__ = "recordings"
    __table_args__ = (
        UniqueConstraint("account", "project_id", "external_id", name="uq_recordings_account_project_id_external_id"),
        Index("ix_recordings_account_project_created", "account", "project_id", "created_at", "id"),
        Index("ix_recordings_account_created", "account", "created_at", "id"),
        Index("ix_recordings_account_status_created", "account", "status", "created_at", "id"),
        Index("ix_recordings_account_operator", "account", "operator_id"),
        Index("ix_recordings_account_called_at", "account", "called_at"),
        Index("ix_recordings_conversation", "conversation_id"),
    )

    id: Mapped[int] = mapped_column(_serial(), primary_key=True, autoincrement=True)
    public_id: Mapped[str] = mapped_column(String(36), nullable=False, unique=True)
    account: Mapped[str] = mapped_column(String(128), nullable=False)
    project_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    external_id: Mapped[str | None] = mapped_column(String(255), nullable=True)
    operator_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    called_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    language: Mapped[str] = mapped_column(String(16), nullable=False)
    recording_source: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # the stereo channel the agent speaks on when the source knows it (a phone call's operator leg); None: the
    # CALLSCOPE_AGENT_CHANNEL convention
    agent_channel: Mapped[int | None] = mapped_column(Integer, nullable=True)
    status: Mapped[str] = mapped_column(String(16), nullable=False, default=RecordingStatus.PENDING.value)
    status_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    stage: Mapped[str | None] = mapped_column(String(32), nullable=True)
    progress: Mapped[int] = mapped_column(Integer, nullable=False, default=0)  # percent
    duration_ms: Mapped[int] = mapped_column(BigInteger, nullable=False)
    audio_format: Mapped[str] = mapped_column(String(8), nullable=False)
    size_bytes: Mapped[int] = mapped_column(BigInteger, nullable=False)
    original_filename: Mapped[str | None] = mapped_column(String(255), nullable=True)
    blob_key: Mapped[str | None] = mapped_column(String(512), nullable=True)
    # Audio redaction (a project's redaction.audio): "pending" while blob_key holds audio not yet redacted, which is
    # never served; "done" once blob_key is the redacted copy; None where the project redacted no audio.
    audio_redaction: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # The unredacted audio, kept only with CALLSCOPE_REDACTION_KEEP_ORIGINAL_AUDIO: never served, re-analysis reads it.
    original_blob_key: Mapped[str | None] = mapped_column(String(512), nullable=True)
    dialogues_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    goals_evaluated: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    pauses_detected: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    processing_restricted: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    # Mean goal score (0..1) the analysis writes once goals are evaluated; the quality baseline reads it.
    quality_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    # The figures of its analysis the trends add up (callscope/figures.py), written with each analysis; None before
    # the first, and a recording counts in the trends once it has them (the list's `analysed` filter). An analysis
    # stored before they were added got them from its stored results when the catalog was migrated, all but the
    # emotion (only its transcript, a blob, has it): that one comes with the call's next analysis.
    pause_compliance: Mapped[float | None] = mapped_column(Float, nullable=True)
    agent_talk_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    customer_talk_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    emotion: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # The digest of the trackers of its project the call was matched against (callscope/services/trackers.py); None:
    # none (a call never matched reads the same). A call whose digest is not its project's is matched again by the
    # tracker pass (callscope/catalog/tracker_stamps.py).
    trackers_digest: Mapped[str | None] = mapped_column(String(32), nullable=True)
    conversation_id: Mapped[str] = mapped_column(String(36), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class RecordingTag(Base):
    __tablename__ = "recording_tags"
    __table_args__ = (Index("ix_recording_tags_tag_id", "tag_id"),)

    recording_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("recordings.id", ondelete="CASCADE"), primary_key=True)
    tag_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)


class RecordingGoal(Base):
    """Whether a recording's current analysis found each goal of its project met (the trends' goal attainment).

    One row per goal (callscope.catalog.trends.record_goals replaces them all at once); `met` is in the key so that
    the trends read a recording's goals from the key alone, which SQLite keeps as the table itself (no rowid)."""

    __tablename__ = "recording_goals"
    __table_args__ = ({"sqlite_with_rowid": False},)

    recording_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("recordings.id", ondelete="CASCADE"), primary_key=True)
    goal_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    met: Mapped[bool] = mapped_column(Boolean, primary_key=True)


class SearchSegment(Base):
    """One transcript segment of an analysed call, as search finds it (callscope/catalog/search.py): written with the
    call's analysis, replaced by its re-analysis, deleted with the recording (the foreign key cascades).

    Each engine indexes `terms` its own way, beside this table and outside these models (migration 0010, and
    :func:`modelled`): SQLite an FTS5 table its triggers keep, PostgreSQL a tsvector column a trigger fills (with a
    GIN index per language). Rows are inserted and deleted, never updated."""

    __tablename__ = "search_segments"

    id: Mapped[int] = mapped_column(_serial(), primary_key=True, autoincrement=True)
    recording_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("recordings.id", ondelete="CASCADE"), nullable=False, index=True)
    position: Mapped[int] = mapped_column(Integer, nullable=False)  # the segment's dialogue id
    start_ms: Mapped[int] = mapped_column(BigInteger, nullable=False)
    end_ms: Mapped[int] = mapped_column(BigInteger, nullable=False)
    speaker: Mapped[str] = mapped_column(String(64), nullable=False)
    role: Mapped[str] = mapped_column(String(16), nullable=False)
    operator_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    emotion: Mapped[str | None] = mapped_column(String(16), nullable=True)
    config: Mapped[str] = mapped_column(String(16), nullable=False)  # the stemmer of the call's language
    text: Mapped[str] = mapped_column(Text, nullable=False)  # as stored in the transcript (redacted where it was)
    terms: Mapped[str] = mapped_column(Text, nullable=False)  # the words as the engine indexes them


class SearchVectors(Base):
    """The vectors of a call's search segments, for meaning search (callscope/search/vectors.py): 8-bit codes, one row
    of them per segment in the order of the segments' ids; written and deleted with them (migration 0012)."""

    __tablename__ = "search_vectors"

    recording_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("recordings.id", ondelete="CASCADE"), primary_key=True)
    codes: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)


class RecordingCategory(Base):
    """A category the current analysis of a recording found (search's category filter)."""

    __tablename__ = "recording_categories"
    __table_args__ = ({"sqlite_with_rowid": False},)

    recording_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("recordings.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)


class RecordingTracker(Base):
    """A segment of a recording's current analysis that matched one of its project's trackers (saved searches:
    callscope/catalog/trackers.py), by the tracker's name; replaced whenever the call is matched again, deleted with
    the recording (the foreign key cascades)."""

    __tablename__ = "recording_trackers"
    __table_args__ = ({"sqlite_with_rowid": False},)

    recording_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("recordings.id", ondelete="CASCADE"), primary_key=True)
    tracker: Mapped[str] = mapped_column(String(100), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)  # the segment's dialogue id
    start_ms: Mapped[int] = mapped_column(BigInteger, nullable=False)
    end_ms: Mapped[int] = mapped_column(BigInteger, nullable=False)


class LiveTranscript(Base):
    """What live recognition heard of a recording that was a live call (its finals, callscope/live/transcript.py),
    kept beside its analysis for comparison; written once, when the call's audio is stored, deleted with the
    recording (the foreign key cascades)."""

    __tablename__ = "live_transcripts"

    recording_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("recordings.id", ondelete="CASCADE"), primary_key=True)
    document: Mapped[str] = mapped_column(Text, nullable=False)  # JSON


class TrackerSet(Base):
    """The trackers (their digest; "" for none) every analysed call of a project has been matched against: the
    tracker pass skips a project whose digest is still this one, and looks for calls to match again when it is not
    (or when the project has no row: not known)."""

    __tablename__ = "tracker_sets"

    account: Mapped[str] = mapped_column(String(128), primary_key=True)
    project_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    digest: Mapped[str] = mapped_column(String(32), nullable=False)


# The full-text structures migration 0010 makes beside search_segments, one engine's each, which no model describes:
# SQLite's FTS5 table and the tables FTS5 keeps it in; PostgreSQL's tsvector column and its GIN index per language.
ENGINE_SEARCH_TABLES = frozenset({"search_fts", "search_fts_data", "search_fts_idx", "search_fts_docsize",
                                  "search_fts_config"})
ENGINE_SEARCH_INDEXES = "ix_search_segments_tsv_"


def modelled(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Alembic's `include_object`: every object of the database but those full-text structures."""
    engine_owned = name in ENGINE_SEARCH_TABLES or (type_ == "column" and name == "tsv") or (
        type_ == "index" and (name or "").startswith(ENGINE_SEARCH_INDEXES))
    return not (reflected and compare_to is None and engine_owned)


class TrendDay(Base):
    """The trends' sums (callscope/catalog/trends.py): of the analysed recordings (those with figures) of an account
    added on one UTC day, per project (0: every project), operator (0: every operator, those of no operator included)
    and prevailing emotion ("": none known), so that a trend reads a few rows per day however many calls there were.
    Kept in the transactions that change what they add up: an analysis stored, a recording moved or deleted."""

    __tablename__ = "trend_days"

    account: Mapped[str] = mapped_column(String(128), primary_key=True)
    project_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    operator_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    emotion: Mapped[str] = mapped_column(String(16), primary_key=True)
    calls: Mapped[int] = mapped_column(BigInteger, nullable=False)
    pause_compliance_sum: Mapped[float] = mapped_column(Float, nullable=False)
    agent_talk_ms: Mapped[int] = mapped_column(BigInteger, nullable=False)
    customer_talk_ms: Mapped[int] = mapped_column(BigInteger, nullable=False)


class TrendGoalDay(Base):
    """Of a project's goal, the analysed recordings added on one UTC day that evaluated it and met it, per operator
    (0: every operator): the trends' goal attainment, kept with :class:`TrendDay`."""

    __tablename__ = "trend_goal_days"

    account: Mapped[str] = mapped_column(String(128), primary_key=True)
    operator_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    project_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    goal_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    calls: Mapped[int] = mapped_column(BigInteger, nullable=False)
    met: Mapped[int] = mapped_column(BigInteger, nullable=False)


class TrendTrackerDay(Base):
    """Of a project's tracker, the analysed recordings added on one UTC day that matched it, per operator (0: every
    operator): the trends' tracker charts, kept with :class:`TrendDay`."""

    __tablename__ = "trend_tracker_days"

    account: Mapped[str] = mapped_column(String(128), primary_key=True)
    operator_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    project_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    tracker: Mapped[str] = mapped_column(String(100), primary_key=True)
    calls: Mapped[int] = mapped_column(BigInteger, nullable=False)


class TrendScoreDay(Base):
    """Of a QA form's own score (kind "total", name ""), a section's or a question's (callscope/catalog/scorecards.py),
    the analysed recordings added on one UTC day that were scored on it, per project and operator (0: every one; -1:
    the calls of no operator, the agents' figure's own row): the trends' scorecard figures, kept with
    :class:`TrendDay` and in each transaction that writes a call's scores (an analysis, a review, a rescoring)."""

    __tablename__ = "trend_score_days"

    account: Mapped[str] = mapped_column(String(128), primary_key=True)
    operator_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    project_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    scorecard_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(400), primary_key=True)
    calls: Mapped[int] = mapped_column(BigInteger, nullable=False)  # scored on it
    scored: Mapped[int] = mapped_column(BigInteger, nullable=False)  # of them, with a score (not n/a)
    score_sum: Mapped[float] = mapped_column(Float, nullable=False)  # of those scores, percent
    reviewed: Mapped[int] = mapped_column(BigInteger, nullable=False)  # a question's answers a reviewer saw
    changed: Mapped[int] = mapped_column(BigInteger, nullable=False)  # of them, those a reviewer changed


class Job(Base):
    """Work for the analysis dispatcher, written in the same transaction as its recording."""

    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_state_available_at", "state", "available_at"),)

    id: Mapped[int] = mapped_column(_serial(), primary_key=True, autoincrement=True)
    recording_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("recordings.id", ondelete="CASCADE"), nullable=False, index=True)
    kind: Mapped[str] = mapped_column(String(32), nullable=False)
    state: Mapped[str] = mapped_column(String(16), nullable=False)  # queued, running, done, failed
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    available_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    lease_owner: Mapped[str | None] = mapped_column(String(128), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    # The W3C traceparent of the span that queued the job (callscope/tracing.py): whichever dispatcher runs it
    # continues that trace. None where tracing was off.
    trace_parent: Mapped[str | None] = mapped_column(String(128), nullable=True)


# At most one queued or running job per recording, whoever enqueues (an upload, a re-analysis, a retry).
Index("uq_jobs_active_recording", Job.recording_id, unique=True,
      sqlite_where=Job.state.in_(("queued", "running")), postgresql_where=Job.state.in_(("queued", "running")))


class Analysis(Base):
    """The current analysis of a recording, replaced as a whole by a re-analysis.

    The transcript (large: every word timed) is a JSON document in the blob store under ``transcript_key``
    (a new key per version, so a replacement is one row update); results and summary live here.
    """

    __tablename__ = "analyses"

    recording_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("recordings.id", ondelete="CASCADE"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    transcript_key: Mapped[str] = mapped_column(String(512), nullable=False)
    results: Mapped[str] = mapped_column(Text, nullable=False)  # JSON
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)
    language: Mapped[str | None] = mapped_column(String(16), nullable=True)
    completed_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class WebhookEvent(Base):
    """The webhook outbox: one row per event, written in the transaction that caused it, delivered later."""

    __tablename__ = "webhook_events"
    __table_args__ = (Index("ix_webhook_events_state_next_attempt_at", "state", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(_serial(), primary_key=True, autoincrement=True)
    # The Standard Webhooks `webhook-id`: the same on every retry, so receivers can deduplicate.
    message_id: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    account: Mapped[str] = mapped_column(String(128), nullable=False)
    project_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    recording_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True, index=True)
    event_type: Mapped[str] = mapped_column(String(64), nullable=False)
    url: Mapped[str] = mapped_column(Text, nullable=False)
    payload: Mapped[str] = mapped_column(Text, nullable=False)  # JSON, the exact body sent
    state: Mapped[str] = mapped_column(String(16), nullable=False)  # pending, delivered, failed, disabled
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    lease_owner: Mapped[str | None] = mapped_column(String(128), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The W3C traceparent of the span that wrote the event (callscope/tracing.py): each delivery attempt, by whichever
    # process, continues that trace. None where tracing was off.
    trace_parent: Mapped[str | None] = mapped_column(String(128), nullable=True)


class WebhookAttempt(Base):
    """One delivery attempt of a webhook event, kept so users can see what their endpoint answered."""

    __tablename__ = "webhook_attempts"

    id: Mapped[int] = mapped_column(_serial(), primary_key=True, autoincrement=True)
    event_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("webhook_events.id", ondelete="CASCADE"), nullable=False, index=True)
    attempt: Mapped[int] = mapped_column(Integer, nullable=False)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    duration_ms: Mapped[int] = mapped_column(Integer, nullable=False)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    response_excerpt: Mapped[str | None] = mapped_column(Text, nullable=True)


class WebhookEndpoint(Base):
    """An endpoint that answered 410 Gone is disabled here until a user enables it again (or changes the URL)."""

    __tablename__ = "webhook_endpoints"
    __table_args__ = (UniqueConstraint("account", "project_id", "url", name="uq_webhook_endpoints_account"),)

    id: Mapped[int] = mapped_column(_serial(), primary_key=True, autoincrement=True)
    account: Mapped[str] = mapped_column(String(128), nullable=False)
    project_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    url: Mapped[str] = mapped_column(String(2048), nullable=False)
    disabled_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    disabled_reason: Mapped[str | None] = mapped_column(Text, nullable=True)


class Voiceprint(Base):
    """An operator's enrolled voice: the mean speaker embedding of at least 10 s of their speech."""

    __tablename__ = "voiceprints"

    account: Mapped[str] = mapped_column(String(128), primary_key=True)
    operator_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    model: Mapped[str] = mapped_column(String(128), nullable=False)
    embedding: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)  # float32 array, L2-normalised
    speech_ms: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class Share(Base):
    """Read-only access to a conversation (every recording of it) for one member or for everyone."""

    __tablename__ = "shares"
    __table_args__ = (
        UniqueConstraint("conversation_id", "member_email", name="uq_shares_conversation_id_member_email"),
        Index("ix_shares_conversation_id", "conversation_id"),
    )

    id: Mapped[int] = mapped_column(_serial(), primary_key=True, autoincrement=True)
    account: Mapped[str] = mapped_column(String(128), nullable=False)
    conversation_id: Mapped[str] = mapped_column(String(36), nullable=False)
    everyone: Mapped[bool] = mapped_column(Boolean, nullable=False)
    # "*" for the everyone share, so the unique constraint also allows one everyone share per conversation.
    member_email: Mapped[str] = mapped_column(String(320), nullable=False)
    shared_by_type: Mapped[str] = mapped_column(String(16), nullable=False)
    shared_by_name: Mapped[str] = mapped_column(String(255), nullable=False)
    shared_by_ref: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class SignInLink(Base):
    """A one-time sign-in link emailed to a member: only its token's SHA-256 is kept, never the token."""

    __tablename__ = "sign_in_links"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    email: Mapped[str] = mapped_column(String(320), nullable=False)
    next_path: Mapped[str] = mapped_column(String(2048), nullable=False)  # the page the person asked for
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False, index=True)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class MemberSession(Base):
    """A signed-in browser of a person (an email: a member of one or more accounts); the cookie holds the token,
    the catalog its SHA-256, so sign-out and expiry end it on every API replica at once."""

    __tablename__ = "member_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    email: Mapped[str] = mapped_column(String(320), nullable=False, index=True)
    account: Mapped[str | None] = mapped_column(String(128), nullable=True)  # the account the person chose
    csrf_token: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False, index=True)


class MemberSignIn(Base):
    """When a person first and last signed in (by email; any of their accounts): Settings tells an invited member,
    who never has, from an active one. Sessions expire and go; this row stays."""

    __tablename__ = "member_sign_ins"

    email: Mapped[str] = mapped_column(String(320), primary_key=True)
    first_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    last_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class RecordingScorecard(Base):
    """A recording's score on one QA form (a Scorecard, by id) as its answers stand (the automatic ones of its current
    analysis, with reviewers' overrides), and who marked it reviewed: the review queue reads it. Written with each
    analysis and each review; deleted with the recording (the foreign key cascades). The answers themselves are in
    the analysis document (automatic) and scorecard_answer_changes (overrides)."""

    __tablename__ = "recording_scorecards"
    __table_args__ = (Index("ix_recording_scorecards_scorecard", "scorecard_id", "score"),)

    recording_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("recordings.id", ondelete="CASCADE"), primary_key=True)
    scorecard_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)  # percent; None: no question applied
    auto_failed: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    # the form's version the call was scored with (None: scored before 0018): an older one is rescored
    version: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reviewed_by: Mapped[str | None] = mapped_column(String(400), nullable=True)
    reviewed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class ScorecardAnswerChange(Base):
    """One reviewer's change of one answer of a recording's scorecard: who, when, from what (the automatic answer or
    an earlier override), to what, and why. The latest change of a question is its override; the automatic answer
    stays in the analysis. Deleted with the recording (the foreign key cascades)."""

    __tablename__ = "scorecard_answer_changes"
    __table_args__ = (Index("ix_scorecard_answer_changes_recording", "recording_id", "scorecard_id", "id"),)

    id: Mapped[int] = mapped_column(_serial(), primary_key=True, autoincrement=True)
    recording_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("recordings.id", ondelete="CASCADE"), nullable=False)
    scorecard_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    question_id: Mapped[str] = mapped_column(String(100), nullable=False)
    from_answer: Mapped[str] = mapped_column(Text, nullable=False)  # JSON: yes, no, n/a, an option, a number, null
    to_answer: Mapped[str] = mapped_column(Text, nullable=False)  # JSON
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    changed_by: Mapped[str] = mapped_column(String(400), nullable=False)
    changed_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class RecordingScorecardPart(Base):
    """A recording's score on one section or question of a QA form as its answers stand (with RecordingScorecard, whose
    rows it follows: written with each analysis and each review), for the team's figures on Trends: a question's
    score is its points over its full points (null: n/a or unanswered); `changed`: a reviewer's answer differs from
    the automatic one. Deleted with the recording (the foreign key cascades)."""

    __tablename__ = "recording_scorecard_parts"

    recording_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("recordings.id", ondelete="CASCADE"), primary_key=True)
    scorecard_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)  # "section" or "question"
    name: Mapped[str] = mapped_column(String(400), primary_key=True)  # a section's name, a question's id
    score: Mapped[float | None] = mapped_column(Float, nullable=True)  # percent
    changed: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)


class RecordingNote(Base):
    """A note a member (or an API key) wrote on a recording: several per call, each with its author and time; deleted
    with the recording (the foreign key cascades)."""

    __tablename__ = "recording_notes"
    __table_args__ = (Index("ix_recording_notes_recording", "recording_id", "id"),)

    id: Mapped[int] = mapped_column(_serial(), primary_key=True, autoincrement=True)
    recording_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("recordings.id", ondelete="CASCADE"), nullable=False)
    author_type: Mapped[str] = mapped_column(String(16), nullable=False)  # "member" or "api_key", as shares say
    # who may delete it as its author: a member's email, or an API key's uid
    author_ref: Mapped[str] = mapped_column(String(320), nullable=False)
    author_name: Mapped[str] = mapped_column(String(255), nullable=False)  # as written, kept if the author goes
    text: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
