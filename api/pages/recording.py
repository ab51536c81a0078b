"""The recording page (the `url` of every share) and the state its script polls while the analysis runs; while the
call is live (its recording not stored yet), the live page and the call's events it follows."""

from __future__ import annotations

from callscope.api.pages import web
from callscope.api.pages.listing import back_to_list
from callscope.api.pages.recording_actions import actions_view, analysing_again, stage_of
from callscope.api.pages.recording_notes import notes_view
from callscope.api.pages.recording_scorecard import scorecard_panel
from callscope.api.pages.views import EMOTION_COLOURS, live_view, recording_view
from callscope.api.resources.live import stream_events
from callscope.catalog.recordings import Found
from callscope.errors import NotFound, Unauthorized
from callscope.live.calls import LiveCalls
from callscope.services import draft_transcripts, member_auth
from callscope.services.audio_urls import audio_url
from callscope.services.context import Context, Principal
from callscope.services.member_auth import SignedIn
from callscope.statuses import RecordingStatus, stage_name


class RecordingPage:
    def __init__(self, ctx: Context, calls: LiveCalls):
        self.ctx, self.calls = ctx, calls

    @web.page
    async def on_get(self, req, resp, id: str):
        person = await web.require_person(self.ctx, req)
        try:
            principal, found = await member_auth.open_recording(self.ctx, person, id)
        except NotFound:  # a call still going on has no recording yet: its live page (else the same 404)
            principal, call = member_auth.open_live_call(self.calls, person, id)
            web.render(req, resp, "recording_live.html", person=person, account=principal.account,
                       v=live_view(call))
            return
        await self.show(req, resp, person, principal, found)

    async def show(self, req, resp, person: SignedIn, principal: Principal, found: Found, *, status: int = 200,
                   problem: str | None = None, problem_form: str | None = None, back: str | None = None,
                   sent: dict[str, object] | None = None) -> None:
        """The page; `problem`: why the action of the form `problem_form` was not done (shown beside it, with the
        values `sent` in it again); `back`: the list's filters that form passed on."""
        view = await recording_view(self.ctx, principal, found)
        actions = await actions_view(self.ctx, person, principal, found, req, problem=problem,
                                     problem_form=problem_form, back=back, sent=sent)
        web.render(req, resp, "recording.html", status=status, person=person, account=principal.account, v=view,
                   emotions=EMOTION_COLOURS, media_origin=web.origin_of(view.audio_url or ""), actions=actions,
                   back=back_to_list(actions.back), notes=await notes_view(self.ctx, person, principal, found, req),
                   scorecards=await scorecard_panel(self.ctx, person, principal.account, found.recording))


class LiveEvents:
    """The live page's events: the API's Server-Sent Events of the call (api/resources/live.py), for a signed-in
    member of its account. Signed out answers 401 (the browser's EventSource then stops); a reader that got `end`
    already gets 204, which tells an EventSource not to come back."""

    def __init__(self, ctx: Context, calls: LiveCalls):
        self.ctx, self.calls = ctx, calls

    @web.page
    async def on_get(self, req, resp, id: str):
        person = await web.person_of(self.ctx, req)
        if person is None:
            raise Unauthorized("Sign in again")
        _, call = member_auth.open_live_call(self.calls, person, id)
        log = call.session.log
        if log.ended and (req.get_header("Last-Event-ID") or "") == str(len(log.events)):
            resp.status = 204
            return
        stream_events(req, resp, call.session)


class RecordingState:
    """JSON for the page's script: status, stage and progress (and whether a finished call is being analysed again),
    and a fresh audio URL (the page's own expires after CALLSCOPE_AUDIO_URL_TTL_SECONDS; the script swaps it in when
    the player reports an error). Signed out (or thrown out) answers 401, and the script reloads the page, which then
    asks to sign in."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    async def on_get(self, req, resp, id: str):
        person = await web.person_of(self.ctx, req)
        if person is None:
            raise Unauthorized("Sign in again")
        _, found = await member_auth.open_recording(self.ctx, person, id)
        r = found.recording
        url = (await audio_url(self.ctx, r))[0] if r.blob_key is not None else None
        again = await analysing_again(self.ctx, r)
        stage, progress = stage_of(r, again)
        draft = r.status == RecordingStatus.PROCESSING and await draft_transcripts.ready(self.ctx, r)
        resp.media = {"status": r.status, "stage": stage, "stage_name": stage_name(stage), "progress": progress,
                      "status_reason": r.status_reason, "audio_url": url, "reanalysing": again,
                      "transcript_ready": draft}
        resp.set_header("Cache-Control", "no-store")
