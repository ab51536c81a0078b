"""This process's live calls, by public_id: a socket opens a call here, and the SSE readers of
`/recordings/{id}/live` find it here, within the account and the key's project scope (the members' pages list the
account's calls going on and follow one the same way). An ended call stays readable for
CALLSCOPE_LIVE_KEEP_EVENTS_SECONDS. (One process's register: with several API replicas, a reader reaches a call
through the replica that holds its socket.)

What outlives the socket is done here too: each call's alerts go to the project's webhook (`recording.live_alert`)
as they come, and its finals are kept beside the recording's analysis once the audio is stored
(callscope/live/transcript.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import structlog

from callscope.catalog import recordings as recording_rows
from callscope.catalog.recordings import Found
from callscope.errors import Conflict, NotFound, ValidationFailed
from callscope.live import transcript
from callscope.live.events import Alert, Role
from callscope.live.protocol import Start
from callscope.live.session import LiveSession, Recognition
from callscope.resources import Project, ProjectSpec
from callscope.services import uploads, webhooks
from callscope.services.context import Context, Principal

log = structlog.get_logger()

NO_LIVE_CALL = "No live call for this recording"
REDACTING = ("Live calls are off for a project that redacts personal data: the live transcript would carry what "
             "redaction takes out")
LIVE_SOURCE = "live"
DEFAULT_NAME = "Live call"
# the stored recording's channels
AGENT: tuple[str, Role] = ("channel-0", "agent")
CUSTOMER: tuple[str, Role] = ("channel-1", "customer")
RecognitionFactory = Callable[[ProjectSpec, Sequence[tuple[str, Role]]], Recognition]


def tracks_of(channels: int) -> list[tuple[str, Role]]:
    """(speaker, role) of each track: agent then customer; one channel's speaker has no known role."""
    return [AGENT, CUSTOMER] if channels == 2 else [("channel-0", "unknown")]


@dataclass(frozen=True)
class LiveCall:
    """A call of the register: its session, its project (as the call began) and what the call was opened as (its
    name, external_id and call time, as the recording will have them)."""

    session: LiveSession
    project: Project
    fields: uploads.UploadFields

    @property
    def tracks(self) -> list[tuple[str, Role]]:
        return tracks_of(len(self.session.audio.tracks))


class LiveCalls:
    def __init__(self, ctx: Context, recognition: RecognitionFactory):
        self.ctx, self.recognition = ctx, recognition
        self._calls: dict[str, LiveCall] = {}
        self._alerts: set[asyncio.Task] = set()  # held so that they are not collected while they run

    async def open(self, principal: Principal, project: Project, rate: int, tracks: Sequence[tuple[str, Role]],
                   fields: Callable[[], Awaitable[uploads.UploadFields]],
                   stored: Callable[[Found], Awaitable[None]] | None = None) -> LiveSession:
        if not project.spec.live_allowed:
            raise ValidationFailed(REDACTING)

        async def kept(found: Found) -> None:  # the recording is stored: its live transcript is kept beside it
            await transcript.keep(self.ctx, found.recording.id, session.log.events)
            if stored is not None:
                await stored(found)

        opened = await fields()  # what a phone call knows at its start: the name and time its pages show
        session = LiveSession(self.ctx, principal, project.status.id, rate, len(tracks),
                              self.recognition(project.spec, tracks), fields, kept)
        session.start()
        self._forget_old()
        call = LiveCall(session, project, opened)
        self._calls[session.public_id] = call
        alerts = asyncio.create_task(self._send_alerts(call), name=f"live-alerts-{session.public_id}")
        self._alerts.add(alerts)
        alerts.add_done_callback(self._alerts.discard)
        return session

    async def open_generic(self, principal: Principal, start: Start) -> LiveSession:
        """A call of the generic endpoint: the key's project rules as for an upload; an external_id already
        taken in the project is a conflict (the call's audio would otherwise be dropped as a repeat)."""
        project = uploads.check_project(self.ctx, principal, start.project_id)
        if start.external_id and project.status.id is not None and await self.ctx.catalog.read(
                recording_rows.find_by_external_id, principal.scope, project.status.id, start.external_id):
            raise Conflict("A recording with this external_id exists in the project")
        called_at = self.ctx.clock()

        async def fields() -> uploads.UploadFields:
            return uploads.UploadFields(project_id=project.status.id, name=start.name or DEFAULT_NAME,
                                        external_id=start.external_id, called_at=called_at,
                                        recording_source=LIVE_SOURCE, agent_channel=0 if start.channels == 2 else None)

        return await self.open(principal, project, start.sample_rate, tracks_of(start.channels), fields)

    def visible(self, principal: Principal, public_id: str) -> LiveSession:
        """The call, if the key may read it: its account, and its project for a project-scoped key; else 404,
        the same whether the call exists elsewhere or not at all."""
        return self.call(principal, public_id).session

    def call(self, principal: Principal, public_id: str) -> LiveCall:
        """`visible`'s call, with its project and fields."""
        self._forget_old()
        call = self._calls.get(public_id)
        if call is None or not _readable(principal, call.session):
            raise NotFound(NO_LIVE_CALL)
        return call

    def ongoing(self, principal: Principal, project_id: int | None = None) -> list[LiveCall]:
        """The calls going on that `principal` may read (of `project_id` only, when given), the latest first."""
        return sorted((c for c in self._calls.values() if c.session.ended_at is None and _readable(principal, c.session)
                       and project_id in (None, c.session.project_id)),
                      key=lambda c: c.session.public_id, reverse=True)  # uuid7: in the order they began

    async def _send_alerts(self, call: LiveCall) -> None:
        """The call's alerts, as they come, to the project's webhook."""
        async for event in call.session.log.follow():
            if not isinstance(event, Alert):
                continue
            try:
                await webhooks.live_alert(self.ctx, call.session.account, call.project, call.session.public_id,
                                          call.fields.external_id, event.model_dump(mode="json"))
            except Exception:  # a catalog fault: this alert is not sent, the call goes on; logged with its cause
                log.exception("live_alert_not_queued", public_id=call.session.public_id, seq=event.seq)

    def _forget_old(self) -> None:
        now, keep = time.monotonic(), self.ctx.settings.live_keep_events_seconds
        for public_id in [p for p, c in self._calls.items()
                          if c.session.ended_at is not None and now - c.session.ended_at > keep]:
            del self._calls[public_id]


def _readable(principal: Principal, session: LiveSession) -> bool:
    return session.account == principal.account and not (principal.scoped
                                                          and session.project_id != principal.project_id)
