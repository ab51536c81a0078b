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

from callscope.analysis.stages import dtmf
from callscope.analysis.stages.audio_redaction import fill_samples
from callscope.analysis.stages.decode import decode
from tests.analysis import speech
from tests.analysis.test_redaction_dtmf import keypad
from tests.live import WebhookReceiver, start_server
from tests.pages.site import make_site, sign_in, upload

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


# A phone-band call (8 kHz μ-law, as carriers record) in which the customer reads the card briskly after the
# agent's request, then types it on the keypad. Whisper base hears the first group as words ("Yes, it's all I'm too
# big, [PAYMENT_CARD]" in precise mode): strict mode takes the answer whole.
CARD = "4526018159083012"  # Luhn-valid
PHONE_AGENT = ["Can I have the long number on the card please?", "Thank you. Please type it on your keypad too."]
PHONE_CUSTOMER = "Yes, it's 4 5 2 6, 0 1 8 1, 5 9 0 8, 3 0 1 2."
DIGIT_WORDS = {w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine".split())} | {
    "oh": "0", "o": "0", "for": "4", "to": "2", "too": "2", "won": "1", "ate": "8"}
ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$")
MADE_UP = re.compile(r"(?:^|_)(?:id|ids|url|href|etag|sha256|digest)$", re.IGNORECASE)  # keys of server-made strings


def phone_call(path: Path) -> Path:
    rate = 8000
    agent = speech.make_call([0.4, PHONE_AGENT[0], 4.2, PHONE_AGENT[1], 0.3])
    customer = np.concatenate([speech.silence(3.0), speech.speak(PHONE_CUSTOMER, speed=240)])
    tones = keypad(CARD, -20)
    n = max(len(agent.samples), len(customer)) + len(tones)
    agent_line = speech.pad_to(agent.samples, n)
    customer_line = np.concatenate([speech.pad_to(customer, n - len(tones)), tones])
    return speech.write(path, [agent_line, customer_line], rate=rate, codec="pcm_mulaw")


def digits_said(text: str) -> str:
    """The digits a text holds, written or said in words, with what stands between them dropped: "for five, 2 6"
    -> "4526"; anything else between digits ends a run ("|")."""
    out = []
    for token in re.findall(r"[a-z]+|\d+|[^\sa-z\d]", text.lower()):
        if token.isdigit():
            out.append(token)
        elif token in DIGIT_WORDS:
            out.append(DIGIT_WORDS[token])
        elif token not in {",", ".", "-", "/", "and"}:
            out.append("|")
    return "".join(out)


def card_runs(document: object) -> list[str]:
    """Every 4 consecutive digits of the card held by a string of a JSON document (timestamps, and identifiers and
    addresses the server made up, aside: a random "rec_8f0181ab" is no leak)."""
    strings: list[str] = []

    def walk(node: object, key: str = "") -> None:
        if isinstance(node, dict):
            for name, value in node.items():
                walk(value, str(name))
        elif isinstance(node, list):
            for value in node:
                walk(value, key)
        elif isinstance(node, str) and not ISO_TIME.match(node) and not MADE_UP.search(key):
            strings.append(node)

    walk(document)
    said = "|".join(digits_said(s) for s in strings)
    return sorted({CARD[i:i + 4] for i in range(len(CARD) - 3) if CARD[i:i + 4] in said})


@pytest.mark.parametrize("catalog", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_project_switched_to_strict_and_reanalysed_leaves_no_run_of_the_card_and_no_keypad_tone(
        tmp_path: Path, catalog: str, request) -> None:
    """Issue 42 through `callscope serve`: the project is applied in precise mode, then applied again in strict and
    the call reanalysed: afterwards no 4 consecutive digits of the card are in the transcript, the results, the
    webhook or the page, the served audio holds no keypad tone a DTMF decoder reads, and the result counts them."""
    database = {"database_url": request.getfixturevalue("emptied_postgres_url")} if catalog == "postgres" else {}
    call = phone_call(tmp_path / "call.wav")
    receiver = WebhookReceiver()
    server = start_server(tmp_path / "data", webhook_allow_http="true", webhook_allow_private_addresses="true",
                          analysis_executor="inline", dispatcher_poll_seconds="0.3", llm_enabled="false",
                          **database)

    def project(mode: str) -> dict:
        return {"apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "payments"},
                "spec": {"name": "Payments", "language": "en",
                         "redaction": {"entities": ["payment_card", "date_of_birth"], "mode": mode},
                         "webhook": {"url": receiver.url, "signingSecretRef": {"name": "hooks"},
                                     "sections": ["metadata", "transcription", "summary"]}}}

    def analysed(public_id: str, mode: str) -> dict:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            results = site.api("GET", f"/recordings/{public_id}/results")
            recording = site.api("GET", f"/recordings/{public_id}").json()["data"]
            if recording["status"] == "failed":
                raise AssertionError(recording)
            if results.status_code == 200 and (results.json()["data"].get("redaction") or {}).get("mode") == mode \
                    and recording["status"] == "completed" and recording.get("stage") != "reanalyzing":
                return results.json()["data"]
            time.sleep(0.5)
        raise AssertionError(f"no {mode} analysis of {public_id}")

    try:
        server.cli("webhooks", "new-secret", "--name", "hooks")
        site = make_site(server, tmp_path / "data", [("default", "ana@example.com", "Ana")], project=project("precise"))
        public_id = upload(site, call, "card call")
        precise = analysed(public_id, "precise")
        assert precise["redaction"]["tones"] == len(CARD)  # keypad tones go from the audio in either mode

        (tmp_path / "strict.yaml").write_text(json.dumps(project("strict")))
        server.cli("apply", "-f", str(tmp_path / "strict.yaml"))
        deadline = time.monotonic() + 30
        while site.api("GET", f"/projects/{site.project_id}").json()["data"]["redaction"]["mode"] != "strict":
            assert time.monotonic() < deadline, "the strict project was not applied"
            time.sleep(0.2)
        server.cli("reanalyze", public_id)
        strict = analysed(public_id, "strict")

        transcript = site.api("GET", f"/recordings/{public_id}/transcription").json()["data"]
        said = " ".join(s["text"] for s in transcript["segments"])
        answer = [s["text"] for s in transcript["segments"] if s["start_ms"] < 7000 and "card" not in s["text"]]
        assert [re.sub(r"[\s.,]", "", a) for a in answer] == ["[PAYMENT_CARD]"], said  # the answer whole
        assert card_runs(transcript) == [] and card_runs(strict) == [], said
        summary = site.api("GET", f"/recordings/{public_id}/summary").json()
        assert card_runs(summary) == []
        assert strict["redaction"]["tones"] == len(CARD)

        deadline = time.monotonic() + 30
        while len(receiver.deliveries) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(receiver.deliveries) == 2  # the first analysis's and the reanalysis's
        assert card_runs(json.loads(receiver.deliveries[-1][1])) == []
        client, _ = sign_in(site, "ana@example.com")
        page = client.get(f"/recordings/{public_id}")
        assert page.status_code == 200 and not card_runs([re.sub(r"<[^>]+>", " ", page.text)])

        url = site.api("GET", f"/recordings/{public_id}/audio_url").json()["data"]["url"]
        served = tmp_path / "served.flac"
        served.write_bytes(httpx.get(url, timeout=30).content)
        assert dtmf.detect(decode(served)) == []
        samples, rate = s16(served.read_bytes())
        words = [w for s in transcript["segments"] for w in s["words"] if w["redacted"]]
        assert words
        tone = np.round(fill_samples("tone", 0, samples.shape[1], rate) * 32767).astype(np.int64)
        for w in words:  # the strict copy is served: the tone over every word strict redacted, on both channels
            a, b = w["start_ms"] * rate // 1000, w["end_ms"] * rate // 1000
            assert np.max(np.abs(samples[:, a:b] - tone[a:b])) <= 1
    finally:
        server.stop()
        receiver.stop()
