"""SQLAlchemy models of the catalog database.

Every change here needs an Alembic revision in ``migrations/versions`` (tests/catalog/test_migrations.py
fails on drift). Timestamps are stored in UTC and always read back timezone-aware (:class:`UTCDateTime`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import BigInteger, Boolean, DateTime, Index, Integer, MetaData, String, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

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
                value = value.replace(tzinfo=timezone.utc)
            value = value.astimezone(timezone.utc)
            if dialect.name == "sqlite":
                value = value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if isinstance(value, datetime):
            value = value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
        return value


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class IdSequence(Base):
    """One row per kind of object with integer ids; see callscope.catalog.ids.allocate_id."""

    __tablename__ = "id_sequences"

    kind: Mapped[str] = mapped_column(String(64), primary_key=True)
    last_value: Mapped[int] = mapped_column(BigInteger, nullable=False)


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


class RateLimitWindow(Base):
    """Fixed-window request counter of a rate-limit bucket; window_start is epoch seconds."""

    __tablename__ = "rate_limit_windows"
    __table_args__ = (Index("ix_rate_limit_windows_window_start", "window_start"),)  # cleanup of old windows

    bucket: Mapped[str] = mapped_column(String(255), primary_key=True)
    window_start: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    count: Mapped[int] = mapped_column(Integer, nullable=False)


class Call(Base):
    """A call to or from a virtual number (number stats and recent calls read these)."""

    __tablename__ = "calls"
    __table_args__ = (Index("ix_calls_virtual_number_id_created_at", "virtual_number_id", "created_at"),)

    # BIGINT identity on PostgreSQL; SQLite autoincrements only an INTEGER PRIMARY KEY.
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
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
