"""Sign-in by emailed one-time link, sign-out, and the choice among a person's accounts."""

from __future__ import annotations

import falcon
from pydantic import TypeAdapter, ValidationError

from callscope import validation as v
from callscope.api.pages import web
from callscope.errors import Unauthorized
from callscope.services import accounts, member_auth
from callscope.services.context import Context
from callscope.services.member_auth import HOME_PATH, LINK_REFUSED, SIGN_IN_PATH, safe_next

# A member's address as Member objects take it: no control characters (a NUL fails PostgreSQL), bounded.
_EMAIL = TypeAdapter(v.MemberEmail)


class SignIn:
    def __init__(self, ctx: Context, limiter):
        self.ctx, self.limiter = ctx, limiter

    @web.page
    async def on_get(self, req, resp):
        next_path = safe_next(req.get_param("next"))
        if await web.person_of(self.ctx, req) is not None:
            raise falcon.HTTPSeeOther(next_path)
        web.render(req, resp, "sign_in.html", csrf=web.nonce_csrf(self.ctx, req, resp), next=next_path, email="",
                   error=None, first_run=not accounts.has_members(self.ctx))

    @web.page
    async def on_post(self, req, resp):
        form = await web.read_form(req)
        web.check_nonce_csrf(self.ctx, req, form)
        email, next_path = form.get("email", "").strip(), safe_next(form.get("next"))
        try:
            email = _EMAIL.validate_python(email)
        except ValidationError:
            web.render(req, resp, "sign_in.html", status=422, csrf=web.nonce_csrf(self.ctx, req, resp), next=next_path,
                       email=email[:v.EMAIL_MAX], error="Enter your email address.",
                       first_run=not accounts.has_members(self.ctx))
            return
        await member_auth.request_link(self.ctx, self.limiter, email, next_path, req.remote_addr or "unknown")
        # The same page for every address: whether it belongs to a member is not told here.
        web.render(req, resp, "message.html", title="Check your email",
                   message=f"If {email} belongs to a member, a sign-in link is on its way. It works once and expires "
                           f"in {self.ctx.settings.sign_in_link_ttl_seconds // 60} minutes.")


class SignInLink:
    """The emailed link opens a page with one button: mail scanners that fetch links do not use it up."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    @web.page
    async def on_get(self, req, resp):
        token = req.get_param("token") or ""
        if not member_auth.is_token(token):  # cut short by a mail program, or never one of ours: say so now
            raise Unauthorized(LINK_REFUSED)
        web.render(req, resp, "confirm.html", csrf=web.nonce_csrf(self.ctx, req, resp), token=token)

    @web.page
    async def on_post(self, req, resp):
        form = await web.read_form(req)
        web.check_nonce_csrf(self.ctx, req, form)
        token, next_path = await member_auth.redeem_link(self.ctx, form.get("token", ""))
        web.set_session_cookie(self.ctx, resp, token)
        resp.status, resp.location = 303, next_path


class SignOut:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @web.page
    async def on_post(self, req, resp):
        form = await web.read_form(req)
        person = await web.person_of(self.ctx, req)
        if person is not None:
            web.check_session_csrf(person, form)
            await member_auth.sign_out(self.ctx, person)
        web.clear_session_cookie(resp)
        req.context.person = None
        web.render(req, resp, "message.html", title="Signed out", message="You are signed out.",
                   link=(SIGN_IN_PATH, "Sign in again"))


class Accounts:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @web.page
    async def on_get(self, req, resp):
        person = await web.require_person(self.ctx, req)
        web.render(req, resp, "accounts.html", person=person)

    @web.page
    async def on_post(self, req, resp):
        person = await web.require_person(self.ctx, req)
        form = await web.read_form(req)
        web.check_session_csrf(person, form)
        await member_auth.choose_account(self.ctx, person, form.get("account", ""))
        raise falcon.HTTPSeeOther(HOME_PATH)
