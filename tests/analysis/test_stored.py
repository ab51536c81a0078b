"""analysis.stored: a result's two stored documents, read back in the current format and in the first one (what
analyses completed before the result model was one stored), and the read-outs derived from them."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from callscope.analysis import readouts, stored
from callscope.analysis.readouts import Subject
from callscope.analysis.report import render
from callscope.analysis.result import RedactionSummary

# Format 1, as the analysis row and the transcript blob hold it for analyses completed before `format` existed.
RESULTS_V1 = {
    "duration_ms": 9000, "channels": 2, "language": "en",
    "speakers": [
        {"label": "speaker-1", "role": "agent", "role_confidence": 0.82, "role_evidence": ["spoke first"],
         "decided_by": "content", "operator_id": None, "operator_similarity": None, "talk_ms": 3000},
        {"label": "speaker-2", "role": "customer", "role_confidence": 0.82, "role_evidence": [],
         "decided_by": "content", "operator_id": None, "operator_similarity": None, "talk_ms": 2500},
    ],
    "pauses": [{"start_ms": 3000, "end_ms": 4500, "duration_ms": 1500, "long": False, "compliant": True,
                "after_dialogue_id": 0}],
    "pause_rules": {"long_pause_threshold_ms": 5000, "max_hold_ms": 120000, "min_pause_ms": 1000,
                    "hold_phrases": ["please hold"]},
    "characteristics": {"duration_ms": 9000, "talk_time_ms": 5500, "non_talk_time_ms": 3500, "speakers": [
        {"speaker": "speaker-1", "channel": 0, "talk_time_ms": 3000, "words": 6, "words_per_minute": 120.0,
         "interruptions": 0},
        {"speaker": "speaker-2", "channel": 1, "talk_time_ms": 2500, "words": 5, "words_per_minute": 120.0,
         "interruptions": 0}]},
    "goals": [{"goal_id": 1, "goal_name": "greeting", "met": True, "score": 1.0,
               "explanation": 'Met: at 0:00 the agent said "Thank you for calling."',
               "evidence": [{"dialogue_id": 0, "start_ms": 0, "quote": "Thank you for calling."}]}],
    "categories": [{"name": "address", "matched": True, "score": 1.0,
                    "evidence": [{"dialogue_id": 1, "start_ms": 4500, "quote": "My address changed."}]}],
    "extracted_data": [{"name": "refund_date", "type": "date", "value": "2024-03-12", "evidence": []},
                       {"name": "devices", "type": "number", "value": 3.0, "evidence": []}],
    "summary": "The customer asked to change the address.", "summary_language": "en",
    "models": [{"stage": "asr", "name": "whisper tiny.en", "version": "1"}],
    "stages": [{"name": "decode", "ran": True, "detail": "2 channel(s), 16 kHz"}],
}
TRANSCRIPT_V1 = {
    "language": "en", "duration_ms": 9000, "channels": 2, "speakers": RESULTS_V1["speakers"],
    "dialogue": [
        {"id": 0, "channel": 0, "speaker": "speaker-1", "start_ms": 0, "end_ms": 3000, "text": "Thank you for calling.",
         "words": [{"start_ms": 0, "end_ms": 500, "text": "Thank", "probability": 0.9}],
         "emotions": {"happy": 0.2, "neutral": 0.8, "calm": 0.0, "sad": 0.0, "angry": 0.0, "fearful": 0.0,
                      "surprised": 0.0, "disgust": 0.0}},
        {"id": 1, "channel": 1, "speaker": "speaker-2", "start_ms": 4500, "end_ms": 7000,
         "text": "My address changed.", "words": [], "emotions": {}},
    ],
}
RECORDING = SimpleNamespace(id=7, public_id="0193-abc", status="completed", language="en")


def test_the_first_format_reads_with_each_segment_taking_its_speakers_role():
    result = stored.read(RESULTS_V1, TRANSCRIPT_V1)
    assert [(s.id, s.speaker, s.role) for s in result.segments] == [(0, "speaker-1", "agent"),
                                                                     (1, "speaker-2", "customer")]
    assert result.segments[0].words[0].text == "Thank" and result.segments[0].emotions["neutral"] == 0.8
    assert result.goals[0].evidence[0].quote == "Thank you for calling."
    assert [f.value for f in result.extracted_data] == ["2024-03-12", 3.0]
    assert result.speakers[0].role_evidence == ["spoke first"] and result.quality_score == 1.0


def test_the_first_format_reads_out_in_the_public_shapes():
    result = stored.read(RESULTS_V1, TRANSCRIPT_V1)
    transcription = readouts.transcription(Subject.of(RECORDING), result).model_dump(mode="json")
    assert transcription["segments"][1] == {
        "id": 1, "speaker": "speaker-2", "role": "customer", "channel": 1, "start_ms": 4500, "end_ms": 7000,
        "text": "My address changed.", "words": [], "emotions": {}}
    assert transcription["speakers"][0] == {"label": "speaker-1", "role": "agent", "role_confidence": 0.82,
                                            "operator_id": None, "operator_similarity": None, "talk_ms": 3000}
    analyzed_at = datetime(2030, 1, 1, tzinfo=UTC)
    results = readouts.results(Subject.of(RECORDING), stored.read(RESULTS_V1), analyzed_at).model_dump(mode="json")
    # fields added since read as their defaults: an older goal applied, an older value has no confidence
    assert results["goals"] == [{**g, "applicable": True} for g in RESULTS_V1["goals"]] and results["pauses"] == [
        {"start_ms": 3000, "end_ms": 4500, "duration_ms": 1500, "compliant": True, "after_dialogue_id": 0,
         "long": False}]
    assert results["categories"] == RESULTS_V1["categories"]
    assert results["extracted_data"] == [{**v, "confidence": None} for v in RESULTS_V1["extracted_data"]]
    assert (results["recording_id"], results["analyzed_at"]) == (7, "2030-01-01T00:00:00Z")
    summary = readouts.summary(Subject.of(RECORDING), stored.read(RESULTS_V1)).model_dump(mode="json")
    assert summary == {"recording_id": 7, "public_id": "0193-abc", "status": "completed", "language": "en",
                       "summary": "The customer asked to change the address."}


def test_the_current_format_round_trips():
    result = stored.read(RESULTS_V1, TRANSCRIPT_V1)
    results, transcript = stored.documents(result)
    assert results["format"] == transcript["format"] == stored.FORMAT
    assert "segments" not in results and set(transcript) == {"format", "segments"}
    assert results["summary"] == result.summary and results["language"] == "en"  # the row keeps them in columns
    assert stored.read(results, transcript) == result
    assert stored.read(results).segments == []  # the transcript blob is only read for the transcript


def test_no_analysis_reads_out_empty():
    pending = Subject.of(SimpleNamespace(id=7, public_id="0193-abc", status="pending", language="de"))
    assert readouts.results(pending, None).model_dump() == {
        "recording_id": 7, "status": "pending", "goals": [], "pauses": [], "categories": [], "extracted_data": [],
        "speakers": [], "characteristics": None, "models": [], "redaction": None, "trackers": [],
        "analyzed_at": None, "live": None, "scorecards": []}
    assert readouts.transcription(pending, None).model_dump() == {
        "recording_id": 7, "public_id": "0193-abc", "status": "pending", "language": "de", "speakers": [],
        "segments": [], "redaction": None}
    assert readouts.summary(pending, None).summary is None


def test_a_completion_carries_the_documents_the_counters_and_the_read_outs_once_completed():
    result = stored.read(RESULTS_V1, TRANSCRIPT_V1)
    processing = SimpleNamespace(id=7, public_id="0193-abc", status="processing", language="en")
    done = stored.completion(result, processing)
    assert (done.results, done.transcript) == stored.documents(result)
    assert (done.dialogues_count, done.pauses_detected, done.goals_evaluated, done.quality_score) == (2, 1, True, 1.0)
    completed = Subject.of(processing, "completed")
    assert done.readouts == readouts.sections(completed, result)
    assert done.readouts["transcription"] == readouts.transcription(completed, result).model_dump(mode="json")
    assert done.readouts["summary"]["status"] == "completed"
    assert done.readouts["goals"] == readouts.results(completed, result).model_dump(mode="json")["goals"]
    assert done.redactions == {}  # no redaction asked for


def test_a_completion_counts_the_redacted_spans_and_the_report_shows_them_without_values():
    result = stored.read(RESULTS_V1, TRANSCRIPT_V1).model_copy(update={"redaction": RedactionSummary(
        entities=["payment_card", "email"], counts={"payment_card": 2, "email": 0})})
    done = stored.completion(result, SimpleNamespace(id=7, public_id="0193-abc", status="processing", language="en"))
    assert done.redactions == {"payment_card": 2, "email": 0}
    assert "  payment_card 2, email 0" in render(result).splitlines()
