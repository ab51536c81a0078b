"""One phone call all the way, without a carrier account: `callscope calls simulate` plays the sandbox provider
against a real `callscope serve` (signed webhooks, the TwiML followed, the recording kept where the sandbox keeps its
recordings), and the call's stereo recording of real speech is stored, analysed by channel, and its summary shown in
the number's `recent_calls`; a call to an unknown number is rejected and one nobody answers is missed."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest

from tests.analysis import speech
from tests.live import start_server

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("language_model"), pytest.mark.timeout(400),
              pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)]

API = "/api/v1/public"
CALLER_SAYS = "Hello, my parcel did not arrive and I would like a refund."
OPERATOR_SAYS = "Thank you for calling. I am sorry about the parcel, I will send the refund today."
NUMBER, OPERATOR_PHONE = "+14155550120", "+14155550121"


def objects() -> str:
    docs = [
        {"kind": "Project", "metadata": {"name": "support"}, "spec": {"name": "Support", "language": "en"}},
        {"kind": "Operator", "metadata": {"name": "bob"},
         "spec": {"name": "Bob Jones", "phoneNumber": OPERATOR_PHONE, "projects": ["support"]}},
        {"kind": "VirtualNumber", "metadata": {"name": "desk"},
         "spec": {"name": "Desk", "phoneNumber": NUMBER, "countryCode": "US", "project": "support",
                  "operators": ["bob"]}},
    ]
    return "\n---\n".join(json.dumps({"apiVersion": "callscope.io/v1alpha1", **d}) for d in docs)


def test_a_simulated_call_is_routed_recorded_analysed_and_summarised(tmp_path: Path) -> None:
    caller = speech.make_call([0.3, CALLER_SAYS, 5.5])
    operator = speech.make_call([4.8, OPERATOR_SAYS, 0.4])
    n = max(len(caller.samples), len(operator.samples))
    audio = speech.write(tmp_path / "call.wav", [speech.pad_to(caller.samples, n), speech.pad_to(operator.samples, n)])
    server = start_server(tmp_path / "data", analysis_executor="inline", dispatcher_poll_seconds="0.3")
    try:
        key = server.new_key("e2e")
        headers = {"Authorization": f"Bearer {key}"}
        (tmp_path / "objects.yaml").write_text(objects())
        server.cli("apply", "-f", str(tmp_path / "objects.yaml"))
        ids: dict[str, int] = {}
        deadline = time.monotonic() + 30
        while len(ids) < 2 and time.monotonic() < deadline:
            numbers = httpx.get(f"{server.url}{API}/virtual_numbers", headers=headers).json()["data"]
            operators = httpx.get(f"{server.url}{API}/operators", headers=headers).json()["data"]
            ids = (({"number": numbers[-1]["id"]} if numbers else {})
                   | ({"bob": operators[-1]["id"]} if operators else {}))
            time.sleep(0.2)

        out = server.cli("calls", "simulate", "--to", NUMBER, "--from", "+15105550199", "--caller-name", "Jane Doe",
                         "--answer-by", str(ids["bob"]), "--audio", str(audio), "--url", server.url).stdout
        assert f"<Number>{OPERATOR_PHONE}</Number>" in out and 'record="record-from-answer-dual"' in out
        assert f"{OPERATOR_PHONE} answers" in out and "<Hangup />" in out
        assert re.search(r"provider: recording RE[0-9a-f]{32} ready \(\d+ bytes\)", out)
        assert list((tmp_path / "data" / "sandbox-recordings").iterdir()) == []  # the carrier's copy is gone

        [recording] = httpx.get(f"{server.url}{API}/recordings", headers=headers).json()["data"]
        assert (recording["operator_id"], recording["recording_source"]) == (ids["bob"], "phone")
        assert recording["external_id"].startswith("CA") and recording["name"] == "Call from Jane Doe"
        public_id = recording["public_id"]
        deadline = time.monotonic() + 300
        while recording["status"] not in ("completed", "failed") and time.monotonic() < deadline:
            time.sleep(0.5)
            recording = httpx.get(f"{server.url}{API}/recordings/{public_id}", headers=headers).json()["data"]
        assert recording["status"] == "completed", recording

        segments = httpx.get(f"{server.url}{API}/recordings/{public_id}/transcription",
                             headers=headers).json()["data"]["segments"]
        by_speaker: dict[str, list[str]] = {}
        for segment in segments:
            by_speaker.setdefault(segment["speaker"], []).append(segment["text"])
        assert len(by_speaker) == 2  # caller and operator, one channel each
        texts = [" ".join(t) for t in by_speaker.values()]
        assert min(speech.wer(CALLER_SAYS, t) for t in texts) < 0.3
        assert min(speech.wer(OPERATOR_SAYS, t) for t in texts) < 0.3
        # the operator's leg is the recording's second channel: the operator is the agent, the caller a customer
        roles = {segment["channel"]: segment["role"] for segment in segments}
        assert roles == {0: "customer", 1: "agent"}

        summary = httpx.get(f"{server.url}{API}/recordings/{public_id}/summary", headers=headers).json()["data"]
        number = httpx.get(f"{server.url}{API}/virtual_numbers/{ids['number']}", headers=headers).json()["data"]
        assert number["stats"]["total_calls"] == 1 and number["stats"]["answered_calls"] == 1
        [call] = number["recent_calls"]
        assert (call["phone_number"], call["caller_name"], call["call_status"]) == ("+15105550199", "Jane Doe",
                                                                                    "completed")
        assert call["transcript_summary"] and call["transcript_summary"] == summary["summary"]

        rejected = server.cli("calls", "simulate", "--to", "+14155550199", "--from", "+15105550199",
                              "--url", server.url).stdout
        assert "<Reject />" in rejected and "/telephony/twilio/status" not in rejected
        unanswered = server.cli("calls", "simulate", "--to", NUMBER, "--from", "+15105550198", "--url",
                                server.url).stdout
        assert f"ringing {OPERATOR_PHONE}: no answer" in unanswered and "<Hangup />" in unanswered
        number = httpx.get(f"{server.url}{API}/virtual_numbers/{ids['number']}", headers=headers).json()["data"]
        assert (number["stats"]["total_calls"], number["stats"]["missed_calls"]) == (2, 1)
        assert number["recent_calls"][0]["call_status"] == "missed"
    finally:
        server.stop()
