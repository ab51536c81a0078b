"""A live call's messages and audio (callscope/live/protocol.py, audio.py): what is refused and why, and frames
decoded into the samples the recording keeps and the recogniser hears."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from callscope.live import protocol as p
from callscope.live.audio import MULAW, TrackAudio, decode
from tests.live_calls.sound import mulaw_encode


def test_mulaw_decodes_what_g711_encodes_within_its_quantisation() -> None:
    samples = np.linspace(-30000, 30000, 4001).astype(np.int16)
    (decoded,) = decode(mulaw_encode(samples), "mulaw", 1)
    step = np.maximum(np.abs(samples.astype(np.int32)) // 16, 8)  # μ-law's steps grow with the level
    assert np.all(np.abs(decoded.astype(np.int32) - samples) <= step)
    assert MULAW[0xFF] == 0 and MULAW[0x00] == -32124 and MULAW[0x80] == 32124  # G.711's ends and its zero


def test_pcm16_stereo_frames_split_into_channels() -> None:
    agent, customer = np.arange(0, 100, dtype=np.int16), -np.arange(0, 100, dtype=np.int16)
    frame = np.stack([agent, customer], axis=1).astype("<i2").tobytes()
    left, right = decode(frame, "pcm16", 2)
    assert np.array_equal(left, agent) and np.array_equal(right, customer)


def test_8khz_frames_become_16khz_without_a_seam_between_frames() -> None:
    t = np.arange(8000) / 8000
    tone = (np.sin(2 * np.pi * 440 * t) * 10000).astype(np.int16)
    track = TrackAudio(8000)
    out = np.concatenate([track.to_16k(tone[i:i + 160]) for i in range(0, 8000, 160)])  # 20 ms frames
    whole = TrackAudio(8000).to_16k(tone)
    assert len(out) == 16000 and np.allclose(out, whole, atol=1e-6)
    spectrum = np.abs(np.fft.rfft(out[1000:]))
    assert abs(np.argmax(spectrum) * 16000 / len(out[1000:]) - 440) < 2  # the tone, not an image of it


@pytest.mark.parametrize(("text", "started", "code", "says"), [
    ("{not json", False, p.INVALID_PAYLOAD, "Malformed JSON"),
    ('["start"]', False, p.INVALID_PAYLOAD, 'type is "start" or "stop"'),
    ('{"type": "stop"}', False, p.UNSUPPORTED_DATA, "stop before start"),
    ('{"type": "start", "encoding": "opus", "sample_rate": 8000}', False, p.INVALID_PAYLOAD, "encoding"),
    ('{"type": "start", "encoding": "pcm16", "sample_rate": 44100}', False, p.INVALID_PAYLOAD, "sample_rate"),
    ('{"type": "start", "encoding": "pcm16", "sample_rate": 8000, "channels": 3}', False, p.INVALID_PAYLOAD,
     "channels"),
    ('{"type": "start", "encoding": "pcm16", "sample_rate": 8000}', True, p.INVALID_PAYLOAD, "started already"),
])
def test_generic_messages_refused_say_why(text: str, started: bool, code: int, says: str) -> None:
    with pytest.raises(p.ProtocolError) as refused:
        p.generic_message(text, started)
    assert refused.value.code == code and says in refused.value.message


def test_a_start_message_names_the_audio() -> None:
    start = p.generic_message(json.dumps({"type": "start", "project_id": 3, "encoding": "mulaw",
                                          "sample_rate": 8000, "channels": 2}), False)
    assert isinstance(start, p.Start) and start.bytes_per_frame == 2 and start.project_id == 3


def test_twilio_messages_are_read_and_bad_ones_refused() -> None:
    media = p.twilio_message(json.dumps({"event": "media", "streamSid": "MZ1", "media": {
        "track": "inbound", "chunk": "2", "timestamp": "40", "payload": base64.b64encode(b"\xff" * 160).decode()}}))
    assert isinstance(media, p.TwilioMedia) and media.media.timestamp == 40 and media.media.payload == b"\xff" * 160
    assert isinstance(p.twilio_message('{"event": "mark", "mark": {"name": "x"}}'), p.TwilioOther)
    with pytest.raises(p.ProtocolError, match="payload"):
        p.twilio_message(json.dumps({"event": "media", "media": {"track": "inbound", "timestamp": "0",
                                                                  "payload": "%%%"}}))
    with pytest.raises(p.ProtocolError, match="callSid"):
        p.twilio_message(json.dumps({"event": "start", "start": {"callSid": "nope", "tracks": ["inbound"],
                                                                  "mediaFormat": {"encoding": "audio/x-mulaw",
                                                                                  "sampleRate": 8000,
                                                                                  "channels": 1}}}))
