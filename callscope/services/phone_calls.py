"""Calls to virtual numbers: routing to operators, the call record, and the recording taken the upload's road.

The carrier's webhooks (api/resources/telephony.py) come here as the provider-neutral events of
callscope/telephony/voice.py; the answers are instructions the carrier's dialect writes. A call is recorded with a
dial plan fixed at its first webhook (a replay answers the same), rings operators round by round (`priority`,
`round_robin`, `simultaneous`), ends `completed` or `missed`, and a number that records (with a project) stores the
call's recording through the upload service. The flow in full: docs/phone-calls.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

import structlog
from sqlalchemy.exc import IntegrityError

from callscope.catalog import calls
from callscope.catalog.recordings import Found
from callscope.catalog.tables import Call
from callscope.errors import Forbidden, NotFound, PayloadTooLarge, ProviderError
from callscope.resources import Operator, Project, VirtualNumber
from callscope.services import scope, uploads
from callscope.services.context import Context, Principal
from callscope.services.indexes import CALLED_NUMBER, holder
from callscope.services.numbers import attached_operators
from callscope.telephony.voice import (
    CallEnded,
    Dial,
    DialResult,
    Hangup,
    InboundCall,
    Instruction,
    RecordingReady,
    Reject,
    Target,
    Voicemail,
)

log = structlog.get_logger()

VOICEMAIL_PROMPT = "Nobody can take your call right now. Please leave a message after the tone."
RECORDING_SOURCE = "phone"
MISSED = "missed"
ANSWERED = "completed"


def webhook_url(ctx: Context, name: str, **query: str | int) -> str:
    """An absolute URL of one of the carrier's webhooks, on the public base URL the carrier reaches."""
    path = f"{ctx.settings.base_url}/telephony/{ctx.provider.voice_dialect}/{name}"
    return f"{path}?{urlencode(query)}" if query else path


def live_stream_url(ctx: Context) -> str:
    """The WebSocket the carrier streams a live call's audio to: the webhooks' address, as ws:// or wss://."""
    return "ws" + webhook_url(ctx, "stream").removeprefix("http")


def called_number(ctx: Context, phone_number: str) -> VirtualNumber | None:
    """The number a call is for, in whichever account holds it: the senior claimant (a later one is in Conflict)."""
    number = holder(ctx.store, VirtualNumber, CALLED_NUMBER, phone_number)
    return number if number is not None and number.status.id is not None else None


def _number_of(ctx: Context, call: Call) -> VirtualNumber | None:
    return scope.by_id(ctx, VirtualNumber, call.account, call.virtual_number_id)


def _recording_project(ctx: Context, number: VirtualNumber | None) -> Project | None:
    """Where the number's recordings go: its project, when it records (None: nothing of its calls is stored)."""
    if number is None or not number.spec.recording:
        return None
    return scope.project_named(ctx, number.namespace, number.spec.project)


def _dial_rounds(ctx: Context, number: VirtualNumber) -> list[list[tuple[int, str]]]:
    reachable = [(o.status.id, o.spec.phone_number) for o in attached_operators(ctx, number)
                 if o.spec.active and o.spec.phone_number]
    if number.spec.routing_strategy == "simultaneous":
        return [reachable] if reachable else []
    return [[target] for target in reachable]


# ----- routing ----------------------------------------------------------------------------------

async def inbound(ctx: Context, event: InboundCall) -> Instruction:
    number = called_number(ctx, event.to)
    if number is None or not number.spec.active:
        log.info("call_rejected", to=event.to, call_id=event.call_id, known=number is not None)
        return Reject()
    row = Call(account=number.namespace, virtual_number_id=number.status.id, phone_number=event.caller,
               caller_name=event.caller_name, call_status=calls.RINGING, call_duration=0, direction="inbound",
               ai_handled=False, created_at=ctx.clock(), provider_call_id=event.call_id)
    rounds = _dial_rounds(ctx, number)
    round_robin = number.spec.routing_strategy == "round_robin"
    try:
        call, created = await ctx.catalog.write(calls.start_call, row, rounds, round_robin)
    except IntegrityError:  # the same call, recorded a moment ago through another replica
        call, created = await ctx.catalog.read(calls.by_provider_id, event.call_id), False
    if created:
        log.info("call_started", account=call.account, number_id=call.virtual_number_id, call_id=event.call_id,
                 strategy=number.spec.routing_strategy, rounds=len(rounds))
    return await _route(ctx, number, call)


async def _route(ctx: Context, number: VirtualNumber | None, call: Call) -> Instruction:
    """What the call does now, from its stored state (so a replayed webhook gets the same answer)."""
    if call.call_status != calls.RINGING:
        return Hangup()
    rounds = calls.dial_order(call)
    if number is None or call.dial_attempt >= len(rounds):
        if not await ctx.catalog.write(calls.finish_call, call.id, MISSED):
            return Hangup()
        log.info("call_missed", account=call.account, call_id=call.provider_call_id)
        return _voicemail(ctx, number, call)
    targets = rounds[call.dial_attempt]
    several = len(targets) > 1  # who answered is then told by the answered callback
    project = _recording_project(ctx, number)
    # the audio is streamed from the first round on: one stream lasts the whole call, through every later round
    live = project is not None and project.spec.live and project.spec.live_allowed and call.dial_attempt == 0
    return Dial(
        targets=[Target(phone_number=phone, answered_url=webhook_url(
            ctx, "answered", call=call.provider_call_id, operator=operator_id) if several else None)
                 for operator_id, phone in targets],
        timeout=ctx.settings.call_ring_timeout_seconds,
        action_url=webhook_url(ctx, "dial", attempt=call.dial_attempt),
        recording_url=webhook_url(ctx, "recording", call=call.provider_call_id) if project is not None else None,
        stream_url=live_stream_url(ctx) if live else None,
    )


def _voicemail(ctx: Context, number: VirtualNumber | None, call: Call) -> Instruction:
    if not ctx.settings.call_voicemail or _recording_project(ctx, number) is None:
        return Hangup()
    return Voicemail(prompt=VOICEMAIL_PROMPT, max_seconds=ctx.settings.call_voicemail_max_seconds,
                     action_url=webhook_url(ctx, "hangup"),
                     recording_url=webhook_url(ctx, "recording", call=call.provider_call_id))


async def dial_finished(ctx: Context, result: DialResult, attempt: int) -> Instruction:
    call = await ctx.catalog.read(calls.by_provider_id, result.call_id)
    if call is None:
        return Hangup()
    if result.status == "answered":
        rounds = calls.dial_order(call)
        targets = rounds[attempt] if 0 <= attempt < len(rounds) else []
        operator_id = targets[0][0] if len(targets) == 1 else None
        if await ctx.catalog.write(calls.finish_call, call.id, ANSWERED, result.duration, operator_id):
            log.info("call_answered", account=call.account, call_id=call.provider_call_id, operator_id=operator_id,
                     duration=result.duration)
        return Hangup()
    moved = await ctx.catalog.write(calls.next_attempt, call.id, attempt)
    log.info("call_not_answered", account=call.account, call_id=call.provider_call_id, attempt=attempt,
             status=result.status, replay=moved is None)
    if moved is None:  # a replay, or a late report: answer from the state as it is
        moved = await ctx.catalog.read(calls.by_provider_id, result.call_id)
    return await _route(ctx, _number_of(ctx, moved), moved)


async def target_answered(ctx: Context, call_id: str, operator_id: int) -> None:
    """Ringing several operators: the one who answered (the first report wins)."""
    call = await ctx.catalog.read(calls.by_provider_id, call_id)
    if call is not None and any(operator_id == o for targets in calls.dial_order(call) for o, _ in targets):
        await ctx.catalog.write(calls.set_answered_by, call.id, operator_id)


async def call_ended(ctx: Context, event: CallEnded) -> None:
    call = await ctx.catalog.read(calls.by_provider_id, event.call_id)
    if call is not None and await ctx.catalog.write(calls.finish_call, call.id, MISSED, event.duration):
        log.info("call_missed", account=call.account, call_id=call.provider_call_id, provider_status=event.status)


# ----- the recording ----------------------------------------------------------------------------

def _principal(account: str) -> Principal:
    """The carrier stores recordings as an account-wide writer of the number's account."""
    return Principal(account=account, key_name="telephony", key_uid="telephony", permissions=frozenset({"write"}))


def _answered_by(call: Call) -> int | None:
    """Who took a recorded call: as reported, else the one operator of the round that rang last (the recording
    callback may overtake the dial's end); a voicemail has none."""
    if call.operator_id is not None or call.call_status == MISSED:
        return call.operator_id
    rounds = calls.dial_order(call)
    targets = rounds[call.dial_attempt] if call.dial_attempt < len(rounds) else []
    return targets[0][0] if len(targets) == 1 else None


def _recording_fields(ctx: Context, call: Call, project: Project, agent_channel: int | None) -> uploads.UploadFields:
    """What a call's recording is: its project's, by its CallSid, of the operator who answered."""
    operator_id = _answered_by(call)
    operator = scope.by_id(ctx, Operator, call.account, operator_id) if operator_id else None
    return uploads.UploadFields(
        project_id=project.status.id, external_id=call.provider_call_id,
        name=f"{'Voicemail' if call.call_status == MISSED else 'Call'} from {call.caller_name or call.phone_number}",
        operator_id=operator.status.id if operator else None, called_at=call.created_at,
        recording_source=RECORDING_SOURCE, agent_channel=agent_channel)


async def recording_ready(ctx: Context, ready: RecordingReady) -> None:
    call = await ctx.catalog.read(calls.by_provider_id, ready.call_id)
    if call is None or call.recording_id is not None or not ready.completed:
        log.info("call_recording_skipped", call_id=ready.call_id, known=call is not None,
                 completed=ready.completed, stored=call is not None and call.recording_id is not None)
        return
    project = _recording_project(ctx, _number_of(ctx, call))
    if project is None:
        log.info("call_recording_not_stored", account=call.account, call_id=call.provider_call_id,
                 reason="the number does not record, or has no project")
        return
    upload = uploads.Upload(ctx, _principal(call.account), f"{ready.recording_id}.wav")
    limit = ctx.settings.call_recording_max_bytes
    try:
        async with contextlib.aclosing(ctx.provider.recording_chunks(ready)) as chunks:  # closed early on refusal
            async for chunk in chunks:
                if upload.writer.size + len(chunk) > limit:
                    raise PayloadTooLarge(f"The call recording is larger than {limit} bytes")
                await upload.write(chunk)
        found, created = await uploads.finish(upload, _recording_fields(
            ctx, call, project, ctx.provider.operator_channel if ready.channels == 2 else None))
    except BaseException:
        await upload.abort()
        raise
    await ctx.catalog.write(calls.set_recording, call.id, found.recording.id)
    log.info("call_recording_stored", account=call.account, call_id=call.provider_call_id,
             public_id=found.recording.public_id, created=created, channels=ready.channels)
    if ctx.settings.call_delete_provider_recordings:
        try:
            await ctx.provider.delete_recording(ready)
        except ProviderError as exc:  # stored here already; the provider's copy outlives it, no more
            log.warning("call_recording_provider_delete_failed", call_id=call.provider_call_id, error=exc.message)


# ----- the live stream --------------------------------------------------------------------------

LIVE_OFF = "Live calls are off for this call's number or project"


async def live_call(ctx: Context, call_id: str) -> tuple[
        Principal, Project, Callable[[], Awaitable[uploads.UploadFields]], Callable[[Found], Awaitable[None]]]:
    """A call whose audio the carrier streams (callscope/live): the writer who stores its recording, its project,
    the recording's fields (read when the call ends, when who answered is known; the agent on the first channel,
    as live calls store them) and what is done once it is stored: the call points at it, so the carrier's own
    recording of the call, when its callback comes, is not stored again."""
    call = await ctx.catalog.read(calls.by_provider_id, call_id)
    if call is None:
        raise NotFound("Unknown call")
    project = _recording_project(ctx, _number_of(ctx, call))
    if project is None or not project.spec.live:
        raise Forbidden(LIVE_OFF)

    async def fields() -> uploads.UploadFields:
        latest = await ctx.catalog.read(calls.by_provider_id, call_id) or call
        return _recording_fields(ctx, latest, project, 0)

    async def stored(found: Found) -> None:
        await ctx.catalog.write(calls.set_recording, call.id, found.recording.id)

    return _principal(call.account), project, fields, stored
