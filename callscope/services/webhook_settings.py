"""The account's webhooks as its Settings pages show and change them: each project's endpoint and sections (the
Project's `spec.webhook`, written through callscope/services/projects.py as the REST API writes projects, once
delivery's own rule says it would send there: callscope/webhook_endpoints.py), a test event sent at once, its
signing secret's rotation (callscope/signing_secrets.py) and its delivery log (callscope/catalog/outbox.py, as
`callscope webhooks` reads it). Projects a GitOps tool owns are left alone, as keys are (key_settings)."""

from __future__ import annotations

import functools
import json
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import httpx

from callscope import signing_secrets, webhook_endpoints
from callscope.catalog import outbox
from callscope.catalog.tables import WebhookAttempt, WebhookEvent
from callscope.errors import Conflict, NotFound, ValidationFailed
from callscope.resources import Project
from callscope.resources.kinds import SecretKeyRef, Webhook, WebhookEventType, WebhookSection
from callscope.secret_store import FileSecretStore
from callscope.services import projects
from callscope.services.context import Context, Principal
from callscope.services.key_settings import managed_elsewhere

DELIVERIES_SHOWN = 50
REDELIVERABLE = outbox.REDELIVERABLE
OVERLAP_DEFAULT_HOURS = 24  # a day for the receiver to switch to the new secret
OVERLAP_MAX_HOURS = 7 * 24  # a replaced secret that signs for longer is hardly replaced
SECRET_KEY = "signing-secret"
NO_SECRETS_HERE = ("In a cluster the API has no access to Secrets (manifests/rbac.yaml): rotate the secret with "
                   "kubectl as docs/operations.md shows.")


@dataclass(frozen=True)
class HookRow:
    project: Project
    managed_by: str | None  # why the page leaves the project alone; None when it may change it

    @property
    def webhook(self) -> Webhook | None:
        return self.project.spec.webhook


def _admin(account: str) -> Principal:
    # An admin acts on the whole account, as an account-wide key does.
    return Principal(account=account, key_name="settings", key_uid="settings",
                     permissions=frozenset({"read", "write"}))


def rows(ctx: Context, account: str) -> list[HookRow]:
    return [HookRow(p, managed_elsewhere(p)) for p in projects.list_projects(ctx, _admin(account))]


def row(ctx: Context, account: str, project_id: int) -> HookRow:
    """One project of the account; NotFound for another account's, as for one that does not exist."""
    project = projects.get_project(ctx, _admin(account), project_id)
    return HookRow(project, managed_elsewhere(project))


def _editable(ctx: Context, account: str, project_id: int) -> Project:
    found = row(ctx, account, project_id)
    if found.managed_by is not None:
        raise Conflict(found.managed_by)
    return found.project


async def deliveries(ctx: Context, account: str, project_id: int) -> list[outbox.Delivery]:
    """The project's newest events, newest first."""
    return await ctx.catalog.read(outbox.list_deliveries, account, project_id, DELIVERIES_SHOWN)


async def delivery(ctx: Context, account: str, project_id: int,
                   event_id: int) -> tuple[WebhookEvent, list[WebhookAttempt]]:
    """One event of the project with its attempts; NotFound for any other project's or account's."""
    event, attempts = await ctx.catalog.read(outbox.attempts_of, account, event_id)
    if event is None or event.project_id != project_id:
        raise NotFound("No such delivery.")
    return event, attempts


async def redeliver(ctx: Context, account: str, project_id: int, event_id: int) -> None:
    """Queue a finished event again, a delivered one too (`callscope webhooks redeliver`'s rule)."""
    await delivery(ctx, account, project_id, event_id)
    if not await ctx.catalog.write(outbox.redeliver, account, [event_id], ctx.clock()):
        raise Conflict("This delivery is on its way already; it can be sent again once it is finished.")


async def set_endpoint(ctx: Context, account: str, project_id: int, url: str | None,
                       sections: list[WebhookSection], live_alerts: bool = False) -> tuple[Project, str | None]:
    """The project's endpoint and sections (no URL: no webhook), sending recording.analyzed, and each live call's
    alerts too with `live_alerts`; the signing secret stays as it is. An endpoint delivery would refuse (http://, a
    loopback, private or reserved address, unless the development settings allow) is ValidationFailed; one whose
    host does not resolve yet is saved, with the warning returned."""
    project = _editable(ctx, account, project_id)
    warning = None
    if url is not None and (refused := await webhook_endpoints.refusal(url, ctx.settings)) is not None:
        if not refused.retry:
            raise ValidationFailed([f"url is refused: {refused}"])
        warning = f"Saved, but {refused}: deliveries are retried until it resolves."
    old = project.spec.webhook
    events: list[WebhookEventType] = ["recording.analyzed"]
    if live_alerts:
        events.append("recording.live_alert")
    webhook = None if url is None else Webhook(url=url, events=events, sections=sections,
                                               signing_secret_ref=old.signing_secret_ref if old else None)
    return await projects.update_project(ctx, _admin(account), project_id, {"webhook": webhook}), warning


TEST_EVENT = "webhook.test"


@dataclass(frozen=True)
class SentTestEvent:
    """What sending a test event came to: the endpoint's answer, or why nothing was sent or answered."""

    sent_at: datetime
    duration_ms: int
    status_code: int | None = None
    excerpt: str | None = None  # the start of the answer's body
    error: str | None = None  # the refusal or the connection problem; None when the endpoint answered

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


async def send_test(ctx: Context, account: str, project_id: int) -> SentTestEvent:
    """POST a `webhook.test` event to the project's endpoint now, signed and checked as a delivery is
    (callscope/webhook_endpoints.py), once: not queued, not retried, not in the delivery log."""
    project = row(ctx, account, project_id).project
    webhook = project.spec.webhook
    if webhook is None:
        raise Conflict("Set an endpoint first.")
    now, clock = ctx.clock(), time.monotonic()
    body = json.dumps({"type": TEST_EVENT, "timestamp": now.isoformat().replace("+00:00", "Z"),
                       "data": {"project_id": project_id, "url": webhook.url}}, separators=(",", ":")).encode()

    def result(**outcome) -> SentTestEvent:
        return SentTestEvent(now, int((time.monotonic() - clock) * 1000), **outcome)
    try:
        secrets = await _signing(ctx, account, webhook)
        async with httpx.AsyncClient(follow_redirects=False, timeout=ctx.settings.webhook_timeout_seconds) as client:
            response = await webhook_endpoints.post(client, webhook.url, body, secrets,
                                                    f"msg_test_{uuid.uuid4().hex}", ctx.settings)
    except webhook_endpoints.Refused as exc:
        return result(error=f"not sent: {exc}")
    except httpx.TimeoutException:
        return result(error=f"timed out after {ctx.settings.webhook_timeout_seconds} s")
    except httpx.HTTPError as exc:
        return result(error=f"{type(exc).__name__}: {exc}"[:1000])
    return result(status_code=response.status_code, excerpt=response.text[:webhook_endpoints.EXCERPT])


async def _signing(ctx: Context, account: str, webhook: Webhook) -> list[str]:
    """The secrets a delivery would sign with now; Refused where this process cannot read them."""
    if webhook.signing_secret_ref is None:
        return []
    store = secret_store(ctx)
    if store is None:
        raise webhook_endpoints.Refused("in a cluster the API cannot read the signing secret: the controller, which "
                                        "delivers, can (send a real event, or curl the endpoint from inside)")
    try:
        return await signing_secrets.signing(store, account, webhook.signing_secret_ref, ctx.clock())
    except signing_secrets.SecretMissing as exc:
        raise webhook_endpoints.Refused(str(exc)) from None


@functools.cache
def _files(root: Path) -> FileSecretStore:
    return FileSecretStore(root)  # once per folder: opening one narrows the whole tree's modes


def secret_store(ctx: Context) -> FileSecretStore | None:
    """Where this process may write Secrets: embedded, their files; in a cluster nowhere."""
    return _files(ctx.settings.secrets_dir) if ctx.settings.store == "sqlite" else None


async def previous_until(ctx: Context, project: Project) -> datetime | None:
    """When the project's rotated-out secret stops signing, if it still does."""
    store, webhook = secret_store(ctx), project.spec.webhook
    if store is None or webhook is None or webhook.signing_secret_ref is None:
        return None
    until = await signing_secrets.previous_until(store, project.namespace, webhook.signing_secret_ref)
    return until if until is not None and until > ctx.clock() else None


async def rotate_secret(ctx: Context, account: str, project_id: int, overlap: timedelta) -> tuple[Project, str]:
    """A new signing secret for the project's webhook, returned to be shown once; the old one signs too for
    `overlap`. A webhook without a secret gets its first, in the Secret `<project>-webhook`.

    A rotation reads the current secret, keeps it as the previous one and writes a new one: two at once (two tabs,
    two replicas, the CLI) would both keep the same old secret and one new secret, already shown, would be lost. So
    each runs under the account's webhook-secrets lock (`Context.exclusive`: in-process, then the catalog's, against
    every replica and process), reading the project once the lock is held."""
    store = secret_store(ctx)
    if store is None:
        raise Conflict(NO_SECRETS_HERE)
    async with ctx.exclusive(f"{account}/webhook-secrets"):  # named as no account can be: a rule of its own
        project = _editable(ctx, account, project_id)
        if project.spec.webhook is None:
            raise Conflict("Set an endpoint first.")
        ref = project.spec.webhook.signing_secret_ref or SecretKeyRef(name=f"{project.name}-webhook",
                                                                      key=SECRET_KEY)
        overlap = min(overlap, timedelta(hours=OVERLAP_MAX_HOURS))
        secret = await signing_secrets.rotate(store, account, ref, overlap, ctx.clock())
        if project.spec.webhook.signing_secret_ref is None:
            webhook = project.spec.webhook.model_copy(update={"signing_secret_ref": ref})
            project = await projects.update_project(ctx, _admin(account), project_id, {"webhook": webhook})
    return project, secret
