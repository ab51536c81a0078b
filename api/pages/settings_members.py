"""Settings → Members: the account's members, inviting one by email (the sign-in link mail), and their role,
lock, unlock and removal (admins only; callscope/services/member_settings.py). Removal asks first."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from callscope import validation as v
from callscope.api.body import parse_fields
from callscope.api.pages import web
from callscope.errors import Conflict, ValidationFailed
from callscope.resources.kinds import Role
from callscope.services import accounts, member_settings
from callscope.services.context import Context
from callscope.services.member_auth import SignedIn

PATH = "/settings/members"
ACTIONS = ("role", "lock", "unlock", "remove")


class Invite(BaseModel):
    model_config = ConfigDict(extra="forbid")

    csrf: str
    email: v.MemberEmail
    name: v.Name
    role: Role = "member"


class Change(BaseModel):
    """One member's row action; `email` names the member within the admin's account."""

    model_config = ConfigDict(extra="forbid")

    csrf: str
    email: v.MemberEmail
    role: Role | None = None
    confirmed: Literal["yes"] | None = None


class MemberList:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    async def _show(self, req, resp, person: SignedIn, account: str, *, status: int = 200, errors=(),
                    form: dict[str, str] | None = None, notice: str | None = None, problem: str | None = None) -> None:
        members = accounts.list_members(self.ctx, account)
        web.render(req, resp, "settings_members.html", status=status, person=person, account=account,
                   members=members, signed_in=await member_settings.last_sign_ins(self.ctx, members),
                   errors=list(errors), form=form or {}, notice=notice, problem=problem)

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
            invite = parse_fields(Invite, form)
            member = await member_settings.invite(self.ctx, account, person.name, invite.email, invite.name,
                                                  invite.role)
        except ValidationFailed as exc:  # the form again, with what to change
            await self._show(req, resp, person, account, status=422, errors=exc.errors, form=form)
            return
        await self._show(req, resp, person, account, status=201,
                   notice=f"{member.spec.email} was added as {member.spec.role} and emailed a sign-in link.")


class MemberAction(MemberList):
    """A change to one member, answered with the members' page saying what was done, or why it was not (the
    account's last admin kept): never a page without a way on."""

    def __init__(self, ctx: Context, action: str):
        super().__init__(ctx)
        self.action = action

    @web.page
    async def on_post(self, req, resp):
        person, account = await web.require_admin(self.ctx, req)
        form = await web.read_form(req)
        web.check_session_csrf(person, form)
        change = parse_fields(Change, form)
        email = change.email
        try:
            if self.action == "role":
                if change.role is None:
                    raise ValidationFailed("choose a role")
                member = await member_settings.set_role(self.ctx, account, person.email, email, change.role)
                done = f"{member.spec.email} is now {'an admin' if member.spec.role == 'admin' else 'a member'}."
            elif self.action in ("lock", "unlock"):
                member = await member_settings.set_locked(self.ctx, account, person.email, email,
                                                          self.action == "lock")
                done = (f"{member.spec.email} is locked: signed out everywhere, and cannot sign in."
                        if member.spec.locked else f"{member.spec.email} is unlocked and may sign in again.")
            elif change.confirmed is None:  # removal: ask first
                member = accounts.existing_member(self.ctx, account, email)
                web.render(req, resp, "settings_member_confirm.html", person=person, account=account, member=member)
                return
            else:
                await member_settings.remove(self.ctx, account, person.email, email)
                done = f"{email} was removed from the account."
        except Conflict as exc:  # the last admin kept (a request of one who is no admin any more is a 404)
            await self._show(req, resp, person, account, status=exc.status, problem=exc.message)
            return
        await self._show(req, resp, person, account, notice=done)
