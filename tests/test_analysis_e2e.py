"""End to end: real speech uploaded through the REST API to a real `callscope serve` (Ray executor, the embedded
Whisper model) is analysed and completed, its transcript, results and summary are served, and the customer's
endpoint receives one signed recording.analyzed event that it verifies with the project's secret."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from callscope import webhook_signing
from tests.analysis import speech
from tests.live import WebhookReceiver, start_server

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray"), pytest.mark.timeout(300),
              pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)]

API = "/api/v1/public"
AGENT = "Thank you for calling customer service."
CUSTOMER = "I would like to change the address on my account."


def test_upload_is_analysed_on_ray_and_the_signed_webhook_arrives(tmp_path: Path) -> None:
    agent = speech.make_call([0.4, AGENT, 3.2])
    customer = speech.make_call([3.0, CUSTOMER, 0.4])
    n = max(len(agent.samples), len(customer.samples))
    audio = speech.write(tmp_path / "call.wav", [speech.pad_to(agent.samples, n), speech.pad_to(customer.samples, n)])
    receiver = WebhookReceiver()
    server = start_server(tmp_path / "data", webhook_allow_http="true", webhook_allow_private_addresses="true",
                          ray_num_cpus="2", ray_object_store_mb="128", dispatcher_poll_seconds="0.3")
    try:
        key = server.new_key("e2e")
        headers = {"Authorization": f"Bearer {key}"}
        secret = server.cli("webhooks", "new-secret", "--name", "hooks").stdout.strip().splitlines()[-1]
        assert secret.startswith("whsec_")
        project = tmp_path / "project.yaml"
        project.write_text(json.dumps({
            "apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "support"},
            "spec": {"name": "Support", "language": "en", "longPauseThresholdSeconds": 2,
                     "webhook": {"url": receiver.url, "sections": ["metadata", "transcription", "goals"],
                                 "signingSecretRef": {"name": "hooks"}}}}))
        server.cli("apply", "-f", str(project))
        project_id = None
        deadline = time.monotonic() + 30
        while project_id is None and time.monotonic() < deadline:  # the embedded operator numbers the project
            listed = httpx.get(f"{server.url}{API}/projects", headers=headers).json()["data"]
            project_id = next((p["id"] for p in listed if p["name"] == "Support"), None)
            time.sleep(0.2)
        assert project_id is not None

        resp = httpx.post(f"{server.url}{API}/recordings", headers=headers,
                          data={"project_id": str(project_id), "external_id": "crm-1"},
                          files={"file": ("call.wav", audio.read_bytes(), "audio/wav")}, timeout=30)
        assert resp.status_code == 201, resp.text
        public_id = resp.json()["data"]["public_id"]
        assert resp.json()["data"]["status"] == "pending"

        seen = []
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            recording = httpx.get(f"{server.url}{API}/recordings/{public_id}", headers=headers).json()["data"]
            seen.append((recording["status"], recording["stage"], recording["progress"]))
            if recording["status"] in ("completed", "failed"):
                break
            time.sleep(0.3)
        assert recording["status"] == "completed", recording
        statuses = [s for s, _, _ in seen]
        assert statuses == sorted(statuses, key=["pending", "processing", "completed"].index)  # never backwards
        assert recording["dialogues_count"] >= 2 and recording["progress"] == 100

        transcript = httpx.get(f"{server.url}{API}/recordings/{public_id}/transcription", headers=headers).json()
        segments = transcript["data"]["segments"]
        by_speaker = {}
        for segment in segments:
            by_speaker.setdefault(segment["speaker"], []).append(segment["text"])
        assert len(by_speaker) == 2  # one speaker per channel
        texts = sorted(" ".join(t) for t in by_speaker.values())
        assert min(speech.wer(AGENT, t) for t in texts) < 0.3 and min(speech.wer(CUSTOMER, t) for t in texts) < 0.3
        assert all(s["words"] and s["end_ms"] > s["start_ms"] for s in segments)
        results = httpx.get(f"{server.url}{API}/recordings/{public_id}/results", headers=headers).json()["data"]
        assert results["status"] == "completed" and isinstance(results["pauses"], list)
        assert any(m["stage"] == "asr" for m in results["models"])

        deadline = time.monotonic() + 30
        while not receiver.deliveries and time.monotonic() < deadline:
            time.sleep(0.2)
        [(received, body)] = receiver.deliveries
        webhook_signing.verify(secret, received, body, now=time.time())
        event = json.loads(body)
        assert event["type"] == "recording.analyzed"
        data = event["data"]
        assert (data["public_id"], data["status"], data["external_id"]) == (public_id, "completed", "crm-1")
        assert data["metadata"]["dialogues_count"] == recording["dialogues_count"]
        assert data["transcription"] == transcript["data"] and data["goals"] == results["goals"]  # one shape
        assert np.isclose(data["metadata"]["duration_ms"], recording["duration_ms"])

        listed = json.loads(server.cli("webhooks", "list", "-o", "json").stdout)
        assert [(e["state"], e["attempts"], e["last_status_code"]) for e in listed] == [("delivered", 1, 200)]
    finally:
        server.stop()
        receiver.stop()
