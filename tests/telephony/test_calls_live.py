"""Phone calls on virtual numbers, end to end over real HTTP: the test plays Twilio against a real `callscope serve`
(CALLSCOPE_NUMBER_PROVIDER=twilio): signed voice webhooks and callbacks, with a local HTTP server standing in for
Twilio's recordings API (CALLSCOPE_TWILIO_BASE_URL) that serves a real stereo WAV. What is asserted: the TwiML, the
stored recording (operator, channels, project, idempotency), the provider copy's deletion, and each number's `stats`
and `recent_calls` through the public API. The analysis is off here (one analysed call:
tests/telephony/test_simulated_call_e2e.py).
"""

from __future__ import annotations

import base64
import io
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit
from xml.etree import ElementTree

import av
import httpx
import pytest

from callscope.telephony.twilio_voice import SIGNATURE_HEADER, signature, valid_signature
from tests.audio_samples import make_audio
from tests.live import LiveServer, start_server

API = "/api/v1/public"
SID = "AC" + "ab" * 16
TOKEN = "twilio-auth-token-of-the-test"
RING_TIMEOUT = 15

OPERATORS = {  # name: (phone, active)
    "alice": ("+14155550101", True), "bob": ("+14155550102", True), "carol": ("+14155550103", True),
    "dave": ("+14155550104", False), "erin": (None, True),
}
NUMBERS = {  # name: (phone, strategy, recording, project, operators, active)
    "priority": ("+14155550110", "priority", True, "support", ["dave", "erin", "alice", "bob"], True),
    "round-robin": ("+14155550111", "round_robin", False, "support", ["alice", "bob", "carol"], True),
    "simultaneous": ("+14155550112", "simultaneous", True, "support", ["alice", "bob", "carol"], True),
    "no-project": ("+14155550113", "priority", True, None, ["alice"], True),
    "switched-off": ("+14155550114", "priority", True, "support", ["alice"], False),
    "oversize": ("+14155550115", "priority", True, "support", ["alice"], True),
}
MAX_RECORDING_BYTES = 1_000_000
OVERSIZE = "REb1"  # recordings whose sid starts so are larger than MAX_RECORDING_BYTES
CALLER = "+15105550199"


class TwilioApi:
    """Twilio's recordings API on loopback: every recording's media is `wav` (with the test's credentials);
    every request is kept."""

    def __init__(self, wav: bytes) -> None:
        self.requests: list[tuple[str, str, dict[str, list[str]], str | None]] = []
        outer = self
        auth = "Basic " + base64.b64encode(f"{SID}:{TOKEN}".encode()).decode()

        class Handler(BaseHTTPRequestHandler):
            def _serve(self, method: str) -> None:
                parts = urlsplit(self.path)
                outer.requests.append((method, parts.path, parse_qs(parts.query), self.headers.get("Authorization")))
                if self.headers.get("Authorization") != auth:
                    self.send_response(401)
                    self.end_headers()
                elif method == "GET" and parts.path.endswith(".wav"):
                    body = wav * (MAX_RECORDING_BYTES // len(wav) + 1) if OVERSIZE in parts.path else wav
                    self.send_response(200)
                    self.send_header("Content-Type", "audio/x-wav")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    self.send_response(204 if method == "DELETE" else 404)
                    self.end_headers()

            def do_GET(self) -> None:  # http.server's name
                self._serve("GET")

            def do_DELETE(self) -> None:
                self._serve("DELETE")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of(self, recording_sid: str) -> list[tuple[str, str, dict[str, list[str]]]]:
        return [(m, p, q) for m, p, q, _ in self.requests if recording_sid in p]


class World:
    def __init__(self, server: LiveServer, twilio: TwilioApi, key: str, ids: dict[str, int], data: Path) -> None:
        self.server, self.twilio, self.ids, self.server_data = server, twilio, ids, data
        self.http = httpx.Client(base_url=server.url, timeout=30)
        self.headers = {"Authorization": f"Bearer {key}"}

    def post(self, url: str, params: dict[str, str], *, token: str = TOKEN, signed_url: str | None = None,
             signed: bool = True) -> httpx.Response:
        """A request as Twilio sends it: form-encoded, signed over the full URL and the parameters."""
        url = url if url.startswith("http") else self.server.url + url
        headers = {SIGNATURE_HEADER: signature(token, signed_url or url, list(params.items()))} if signed else {}
        return self.http.post(url, data=params, headers=headers)

    def call(self, number: str, call_sid: str | None = None,
             caller_name: str = "Jane Doe") -> tuple[str, ElementTree.Element]:
        call_sid = call_sid or new_sid("CA")
        resp = self.post("/telephony/twilio/voice", {
            "AccountSid": SID, "CallSid": call_sid, "From": CALLER, "To": NUMBERS[number][0], "CallerName": caller_name,
            "CallStatus": "ringing", "Direction": "inbound"})
        assert resp.status_code == 200, resp.text
        assert resp.headers["content-type"].startswith("application/xml")
        return call_sid, ElementTree.fromstring(resp.text)

    def dial_ended(self, twiml: ElementTree.Element, call_sid: str, status: str,
                   duration: int = 0) -> ElementTree.Element:
        resp = self.post(twiml.find("Dial").get("action"), {
            "AccountSid": SID, "CallSid": call_sid, "DialCallStatus": status, "DialCallDuration": str(duration),
            "DialCallSid": new_sid("CA")})
        assert resp.status_code == 200, resp.text
        return ElementTree.fromstring(resp.text)

    def recorded(self, callback: str, call_sid: str, recording_sid: str, channels: int = 2) -> httpx.Response:
        return self.post(callback, {
            "AccountSid": SID, "CallSid": call_sid, "RecordingSid": recording_sid, "RecordingStatus": "completed",
            "RecordingUrl": f"https://api.twilio.com/2010-04-01/Accounts/{SID}/Recordings/{recording_sid}",
            "RecordingChannels": str(channels), "RecordingDuration": "3", "RecordingSource": "DialVerb"})

    def ended(self, call_sid: str, status: str = "completed", duration: int = 30) -> None:
        resp = self.post("/telephony/twilio/status", {"AccountSid": SID, "CallSid": call_sid, "CallStatus": status,
                                                      "CallDuration": str(duration)})
        assert resp.status_code == 204, resp.text

    def number(self, name: str) -> dict:
        resp = self.http.get(f"{API}/virtual_numbers/{self.ids[name]}", headers=self.headers)
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]

    def recording(self, external_id: str) -> dict | None:
        listed = self.http.get(f"{API}/recordings", params={"external_id": external_id}, headers=self.headers)
        found = listed.json()["data"]
        assert len(found) <= 1
        return found[0] if found else None

    def channels(self, public_id: str) -> int:
        url = self.http.get(f"{API}/recordings/{public_id}/audio_url", headers=self.headers).json()["data"]["url"]
        with av.open(io.BytesIO(httpx.get(url).content)) as container:
            return container.streams.audio[0].codec_context.channels


def new_sid(prefix: str) -> str:
    """A sid of the prefix's kind; never one the fake Twilio serves as an oversize recording (1 in 65,536)."""
    while (sid := prefix + secrets.token_hex(16)).startswith(OVERSIZE):
        pass
    return sid


def dialled(twiml: ElementTree.Element) -> list[str]:
    return [n.text for n in twiml.find("Dial").findall("Number")]


def yaml_objects() -> str:
    docs = [{"apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "support"},
             "spec": {"name": "Support", "language": "en"}}]
    for name, (phone, active) in OPERATORS.items():
        spec = {"name": name.title(), "active": active, "projects": ["support"]}
        docs.append({"apiVersion": "callscope.io/v1alpha1", "kind": "Operator", "metadata": {"name": name},
                     "spec": {**spec, **({"phoneNumber": phone} if phone else {})}})
    for name, (phone, strategy, recording, project, operators, active) in NUMBERS.items():
        docs.append({"apiVersion": "callscope.io/v1alpha1", "kind": "VirtualNumber", "metadata": {"name": name},
                     "spec": {"name": name, "phoneNumber": phone, "countryCode": "US", "routingStrategy": strategy,
                              "recording": recording, "operators": operators, "active": active,
                              **({"project": project} if project else {})}})
    return "\n---\n".join(json.dumps(d) for d in docs)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    root = tmp_path_factory.mktemp("calls")
    wav = make_audio(root / "call.wav", "wav", seconds=3.0, channels=2).read_bytes()
    twilio = TwilioApi(wav)
    server = start_server(root / "data", number_provider="twilio", twilio_account_sid=SID, twilio_auth_token=TOKEN,
                          twilio_base_url=twilio.url, dispatcher_enabled="false",
                          call_ring_timeout_seconds=str(RING_TIMEOUT), call_voicemail="true",
                          call_delete_provider_recordings="true", call_recording_max_bytes=str(MAX_RECORDING_BYTES))
    try:
        key = server.new_key("calls")
        (root / "objects.yaml").write_text(yaml_objects())
        server.cli("apply", "-f", str(root / "objects.yaml"))
        headers = {"Authorization": f"Bearer {key}"}
        ids: dict[str, int] = {}
        deadline = time.monotonic() + 30
        while len(ids) < len(NUMBERS) + len(OPERATORS) and time.monotonic() < deadline:
            numbers = httpx.get(f"{server.url}{API}/virtual_numbers", headers=headers).json()["data"]
            operators = httpx.get(f"{server.url}{API}/operators", headers=headers).json()["data"]
            ids = {**{n["name"] or "": n["id"] for n in numbers},
                   **{o["name"].lower(): o["id"] for o in operators}}
            ids = {k: v for k, v in ids.items() if k in NUMBERS or k in OPERATORS}
            time.sleep(0.2)
        assert len(ids) == len(NUMBERS) + len(OPERATORS), ids
        yield World(server, twilio, key, ids, root / "data")
    finally:
        server.stop()
        twilio.server.shutdown()


def test_unsigned_forged_or_misdirected_requests_are_403_and_change_nothing(world: World) -> None:
    before = world.number("priority")["stats"]["total_calls"]
    params = {"AccountSid": SID, "CallSid": new_sid("CA"), "From": CALLER, "To": NUMBERS["priority"][0]}
    assert world.post("/telephony/twilio/voice", params, signed=False).status_code == 403
    assert world.post("/telephony/twilio/voice", params, token="not-the-token").status_code == 403
    signed_elsewhere = world.server.url + "/telephony/twilio/status"
    assert world.post("/telephony/twilio/voice", params, signed_url=signed_elsewhere).status_code == 403
    tampered = world.http.post("/telephony/twilio/voice", data={**params, "To": NUMBERS["round-robin"][0]}, headers={
        SIGNATURE_HEADER: signature(TOKEN, world.server.url + "/telephony/twilio/voice", list(params.items()))})
    assert tampered.status_code == 403
    assert world.post("/telephony/twilio/recording?call=CAx", {"CallSid": "CAx", "RecordingSid": "RE1"},
                      signed=False).status_code == 403
    assert world.number("priority")["stats"]["total_calls"] == before
    assert "/telephony/twilio/voice" not in world.http.get(f"{API}/openapi.json").json()["paths"]


def test_unknown_and_switched_off_numbers_reject_the_call(world: World) -> None:
    for to in ("+14155550199", NUMBERS["switched-off"][0]):
        resp = world.post("/telephony/twilio/voice", {"AccountSid": SID, "CallSid": new_sid("CA"), "From": CALLER,
                                                      "To": to})
        assert resp.status_code == 200
        assert [child.tag for child in ElementTree.fromstring(resp.text)] == ["Reject"]
    assert world.number("switched-off")["stats"]["total_calls"] == 0


def test_priority_rings_in_order_then_voicemail_then_an_answered_recorded_call(world: World) -> None:
    # Missed: alice (inactive dave and phoneless erin are skipped) does not answer, bob is busy: a voicemail.
    call_sid, twiml = world.call("priority")
    dial = twiml.find("Dial")
    assert dialled(twiml) == [OPERATORS["alice"][0]]
    assert dial.get("timeout") == str(RING_TIMEOUT) and dial.get("method") == "POST"
    assert dial.get("action") == f"{world.server.url}/telephony/twilio/dial?attempt=0"
    assert dial.get("record") == "record-from-answer-dual"
    assert dial.get("recordingStatusCallback") == f"{world.server.url}/telephony/twilio/recording?call={call_sid}"
    replay = world.call("priority", call_sid)[1]  # the same CallSid again: the same answer, nothing new
    assert ElementTree.tostring(replay) == ElementTree.tostring(twiml)
    second = world.dial_ended(twiml, call_sid, "no-answer")
    assert dialled(second) == [OPERATORS["bob"][0]]
    assert second.find("Dial").get("action").endswith("/dial?attempt=1")
    assert ElementTree.tostring(world.dial_ended(twiml, call_sid, "no-answer")) == ElementTree.tostring(second)
    voicemail = world.dial_ended(second, call_sid, "busy")
    assert [child.tag for child in voicemail] == ["Say", "Record"]
    record = voicemail.find("Record")
    assert record.get("action") == f"{world.server.url}/telephony/twilio/hangup"
    hangup = world.post(record.get("action"), {"AccountSid": SID, "CallSid": call_sid})
    assert [child.tag for child in ElementTree.fromstring(hangup.text)] == ["Hangup"]
    voicemail_sid = new_sid("RE")
    assert world.recorded(record.get("recordingStatusCallback"), call_sid, voicemail_sid, channels=1).status_code == 204
    world.ended(call_sid, duration=50)
    stored = world.recording(call_sid)
    assert stored["operator_id"] is None and stored["name"] == "Voicemail from Jane Doe"
    assert [q for m, _, q in world.twilio.of(voicemail_sid) if m == "GET"] == [{}]  # mono: no RequestedChannels

    # Answered by alice, recorded, the recording delivered twice.
    call_sid, twiml = world.call("priority", caller_name="")
    assert [child.tag for child in world.dial_ended(twiml, call_sid, "completed", duration=42)] == ["Hangup"]
    recording_sid = new_sid("RE")
    callback = twiml.find("Dial").get("recordingStatusCallback")
    assert world.recorded(callback, call_sid, recording_sid).status_code == 204
    assert world.recorded(callback, call_sid, recording_sid).status_code == 204
    world.ended(call_sid, duration=47)
    requests = world.twilio.of(recording_sid)
    assert [(m, p) for m, p, _ in requests] == [
        ("GET", f"/2010-04-01/Accounts/{SID}/Recordings/{recording_sid}.wav"),
        ("DELETE", f"/2010-04-01/Accounts/{SID}/Recordings/{recording_sid}.json")]  # once: the second is a no-op
    assert requests[0][2] == {"RequestedChannels": ["2"]}
    stored = world.recording(call_sid)
    assert stored["operator_id"] == world.ids["alice"]
    assert stored["recording_source"] == "phone" and stored["external_id"] == call_sid
    assert stored["project_id"] is not None and stored["called_at"] is not None
    assert stored["status"] == "pending" and stored["audio_format"] == "wav"
    assert world.channels(stored["public_id"]) == 2

    number = world.number("priority")
    assert number["stats"] == {"total_calls": 2, "answered_calls": 1, "missed_calls": 1,
                               "average_duration_seconds": 42}
    answered, missed = number["recent_calls"][:2]
    assert (answered["phone_number"], answered["caller_name"], answered["call_status"], answered["call_duration"],
            answered["direction"], answered["ai_handled"], answered["transcript_summary"]) == (
        CALLER, "", "completed", 42, "inbound", False, None)
    assert (missed["caller_name"], missed["call_status"], missed["call_duration"]) == ("Jane Doe", "missed", 0)


def test_round_robin_starts_after_the_operator_tried_first_last_time(world: World) -> None:
    phones = [OPERATORS[name][0] for name in ("alice", "bob", "carol")]
    firsts = []
    for _ in range(4):
        call_sid, twiml = world.call("round-robin")
        assert twiml.find("Dial").get("record") is None  # recording is off on this number
        firsts.append(dialled(twiml)[0])
        world.ended(call_sid, "in-progress")  # a progress report ends nothing
        if len(firsts) == 1:  # within a call, the next operator in turn
            assert dialled(world.dial_ended(twiml, call_sid, "no-answer")) == [phones[1]]
        world.ended(call_sid, "no-answer")  # the caller gave up while it rang
    assert firsts == [phones[0], phones[1], phones[2], phones[0]]
    assert world.number("round-robin")["recent_calls"][0]["call_status"] == "missed"
    stats = world.number("round-robin")["stats"]
    assert (stats["total_calls"], stats["missed_calls"], stats["answered_calls"]) == (4, 4, 0)


def test_simultaneous_rings_everyone_and_the_first_to_answer_takes_the_call(world: World) -> None:
    call_sid, twiml = world.call("simultaneous")
    numbers = twiml.find("Dial").findall("Number")
    assert [n.text for n in numbers] == [OPERATORS[name][0] for name in ("alice", "bob", "carol")]
    assert all(n.get("statusCallbackEvent") == "answered" for n in numbers)
    by_phone = {n.text: n.get("statusCallback") for n in numbers}
    for name in ("bob", "carol"):  # bob answers first; carol's later report changes nothing
        resp = world.post(by_phone[OPERATORS[name][0]], {"AccountSid": SID, "CallSid": new_sid("CA"),
                                                         "ParentCallSid": call_sid, "CallStatus": "in-progress"})
        assert resp.status_code == 204
    assert [child.tag for child in world.dial_ended(twiml, call_sid, "completed", duration=20)] == ["Hangup"]
    assert world.recorded(twiml.find("Dial").get("recordingStatusCallback"), call_sid, new_sid("RE")).status_code == 204
    assert world.recording(call_sid)["operator_id"] == world.ids["bob"]

    nobody_sid, nobody = world.call("simultaneous")
    assert [child.tag for child in world.dial_ended(nobody, nobody_sid, "no-answer")] == ["Say", "Record"]
    stats = world.number("simultaneous")["stats"]
    assert (stats["total_calls"], stats["answered_calls"], stats["missed_calls"]) == (2, 1, 1)


def test_a_number_without_project_routes_and_counts_calls_but_stores_no_recording(world: World) -> None:
    call_sid, twiml = world.call("no-project")
    assert dialled(twiml) == [OPERATORS["alice"][0]] and twiml.find("Dial").get("record") is None
    world.dial_ended(twiml, call_sid, "completed", duration=12)
    recording_sid = new_sid("RE")
    assert world.recorded(f"{world.server.url}/telephony/twilio/recording?call={call_sid}", call_sid,
                          recording_sid).status_code == 204
    assert world.twilio.of(recording_sid) == [] and world.recording(call_sid) is None
    missed_sid, missed = world.call("no-project")
    assert [child.tag for child in world.dial_ended(missed, missed_sid, "no-answer")] == ["Hangup"]  # no voicemail
    stats = world.number("no-project")["stats"]
    assert stats == {"total_calls": 2, "answered_calls": 1, "missed_calls": 1, "average_duration_seconds": 12}


def test_a_recording_over_the_size_limit_is_not_stored(world: World) -> None:
    blobs = world.server_data / "blobs"
    before = sorted(p for p in blobs.rglob("*") if p.is_file())
    call_sid, twiml = world.call("oversize")
    world.dial_ended(twiml, call_sid, "completed", duration=9)
    callback = twiml.find("Dial").get("recordingStatusCallback")
    assert world.recorded(callback, call_sid, OVERSIZE + secrets.token_hex(15)).status_code == 413
    assert world.recording(call_sid) is None
    assert sorted(p for p in blobs.rglob("*") if p.is_file()) == before  # nothing left behind
    assert world.recorded(callback, call_sid, new_sid("RE")).status_code == 204  # a later delivery still can
    assert world.recording(call_sid)["operator_id"] == world.ids["alice"]
    assert world.number("oversize")["stats"]["answered_calls"] == 1


def test_signature_follows_twilio_published_examples() -> None:
    """The vectors of twilio-python's own tests (token 12345)."""
    url = "https://mycompany.com/myapp.php?foo=1&bar=2"
    params = [("CallSid", "CA1234567890ABCDE"), ("Digits", "1234"), ("From", "+14158675309"),
              ("To", "+18005551212"), ("Caller", "+14158675309")]
    assert signature("12345", url, params) == "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    repeated = [("Sid", "CA123"), ("SidAccount", "AC123"), ("Digits", "5678"), ("Digits", "1234")]
    assert signature("12345", url, repeated) == "IK+Dwps556ElfBT0I3Rgjkr1wJU="


def test_signature_check_accepts_the_url_with_or_without_its_default_port() -> None:
    url = "https://mycompany.com/myapp.php?foo=1&bar=2"
    params = [("CallSid", "CA1234567890ABCDE"), ("Digits", "1234"), ("From", "+14158675309"),
              ("To", "+18005551212"), ("Caller", "+14158675309")]
    assert valid_signature("12345", url, params, "kvajT1Ptam85bY51eRf/AJRuM3w=")  # signed with :443
    assert valid_signature("12345", url.replace(".com", ".com:443"), params, "RSOYDt4T1cUTdK1PDd93/VVr8B8=")
    assert not valid_signature("12345", url, params, "RSOYDt4T1cUTdK1PDd93/VVr8B9=")
    assert not valid_signature("12345", url, params, None)
    assert not valid_signature("54321", url, params, "RSOYDt4T1cUTdK1PDd93/VVr8B8=")

