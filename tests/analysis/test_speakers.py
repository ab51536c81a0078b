"""analysis.speakers: agent/customer roles, voiceprint enrolment and operator identification; the catalog service."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from callscope.analysis import speakers, vad
from callscope.analysis.result import TranscriptSegment
from callscope.analysis.types import Audio
from callscope.catalog import voiceprints
from callscope.catalog.db import Catalog
from callscope.config import Settings
from tests.analysis.speech import ESPEAK, SKIP_REASON, speak
from tests.analysis.voices import AGENT, CUSTOMER

needs_speech = pytest.mark.skipif(ESPEAK is None, reason=SKIP_REASON)


def seg(id: int, speaker: str, start: int, end: int, text: str, channel: int = 0) -> TranscriptSegment:
    return TranscriptSegment(id=id, channel=channel, speaker=speaker, start_ms=start, end_ms=end, text=text)


# --- roles -------------------------------------------------------------------------------------


def test_greeting_makes_the_agent_even_when_the_customer_speaks_first():
    dialogue = [
        seg(0, "speaker-1", 0, 1500, "Hello? I'm calling about my bill."),
        seg(1, "speaker-2", 1800, 4000, "Thank you for calling Acme, how can I help you today?"),
        seg(2, "speaker-1", 4200, 6000, "I would like to change my account address."),
    ]
    out = {s.label: s for s in speakers.identify_speakers(dialogue, stereo=False)}
    assert out["speaker-2"].role == "agent" and out["speaker-1"].role == "customer"
    assert out["speaker-2"].role_confidence > 0.95 and out["speaker-2"].decided_by == "content"
    assert any("thank you for calling" in e for e in out["speaker-2"].role_evidence)
    assert "spoke first" in out["speaker-1"].role_evidence
    assert out["speaker-1"].talk_ms == 1500 + 1800 and out["speaker-2"].operator_id is None


def test_without_content_the_weak_priors_decide_with_low_confidence():
    dialogue = [seg(0, "speaker-1", 0, 1000, "Hello.", channel=0), seg(1, "speaker-2", 1200, 2000, "Hi.", channel=1)]
    out = speakers.identify_speakers(dialogue, stereo=True)
    assert [(s.label, s.role) for s in out] == [("speaker-1", "agent"), ("speaker-2", "customer")]
    assert 0.6 < out[0].role_confidence < 0.9 and out[0].decided_by in ("first-speaker", "channel")
    # the channel convention is configurable: with the agent on channel 1 the two priors cancel out
    out = speakers.identify_speakers(dialogue, stereo=True, agent_channel=1)
    assert [s.role for s in out] == ["unknown", "unknown"] and out[0].role_confidence == 0.5
    assert [s.decided_by for s in out] == ["none", "none"]


def test_one_speaker_alone():
    assert speakers.identify_speakers([seg(0, "speaker-1", 0, 900, "The weather is lovely.")], stereo=False)[0].role \
        == "unknown"
    only = speakers.identify_speakers([seg(0, "speaker-1", 0, 900, "Please hold, let me check.")], stereo=False)
    assert only[0].role == "agent" and only[0].role_confidence > 0.9
    assert speakers.identify_speakers([], stereo=False) == []


def test_phrases_match_whole_words_only():
    assert speakers.phrase_score("Thank you for calling!")[0] > 0
    assert speakers.phrase_score("I would like to pay my bills")[0] < 0
    assert speakers.phrase_score("my billing")[0] == 0  # "my bill" is not in "my billing"


# --- voiceprints on synthetic voices -----------------------------------------------------------


@pytest.fixture(scope="module")
def analyzer():
    return speakers.load_speaker_analyzer(Settings())


def recording(voice: str, sentences: list[str]) -> tuple[Audio, list]:
    wav = np.concatenate([np.concatenate([speak(text, voice), np.zeros(4000, np.float32)]) for text in sentences])
    audio = Audio(channels=(wav,))
    return audio, vad.detect_speech(audio, 0)


@needs_speech
def test_enrolment_needs_ten_seconds(analyzer):
    audio, regions = recording("en-us+m3", AGENT[:1])
    with pytest.raises(speakers.EnrollmentError, match=r"at least 10 s of speech; this recording has \d\.\d s"):
        analyzer.enroll(audio, regions)


@needs_speech
def test_known_voice_is_identified_and_unknown_stays_unknown(analyzer):
    known = []
    for operator_id, voice in ((7, "en-us+m3"), (8, "en+f4")):
        voiceprint = analyzer.enroll(*recording(voice, AGENT[:3]))
        assert voiceprint.speech_ms >= speakers.ENROLL_MIN_MS and voiceprint.model == analyzer.model
        assert np.linalg.norm(voiceprint.embedding) == pytest.approx(1.0, abs=1e-5)
        known.append(speakers.KnownVoice(operator_id, voiceprint.embedding, voiceprint.model))

    def probe(voice: str, sentences: list[str]):
        audio, regions = recording(voice, sentences)
        return speakers.voice_embedding(analyzer.encoder, audio.channels[0], [(r.start_ms, r.end_ms) for r in regions])

    threshold = analyzer.voiceprint_threshold
    same = probe("en-us+m3", [CUSTOMER[0], CUSTOMER[3]])  # other sentences, >= 5 s
    assert speakers.identify(*same, known, analyzer.model, threshold)[0] == 7
    stranger = probe("en-us+klatt", [CUSTOMER[0], CUSTOMER[3]])
    operator_id, similarity = speakers.identify(*stranger, known, analyzer.model, threshold)
    assert operator_id is None and similarity is not None and similarity < threshold
    short = probe("en-us+m3", [CUSTOMER[1]])  # under 5 s: not enough to identify
    assert short[1] < speakers.IDENTIFY_MIN_MS and speakers.identify(*short, known, analyzer.model) == (None, None)
    assert speakers.identify(*same, known, "another-model@1") == (None, None)  # other encoders' prints are ignored


@needs_speech
def test_stereo_call_agent_found_by_voice(analyzer):
    enrolled = analyzer.enroll(*recording("en+f4", AGENT[:3]))
    agent, _ = recording("en+f4", [CUSTOMER[0], CUSTOMER[3]])  # the operator, saying customer-like things
    customer, _ = recording("en-us", [AGENT[3]])
    n = max(len(agent.channels[0]), len(customer.channels[0]))
    audio = Audio(channels=(np.pad(customer.channels[0], (0, n - len(customer.channels[0]))),
                            np.pad(agent.channels[0], (0, n - len(agent.channels[0])))))
    dialogue = [seg(0, "speaker-1", 0, n * 1000 // 16000 - 10, AGENT[3]),
                seg(1, "speaker-2", 0, n * 1000 // 16000 - 10, CUSTOMER[0] + " " + CUSTOMER[3], channel=1)]
    out = {s.label: s for s in analyzer.speakers(audio, dialogue, [speakers.KnownVoice(3, enrolled.embedding,
                                                                                       enrolled.model)])}
    assert out["speaker-2"].operator_id == 3 and out["speaker-2"].role == "agent"
    assert out["speaker-2"].decided_by == "operator-voice" and out["speaker-2"].operator_similarity >= 0.945
    assert out["speaker-1"].role == "customer" and out["speaker-1"].operator_id is None


# --- the catalog service -----------------------------------------------------------------------


def test_voiceprints_are_stored_replaced_and_forgotten(tmp_path):
    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    catalog.migrate()
    now = datetime.now(timezone.utc)
    vector = np.random.default_rng(0).random(256).astype(np.float32)
    first = vector / np.linalg.norm(vector)
    catalog.change(voiceprints.save, "acme", 5, "enc@1", first, 12_000, now)
    catalog.change(voiceprints.save, "other", 5, "enc@1", first, 12_000, now)
    rows = catalog.query(voiceprints.of_account, "acme")
    assert [(v.operator_id, v.model) for v in rows] == [(5, "enc@1")]
    np.testing.assert_array_equal(voiceprints.embedding(rows[0]), first)
    catalog.change(voiceprints.save, "acme", 5, "enc@2", first[::-1].copy(), 15_000, now)
    assert [v.model for v in catalog.query(voiceprints.of_account, "acme")] == ["enc@2"]  # re-enrolment replaces
    assert catalog.query(voiceprints.of_account, "acme", model="enc@1") == []
    assert catalog.change(voiceprints.forget, "acme", 5) and not catalog.change(voiceprints.forget, "acme", 5)
    assert len(catalog.query(voiceprints.of_account, "other")) == 1
