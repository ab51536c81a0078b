"""`callscope webhooks ...`: the recording.analyzed outbox from the command line: what was sent, what each
endpoint answered, sending again, re-enabling an endpoint that answered 410, and making or rotating a signing secret."""

from __future__ import annotations

import json
from datetime import timedelta

import click

from callscope import webhook_signing
from callscope.catalog import outbox
from callscope.cli.support import ACCOUNT_OPTION, CATALOG_ID, COUNT, load_settings, run_async
from callscope.runtime import opened
from callscope.secret_store import FileSecretStore
from callscope.services import webhook_settings

STATES = ["pending", "delivering", "delivered", "failed", "disabled"]


def _iso(value) -> str | None:
    return value.isoformat() if value is not None else None


@click.group("webhooks")
def webhooks_group() -> None:
    """recording.analyzed deliveries: the outbox, its attempts, endpoints and signing secrets."""


@webhooks_group.command("list")
@ACCOUNT_OPTION
@click.option("--state", "states", multiple=True, type=click.Choice(STATES), help="Only events in this state.")
@click.option("--recording", "recording_id", type=CATALOG_ID, default=None, help="Only events of this recording id.")
@click.option("--limit", type=COUNT, default=50, show_default=True, help="Newest events first, at most this many.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def webhooks_list(account: str, states: tuple[str, ...], recording_id: int | None, limit: int, output: str) -> None:
    """Webhook events: state, attempts (every one made, over redeliveries too: `webhooks attempts` lists them), the
    last answer and the next attempt."""

    @run_async
    async def run() -> None:
        async with opened(load_settings()) as rt:
            events = await rt.catalog.read(outbox.list_events, account, states, recording_id, limit)
            made = await rt.catalog.read(outbox.attempts_made, [e.id for e in events])
        if output == "json":
            click.echo(json.dumps([{
                "id": e.id, "webhook_id": e.message_id, "type": e.event_type, "recording_id": e.recording_id,
                "project_id": e.project_id, "url": e.url, "state": e.state, "attempts": e.attempts,
                "attempts_total": made.get(e.id, 0),
                "last_status_code": e.last_status_code, "last_error": e.last_error,
                "next_attempt_at": _iso(e.next_attempt_at), "created_at": _iso(e.created_at),
                "delivered_at": _iso(e.delivered_at),
            } for e in events], indent=2))
            return
        click.echo(f"{'ID':>6}  {'RECORDING':>9}  {'STATE':10}  {'ATTEMPTS':>8}  {'CODE':>4}  {'URL':40}  LAST ERROR")
        for e in events:
            click.echo(f"{e.id:>6}  {e.recording_id or '-':>9}  {e.state:10}  {made.get(e.id, 0):>8}  "
                       f"{e.last_status_code or '-':>4}  {e.url[:40]:40}  {(e.last_error or '')[:60]}")
    run()


@webhooks_group.command("attempts")
@ACCOUNT_OPTION
@click.argument("event_id", type=CATALOG_ID)
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def webhooks_attempts(account: str, event_id: int, output: str) -> None:
    """Every delivery attempt of EVENT_ID: when, how long, the status code and the start of the answer."""

    @run_async
    async def run() -> None:
        async with opened(load_settings()) as rt:
            event, attempts = await rt.catalog.read(outbox.attempts_of, account, event_id)
        if event is None:
            raise click.ClickException(f"no webhook event {event_id} in account {account}")
        if output == "json":
            click.echo(json.dumps({"id": event.id, "webhook_id": event.message_id, "state": event.state,
                                   "url": event.url, "payload": json.loads(event.payload), "attempts": [{
                                       "attempt": a.attempt, "started_at": _iso(a.started_at),
                                       "duration_ms": a.duration_ms, "status_code": a.status_code,
                                       "error": a.error, "response": a.response_excerpt} for a in attempts]},
                                  indent=2))
            return
        click.echo(f"event {event.id} ({event.message_id}) to {event.url}: {event.state}")
        for a in attempts:
            click.echo(f"  #{a.attempt:<3} {_iso(a.started_at)}  {a.duration_ms:>6} ms  "
                       f"{a.status_code or '-':>4}  {a.error or (a.response_excerpt or '')[:80]}")
    run()


@webhooks_group.command("redeliver")
@ACCOUNT_OPTION
@click.argument("event_ids", type=CATALOG_ID, nargs=-1, required=True)
def webhooks_redeliver(account: str, event_ids: tuple[int, ...]) -> None:
    """Send finished events again, delivered ones too (their attempts start over; same webhook-id)."""

    @run_async
    async def run() -> None:
        async with opened(load_settings()) as rt:
            queued = await rt.catalog.write(outbox.redeliver, account, list(event_ids), rt.ctx.clock())
        click.echo(f"{len(queued)} event(s) queued again")
        if len(queued) < len(event_ids):
            click.echo("others skipped: unknown, or still on their way (pending or delivering)", err=True)
    run()


@webhooks_group.command("enable")
@ACCOUNT_OPTION
@click.option("--url", required=True, help="The endpoint URL that was disabled by a 410 Gone.")
def webhooks_enable(account: str, url: str) -> None:
    """Deliver to an endpoint again after it answered 410 Gone (disabled events: `webhooks redeliver`)."""

    @run_async
    async def run() -> None:
        async with opened(load_settings()) as rt:
            enabled = await rt.catalog.write(outbox.enable_endpoint, account, url)
        if not enabled:
            raise click.ClickException(f"{url} is not disabled in account {account}")
        click.echo(f"{url} enabled")
    run()


@webhooks_group.command("new-secret")
@ACCOUNT_OPTION
@click.option("--name", required=True, help="Secret name, as the project's webhook.signingSecretRef.name gives it.")
@click.option("--key", default="signing-secret", show_default=True, help="Key in the Secret.")
def webhooks_new_secret(account: str, name: str, key: str) -> None:
    """Make a signing secret (whsec_...) and store it where embedded mode reads Secrets; printed once, alone on
    the last line. In a cluster, create the Secret with kubectl instead."""
    settings = load_settings()
    if settings.store != "sqlite":
        raise click.ClickException("in a cluster: kubectl create secret generic NAME -n ACCOUNT "
                                   "--from-literal=signing-secret=whsec_...")
    secret = webhook_signing.new_secret()
    try:
        path = FileSecretStore(settings.secrets_dir).write(account, name, key, secret)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    click.echo(f"written to {path}", err=True)
    click.echo(secret)


@webhooks_group.command("rotate-secret")
@ACCOUNT_OPTION
@click.option("--project", "project_id", type=CATALOG_ID, required=True, help="The project's id.")
@click.option("--overlap-hours", type=click.IntRange(0, webhook_settings.OVERLAP_MAX_HOURS),
              default=webhook_settings.OVERLAP_DEFAULT_HOURS,
              show_default=True, help="Hours the replaced secret keeps signing beside the new one.")
def webhooks_rotate_secret(account: str, project_id: int, overlap_hours: int) -> None:
    """A new signing secret for the project's webhook (as Settings → Webhooks makes one), printed once, alone on the
    last line; during the overlap deliveries carry both signatures. A webhook without a secret gets its first."""

    @run_async
    async def run() -> None:
        async with opened(load_settings()) as rt:
            project, secret = await webhook_settings.rotate_secret(rt.ctx, account, project_id,
                                                                   timedelta(hours=overlap_hours))
        ref = project.spec.webhook.signing_secret_ref if project.spec.webhook else None
        click.echo(f"written to Secret {ref.name if ref else '?'}; the old secret signs too for {overlap_hours} h",
                   err=True)
        click.echo(secret)
    run()


def register(group: click.Group) -> None:
    group.add_command(webhooks_group)
