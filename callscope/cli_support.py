"""What every `callscope` command module shares (callscope/cli.py and the command groups it adds): the settings
with logging configured, async commands with one-line errors, the --account option, ISO 8601 times."""

from __future__ import annotations

import asyncio
import functools
from datetime import UTC, datetime

import click
from pydantic import ValidationError

from callscope import logs
from callscope.config import Settings
from callscope.errors import CallscopeError

ACCOUNT_OPTION = click.option("--account", default="default", show_default=True, help="Account (tenant) name.")


def load_settings() -> Settings:
    settings = Settings()
    logs.configure(settings)
    return settings


def run_async(fn):
    """Run an async command; typed errors become a one-line message and exit code 1, not a traceback."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return asyncio.run(fn(*args, **kwargs))
        except CallscopeError as exc:
            # ObjectNotFound's message is the API's bare "Resource not found"; its detail names the object.
            raise click.ClickException(getattr(exc, "detail", None) or exc.message) from None
        except ValidationError as exc:  # one line, not pydantic's multi-line dump
            raise click.ClickException("; ".join(
                f"{'.'.join(map(str, e['loc'])) or exc.title}: {e['msg']}" for e in exc.errors())) from None
    return wrapper


def parse_time(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO 8601 timestamp") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
