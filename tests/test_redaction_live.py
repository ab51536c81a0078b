"""Redaction end to end through a real `callscope serve` (the embedded Whisper model, espeak-ng speech), on SQLite
and PostgreSQL: a project applied with `redaction` (every entity type, audio too) gets a call in which a customer
reads out a card number and an e-mail address; afterwards no original value appears in the REST bodies, the signed
webhook, the recording page's HTML or the list's search, and the served audio holds the fill where they were said
and the call as recorded elsewhere."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from callscope.analysis.stages.audio_redaction import fill_samples
from tests.analysis import speech
from tests.live import WebhookReceiver, start_server
from tests.pages.site import make_site, sign_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420),
              pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)]

AGENT = ["Thank you for calling Brightline Energy. Can I take the long number on your card please?",
         "Thank you. And your email address for the receipt?"]
CUSTOMER = ["Sure, my card number is 4111 1111 1111 1111.", "It is jane dot smith at brightmail dot com."]
# what must never be served, in any form the transcript or a read-out could hold it
SECRETS = ["4111", "1111", "four one one one", "jane", "smith", "brightmail"]
ENTITIES = ["payment_card", "bank_account", "national_id", "date_of_birth", "email", "phone_number", "person_name",
            "address"]


def stereo_call(path: Path) -> Path:
    agent = speech.make_call([0.4, AGENT[0], 5.5, AGENT[1], 4.5])
    customer = speech.make_call([5.0, CUSTOMER[0], 5.0, CUSTOMER[1], 0.6])
    n = max(len(agent.samples), len(customer.samples))
    return speech.write(path, [speech.pad_to(agent.samples, n), speech.pad_to(customer.samples, n)])


def s16(data: bytes) -> tuple[np.ndarray, int]:
    samples, rate = speech.read(data)
    return np.round(samples * 32768).astype(np.int64), rate


def leaks(text: str) -> list[str]:
    flat = re.sub(r"[\s,.-]", "", text.lower())
    return [s for s in SECRETS if s.lower() in text.lower() or re.sub(r"[\s.]", "", s.lower()) in flat]


@pytest.mark.parametrize("catalog", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_no_redacted_value_is_served_anywhere(tmp_path: Path, catalog: str, request) -> None:
    database = {"database_url": request.getfixturevalue("emptied_postgres_url")} if catalog == "postgres" else {}
    call = stereo_call(tmp_path / "call.wav")
    receiver = WebhookReceiver()
    server = start_server(tmp_path / "data", webhook_allow_http="true", webhook_allow_private_addresses="true",
                          analysis_executor="inline", dispatcher_poll_seconds="0.3", llm_enabled="false",
                          redaction_audio_fill="tone", **database)
    try:
        server.cli("webhooks", "new-secret", "--name", "hooks")
        site = make_site(server, tmp_path / "data", [("default", "ana@example.com", "Ana")], project={
            "apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "payments"},
            "spec": {"name": "Payments", "language": "en", "redaction": {"entities": ENTITIES},
                     "webhook": {"url": receiver.url, "signingSecretRef": {"name": "hooks"},
                                 "sections": ["metadata", "transcription", "goals", "summary"]}}})
        resp = site.api("POST", "/recordings", data={"project_id": str(site.project_id), "name": "payment call"},
                        files={"file": ("call.wav", call.read_bytes(), "audio/wav")})
        assert resp.status_code == 201, resp.text
        public_id = resp.json()["data"]["public_id"]
        assert resp.json()["data"]["audio_redaction"] == "pending"
        unserved = site.api("GET", f"/recordings/{public_id}/audio_url")
        assert unserved.status_code == 404
        assert unserved.json() == {"error": "Audio is not available until its redacted copy is stored"}

        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            recording = site.api("GET", f"/recordings/{public_id}").json()["data"]
            if recording["status"] in ("completed", "failed"):
                break
            time.sleep(0.5)
        assert recording["status"] == "completed", recording
        assert (recording["audio_redaction"], recording["audio_format"]) == ("done", "flac")

        bodies = {path: site.api("GET", f"/recordings/{public_id}{path}").text
                  for path in ("", "/transcription", "/results", "/summary")}
        transcript = json.loads(bodies["/transcription"])["data"]
        assert "[PAYMENT_CARD]" in bodies["/transcription"] and "[EMAIL]" in bodies["/transcription"]
        results = json.loads(bodies["/results"])["data"]
        assert results["redaction"]["counts"]["payment_card"] >= 1 and results["redaction"]["audio"] is True
        for path, body in bodies.items():
            assert not leaks(body), (path, leaks(body))

        deadline = time.monotonic() + 30
        while not receiver.deliveries and time.monotonic() < deadline:
            time.sleep(0.2)
        [(_, webhook)] = receiver.deliveries
        assert json.loads(webhook)["data"]["transcription"] == transcript
        assert not leaks(webhook.decode())

        client, _ = sign_in(site, "ana@example.com")
        page = client.get(f"/recordings/{public_id}")
        assert page.status_code == 200 and 'class="redacted"' in page.text
        assert "Redacted from this call and its audio: payment card (" in " ".join(page.text.split())
        assert not leaks(page.text)
        for q in ("4111", "jane", "smith"):  # the search finds no recording by a redacted value
            assert site.api("GET", "/recordings", params={"q": q}).json()["data"] == []
            assert "payment call" not in client.get("/recordings", params={"q": q}).text

        url = site.api("GET", f"/recordings/{public_id}/audio_url").json()["data"]["url"]
        served, rate = s16(httpx.get(url, timeout=30).content)
        original, _ = s16(call.read_bytes())
        assert served.shape[0] == 2 and rate == speech.RATE
        tone = np.round(fill_samples("tone", 0, served.shape[1], rate) * 32767).astype(np.int64)
        words = [w for s in transcript["segments"] for w in s["words"] if w["redacted"]]
        assert words
        for w in words:  # both channels hold the tone, nothing of the speech, over every redacted word
            a, b = w["start_ms"] * rate // 1000, w["end_ms"] * rate // 1000
            assert np.max(np.abs(served[:, a:b] - tone[a:b])) <= 1
        first = min(w["start_ms"] for w in words) - 1000  # before the first redaction: the call as recorded
        n = first * rate // 1000
        assert np.corrcoef(served[0, :n], original[0, :n])[0, 1] > 0.999
    finally:
        server.stop()
        receiver.stop()
