"""`callscope backup FILE` and `callscope restore FILE` (callscope/backup/): the whole service into one archive and
back into an empty one. Bars on stderr for the long steps when it is a terminal; the result alone on stdout."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from sqlalchemy.exc import SQLAlchemyError

from callscope.backup.progress import Progress
from callscope.backup.restore import restore_backup
from callscope.backup.take import take_backup
from callscope.cli.support import load_settings, run_async
from callscope.errors import one_line


class Bars(Progress):
    """click's progress bar for each step, on a terminal only (a log or a pipe gets the result lines alone)."""

    def __init__(self) -> None:
        self._bar: Any = None  # click's ProgressBar, entered by hand: one per step
        self._shown = sys.stderr.isatty()

    def start(self, label: str, total: int) -> None:
        self.finish()
        if self._shown and total:
            self._bar = click.progressbar(length=total, label=label, file=sys.stderr)
            self._bar.__enter__()

    def advance(self, units: int) -> None:
        if self._bar is not None:
            self._bar.update(units)

    def finish(self) -> None:
        if self._bar is not None:
            bar, self._bar = self._bar, None
            bar.__exit__(None, None, None)


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)


def _catalog_error(exc: SQLAlchemyError) -> click.ClickException:
    return click.ClickException(f"the catalog database answered: {one_line(getattr(exc, 'orig', None) or exc)}")


@click.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, writable=True, path_type=Path))
@click.option("--no-objects", is_flag=True,
              help="Leave the audio and results objects out (an object store with its own replication); their "
                   "names are listed in the archive, and restore checks that the store has them.")
def backup(file: Path, no_objects: bool) -> None:
    """Write one consistent archive of the service to FILE: the catalog (portable rows), the custom resources
    (YAML), the embedded Secrets and the objects the catalog names. Safe while the service runs."""

    @run_async
    async def run() -> None:
        settings = load_settings()
        if not file.parent.is_dir():
            raise click.ClickException(f"{file.parent}: no such directory")
        try:
            summary = await take_backup(settings, file, objects=not no_objects, progress=Bars())
        except SQLAlchemyError as exc:
            raise _catalog_error(exc) from None
        objects = (f"{summary.objects} objects ({_size(summary.object_bytes)})" if summary.objects_included
                   else f"{summary.objects} objects named, not copied (--no-objects)")
        click.echo(f"backup written to {file} ({_size(summary.size)}): {summary.dialect} catalog at "
                   f"{summary.revision}, {sum(summary.rows.values()):,} rows in {len(summary.rows)} tables "
                   f"({summary.rows.get('recordings', 0)} recordings); {summary.resources} resources, "
                   f"{summary.secrets} secrets; {objects}")
    run()


@click.command("restore")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def restore(file: Path) -> None:
    """Rebuild the service from the archive FILE into an empty data directory or database (CALLSCOPE_DATA_DIR,
    CALLSCOPE_DATABASE_URL, the configured object store), migrate its catalog to this release's schema, then check
    that every completed recording has its audio and results and that nothing names a missing object."""

    @run_async
    async def run() -> None:
        settings = load_settings()
        try:
            s = await restore_backup(settings, file, progress=Bars())
        except SQLAlchemyError as exc:
            raise _catalog_error(exc) from None
        migrated = (f"at {s.revision}" if s.revision == s.source_revision
                    else f"migrated from {s.source_revision} to {s.revision}")
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(s.resources.items()))
        objects = (f"{s.objects} objects ({_size(s.object_bytes)})" if s.objects_included
                   else f"{s.objects} objects found in the object store (the archive holds none)")
        click.echo(f"restored {file} (taken by Callscope {s.archive_version} from a {s.source_dialect} catalog)")
        click.echo(f"catalog: {s.dialect}, {migrated}; {s.rows:,} rows in {s.tables} tables")
        click.echo(f"recordings: {s.recordings} ({s.completed} completed), {s.analyses} analyses, "
                   f"{s.webhook_events} webhook events with {s.webhook_attempts} delivery attempts")
        click.echo(f"resources: {sum(s.resources.values())} ({kinds or 'none'}); secrets: {s.secrets}; {objects}")
        click.echo("consistent: every completed recording has its audio and results; no object is missing")
    run()


def register(main: click.Group) -> None:
    main.add_command(backup)
    main.add_command(restore)
