"""analysis.speakers: agent/customer roles, voiceprint enrolment and operator identification; the catalog service."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from callscope.analysis.result import TranscriptSegment
from callscope.analysis.runtime.pipeline import Pipeline
from callscope.analysis.stages import speakers, vad
from callscope.analysis.types import Audio
from callscope.catalog import voiceprints
from callscope.catalog.db import Catalog
from callscope.config import Settings
from tests.analysis.speech import ESPEAK, SKIP_REASON, speak, write
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


def test_four_voices_without_evidence_have_one_agent_and_customers():
    dialogue = [seg(i, f"speaker-{i % 4 + 1}", i * 3000, i * 3000 + 2500, "The weather was lovely today.")
                for i in range(8)]
    out = speakers.identify_speakers(dialogue, stereo=False)
    assert [s.role for s in out] == ["agent", "customer", "customer", "customer"]
    assert all(s.role_confidence < 0.7 for s in out) and out[0].decided_by == "first-speaker"


def test_with_more_than_two_voices_a_voice_that_speaks_like_an_agent_is_one():
    dialogue = [
        seg(0, "speaker-1", 0, 2000, "Thank you for calling Acme, how can I help you?"),
        seg(1, "speaker-2", 2500, 5000, "I'm calling about my bill."),
        seg(2, "speaker-1", 5500, 7000, "Let me transfer you to billing."),
        seg(3, "speaker-3", 8000, 10000, "Billing, thanks for holding. How can I help?"),
        seg(4, "speaker-2", 10500, 12000, "I was charged twice."),
        seg(5, "speaker-4", 12500, 13000, "Yes, that's right."),
    ]
    out = {s.label: s for s in speakers.identify_speakers(dialogue, stereo=False)}
    assert {label: s.role for label, s in out.items()} == {"speaker-1": "agent", "speaker-2": "customer",
                                                          "speaker-3": "agent", "speaker-4": "customer"}
    assert out["speaker-3"].role_confidence > 0.9 and out["speaker-3"].decided_by == "content"
    # with two voices there is one agent, however agent-like the other sounds
    two = [s for s in dialogue if s.speaker in ("speaker-1", "speaker-3")]
    assert [s.role for s in speakers.identify_speakers(two, stereo=False)] == ["agent", "customer"]


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
    assert out["speaker-2"].decided_by == "operator-voice"
    assert out["speaker-2"].operator_similarity >= analyzer.voiceprint_threshold
    assert out["speaker-1"].role == "customer" and out["speaker-1"].operator_id is None


def test_voiceprints_of_another_model_are_not_compared(analyzer):
    ge2e = speakers.load_speaker_analyzer(Settings(voiceprint_model="ge2e"))
    assert analyzer.model.startswith("CAM++") and ge2e.model.startswith("GE2E") and ge2e.model != analyzer.model
    assert (analyzer.voiceprint_threshold, ge2e.voiceprint_threshold) == (0.72, 0.945)
    assert speakers.load_speaker_analyzer(Settings(voiceprint_threshold=0.8)).voiceprint_threshold == 0.8
    rng = np.random.default_rng(0)
    wav = rng.standard_normal(8 * 16000).astype(np.float32) * 0.1
    embedding = speakers.voice_embedding(ge2e.encoder, wav, [(0, 8000)])
    stored = speakers.KnownVoice(4, embedding[0], ge2e.model)
    # the same vector, compared under the GE2E key, is that operator; under the CAM++ key it is never compared
    assert speakers.identify(*embedding, [stored], ge2e.model, ge2e.voiceprint_threshold) == (4, 1.0)
    assert speakers.identify(*embedding, [stored], analyzer.model) == (None, None)


@needs_speech
def test_the_speakers_stage_says_when_voiceprints_of_another_model_were_skipped(analyzer, tmp_path):
    audio, _ = recording("en+f4", AGENT[:2])
    path = write(tmp_path / "call.wav", [audio.channels[0]])
    pipeline = Pipeline(Settings(llm_enabled=False, whisper_model="tiny.en"), speakers=analyzer, embedder=None)
    old = speakers.KnownVoice(2, np.ones(256, np.float32) / 16, "GE2E voice encoder (voice_encoder.onnx)@x")
    stages = {s.name: s.detail for s in pipeline.run(path, voices=[old]).stages}
    assert "1 voiceprint(s) enrolled with another speaker model were not compared: re-enrol" in stages["speakers"]


# --- the catalog service -----------------------------------------------------------------------


def test_voiceprints_are_stored_replaced_and_forgotten(tmp_path):
    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    catalog.migrate()
    now = datetime.now(UTC)
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


def test_a_long_speakers_voice_is_compared_by_speech_taken_evenly_over_the_call():
    spans = [(k * 1000, k * 1000 + 500) for k in range(1000)]  # 500 s of speech over 1000 s
    taken = speakers.spread(spans, 120_000)
    assert 100_000 <= sum(e - s for s, e in taken) <= 120_000
    assert taken[0] == spans[0] and taken[-1][0] > 990_000  # from the start of the call to its end
    assert speakers.spread(spans[:10], 120_000) == spans[:10]
