"""Constants shared by the operator tests (a module of its own: `conftest` is not importable by name)."""

from datetime import UTC, datetime

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
ACCOUNT = "acme"
