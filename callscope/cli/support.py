"""What every `callscope` command module shares (callscope/cli/root.py and the command groups beside it): the settings
with logging configured, async commands with one-line errors, the parameter types that keep bad input at the edge
(text, the --account option, catalog ids and counts, YAML files), ISO 8601 times."""

from __future__ import annotations

import asyncio
import functools
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import click
import yaml
from pydantic import ValidationError

from callscope import logs, tracing
from callscope.catalog.tables import BIGINT_MAX
from callscope.config import Settings
from callscope.errors import CallscopeError
from callscope.services.accounts import ACCOUNT_NAME
from callscope.validation import PATTERN_PROBLEMS

CATALOG_ID = click.IntRange(1, BIGINT_MAX)  # an id of the catalog's: a larger integer would overflow its column
COUNT = click.IntRange(1, BIGINT_MAX)  # --limit: a SQL LIMIT, never negative (PostgreSQL refuses one)


class Text(click.ParamType):
    """A string argument as a database, a URL or a path can hold it: no NUL, and UTF-8 (an argument of other bytes
    reaches Python as surrogate escapes, which nothing downstream can encode)."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = click.STRING.convert(value, param, ctx)
        if "\x00" in text:
            self.fail("must not contain NUL characters", param, ctx)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            self.fail("is not UTF-8 text", param, ctx)
        return text


TEXT = Text()


def checked_text(command: click.Command) -> None:
    """Give every plain string parameter of `command` and of its subcommands the type `TEXT` (done once, on the
    `callscope` group: no command can forget it)."""
    for param in command.params:
        if param.type is click.STRING:
            param.type = TEXT
    for subcommand in getattr(command, "commands", {}).values():
        checked_text(subcommand)


def _account(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not ACCOUNT_NAME.fullmatch(value):
        raise click.BadParameter("must be lowercase letters, digits and '-' (a Kubernetes namespace name)")
    return value


ACCOUNT_OPTION = click.option("--account", default="default", show_default=True, callback=_account,
                              help="Account (tenant) name.")


YAML_MAX_BYTES = 4 * 1024 * 1024
"""The largest YAML file a command reads (`callscope apply -f`, `analyze --project`): PyYAML parses about half a
megabyte a second, so a larger file would keep the command busy for minutes before saying anything, and no object
is that large (the Kubernetes API stores at most 1.5 MiB per object)."""


def load_yaml(stream: IO[bytes], source: str) -> list[Any]:
    """The documents of a YAML file given as bytes: PyYAML decodes them (UTF-8, or UTF-16 by its byte order mark), so
    a file of other bytes is a one-line error like malformed YAML, never a traceback. A file (or stdin) larger than
    YAML_MAX_BYTES is refused before any of it is parsed."""
    data = stream.read(YAML_MAX_BYTES + 1)
    if len(data) > YAML_MAX_BYTES:
        limit = f"{YAML_MAX_BYTES >> 20} MiB" if YAML_MAX_BYTES % (1 << 20) == 0 else f"{YAML_MAX_BYTES:,} bytes"
        raise click.ClickException(f"{source}: larger than {limit}, the most a YAML file may be; split it into "
                                   "several files")
    try:
        return list(yaml.safe_load_all(data))
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
    except RecursionError:  # PyYAML composes nested collections recursively
        problem = "collections nested too deeply"
    raise click.ClickException(f"{source}: invalid YAML: {problem}")


def load_settings(service: bool = False, data: bool = True) -> Settings:
    """The settings, with logging configured: a service (serve, controller) logs at CALLSCOPE_LOG_LEVEL; any other
    command prints its result alone, logging warnings and errors only, unless `callscope --verbose` or
    CALLSCOPE_LOG_LEVEL asks for more. The embedded data directory, unless CALLSCOPE_DATA_DIR names it, is the
    nearest `.callscope` here or in a folder above, as git finds its repository; where there is none, a new one is
    made here, and the command says so. `data`: whether the command uses the data directory at all (`analyze`
    does not). A service sends traces where an endpoint is configured (callscope/tracing.py)."""
    settings = Settings()
    if data and "data_dir" not in settings.model_fields_set and settings.store == "sqlite":
        settings = settings.model_copy(update={"data_dir": _nearest_data_dir(settings.data_dir)})
    verbose = service or "log_level" in settings.model_fields_set or _root_option("verbose")
    logs.configure(settings if verbose else settings.model_copy(update={"log_level": "WARNING"}))
    if service:
        tracing.configure(settings)
    return settings


def _root_option(name: str) -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.find_root().params.get(name))


def _nearest_data_dir(default: Path) -> Path:
    """The nearest folder named `default` (relative: `.callscope`) from here up; a new one here, said on stderr."""
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / default).is_dir():
            return folder / default
    click.echo(f"callscope: no {default} data directory here or above: using a new one, {here / default} "
               "(CALLSCOPE_DATA_DIR names another)", err=True)
    return here / default


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
                f"{'.'.join(map(str, e['loc'])) or exc.title}: {_problem(e)}" for e in exc.errors())) from None
    return wrapper


def _problem(error: Any) -> str:
    """A missed pattern in words (`email is not an email address such as ...`), not the pattern itself."""
    pattern = (error.get("ctx") or {}).get("pattern") if error["type"] == "string_pattern_mismatch" else None
    return PATTERN_PROBLEMS.get(pattern, error["msg"]) if pattern else error["msg"]


def parse_time(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO 8601 timestamp") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
