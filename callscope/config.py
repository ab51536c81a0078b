"""Settings read from CALLSCOPE_* environment variables (see the table in README.md)."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CALLSCOPE_", extra="ignore")

    data_dir: Path = Field(Path(".callscope"), description="Embedded data directory (SQLite files, blobs, outbox).")
    database_url: str | None = Field(
        None, description="SQLAlchemy URL of the catalog database; default: SQLite file in the data directory."
    )
    store: Literal["sqlite"] = Field("sqlite", description="Back end of the configuration objects.")
    store_poll_interval: float = Field(0.25, gt=0, description="Seconds between change polls of the SQLite store.")

    host: str = "127.0.0.1"
    port: int = 8080
    public_base_url: str = Field("http://127.0.0.1:8080", description="Base URL users reach the service at.")
    log_level: str = "INFO"
    log_format: Literal["json", "console"] = "json"

    api_key_prefix: str = Field("cs_live_", description="Fixed prefix of every API key.")
    usage_flush_interval: float = Field(5.0, gt=0, description="Seconds between flushes of buffered key usage.")

    rate_limit_enabled: bool = Field(False, description="Enforce per-key rate limits (limits are set on each key).")
    rate_limit_default_per_minute: int | None = Field(
        None, ge=1, description="Limit for keys that set none; unset means unlimited."
    )
    rate_limit_backend: Literal["database", "redis"] = "database"
    redis_url: str = "redis://127.0.0.1:6379/0"

    virtual_number_purchase_paused: bool = Field(
        True, description="Answer number purchases with 503 virtual_number_purchase_paused."
    )
    number_provider: Literal["sandbox", "twilio"] = "sandbox"
    twilio_account_sid: str | None = None
    twilio_auth_token: str | None = None
    twilio_base_url: str = "https://api.twilio.com"
    twilio_bundles: dict[int, str] = Field(
        default_factory=dict,
        description='Requirement group id → Twilio regulatory BundleSid, JSON (e.g. {"1": "BU..."}).',
    )

    default_phone_region: str = Field("US", description="Region assumed for phone numbers given without +country.")
    max_json_body_bytes: int = Field(1_048_576, ge=1024, description="Largest JSON request body accepted.")
    upload_limits_mb: dict[str, int] = Field(
        default_factory=lambda: {"mp3": 100, "m4a": 100, "ogg": 100, "webm": 100, "wav": 500, "flac": 500},
        description="Largest upload per audio format, in MB (JSON object).",
    )
    default_audio_retention_days: int = Field(90, ge=1, description="Audio retention when a project sets none.")

    @cached_property
    def catalog_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'catalog.db').resolve()}"

    @cached_property
    def store_path(self) -> Path:
        return (self.data_dir / "store.db").resolve()

    def ensure_data_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
