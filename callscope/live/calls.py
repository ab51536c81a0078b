"""This process's live calls, by public_id: a socket opens a call here, and the SSE readers of
`/recordings/{id}/live` find it here, within the account and the key's project scope. An ended call stays readable
for CALLSCOPE_LIVE_KEEP_EVENTS_SECONDS. (One process's register: with several API replicas, a reader reaches a call
through the replica that holds its socket.)"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

from callscope.catalog import recordings as recording_rows
from callscope.catalog.recordings import Found
from callscope.errors import Conflict, NotFound, ValidationFailed
from callscope.live.events import Role
from callscope.live.protocol import Start
from callscope.live.session import LiveSession, Recognition
from callscope.resources import Project, ProjectSpec
from callscope.services import uploads
from callscope.services.context import Context, Principal

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


class LiveCalls:
    def __init__(self, ctx: Context, recognition: RecognitionFactory):
        self.ctx, self.recognition = ctx, recognition
        self._calls: dict[str, LiveSession] = {}

    async def open(self, principal: Principal, project: Project, rate: int, tracks: Sequence[tuple[str, Role]],
                   fields: Callable[[], Awaitable[uploads.UploadFields]],
                   stored: Callable[[Found], Awaitable[None]] | None = None) -> LiveSession:
        if not project.spec.live_allowed:
            raise ValidationFailed(REDACTING)
        session = LiveSession(self.ctx, principal, project.status.id, rate, len(tracks),
                              self.recognition(project.spec, tracks), fields, stored)
        await session.start()
        self._forget_old()
        self._calls[session.public_id] = session
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
        self._forget_old()
        session = self._calls.get(public_id)
        if (session is None or session.account != principal.account
                or (principal.scoped and session.project_id != principal.project_id)):
            raise NotFound(NO_LIVE_CALL)
        return session

    def _forget_old(self) -> None:
        now, keep = time.monotonic(), self.ctx.settings.live_keep_events_seconds
        for public_id in [p for p, s in self._calls.items() if s.ended_at is not None and now - s.ended_at > keep]:
            del self._calls[public_id]
