"""Settings → Webhooks: each project's endpoint and sections (refused when delivery would refuse it), a test event
sent at once with its result shown, its signing secret's rotation (the new secret shown once; the old one signs too
for an overlap window) and its delivery log with the attempts of each delivery and *Redeliver* (admins only;
callscope/services/webhook_settings.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, get_args

import falcon
from pydantic import BaseModel, ConfigDict, Field, create_model

from callscope import validation as v
from callscope.api.body import parse_fields
from callscope.api.pages import web
from callscope.api.schemas import INT64_MAX
from callscope.catalog import recordings as recording_rows
from callscope.errors import Conflict, ValidationFailed
from callscope.resources.kinds import WebhookSection
from callscope.services import webhook_settings
from callscope.services.context import Context
from callscope.services.member_auth import SignedIn

PATH = "/settings/webhooks"
SECTIONS: tuple[WebhookSection, ...] = get_args(WebhookSection)
_ID = f"int(min=1, max={INT64_MAX})"  # the catalog's BIGINT: beyond it nothing exists (404)
PROJECT = f"{PATH}/{{project_id:{_ID}}}"
DELIVERY = f"{PROJECT}/deliveries/{{event_id:{_ID}}}"


class _EndpointBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    csrf: str
    url: v.WebhookUrl | None = None
    live_alerts: bool = False

    @property
    def sections(self) -> list[WebhookSection]:
        return [s for s in SECTIONS if getattr(self, s)]


# The endpoint form: a URL (none: no webhook), a checkbox per section, whichever the resource has (a browser sends
# `on` when ticked), and one for live calls' alerts (recording.live_alert).
_SECTION_FIELDS: dict[str, Any] = {s: (bool, False) for s in SECTIONS}
Endpoint = create_model("Endpoint", __base__=_EndpointBase, **_SECTION_FIELDS)


class Rotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    csrf: str
    overlap_hours: int = Field(webhook_settings.OVERLAP_DEFAULT_HOURS, ge=0, le=webhook_settings.OVERLAP_MAX_HOURS)


def _blank_to_unset(form: dict[str, str]) -> dict[str, str | list[str]]:
    # A field left empty sends "", which means unset (no URL: no webhook), not a value to validate.
    return {k: val for k, val in form.items() if val != "" or k == "csrf"}


class WebhookList:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @web.page
    async def on_get(self, req, resp):
        person, account = await web.require_admin(self.ctx, req)
        web.render(req, resp, "settings_webhooks.html", person=person, account=account,
                   rows=webhook_settings.rows(self.ctx, account))


class WebhookProject:
    """One project's webhook: the endpoint form, the secret, the delivery log."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    async def show(self, req, resp, person: SignedIn, account: str, project_id: int, *, status: int = 200,
                   errors=(), form: dict[str, str] | None = None, warning: str | None = None,
                   test: webhook_settings.SentTestEvent | None = None) -> None:
        row = webhook_settings.row(self.ctx, account, project_id)
        web.render(req, resp, "settings_webhook.html", status=status, person=person, account=account, row=row,
                   sections=SECTIONS, errors=list(errors), form=form, warning=warning, test=test,
                   events=await webhook_settings.deliveries(self.ctx, account, project_id),
                   previous_until=await webhook_settings.previous_until(self.ctx, row.project),
                   can_rotate=webhook_settings.secret_store(self.ctx) is not None)

    @web.page
    async def on_get(self, req, resp, project_id: int):
        person, account = await web.require_admin(self.ctx, req)
        await self.show(req, resp, person, account, project_id)

    @web.page
    async def on_post(self, req, resp, project_id: int):
        person, account = await web.require_admin(self.ctx, req)
        form = await web.read_form(req)
        web.check_session_csrf(person, form)
        try:
            endpoint = parse_fields(Endpoint, _blank_to_unset(form))
            _, warning = await webhook_settings.set_endpoint(self.ctx, account, project_id, endpoint.url,
                                                             endpoint.sections, endpoint.live_alerts)
        except ValidationFailed as exc:  # the form again, with what to change
            await self.show(req, resp, person, account, project_id, status=422, errors=exc.errors, form=form)
            return
        if warning is not None:  # saved: the page as it now is, with the warning (no redirect would carry it)
            await self.show(req, resp, person, account, project_id, warning=warning)
            return
        raise falcon.HTTPSeeOther(f"{PATH}/{project_id}")


class WebhookTest:
    """*Send test event*: a signed webhook.test POSTed now, its result shown on the project's page."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.page = WebhookProject(ctx)

    @web.page
    async def on_post(self, req, resp, project_id: int):
        person, account = await web.require_admin(self.ctx, req)
        web.check_session_csrf(person, await web.read_form(req))
        result = await webhook_settings.send_test(self.ctx, account, project_id)
        await self.page.show(req, resp, person, account, project_id, test=result)


class WebhookRotate:
    """Rotating the signing secret: a page asking for the overlap window, then the new secret, shown once."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def _ask(self, req, resp, person: SignedIn, account: str, project_id: int, *, status: int = 200, errors=(),
             form: dict[str, str] | None = None) -> None:
        row = webhook_settings.row(self.ctx, account, project_id)
        if row.managed_by is not None:
            raise Conflict(row.managed_by)
        web.render(req, resp, "settings_webhook_rotate.html", status=status, person=person, account=account,
                   row=row, errors=list(errors), form=form or {}, default_hours=webhook_settings.OVERLAP_DEFAULT_HOURS,
                   max_hours=webhook_settings.OVERLAP_MAX_HOURS)

    @web.page
    async def on_get(self, req, resp, project_id: int):
        person, account = await web.require_admin(self.ctx, req)
        self._ask(req, resp, person, account, project_id)

    @web.page
    async def on_post(self, req, resp, project_id: int):
        person, account = await web.require_admin(self.ctx, req)
        form = await web.read_form(req)
        web.check_session_csrf(person, form)
        try:
            values: dict[str, str | list[str]] = dict(form)
            rotation = parse_fields(Rotation, values)
        except ValidationFailed as exc:
            self._ask(req, resp, person, account, project_id, status=422, errors=exc.errors, form=form)
            return
        overlap = timedelta(hours=rotation.overlap_hours)
        project, secret = await webhook_settings.rotate_secret(self.ctx, account, project_id, overlap)
        web.render(req, resp, "settings_webhook_secret.html", person=person, account=account, project=project,
                   secret=secret, until=self.ctx.clock() + overlap if rotation.overlap_hours else None)


class WebhookDelivery:
    """One delivery's recording (by its name, linking to its page), its attempts (when, how long, what the endpoint
    answered) and *Redeliver* once it is finished."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    @web.page
    async def on_get(self, req, resp, project_id: int, event_id: int):
        person, account = await web.require_admin(self.ctx, req)
        row = webhook_settings.row(self.ctx, account, project_id)
        event, attempts = await webhook_settings.delivery(self.ctx, account, project_id, event_id)
        recording = (await self.ctx.catalog.read(recording_rows.by_id, event.recording_id)
                     if event.recording_id is not None else None)
        web.render(req, resp, "settings_webhook_delivery.html", person=person, account=account, row=row,
                   event=event, attempts=attempts, redeliverable=webhook_settings.REDELIVERABLE,
                   recording=recording if recording is not None and recording.account == account else None)


class WebhookRedeliver:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @web.page
    async def on_post(self, req, resp, project_id: int, event_id: int):
        person, account = await web.require_admin(self.ctx, req)
        web.check_session_csrf(person, await web.read_form(req))
        await webhook_settings.redeliver(self.ctx, account, project_id, event_id)
        raise falcon.HTTPSeeOther(f"{PATH}/{project_id}/deliveries/{event_id}")


def install(app: falcon.asgi.App, ctx: Context) -> None:
    app.add_route(PATH, WebhookList(ctx))
    app.add_route(PROJECT, WebhookProject(ctx))
    app.add_route(f"{PROJECT}/test", WebhookTest(ctx))
    app.add_route(f"{PROJECT}/rotate", WebhookRotate(ctx))
    app.add_route(DELIVERY, WebhookDelivery(ctx))
    app.add_route(f"{DELIVERY}/redeliver", WebhookRedeliver(ctx))
