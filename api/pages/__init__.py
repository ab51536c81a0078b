"""The members' web pages: sign-in by emailed link, the recording page every share links to, and the list.

They are not API operations: routed straight on the Falcon app (outside the operation table, so neither the
OpenAPI document nor API-key authentication sees them) and authenticated by a session cookie
(callscope/services/member_auth.py). Server-rendered HTML, one stylesheet and one script, shipped as package data.
"""

from __future__ import annotations

import falcon

from callscope.api.pages.listing import RecordingList
from callscope.api.pages.recording import RecordingPage, RecordingState
from callscope.api.pages.sign_in import Accounts, SignIn, SignInLink, SignOut
from callscope.api.pages.web import Static
from callscope.ratelimit import RateLimiter
from callscope.services.context import Context
from callscope.services.member_auth import HOME_PATH


class Home:
    async def on_get(self, req, resp):
        raise falcon.HTTPSeeOther(HOME_PATH)


def install(app: falcon.asgi.App, ctx: Context, limiter: RateLimiter) -> None:
    """Route the pages; `limiter` counts sign-in requests (always on, whatever the API's rate-limit settings)."""
    app.add_route("/", Home())
    app.add_route("/sign-in", SignIn(ctx, limiter))
    app.add_route("/sign-in/link", SignInLink(ctx))
    app.add_route("/sign-out", SignOut(ctx))
    app.add_route("/accounts", Accounts(ctx))
    app.add_route(HOME_PATH, RecordingList(ctx))
    app.add_route(HOME_PATH + "/{id}", RecordingPage(ctx))
    app.add_route(HOME_PATH + "/{id}/state", RecordingState(ctx))
    app.add_route("/static/{name}", Static())
