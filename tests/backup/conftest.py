"""The fixtures of tests/backup/world.py: empty PostgreSQL databases made on demand."""

from tests.backup.world import databases  # noqa: F401 - a fixture
