"""The members' web pages: sign-in by emailed link, the recording page every share links to, the list, search across
calls, and the account's Settings (API keys, members, webhooks) for its admins.

They are not API operations: routed straight on the Falcon app (outside the operation table, so neither the
OpenAPI document nor API-key authentication sees them) and authenticated by a session cookie
(callscope/services/member_auth.py). Server-rendered HTML, one stylesheet and a script for each page that needs
one, shipped as package data.
"""

from __future__ import annotations

import falcon

from callscope.api.errors import handle_http_error
from callscope.api.pages import reference, settings_keys, settings_members, settings_processing, settings_webhooks, web
from callscope.api.pages.listing import RecordingList
from callscope.api.pages.recording import LiveEvents, RecordingPage, RecordingState
from callscope.api.pages.recording_actions import ACTIONS
from callscope.api.pages.recording_files import RecordingFile
from callscope.api.pages.recording_notes import NOTE_ACTIONS
from callscope.api.pages.search import PATH as SEARCH_PATH
from callscope.api.pages.search import SearchPage
from callscope.api.pages.settings_keys import KeyAction, KeyDetail, KeyList
from callscope.api.pages.settings_lists import PATH as LISTS_PATH
from callscope.api.pages.settings_lists import ProjectList
from callscope.api.pages.settings_members import MemberAction, MemberList
from callscope.api.pages.settings_processing import ProcessingHome, ProcessingProject
from callscope.api.pages.sign_in import Accounts, SignIn, SignInLink, SignOut
from callscope.api.pages.trends import PATH as TRENDS_PATH
from callscope.api.pages.trends import TrendsPage
from callscope.api.pages.upload import PATH as UPLOAD_PATH
from callscope.api.pages.upload import UploadPage
from callscope.api.pages.web import Static
from callscope.live.calls import LiveCalls
from callscope.ratelimit import RateLimiter
from callscope.services.context import Context
from callscope.services.member_auth import HOME_PATH

# Where a URL that matches no route is a mistyped page (an HTML 404) rather than an API path (JSON).
PAGE_PREFIXES = (HOME_PATH, SEARCH_PATH, TRENDS_PATH, UPLOAD_PATH, "/settings", "/sign-in", "/accounts")


class Home:
    async def on_get(self, req, resp):
        raise falcon.HTTPSeeOther(HOME_PATH)


class SettingsHome:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @web.page
    async def on_get(self, req, resp):
        await web.require_admin(self.ctx, req)
        raise falcon.HTTPSeeOther(settings_keys.PATH)


def install(app: falcon.asgi.App, ctx: Context, limiter: RateLimiter, calls: LiveCalls) -> None:
    """Route the pages; `limiter` counts sign-in requests (always on, whatever the API's rate-limit settings);
    `calls`: the process's live calls (the list marks them, the recording page follows one)."""
    app.add_route("/", Home())
    app.add_route("/sign-in", SignIn(ctx, limiter))
    app.add_route("/sign-in/link", SignInLink(ctx))
    app.add_route("/sign-out", SignOut(ctx))
    app.add_route("/accounts", Accounts(ctx))
    app.add_route(HOME_PATH, RecordingList(ctx, calls))
    recording_page = RecordingPage(ctx, calls)
    app.add_route(HOME_PATH + "/{id}", recording_page)
    for recording_action in (*ACTIONS, *NOTE_ACTIONS):
        app.add_route(f"{HOME_PATH}/{{id}}/{recording_action.name}", recording_action(ctx, recording_page.show))
    app.add_route(HOME_PATH + "/{id}/state", RecordingState(ctx))
    app.add_route(HOME_PATH + "/{id}/live", LiveEvents(ctx, calls))
    app.add_route(HOME_PATH + "/{id}/files/{file}", RecordingFile(ctx))
    app.add_route(SEARCH_PATH, SearchPage(ctx))
    app.add_route(TRENDS_PATH, TrendsPage(ctx))
    app.add_route(UPLOAD_PATH, UploadPage(ctx))
    app.add_route("/settings", SettingsHome(ctx))
    app.add_route(settings_keys.PATH, KeyList(ctx))
    app.add_route(settings_keys.PATH + "/{name}", KeyDetail(ctx))
    for action in ("revoke", "regenerate"):
        app.add_route(f"{settings_keys.PATH}/{{name}}/{action}", KeyAction(ctx, action))
    app.add_route(settings_members.PATH, MemberList(ctx))
    for action in settings_members.ACTIONS:
        app.add_route(f"{settings_members.PATH}/{action}", MemberAction(ctx, action))
    settings_webhooks.install(app, ctx)
    app.add_route(settings_processing.PATH, ProcessingHome(ctx))
    app.add_route(settings_processing.PROJECT, ProcessingProject(ctx))
    app.add_route(LISTS_PATH, ProjectList(ctx))
    app.add_route("/static/{name}", Static())
    app.add_route(reference.PATH, reference.ApiReference())
    app.add_route(reference.PATH + "/swagger-ui/{name}", reference.SwaggerUiFile())
    app.add_error_handler(falcon.HTTPRouteNotFound, web.route_not_found(PAGE_PREFIXES, handle_http_error))
