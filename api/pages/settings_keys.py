"""Settings → API keys: the account's keys with their usage, and creating, regenerating and revoking them (admins
only; callscope/services/key_settings.py). A new key is shown once, on the answer to the form that made it."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import falcon
from pydantic import BaseModel, ConfigDict, Field, model_validator

from callscope.api.body import parse_fields
from callscope.api.pages import charts, web
from callscope.api.routing import PREFIX
from callscope.api.schemas import INT64_MAX
from callscope.errors import Conflict, NotFound, ValidationFailed
from callscope.resources import ApiKey, Project
from callscope.resources.kinds import Permission
from callscope.services import key_settings, keys, scope
from callscope.services.context import Context
from callscope.services.member_auth import SignedIn

PATH = "/settings/api-keys"


class NewKey(BaseModel):
    """The create form. Each permission is a checkbox of its own (a browser sends `on` for a ticked one)."""

    model_config = ConfigDict(extra="forbid")

    csrf: str
    name: str
    read: bool = False
    write: bool = False
    delete: bool = False
    project_id: int | None = Field(None, ge=1, le=INT64_MAX)  # the API's project ids
    expires_on: date | None = None

    @model_validator(mode="after")
    def _some_permission(self) -> NewKey:
        if not self.permissions:
            raise ValueError("choose at least one permission")
        return self

    @property
    def permissions(self) -> list[Permission]:
        ticked: list[Permission] = ["read", "write", "delete"]
        return [p for p in ticked if getattr(self, p)]

    def expires_at(self, today: date) -> datetime | None:
        """The key stops working as the chosen day begins (UTC); that day must be after today."""
        if self.expires_on is None:
            return None
        if self.expires_on <= today:
            raise ValidationFailed("expiry must be a day after today")
        return datetime.combine(self.expires_on, time.min, UTC)


def _blank_to_unset(form: dict[str, str]) -> dict[str, str]:
    # A select or date input left empty sends "", which means unset, not a value to validate.
    return {k: v for k, v in form.items() if v != "" or k in ("csrf", "name")}


def _shown_once(ctx: Context, req, resp, person: SignedIn, obj: ApiKey, key: str, what: str) -> None:
    """The one page that ever shows the key (`what` it was: created or regenerated)."""
    web.render(req, resp, "settings_key_shown.html", status=201 if what == "created" else 200, person=person,
               account=obj.namespace, obj=obj, key=key, what=what, project_name=key_settings.project_name(ctx, obj))


class KeyList:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    async def _show(self, req, resp, person: SignedIn, account: str, *, status: int = 200, errors=(),
                    form: dict[str, str] | None = None) -> None:
        web.render(req, resp, "settings_keys.html", status=status, person=person, account=account,
                   rows=await key_settings.list_rows(self.ctx, account), errors=list(errors), form=form or {},
                   projects=sorted(scope.all_of(self.ctx, Project, account), key=lambda p: p.spec.name),
                   first_expiry=self.ctx.clock().date() + timedelta(days=1))

    @web.page
    async def on_get(self, req, resp):
        person, account = await web.require_admin(self.ctx, req)
        await self._show(req, resp, person, account)

    @web.page
    async def on_post(self, req, resp):
        person, account = await web.require_admin(self.ctx, req)
        form = await web.read_form(req)
        web.check_session_csrf(person, form)
        try:
            new = parse_fields(NewKey, _blank_to_unset(form))
            obj, key = await keys.create_key(self.ctx, account, new.name.strip(), list(new.permissions),
                                             new.project_id, new.expires_at(self.ctx.clock().date()))
        except (ValidationFailed, NotFound, Conflict) as exc:  # the form again, with what to change
            errors = exc.errors if isinstance(exc, ValidationFailed) else [exc.message]
            await self._show(req, resp, person, account, status=422, errors=errors, form=form)
            return
        _shown_once(self.ctx, req, resp, person, obj, key, "created")


class KeyDetail:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @web.page
    async def on_get(self, req, resp, name: str):
        person, account = await web.require_admin(self.ctx, req)
        row = await key_settings.get_row(self.ctx, account, name)
        per_hour = charts.hours(await key_settings.usage_by_hour(self.ctx, row), self.ctx.clock(),
                                key_settings.USAGE_HOURS)
        web.render(req, resp, "settings_key.html", person=person, account=account, row=row,
                   endpoints=charts.bars(charts.without_prefix(row.usage.requests_by_endpoint, PREFIX)),
                   per_hour=per_hour, busy_hours=[h for h in per_hour if h.requests])


class KeyAction:
    """Revoke or regenerate: a confirmation page, then the form it holds."""

    def __init__(self, ctx: Context, action: str):
        self.ctx, self.action = ctx, action

    @web.page
    async def on_get(self, req, resp, name: str):
        person, account = await web.require_admin(self.ctx, req)
        row = await key_settings.get_row(self.ctx, account, name)
        if row.managed_by is not None:
            raise Conflict(row.managed_by)
        if self.action == "regenerate" and (problem := keys.regeneration_refused(self.ctx, row.key)) is not None:
            raise Conflict(problem)  # asked before the form, as the form would answer
        web.render(req, resp, "settings_key_confirm.html", person=person, account=account, row=row,
                   action=self.action)

    @web.page
    async def on_post(self, req, resp, name: str):
        person, account = await web.require_admin(self.ctx, req)
        web.check_session_csrf(person, await web.read_form(req))
        if self.action == "revoke":
            await key_settings.revoke(self.ctx, account, name)
            raise falcon.HTTPSeeOther(f"{PATH}/{name}")
        obj, key = await key_settings.regenerate(self.ctx, account, name)
        _shown_once(self.ctx, req, resp, person, obj, key, "regenerated")
