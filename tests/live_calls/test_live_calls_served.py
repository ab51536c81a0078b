"""Live calls through a real `callscope serve` and a real WebSocket client (websocket-client), with espeak-ng speech
on two tracks and the smallest Whisper the project ships (tiny.en) for the live and the batch analysis:

- the generic endpoint (an API key, `start`, 16-bit stereo frames at twice real time, `stop`) gets partials,
  finals of both roles, the greeting goal, the cancellation alert and a silence alert, then `end`; the audio is
  the stored recording (stereo, agent first) and its full analysis completes; an SSE reader that followed the call
  got the same events, and SSE readers of another account or project get 404;
- Twilio Media Streams: the TwiML of a live project's number starts a stream of both tracks; a stream signed as
  Twilio signs it (μ-law 8 kHz, inbound and outbound with their timestamps) becomes the call's recording and its
  events; a bad signature refuses the handshake;
- every bad input and fault: a bad key or permission, malformed JSON, audio before start, an unknown encoding, an
  oversized frame, an idle socket, a client that vanishes mid-call: each a clear message and close code and one
  log line, the audio that came kept and analysed.
"""

from __future__ import annotations

import base64
import io
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import av
import httpx
import pytest

from callscope.telephony.twilio_voice import SIGNATURE_HEADER, signature
from tests.analysis import speech
from tests.live import LiveServer, start_server
from tests.live_calls.sound import TwoParty, mulaw_encode, two_party

websocket = pytest.importorskip("websocket", reason="websocket-client is not installed")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)]

API = "/api/v1/public"
SID = "AC" + "cd" * 16
TOKEN = "twilio-auth-token-of-the-live-test"
NUMBER, OPERATOR_PHONE = "+14155550120", "+14155550121"
IDLE_S, MAX_FRAME = 3, 8192
SCRIPT = [("agent", 0.3, "Thank you for calling Acme support. How can I help you?"),
          ("customer", 0.6, "Hello. I want to cancel my subscription, please."),
          ("agent", 3.5, "I can help you with that today.")]  # 3.5 s of silence: over the threshold of 2 s


def objects() -> str:
    docs = [
        {"kind": "Project", "metadata": {"name": "support"}, "spec": {
            "name": "Support", "language": "en", "live": True, "longPauseThresholdSeconds": 2,
            "goals": [{"id": 1, "name": "greeting", "description": "The agent thanks the caller for calling.",
                       "phrases": ["thank you for calling"], "speaker": "agent", "withinSeconds": 30}],
            "liveAlerts": [{"name": "Cancellation", "phrases": ["cancel my subscription"],
                            "speaker": "customer"}]}},
        {"kind": "Project", "metadata": {"name": "sales"}, "spec": {"name": "Sales", "language": "en"}},
        {"kind": "Operator", "metadata": {"name": "anna"},
         "spec": {"name": "Anna", "phoneNumber": OPERATOR_PHONE, "projects": ["support"]}},
        {"kind": "VirtualNumber", "metadata": {"name": "support-line"},
         "spec": {"phoneNumber": NUMBER, "countryCode": "US", "project": "support", "operators": ["anna"]}},
    ]
    return "\n---\n".join(json.dumps({"apiVersion": "callscope.io/v1alpha1", **d}) for d in docs)


class World:
    def __init__(self, server: LiveServer, log: Path, call: TwoParty) -> None:
        self.server, self.log, self.call = server, log, call
        self.ws_url = server.url.replace("http://", "ws://")
        self.key = server.new_key("live")
        self.http = httpx.Client(base_url=server.url + API, timeout=30,
                                 headers={"Authorization": f"Bearer {self.key}"})
        projects = {p["name"]: p["id"] for p in self.http.get("/projects").json()["data"]}
        self.project_id, self.sales_id = projects["Support"], projects["Sales"]

    def socket(self, key: str | None = None) -> Client:
        return Client(f"{self.ws_url}{API}/live", [f"Authorization: Bearer {key or self.key}"])

    def recording(self, public_id: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while (resp := self.http.get(f"/recordings/{public_id}")).status_code == 404 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]

    def channels(self, public_id: str) -> int:
        url = self.http.get(f"/recordings/{public_id}/audio_url").json()["data"]["url"]
        with av.open(io.BytesIO(httpx.get(url, timeout=30).content)) as container:
            return container.streams.audio[0].codec_context.channels

    def sse(self, public_id: str, key: str | None = None) -> list[dict]:
        """The call's events as an SSE reader gets them, until `end`."""
        events = []
        headers = {"Authorization": f"Bearer {key or self.key}"}
        with httpx.stream("GET", f"{self.server.url}{API}/recordings/{public_id}/live", headers=headers,
                          timeout=120) as resp:
            assert resp.status_code == 200, resp.read()
            assert resp.headers["content-type"].startswith("text/event-stream")
            for line in resp.iter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line[6:]))
                    if events[-1]["type"] == "end":
                        break
        return events

    def logged(self, since: int) -> str:
        return self.log.read_text()[since:]


class Client:
    """A live call's socket: frames sent from the test's thread, every text message kept by a reader thread,
    and the close frame's code and reason."""

    def __init__(self, url: str, headers: list[str]) -> None:
        self.ws = websocket.create_connection(url, header=headers, timeout=120)
        self.messages: list[dict] = []
        self.code: int | None = None
        self.reason = ""
        self.closed = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            while True:
                opcode, frame = self.ws.recv_data_frame(True)
                if opcode == websocket.ABNF.OPCODE_CLOSE:
                    data = frame.data
                    self.code = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else None
                    self.reason = data[2:].decode()
                    return
                if opcode == websocket.ABNF.OPCODE_TEXT:
                    self.messages.append(json.loads(frame if isinstance(frame, (str, bytes)) else frame.data))
        except (websocket.WebSocketException, OSError):
            pass
        finally:
            self.closed.set()

    def wait_for(self, *kinds: str, timeout: float = 60) -> dict:
        """The first message of one of `kinds`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [m for m in self.messages if m["type"] in kinds]
            if found:
                return found[0]
            time.sleep(0.05)
        raise AssertionError(f"no {' or '.join(kinds)} message in {self.messages}")

    def start(self, project_id: int, **fields) -> str:
        self.ws.send(json.dumps({"type": "start", "project_id": project_id, "encoding": "pcm16",
                                 "sample_rate": 16000, "channels": 2, **fields}))
        return self.wait_for("started")["recording"]["public_id"]

    def send_call(self, call: TwoParty, speed: float = 2.0, seconds: float | None = None,
                  until: threading.Event | None = None) -> None:
        """The call's audio as 100 ms stereo frames, at `speed` times real time (until `until` is set)."""
        agent, customer = call.pcm16()
        n = len(agent) if seconds is None else int(seconds * speech.RATE)
        step, began = speech.RATE // 10, time.monotonic()
        for i, at in enumerate(range(0, n, step)):
            if until is not None and until.is_set():
                return
            frame = bytearray(2 * 2 * len(agent[at:at + step]))
            frame[0::4], frame[1::4] = agent[at:at + step].tobytes()[0::2], agent[at:at + step].tobytes()[1::2]
            frame[2::4], frame[3::4] = customer[at:at + step].tobytes()[0::2], customer[at:at + step].tobytes()[1::2]
            self.ws.send_binary(bytes(frame))
            time.sleep(max(0.0, began + (i + 1) * 0.1 / speed - time.monotonic()))

    def finish(self, timeout: float = 120) -> tuple[int | None, str]:
        assert self.closed.wait(timeout), self.messages
        return self.code, self.reason


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("live-calls")
    call = two_party(SCRIPT)
    server = start_server(root / "data", log_level="INFO", number_provider="twilio", twilio_account_sid=SID,
                          twilio_auth_token=TOKEN, twilio_base_url="http://127.0.0.1:9", whisper_model="tiny.en",
                          llm_enabled="false", analysis_executor="inline", dispatcher_slots="1",
                          dispatcher_poll_seconds="0.3", live_idle_timeout_seconds=str(IDLE_S),
                          live_max_frame_bytes=str(MAX_FRAME), analysis_threads="1")
    try:
        (root / "objects.yaml").write_text(objects())
        server.cli("apply", "-f", str(root / "objects.yaml"))
        yield World(server, root / f"server-{server.url.rsplit(':', 1)[1]}.log", call)
    finally:
        server.stop()


def check_call_events(events: list[dict], public_id: str) -> None:
    """What a two-party call with a greeting, a cancellation and a long silence must have told."""
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {e["public_id"] for e in events} == {public_id}
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "end" and kinds.count("end") == 1
    assert "partial" in kinds, kinds
    finals = [e for e in events if e["type"] == "final"]
    assert {f["role"] for f in finals} == {"agent", "customer"}, finals
    assert all(f["words"] and f["words"][0]["start"] >= f["start"] - 0.01 for f in finals)
    said = " ".join(f["text"] for f in finals).lower()
    assert "thank you for calling" in said and "subscription" in said, said
    [goal] = [e for e in events if e["type"] == "goal"]
    assert (goal["goal_id"], goal["role"], goal["phrase"]) == (1, "agent", "thank you for calling")
    assert goal["start"] < 2.0  # the greeting's words, said in the first seconds
    alerts = {e["kind"]: e for e in events if e["type"] == "alert"}
    assert alerts["phrase"]["name"] == "Cancellation" and alerts["phrase"]["role"] == "customer"
    assert alerts["silence"]["threshold"] == 2.0 and alerts["silence"]["seconds"] > 2.0
    for kind in ("partial", "final", "goal", "alert"):  # events come in the order they happen: by `at`
        ats = [e["at"] for e in events if e["type"] == kind]
        assert ats == sorted(ats), (kind, ats)
    # a final's words never change: every word of a partial's stable prefix is in the final that follows it
    for partial in (e for e in events if e["type"] == "partial" and e["stable"]):
        following = next(f for f in finals if f["seq"] > partial["seq"] and f["speaker"] == partial["speaker"])
        assert following["text"].startswith(partial["stable"]), (partial, following)


def test_a_generic_live_call_gets_its_events_and_becomes_an_analysed_recording(world: World) -> None:
    before = len(world.log.read_text())
    client = world.socket()
    public_id = client.start(world.project_id, name="Live test call", external_id="live-1")
    followed: list[dict] = []
    reader = threading.Thread(target=lambda: followed.extend(world.sse(public_id)), daemon=True)
    reader.start()
    client.send_call(world.call)
    client.ws.send(json.dumps({"type": "stop"}))
    assert client.finish()[0] == 1000
    events = [m for m in client.messages if m["type"] != "started"]
    check_call_events(events, public_id)
    assert events[-1]["reason"] == "stop" and events[-1]["stored"] is True
    assert abs(events[-1]["duration"] - len(world.call.agent) / speech.RATE) < 0.05
    reader.join(30)
    assert followed == events  # the SSE reader that followed the call got the same events

    recording = world.recording(public_id)
    assert (recording["name"], recording["external_id"], recording["recording_source"]) == (
        "Live test call", "live-1", "live")
    assert world.channels(public_id) == 2
    assert world.sse(public_id) == events  # replayed after the end
    written = world.logged(before)
    assert written.count('"live_call_ended"') == 1 and "Traceback" not in written

    deadline = time.monotonic() + 300
    while recording["status"] not in ("completed", "failed") and time.monotonic() < deadline:
        time.sleep(1)
        recording = world.recording(public_id)
    assert recording["status"] == "completed", recording
    transcription = world.http.get(f"/recordings/{public_id}/transcription").json()["data"]
    assert {s["role"] for s in transcription["speakers"]} == {"agent", "customer"}, transcription["speakers"]
    assert "subscription" in " ".join(s["text"] for s in transcription["segments"]).lower()


def test_sse_readers_of_another_account_or_project_get_404(world: World) -> None:
    outsider = world.server.new_key("outsider", "read,write", "--account", "elsewhere")
    sales_only = world.server.new_key("sales-only", "read", "--project-id", str(world.sales_id))
    support_only = world.server.new_key("support-only", "read", "--project-id", str(world.project_id))
    writer_only = world.server.new_key("writer-only", "write")
    client = world.socket()
    public_id = client.start(world.project_id)
    client.send_call(world.call, speed=4.0, seconds=1.0)
    for key in (outsider, sales_only):
        resp = httpx.get(f"{world.server.url}{API}/recordings/{public_id}/live",
                         headers={"Authorization": f"Bearer {key}"}, timeout=10)
        assert (resp.status_code, resp.json()) == (404, {"error": "No live call for this recording"})
    assert httpx.get(f"{world.server.url}{API}/recordings/{public_id}/live",
                     headers={"Authorization": f"Bearer {writer_only}"}, timeout=10).status_code == 403
    client.ws.send(json.dumps({"type": "stop"}))
    assert client.finish()[0] == 1000
    assert world.sse(public_id, support_only)[-1]["type"] == "end"
    elsewhere = world.socket(outsider)  # nor can another account send audio into this one's project
    elsewhere.ws.send(START.replace('"channels": 2', f'"channels": 2, "project_id": {world.project_id}'))
    assert elsewhere.finish(30) == (4404, "Project not found")


def twilio_stream(world: World, call_sid: str, url: str, call: TwoParty, seconds: float | None = None,
                  stop: bool = True, token: str = TOKEN) -> websocket.WebSocket:
    ws = websocket.create_connection(url, header=[f"{SIGNATURE_HEADER}: {signature(token, url, [])}"], timeout=60)
    ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
    ws.send(json.dumps({"event": "start", "sequenceNumber": "1", "streamSid": "MZ" + "0" * 32, "start": {
        "accountSid": SID, "callSid": call_sid, "streamSid": "MZ" + "0" * 32, "tracks": ["inbound", "outbound"],
        "customParameters": {}, "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}}))
    agent, customer = call.pcm16(8000)
    n = len(agent) if seconds is None else int(seconds * 8000)
    began = time.monotonic()
    for i, at in enumerate(range(0, n, 160)):  # 20 ms frames, both tracks, at twice real time
        for track, samples in (("inbound", customer), ("outbound", agent)):
            ws.send(json.dumps({"event": "media", "streamSid": "MZ" + "0" * 32, "media": {
                "track": track, "chunk": str(i + 1), "timestamp": str(at // 8),
                "payload": base64.b64encode(mulaw_encode(samples[at:at + 160])).decode()}}))
        time.sleep(max(0.0, began + (i + 1) * 0.01 - time.monotonic()))
    if stop:
        ws.send(json.dumps({"event": "stop", "sequenceNumber": "9", "streamSid": "MZ" + "0" * 32,
                            "stop": {"accountSid": SID, "callSid": call_sid}}))
    return ws


def ring(world: World, call_sid: str) -> ElementTree.Element:
    url = f"{world.server.url}/telephony/twilio/voice"
    params = {"AccountSid": SID, "CallSid": call_sid, "From": "+15105550199", "To": NUMBER,
              "CallStatus": "ringing", "Direction": "inbound"}
    resp = httpx.post(url, data=params, headers={SIGNATURE_HEADER: signature(TOKEN, url, list(params.items()))})
    assert resp.status_code == 200, resp.text
    return ElementTree.fromstring(resp.text)


def test_a_twilio_media_stream_becomes_the_calls_recording_and_events(world: World) -> None:
    call_sid = "CA" + "1" * 32
    twiml = ring(world, call_sid)
    stream = twiml.find("Start/Stream")
    assert stream is not None and stream.get("track") == "both_tracks", ElementTree.tostring(twiml)
    url = stream.get("url")
    assert url == f"{world.ws_url}/telephony/twilio/stream"
    assert [e.tag for e in twiml] == ["Start", "Dial"]  # the stream starts before the operator is rung

    ws = twilio_stream(world, call_sid, url, world.call)
    deadline = time.monotonic() + 120
    while not (found := world.http.get("/recordings", params={"external_id": call_sid}).json()["data"]):
        assert time.monotonic() < deadline
        time.sleep(0.3)
    ws.close()
    public_id = found[0]["public_id"]
    assert (found[0]["recording_source"], found[0]["name"]) == ("phone", "Call from +15105550199")
    assert world.channels(public_id) == 2
    check_call_events(world.sse(public_id), public_id)


def test_a_twilio_stream_with_a_bad_signature_is_refused(world: World) -> None:
    url = f"{world.ws_url}/telephony/twilio/stream"
    before = len(world.log.read_text())
    for header in ([f"{SIGNATURE_HEADER}: {signature('not-the-token', url, [])}"], []):
        with pytest.raises(websocket.WebSocketBadStatusException) as refused:
            websocket.create_connection(url, header=header, timeout=10)
        assert refused.value.status_code == 403
    written = world.logged(before)
    assert written.count("websocket_refused") == 2 and "Traceback" not in written


@pytest.mark.parametrize(("header", "status"), [(None, 401), ("Bearer cs_live_not_a_key", 401), ("read", 403)])
def test_a_bad_key_or_permission_refuses_the_handshake(world: World, header: str | None, status: int) -> None:
    before = len(world.log.read_text())
    if header == "read":
        header = f"Bearer {world.server.new_key(f'reader-{time.monotonic_ns()}', 'read')}"
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        websocket.create_connection(f"{world.ws_url}{API}/live", header=[f"Authorization: {header}"] if header else [],
                                    timeout=10)
    assert refused.value.status_code == 403
    written = world.logged(before)
    assert written.count("websocket_refused") == 1 and f'"status": {status}' in written, written


def refused(world: World, *messages: str | bytes) -> tuple[Client, int | None, str]:
    client = world.socket()
    for message in messages:
        client.ws.send_binary(message) if isinstance(message, bytes) else client.ws.send(message)
    code, reason = client.finish(30)
    return client, code, reason


START = json.dumps({"type": "start", "encoding": "pcm16", "sample_rate": 16000, "channels": 2})


@pytest.mark.parametrize(("messages", "code", "says"), [
    (["{not json"], 1007, "Malformed JSON"),
    ([b"\x00\x01" * 160], 1003, "Audio before start"),
    ([START.replace("pcm16", "opus")], 1007, "encoding"),
    ([START.replace('"channels": 2', '"channels": 2, "project_id": 999999')], 4404, "Project not found"),
    ([START], 4422, "project_id"),  # an account-wide key names its project
])
def test_bad_input_before_the_call_is_refused_with_a_message_and_a_code(world: World, messages: list, code: int,
                                                                         says: str) -> None:
    before = len(world.log.read_text())
    client, got, reason = refused(world, *messages)
    assert got == code and says in reason, (got, reason)
    [error] = [m for m in client.messages if m["type"] == "error"]
    assert says in error["error"] and error["code"] == code
    written = world.logged(before)
    assert written.count("live_call_refused") == 1 and "Traceback" not in written, written


def test_an_oversized_frame_ends_the_call_and_keeps_the_audio_before_it(world: World) -> None:
    client = world.socket()
    public_id = client.start(world.project_id)
    client.send_call(world.call, speed=8.0, seconds=1.5)
    client.ws.send_binary(b"\x00" * (MAX_FRAME + 4))
    code, reason = client.finish(60)
    assert code == 1009 and f"at most {MAX_FRAME} bytes" in reason
    end = client.wait_for("end")
    assert (end["reason"], end["stored"]) == ("error", True) and abs(end["duration"] - 1.5) < 0.05
    assert world.recording(public_id)["duration_ms"] in range(1400, 1600)


def test_a_frame_of_part_of_a_sample_is_refused(world: World) -> None:
    client = world.socket()
    client.start(world.project_id)
    client.ws.send_binary(b"\x00" * 6)  # 1.5 stereo samples
    code, reason = client.finish(60)
    assert code == 1007 and "whole samples" in reason


def test_an_idle_socket_is_ended_and_its_audio_kept(world: World) -> None:
    client = world.socket()
    public_id = client.start(world.project_id)
    client.send_call(world.call, speed=8.0, seconds=1.0)
    began = time.monotonic()
    code, reason = client.finish(60)
    assert code == 4408 and reason == f"Nothing received for {IDLE_S} s"
    assert IDLE_S - 0.5 < time.monotonic() - began < IDLE_S + 15
    assert client.wait_for("end")["reason"] == "idle"
    assert world.recording(public_id)["duration_ms"] in range(900, 1100)


def test_a_client_that_vanishes_mid_call_leaves_its_audio_stored(world: World) -> None:
    before = len(world.log.read_text())
    client = world.socket()
    public_id = client.start(world.project_id)
    client.send_call(world.call, speed=8.0, seconds=2.0)
    client.ws.sock.shutdown(socket.SHUT_RDWR)  # no close frame: the connection just goes
    assert world.recording(public_id)["duration_ms"] in range(1900, 2100)
    assert world.sse(public_id)[-1]["reason"] == "disconnect"
    written = world.logged(before)
    assert written.count('"live_call_ended"') == 1 and "Traceback" not in written, written


def test_live_is_a_project_setting_and_a_redacting_project_takes_no_live_call(world: World) -> None:
    assert world.http.get(f"/projects/{world.project_id}").json()["data"]["live"] is True
    for value, stored in ((True, True), (None, False)):
        resp = world.http.patch(f"/projects/{world.sales_id}", json={"live": value})
        assert resp.status_code == 200 and resp.json()["data"]["live"] is stored, resp.text
    assert world.http.patch(f"/projects/{world.sales_id}",
                            json={"redaction": {"entities": ["payment_card"]}}).status_code == 200
    client = world.socket()
    client.ws.send(START.replace('"channels": 2', f'"channels": 2, "project_id": {world.sales_id}'))
    code, reason = client.finish(30)
    assert code == 4422 and reason.startswith("Live calls are off for a project that redacts personal data")
    assert "the live transcript would carry" in client.wait_for("error")["error"]
