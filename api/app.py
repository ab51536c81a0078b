"""create_app(): the Falcon ASGI app of the public API, wired to injected services (tests inject theirs)."""

from __future__ import annotations

import falcon
import falcon.asgi

from callscope.api import errors
from callscope.api.middleware import ApiMiddleware
from callscope.api.openapi import build_document
from callscope.api.pages import install as install_pages
from callscope.api.resources import live
from callscope.api.resources.files import SignedFile
from callscope.api.resources.live_twilio import TwilioMediaStream
from callscope.api.resources.notes import NoteCollection, NoteItem
from callscope.api.resources.operators import OperatorCollection, OperatorItem
from callscope.api.resources.projects import ProjectCollection, ProjectItem
from callscope.api.resources.recordings import RecordingCollection, RecordingFilters, RecordingItem
from callscope.api.resources.scorecards import RecordingScorecards, ScorecardCollection, ScorecardItem, ScorecardQueue
from callscope.api.resources.search import Search
from callscope.api.resources.service import Health, Metrics, OpenApiDocument
from callscope.api.resources.settings import AppSettingsResource
from callscope.api.resources.shares import ShareCollection, ShareItem
from callscope.api.resources.tags import TagCollection, TagItem
from callscope.api.resources.telephony import WEBHOOKS, TwilioVoiceWebhooks
from callscope.api.resources.virtual_numbers import AvailableNumbers, NumberCollection, NumberItem, NumberPurchase
from callscope.api.routing import Router
from callscope.catalog.usage import UsageRecorder
from callscope.live.calls import LiveCalls
from callscope.ratelimit import DatabaseRateLimiter, RateLimiter
from callscope.services.context import Context


class Lifespan:
    """Runs the owner's start/stop with the ASGI lifespan (uvicorn); tests start things themselves."""

    def __init__(self, on_startup, on_shutdown):
        self.on_startup, self.on_shutdown = on_startup, on_shutdown

    async def process_startup(self, scope, event):
        await self.on_startup()

    async def process_shutdown(self, scope, event):
        await self.on_shutdown()


def create_app(ctx: Context, usage: UsageRecorder, limiter: RateLimiter | None = None,
               lifespan: Lifespan | None = None, live_calls: LiveCalls | None = None) -> falcon.asgi.App:
    app = falcon.asgi.App(middleware=[m for m in (lifespan,) if m is not None])
    router = Router(app)
    app.add_middleware(ApiMiddleware(ctx, router, usage, limiter))
    errors.install(app)
    app.req_options.strip_url_path_trailing_slash = True

    router.add("/recordings", RecordingCollection(ctx), tag="recordings")
    router.add("/recordings/filters", RecordingFilters(ctx), tag="recordings")
    recording_item = RecordingItem(ctx)
    router.add("/recordings/{id}", recording_item, tag="recordings")
    for suffix in ("audio_url", "transcription", "results", "summary"):
        router.add(f"/recordings/{{id}}/{suffix}", recording_item, tag="recordings", suffix=suffix)
    # Falcon needs one field name per path level: the spec's {recording_id} is {id} here, and its
    # share {id} is {share_id}.
    router.add("/recordings/{id}/shares", ShareCollection(ctx), tag="shares")
    router.add("/recordings/{id}/shares/{share_id:int}", ShareItem(ctx), tag="shares")
    router.add("/recordings/{id}/notes", NoteCollection(ctx), tag="notes")
    router.add("/recordings/{id}/notes/{note_id:int}", NoteItem(ctx), tag="notes")
    router.add("/projects", ProjectCollection(ctx), tag="projects")
    router.add("/projects/{id:int}", ProjectItem(ctx), tag="projects")
    router.add("/operators", OperatorCollection(ctx), tag="operators")
    operator_item = OperatorItem(ctx)
    router.add("/operators/{id:int}", operator_item, tag="operators")
    router.add("/operators/{id:int}/add_project", operator_item, tag="operators", suffix="add_project")
    router.add("/operators/{id:int}/remove_project", operator_item, tag="operators", suffix="remove_project")
    router.add("/virtual_numbers", NumberCollection(ctx), tag="virtual_numbers")
    router.add("/virtual_numbers/available", AvailableNumbers(ctx), tag="virtual_numbers")
    router.add("/virtual_numbers/purchase", NumberPurchase(ctx), tag="virtual_numbers")
    number_item = NumberItem(ctx)
    router.add("/virtual_numbers/{id:int}", number_item, tag="virtual_numbers")
    router.add("/virtual_numbers/{id:int}/add_operator", number_item, tag="virtual_numbers", suffix="add_operator")
    router.add("/virtual_numbers/{id:int}/remove_operator", number_item, tag="virtual_numbers",
               suffix="remove_operator")
    router.add("/scorecards", ScorecardCollection(ctx), tag="scorecards")
    router.add("/scorecards/{id:int}", ScorecardItem(ctx), tag="scorecards")
    router.add("/scorecards/{id:int}/queue", ScorecardQueue(ctx), tag="scorecards")
    router.add("/recordings/{id}/scorecard", RecordingScorecards(ctx), tag="scorecards")
    router.add("/tags", TagCollection(ctx), tag="tags")
    router.add("/tags/{id:int}", TagItem(ctx), tag="tags")
    router.add("/search", Search(ctx), tag="search")
    # live calls: a WebSocket each for the generic endpoint and the carrier's stream, and their events as SSE
    live.install(app)
    live_calls = live_calls or live.live_calls(ctx)
    router.add("/live", live.LiveCallSocket(ctx, live_calls), tag="live")
    router.add("/recordings/{id}/live", live.LiveCallEvents(ctx, live_calls), tag="recordings")
    router.add("/telephony/twilio/stream", TwilioMediaStream(ctx, live_calls), tag="telephony", prefix="")
    router.add("/app/settings", AppSettingsResource(ctx), tag="settings")

    router.add("/healthz", Health(ctx), tag="service", prefix="")
    router.add("/metrics", Metrics(ctx), tag="service", prefix="")
    router.add("/files/{token}", SignedFile(ctx), tag="service", prefix="")
    twilio_voice = TwilioVoiceWebhooks(ctx)  # the carrier's signed webhooks: no API key, not in the document
    for webhook in WEBHOOKS:
        router.add(f"/telephony/twilio/{webhook}", twilio_voice, tag="telephony", suffix=webhook, prefix="")
    router.add("/openapi.json", OpenApiDocument(lambda: build_document(router, ctx.settings.base_url)), tag="service")
    # The members' pages: cookie sessions, not API operations (api/pages/__init__.py); sign-in is always limited.
    install_pages(app, ctx, limiter or DatabaseRateLimiter(ctx.catalog), live_calls)
    return app
