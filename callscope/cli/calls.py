"""`callscope calls simulate`: one phone call to a virtual number, played as the sandbox provider would play it.

The command is the carrier: it sends the voice webhook, follows the TwiML the server answers (rings the operators it
names, one of them answering or none), sends the dial, recording and call-status callbacks, every request signed
with the sandbox's auth token (kept in the data directory's `sandbox-provider.json`), and puts the call's recording
where the sandbox keeps its recordings (`sandbox-recordings/` in the data directory) before the recording callback;
what the server leaves there is removed when the call is over. Registered on the main group by `register(main)`.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import struct
import tempfile
import wave
from pathlib import Path
from xml.etree import ElementTree

import av
import click
import httpx

from callscope.catalog import calls
from callscope.catalog import recordings as recording_rows
from callscope.cli.support import ACCOUNT_OPTION, load_settings, run_async
from callscope.resources import Operator
from callscope.runtime import opened
from callscope.services import scope
from callscope.telephony.factory import SANDBOX_STATE_FILE
from callscope.telephony.sandbox import SandboxProvider
from callscope.telephony.twilio_voice import SIGNATURE_HEADER, signature

TONE_SECONDS = 4


@click.group("calls")
def calls_group() -> None:
    """Phone calls to virtual numbers."""


def _tone_wav(path: Path) -> None:
    """A two-channel WAV of two tones (caller, operator) for a call simulated without --audio."""
    rate = 8000
    with wave.open(str(path), "wb") as out:
        out.setnchannels(2)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"".join(struct.pack("<hh", int(8000 * math.sin(2 * math.pi * 220 * i / rate)),
                                             int(8000 * math.sin(2 * math.pi * 330 * i / rate)))
                                 for i in range(rate * TONE_SECONDS)))


def _seconds(path: Path) -> int:
    with av.open(str(path)) as container:
        return max(1, round(float(container.duration or 0) / av.time_base))


class _Carrier:
    """Signed POSTs to the server, each shown with its answer; the recordings of the call, kept as the sandbox
    keeps them."""

    def __init__(self, http: httpx.AsyncClient, sandbox: SandboxProvider, audio: Path):
        self.http, self.sandbox, self.audio = http, sandbox, audio
        self.auth_token = sandbox.voice_credentials()[1]
        self.recordings: list[Path] = []

    def keep_recording(self, recording_sid: str) -> Path:
        path = self.sandbox.add_recording(recording_sid, self.audio)
        self.recordings.append(path)
        return path

    def remove_recordings(self) -> None:
        """The call is over: nothing is left to fetch (as when the carrier's copy expires)."""
        for path in self.recordings:
            path.unlink(missing_ok=True)

    async def post(self, url: str, params: dict[str, str]) -> httpx.Response:
        pairs = list(params.items())
        try:
            response = await self.http.post(url, data=params,
                                            headers={SIGNATURE_HEADER: signature(self.auth_token, url, pairs)})
        except (httpx.HTTPError, httpx.InvalidURL) as exc:  # InvalidURL: a --url that is none
            raise click.ClickException(f"cannot reach {url}: {type(exc).__name__} (is `callscope serve` running? "
                                       "--url names where)") from None
        click.echo(f"→ POST {url}")
        click.echo(f"← {response.status_code} {response.text}".rstrip())
        if response.status_code >= 400:
            raise click.ClickException(f"the server answered {response.status_code}")
        return response


@calls_group.command("simulate")
@click.option("--to", "to", required=True, help="The virtual number called (E.164).")
@click.option("--from", "caller", required=True, help="The caller's number (E.164).")
@click.option("--caller-name", default="", help="The caller's name as the carrier would look it up.")
@click.option("--answer-by", default=None,
              help="The operator who answers (id or phone number) when rung; unset: nobody answers.")
@click.option("--audio", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The call's recording (stereo WAV: caller on the first channel, operator on the second); "
              "unset: two tones.")
@click.option("--url", "base_url", default=None,
              help="The server's public base URL; default CALLSCOPE_PUBLIC_BASE_URL, else CALLSCOPE_HOST/PORT.")
@click.option("--wait", "wait_seconds", default=0, show_default=True, type=int,
              help="Seconds to wait for the recording's analysis, then show the call as the number's recent_calls do.")
@ACCOUNT_OPTION
def simulate(to: str, caller: str, caller_name: str, answer_by: str | None, audio: Path | None,
             base_url: str | None, wait_seconds: int, account: str) -> None:
    """Play one call to a virtual number through the server's webhooks, as the sandbox provider."""
    settings = load_settings()
    if settings.number_provider != "sandbox":
        raise click.ClickException("calls simulate plays the sandbox provider (CALLSCOPE_NUMBER_PROVIDER=sandbox)")
    sandbox = SandboxProvider(settings.data_dir / SANDBOX_STATE_FILE)
    account_sid = sandbox.voice_credentials()[0]
    base = (base_url or settings.base_url).rstrip("/")

    @run_async
    async def run() -> None:
        async with opened(settings) as rt:
            answering = _answering_phone(rt, account, answer_by)
            with tempfile.TemporaryDirectory() as scratch:
                recording = audio or Path(scratch) / "call.wav"
                if audio is None:
                    _tone_wav(recording)
                async with httpx.AsyncClient(timeout=120) as http:
                    carrier = _Carrier(http, sandbox, recording)
                    try:
                        call_sid = await _play(carrier, base, account_sid, to, caller, caller_name, answering,
                                               _seconds(recording))
                    finally:
                        carrier.remove_recordings()
            if wait_seconds:
                await _show(rt, account, call_sid, wait_seconds)
    run()


def _answering_phone(rt, account: str, answer_by: str | None) -> str | None:
    if answer_by is None or answer_by.startswith("+"):
        return answer_by
    if not answer_by.isdigit() or (operator := scope.by_id(rt.ctx, Operator, account, int(answer_by))) is None:
        raise click.BadParameter(f"no operator {answer_by} in account {account}", param_hint="--answer-by")
    if not operator.spec.phone_number:
        raise click.BadParameter(f"operator {answer_by} has no phone number", param_hint="--answer-by")
    return operator.spec.phone_number


async def _play(carrier: _Carrier, base: str, account_sid: str, to: str, caller: str, caller_name: str,
                answering: str | None, seconds: int) -> str:
    """The call, webhook by webhook, as far as the server's TwiML leads; returns its CallSid."""
    call_sid = "CA" + secrets.token_hex(16)
    common = {"AccountSid": account_sid, "CallSid": call_sid, "From": caller, "To": to, "Direction": "inbound"}
    answer = await carrier.post(f"{base}/telephony/twilio/voice",
                                {**common, "CallStatus": "ringing", "CallerName": caller_name})
    connected = 0
    while True:
        twiml = ElementTree.fromstring(answer.text)
        dial, record = twiml.find("Dial"), twiml.find("Record")
        if dial is not None:
            numbers = dial.findall("Number")
            taken = next((n for n in numbers if n.text == answering), None)
            if taken is None:
                click.echo(f"  ringing {', '.join(n.text or '' for n in numbers)}: no answer")
                answer = await carrier.post(dial.get("action", ""), {**common, "DialCallStatus": "no-answer"})
                continue
            click.echo(f"  {answering} answers; talking {seconds} s")
            leg = "CA" + secrets.token_hex(16)
            if taken.get("statusCallback"):
                await carrier.post(taken.get("statusCallback", ""), {
                    "AccountSid": account_sid, "CallSid": leg, "ParentCallSid": call_sid, "CallStatus": "in-progress",
                    "From": caller, "To": answering or "", "Direction": "outbound-dial"})
            connected = seconds
            answer = await carrier.post(dial.get("action", ""), {
                **common, "DialCallStatus": "completed", "DialCallSid": leg, "DialCallDuration": str(seconds)})
            if dial.get("recordingStatusCallback"):
                await _recorded(carrier, dial.get("recordingStatusCallback", ""), common, 2, seconds)
            continue
        if record is not None:
            click.echo(f"  voicemail: the caller speaks {seconds} s")
            await _recorded(carrier, record.get("recordingStatusCallback", ""), common, 1, seconds)
            answer = await carrier.post(record.get("action", ""), {**common, "RecordingDuration": str(seconds)})
            continue
        break
    if twiml.find("Reject") is None:
        await carrier.post(f"{base}/telephony/twilio/status",
                           {**common, "CallStatus": "completed", "CallDuration": str(connected + 5)})
    return call_sid


async def _recorded(carrier: _Carrier, url: str, common: dict[str, str], channels: int, seconds: int) -> None:
    recording_sid = "RE" + secrets.token_hex(16)
    kept = carrier.keep_recording(recording_sid)
    click.echo(f"  provider: recording {recording_sid} ready ({kept.stat().st_size} bytes)")
    await carrier.post(url, {
        **common, "RecordingSid": recording_sid, "RecordingStatus": "completed", "RecordingChannels": str(channels),
        "RecordingDuration": str(seconds), "RecordingSource": "DialVerb" if channels == 2 else "RecordVerb",
        # As Twilio sends it; the server never fetches a URL a webhook names.
        "RecordingUrl": f"https://api.twilio.com/2010-04-01/Accounts/{common['AccountSid']}/Recordings/"
                        + recording_sid})
    if not kept.exists():
        click.echo("  provider: recording deleted")


async def _show(rt, account: str, call_sid: str, wait_seconds: int) -> None:
    """Wait for the call's recording to be analysed; then the call as the number's detail shows it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    while True:
        call = await rt.catalog.read(calls.by_provider_id, call_sid)
        if call is None:
            raise click.ClickException(f"the server recorded no call {call_sid}")
        recording = await rt.catalog.read(recording_rows.by_id, call.recording_id) if call.recording_id else None
        done = recording is not None and recording.status in ("completed", "failed")
        if done or loop.time() > deadline:
            break
        await asyncio.sleep(1)
    if recording is not None:
        click.echo(f"recording {recording.public_id}: {recording.status}"
                   + (f" ({recording.status_reason})" if recording.status_reason else ""))
    recent = await rt.catalog.read(calls.recent_calls, call.account, call.virtual_number_id, 10)
    if (record := next((c for c in recent if c.id == call.id), None)) is not None:
        click.echo(record.model_dump_json(indent=2))


def register(group: click.Group) -> None:
    group.add_command(calls_group)
