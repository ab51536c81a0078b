"""A call's recording comes from where the provider's own configuration says (Twilio: its API base and the
RecordingSid; the sandbox: its recordings folder), never from the URL a recording callback names, so the provider's
credentials go nowhere else. Both providers, on SQLite and PostgreSQL."""

from __future__ import annotations

import re

import pytest
from pytest_httpserver import HTTPServer
from sqlalchemy import select

from callscope.catalog.tables import Recording
from callscope.telephony.sandbox import SandboxProvider
from tests.audio_samples import make_audio
from tests.telephony.webhook_world import (  # noqa: F401 - fixtures
    ACCOUNT_PATH,
    CALLER,
    SID,
    TOKEN,
    TWILIO_AUTH,
    carrier,
    catalog_settings,
    new_sid,
    settings,
)


@pytest.fixture(params=["twilio", "sandbox"])
def provider_settings(request, httpserver: HTTPServer) -> dict:
    if request.param == "sandbox":
        return {"number_provider": "sandbox"}
    return {"number_provider": "twilio", "twilio_account_sid": SID, "twilio_auth_token": TOKEN,
            "twilio_base_url": httpserver.url_for("").rstrip("/")}


@pytest.fixture
def foreign():
    """A host a webhook names: it would serve audio to anyone, and must never be asked."""
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


@pytest.fixture
def wav(tmp_path) -> bytes:
    return make_audio(tmp_path / "call.wav", "wav", seconds=1.0, channels=2).read_bytes()


def _held_by_the_provider(carrier, httpserver: HTTPServer, recording_sid: str, wav: bytes, tmp_path) -> None:
    provider = carrier.runtime.ctx.provider
    if isinstance(provider, SandboxProvider):
        (tmp_path / "held.wav").write_bytes(wav)
        provider.add_recording(recording_sid, tmp_path / "held.wav")
    else:
        httpserver.expect_oneshot_request(f"{ACCOUNT_PATH}/Recordings/{recording_sid}.wav",
                                          headers={"Authorization": TWILIO_AUTH}).respond_with_data(
            wav, content_type="audio/x-wav")


async def _answered_call(carrier, **form: str) -> str:
    call_sid = await carrier.call(**form)
    resp = await carrier.post("/telephony/twilio/dial", {"CallSid": call_sid, "DialCallStatus": "completed",
                                                         "DialCallDuration": "5"}, {"attempt": "0"})
    assert resp.status_code == 200, resp.text
    return call_sid


def _recorded(carrier, call_sid: str, recording_sid: str, url: str):
    return carrier.post("/telephony/twilio/recording", {
        "CallSid": call_sid, "RecordingSid": recording_sid, "RecordingStatus": "completed", "RecordingChannels": "2",
        "RecordingDuration": "1", "RecordingUrl": url}, {"call": call_sid})


def _stored(carrier, call_sid: str) -> list[Recording]:
    with carrier.runtime.catalog.session() as session:
        return list(session.scalars(select(Recording).where(Recording.external_id == call_sid)))


async def test_a_recording_callback_never_fetches_the_url_it_names(carrier, httpserver, foreign, wav, tmp_path):
    foreign.expect_request(re.compile(".*")).respond_with_data(wav, content_type="audio/x-wav")
    call_sid = await _answered_call(carrier)
    recording_sid = new_sid("RE")
    _held_by_the_provider(carrier, httpserver, recording_sid, wav, tmp_path)
    resp = await _recorded(carrier, call_sid, recording_sid,
                           foreign.url_for(f"/2010-04-01/Accounts/{SID}/Recordings/{recording_sid}"))
    assert resp.status_code == 204, resp.text
    assert foreign.log == []
    [stored] = _stored(carrier, call_sid)
    assert stored.name == f"Call from {CALLER}" and stored.recording_source == "phone"


async def test_a_recording_the_provider_does_not_hold_is_refused_and_not_fetched_elsewhere(carrier, foreign, wav):
    foreign.expect_request(re.compile(".*")).respond_with_data(wav, content_type="audio/x-wav")
    call_sid = await _answered_call(carrier)
    recording_sid = new_sid("RE")
    resp = await _recorded(carrier, call_sid, recording_sid, foreign.url_for(f"/{recording_sid}.wav"))
    assert resp.status_code == 422 and set(resp.json()) == {"errors"}
    assert foreign.log == [] and _stored(carrier, call_sid) == []


async def test_a_caller_name_as_long_as_its_column_still_names_the_recording(carrier, httpserver, wav, tmp_path):
    call_sid = await _answered_call(carrier, CallerName="J" * 255)
    recording_sid = new_sid("RE")
    _held_by_the_provider(carrier, httpserver, recording_sid, wav, tmp_path)
    resp = await _recorded(carrier, call_sid, recording_sid, "https://api.twilio.com/ignored")
    assert resp.status_code == 204, resp.text
    [stored] = _stored(carrier, call_sid)
    assert stored.name == ("Call from " + "J" * 255)[:255]
