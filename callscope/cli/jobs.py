"""`callscope jobs list`, `callscope reanalyze` and `callscope reindex`: the analysis job queue and what the
analyses stored, from the command line."""

from __future__ import annotations

import json

import click

from callscope.catalog import jobs
from callscope.catalog import recordings as recording_rows
from callscope.cli.support import ACCOUNT_OPTION, CATALOG_ID, COUNT, load_settings, run_async
from callscope.runtime import opened
from callscope.services import analyses, search_index, trackers
from callscope.statuses import FINISHED, RecordingStatus


@click.command("reanalyze")
@click.argument("recordings", nargs=-1)
@ACCOUNT_OPTION
@click.option("--project", "project_id", type=CATALOG_ID, default=None, help="Every recording of this project id.")
@click.option("--status", "statuses", multiple=True, type=click.Choice([s.value for s in FINISHED]),
              help="With --project: recordings in this status (repeatable); default completed.")
def reanalyze(recordings: tuple[str, ...], account: str, project_id: int | None, statuses: tuple[str, ...]) -> None:
    """Analyse RECORDINGS (public or legacy ids) again, or every recording of --project.

    Only completed or failed recordings are queued. A completed recording stays completed with its old results
    (stage "reanalyzing") until the new analysis replaces them in one step.
    """
    if bool(recordings) == (project_id is not None):
        raise click.UsageError("give either RECORDING ids or --project")

    @run_async
    async def run() -> None:
        async with opened(load_settings()) as rt:
            if project_id is not None:
                queued = await analyses.reanalyze_project(rt.ctx, account, project_id,
                                                          statuses or (RecordingStatus.COMPLETED,))
                click.echo(f"{len(queued)} recording(s) of project {project_id} queued for re-analysis")
                return
            ids, missing = await rt.catalog.read(recording_rows.ids_of, account, recordings)
            queued = await analyses.reanalyze(rt.ctx, ids)
            click.echo(f"{len(queued)} recording(s) queued for re-analysis")
            skipped = len(ids) - len(queued)
            if skipped:
                click.echo(f"{skipped} skipped: not completed or failed yet, or already queued", err=True)
            if missing:
                raise click.ClickException(f"not found in account {account}: {', '.join(missing)}")
    run()


@click.command("reindex")
def reindex() -> None:
    """Make searchable the analysed calls that are not yet (analysed before search existed), from their stored
    transcripts and results, then match every call not matched against its project's current trackers: nothing is
    analysed again. Every account; safe to repeat."""

    @run_async
    async def run() -> None:
        async with opened(load_settings()) as rt:
            indexed = await search_index.reindex(rt.ctx)
            matched = await trackers.match_projects(rt.ctx)
        click.echo(f"{indexed} recording(s) indexed for search")
        click.echo(f"{matched} recording(s) matched against their project's trackers")
    run()


@click.group("jobs")
def jobs_group() -> None:
    """The analysis job queue."""


@jobs_group.command("list")
@ACCOUNT_OPTION
@click.option("--state", "states", multiple=True, type=click.Choice(["queued", "running", "done", "failed"]),
              help="Only jobs in this state (repeatable).")
@click.option("--limit", type=COUNT, default=50, show_default=True, help="Newest jobs first, at most this many.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def jobs_list(account: str, states: tuple[str, ...], limit: int, output: str) -> None:
    """Analysis jobs: state, attempts, lease owner and the last error."""

    @run_async
    async def run() -> None:
        async with opened(load_settings()) as rt:
            rows = await rt.catalog.read(jobs.of_account, account, states, limit)
        if output == "json":
            click.echo(json.dumps([{
                "id": j.id, "recording": public_id, "kind": j.kind, "state": j.state, "attempts": j.attempts,
                "available_at": j.available_at.isoformat(), "lease_owner": j.lease_owner,
                "lease_expires_at": j.lease_expires_at.isoformat() if j.lease_expires_at else None,
                "finished_at": j.finished_at.isoformat() if j.finished_at else None, "last_error": j.last_error,
            } for j, public_id in rows], indent=2))
            return
        click.echo(f"{'ID':>6}  {'RECORDING':36}  {'KIND':9}  {'STATE':7}  {'TRIES':>5}  {'OWNER':24}  LAST ERROR")
        for j, public_id in rows:
            click.echo(f"{j.id:>6}  {public_id:36}  {j.kind:9}  {j.state:7}  {j.attempts:>5}  "
                       f"{(j.lease_owner or '-')[:24]:24}  {(j.last_error or '')[:80]}")
    run()


def register(group: click.Group) -> None:
    for command in (reanalyze, reindex, jobs_group):
        group.add_command(command)
