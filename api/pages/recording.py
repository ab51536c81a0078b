"""The recording page (the `url` of every share) and the state its script polls while the analysis runs."""

from __future__ import annotations

from callscope.api.pages import web
from callscope.api.pages.views import EMOTION_COLOURS, recording_view
from callscope.errors import Unauthorized
from callscope.services import member_auth
from callscope.services.audio_urls import audio_url
from callscope.services.context import Context


class RecordingPage:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @web.page
    async def on_get(self, req, resp, id: str):
        person = await web.require_person(self.ctx, req)
        principal, found = await member_auth.open_recording(self.ctx, person, id)
        view = await recording_view(self.ctx, principal, found)
        web.render(req, resp, "recording.html", person=person, account=principal.account, v=view,
                   emotions=EMOTION_COLOURS, media_origin=web.origin_of(view.audio_url or ""))


class RecordingState:
    """JSON for the page's script: status, stage and progress, and a fresh audio URL (the page's own expires after
    CALLSCOPE_AUDIO_URL_TTL_SECONDS; the script swaps it in when the player reports an error). Signed out (or thrown
    out) answers 401, and the script reloads the page, which then asks to sign in."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    async def on_get(self, req, resp, id: str):
        person = await web.person_of(self.ctx, req)
        if person is None:
            raise Unauthorized("Sign in again")
        _, found = await member_auth.open_recording(self.ctx, person, id)
        r = found.recording
        url = (await audio_url(self.ctx, r))[0] if r.blob_key is not None else None
        resp.media = {"status": r.status, "stage": r.stage, "progress": r.progress, "status_reason": r.status_reason,
                      "audio_url": url}
        resp.set_header("Cache-Control", "no-store")
