"""The redaction step (analysis/stages/redaction.py `redact`, `redact_fields`) and its place in the pipeline: the
spans' words read as one token in the text, the words flagged with their times kept, the counts, the fields rule
(a card keeps its last four digits), and every later stage, the language model's prompts included, reading only the
redacted transcript. Synthetic transcripts; the pipeline runs on a tone with a scripted transcriber and language
model (no real model)."""

from __future__ import annotations

import json
from datetime import date

import pytest

from callscope.analysis.readouts import Subject, sections
from callscope.analysis.report import render
from callscope.analysis.result import (
    AnalysisResult,
    Evidence,
    ExtractedValue,
    ModelUsed,
    TranscriptSegment,
    TranscriptWord,
)
from callscope.analysis.runtime.pipeline import Pipeline
from callscope.analysis.stages.redaction import ENTITY_TYPES, EntityType, redact, redact_fields, token
from callscope.analysis.stages.timing import UNHEARD_REACH_MS
from callscope.analysis.stored import documents, read
from callscope.config import Settings
from callscope.resources.kinds import ExtractedField, Goal, ProjectSpec, Redaction, RedactionEntity
from callscope.statuses import RecordingStatus
from tests.analysis import speech
from tests.analysis.transcripts import call
from tests.audio_samples import make_audio

AGENT, CUSTOMER = "speaker-1", "speaker-2"
CARD = "4526018159083012"  # a Visa number passing Luhn
OTHER_CARD = "5555555555554444"  # a Mastercard test number
EMAIL = "tom.becker@example.com"


def spoken(digits: str) -> str:
    names = "zero one two three four five six seven eight nine".split()
    return " ".join(names[int(d)] for d in digits)


CARD_CALL = call((AGENT, "Thanks Tom. Can I take the card number please?"),
                 (CUSTOMER, f"Sure, it's {CARD}, and my email is {EMAIL}."),
                 (AGENT, "Thank you, that's all done."))


# --- the text and the words ---------------------------------------------------------------------------------


def test_a_span_reads_as_one_token_and_its_words_are_flagged_with_their_times():
    redaction = redact(CARD_CALL, ["payment_card", "email"])
    customer = redaction.segments[1]
    assert customer.text == "Sure, it's [PAYMENT_CARD], and my email is [EMAIL]."
    card_word, email_word = customer.words[2], customer.words[7]
    assert (card_word.text, card_word.redacted, card_word.entity) == (" [PAYMENT_CARD],", True, "payment_card")
    assert (email_word.text, email_word.redacted, email_word.entity) == (" [EMAIL].", True, "email")
    original = CARD_CALL[1].words
    assert [(w.start_ms, w.end_ms) for w in customer.words] == [(w.start_ms, w.end_ms) for w in original]
    assert [w.redacted for w in customer.words] == [False, False, True, False, False, False, False, True]
    assert all(w.entity is None for w in customer.words if not w.redacted)
    assert redaction.segments[0] == CARD_CALL[0] and redaction.segments[2] == CARD_CALL[2]  # nothing said: as is
    assert CARD not in json.dumps([s.model_dump(mode="json") for s in redaction.segments])


def test_a_span_of_many_words_is_one_token_its_other_words_empty_and_still_timed():
    segments = call((AGENT, "What's the long number on the card?"), (CUSTOMER, f"It's {spoken(CARD)}. Thanks."))
    redacted = redact(segments, [EntityType.PAYMENT_CARD]).segments[1]
    assert redacted.text == "It's [PAYMENT_CARD]. Thanks."
    span = redacted.words[1:17]
    assert [w.text for w in span] == [" [PAYMENT_CARD]."] + [""] * 15
    assert all(w.redacted and w.entity == "payment_card" for w in span)
    assert [w.start_ms for w in redacted.words] == [w.start_ms for w in segments[1].words]
    assert "".join(w.text for w in redacted.words).strip() == redacted.text  # the words still make the text
    assert len(redacted.words) == len(segments[1].words)  # word counts (characteristics) unchanged


def test_only_the_requested_entities_are_taken_out():
    redaction = redact(CARD_CALL, ["email"])
    assert redaction.segments[1].text == f"Sure, it's {CARD}, and my email is [EMAIL]."
    assert redaction.summary.model_dump() == {
        "entities": ["email"], "counts": {"email": 1}, "audio": False, "mode": "precise", "tones": 0, "unheard": [],
        "found_by": {"email": {"words": 1, "request": 0, "request_meaning": 0, "digit_run": 0, "value_window": 0,
                               "spelled": 0, "email_shape": 0, "low_confidence": 0}}}


def test_a_segment_without_word_timings_has_its_text_redacted():
    segments = [TranscriptSegment(id=0, speaker=CUSTOMER, channel=1, start_ms=0, end_ms=4000,
                                  text=f"the card is {CARD} ok")]
    redacted = redact(segments, ["payment_card"]).segments[0]
    assert redacted.text == "the card is [PAYMENT_CARD] ok" and redacted.words == []


def test_the_summary_counts_the_spans_of_each_requested_type_and_holds_no_value():
    segments = call((AGENT, "Can I take your name and the card number?"),
                    (CUSTOMER, f"My name is Tom Becker and the card is {CARD}."),
                    (AGENT, f"Thanks Tom, the card is {CARD}, is that right?"))
    redaction = redact(segments, ["payment_card", "person_name", "phone_number"])
    assert redaction.summary.entities == ["payment_card", "person_name", "phone_number"]
    assert redaction.summary.counts == {"payment_card": 2, "person_name": 2, "phone_number": 0}
    dumped = json.dumps(redaction.summary.model_dump())
    assert CARD not in dumped and "Becker" not in dumped and "3012" not in dumped
    assert redaction.segments[2].text == "Thanks [PERSON_NAME], the card is [PAYMENT_CARD], is that right?"


def test_tokens_and_the_resource_model_name_every_entity_type():
    assert {token(e) for e in ENTITY_TYPES} == {"[PAYMENT_CARD]", "[BANK_ACCOUNT]", "[NATIONAL_ID]",
                                                "[DATE_OF_BIRTH]", "[EMAIL]", "[PHONE_NUMBER]", "[PERSON_NAME]",
                                                "[ADDRESS]"}
    assert set(RedactionEntity.__args__) == {e.value for e in ENTITY_TYPES}


def test_redacted_words_are_stored_and_older_documents_still_read():
    segments = redact(CARD_CALL, ["payment_card"]).segments
    result = AnalysisResult.model_validate({
        "duration_ms": 9000, "channels": 2, "language": "en", "speakers": [], "segments": segments, "pauses": [],
        "pause_rules": {}, "characteristics": {"duration_ms": 9000, "talk_time_ms": 0, "non_talk_time_ms": 0,
                                               "speakers": []},
        "redaction": {"entities": ["payment_card"], "counts": {"payment_card": 1}}, "models": [], "stages": []})
    again = read(*documents(result))
    assert again.segments[1].words[2].redacted and again.segments[1].words[2].entity == "payment_card"
    assert again.redaction == result.redaction
    results, transcript = documents(result)
    for w in transcript["segments"][1]["words"]:  # a document written before redaction: no such keys
        w.pop("redacted"), w.pop("entity")
    results.pop("redaction")
    old = read(results, transcript)
    assert old.redaction is None and not any(w.redacted or w.entity for s in old.segments for w in s.words)


# --- the fields rule ------------------------------------------------------------------------------------------


def value(name: str, found: str | float | None, dialogue_id: int | None = 1) -> ExtractedValue:
    evidence = [Evidence(dialogue_id=dialogue_id, start_ms=0, quote="...")] if dialogue_id is not None else []
    return ExtractedValue(name=name, type="string", value=found, evidence=evidence)


def test_a_card_field_keeps_only_its_last_four_digits_and_others_their_token():
    redaction = redact(CARD_CALL, ["payment_card", "email"])
    kept = redact_fields([value("card", "[PAYMENT_CARD]"), value("email", "[EMAIL]"), value("issue", "billing"),
                          value("missing", None)], redaction)
    assert [v.value for v in kept] == ["**** 3012", "[EMAIL]", "billing", None]
    assert kept[0].evidence == value("card", "").evidence  # the quote is the transcript's, redacted


def test_a_field_that_still_says_a_redacted_value_gets_its_token():
    redaction = redact(CARD_CALL, ["payment_card", "email"])
    kept = redact_fields([value("card", CARD), value("email", EMAIL.upper()),
                          value("card_spaced", "4526 0181 5908 3012"), value("short", "3012"), value("count", 2.0)],
                         redaction)
    assert [v.value for v in kept] == ["**** 3012", "[EMAIL]", "**** 3012", "**** 3012", 2.0]


def test_a_card_said_across_two_segments_shows_the_last_four_of_the_whole_number():
    segments = call((AGENT, "What's the card number?"), (CUSTOMER, "It's 4526 0181"), (AGENT, "mm-hmm"),
                    (CUSTOMER, "5908 3012."))
    redaction = redact(segments, ["payment_card"])
    assert [s.text for s in redaction.segments[1:]] == ["It's [PAYMENT_CARD]", "mm-hmm", "[PAYMENT_CARD]."]
    assert [v.value for v in redact_fields([value("a", "[PAYMENT_CARD]", 1), value("b", "[PAYMENT_CARD]", 3)],
                                           redaction)] == ["**** 3012", "**** 3012"]


def test_which_card_a_token_is_follows_its_evidence_and_stays_a_token_when_unknown():
    segments = call((AGENT, "Which cards?"), (CUSTOMER, f"The old card was {CARD}."),
                    (CUSTOMER, f"And the new card is {OTHER_CARD}."))
    redaction = redact(segments, ["payment_card"])
    assert [v.value for v in redact_fields([value("old", "[PAYMENT_CARD]", 1), value("new", "[PAYMENT_CARD]", 2),
                                            value("which", "[PAYMENT_CARD]", None), value("none", "[PAYMENT_CARD]", 0)],
                                           redaction)] == ["**** 3012", "**** 4444", "[PAYMENT_CARD]", "[PAYMENT_CARD]"]


def test_a_partial_card_number_shows_no_digits():
    segments = call((AGENT, "What's the card number?"), (CUSTOMER, "It ends in 3012, the card ending 3012."))
    redaction = redact(segments, ["payment_card"])
    assert all("3012" not in v.value for v in redact_fields([value("card", "[PAYMENT_CARD]")], redaction))


# --- in the pipeline: every text stage and the language model read the redacted transcript --------------------


class Transcriber:
    """Gives each channel its speaker's segments of CARD_CALL (as ASR would)."""

    info = ModelUsed(stage="asr", name="scripted", version="0")
    multilingual = False

    def transcribe(self, audio, channel, language, hints, regions):
        return [s for s in CARD_CALL if s.channel == channel]


class Model:
    """A language model that records its prompts and answers any schema: the fields request with the card field's
    token (what a model reading the redacted transcript answers), anything else with a plain sentence."""

    info = ModelUsed(stage="language-model", name="scripted", version="0")
    context_tokens = 8192

    def __init__(self):
        self.prompts: list[str] = []

    def generate_json(self, prompt: str, schema: dict, max_tokens: int = 512) -> dict:
        self.prompts.append(prompt)
        if "field_1" in schema.get("properties", {}):
            return {"field_1": {"found": True, "value": "[PAYMENT_CARD]"}, "field_2": {"found": True, "value": EMAIL}}
        return self._fill(schema)

    def yes_probabilities(self, head: str, questions: list[str]) -> list[float]:
        self.prompts += [head + question for question in questions]  # the claim judge reads the transcript too
        return [1.0] * len(questions)

    def _fill(self, schema: dict):
        if "enum" in schema:
            return schema["enum"][0]
        kind = schema.get("type")
        if kind == "object":
            return {k: self._fill(v) for k, v in schema.get("properties", {}).items()}
        return {"array": [], "boolean": False, "integer": 0, "number": 0}.get(
            kind, "The customer gave payment details for the order.")

    def generate_text(self, prompt: str, max_tokens: int = 256) -> str:
        self.prompts.append(prompt)
        return "The customer gave payment details for the order."


@pytest.fixture(scope="module")
def tone(tmp_path_factory):
    return make_audio(tmp_path_factory.mktemp("tone") / "call.wav", "wav", seconds=12.0, channels=2)


def project(redaction: Redaction | None) -> ProjectSpec:
    return ProjectSpec(
        name="Payments", language="en", redaction=redaction,
        goals=[Goal(id=1, name="Thanks", description="The agent thanks the customer.", phrases=["thank you"])],
        fields=[ExtractedField(name="card_number", description="The card number the customer gave"),
                ExtractedField(name="email_address", description="The customer's e-mail address")])


def run(tone, redaction: Redaction | None) -> tuple[AnalysisResult, Model, list[str]]:
    llm, seen = Model(), []
    pipeline = Pipeline(Settings(llm_enabled=False, llm_phrases_goals=True), transcriber=Transcriber(),
                        speakers=None, embedder=None, llm=llm)
    result = pipeline.run(tone, project(redaction), lambda stage, fraction: seen.append(stage),
                          called_on=date(2025, 3, 1))
    return result, llm, seen


def test_the_pipeline_redacts_before_every_text_stage_and_the_language_model(tone):
    result, llm, seen = run(tone, Redaction(entities=["payment_card", "email", "person_name"]))
    assert seen.index("speakers") < seen.index("redaction") < seen.index("emotions") < seen.index("goals")
    assert llm.prompts, "the language model was asked"
    for prompt in llm.prompts:
        assert CARD not in prompt and EMAIL not in prompt and "Tom" not in prompt
        assert "4526" not in prompt and "3012" not in prompt
    assert any("[PAYMENT_CARD]" in prompt for prompt in llm.prompts)
    subject = Subject(recording_id=1, public_id="0193-abc", status=RecordingStatus.COMPLETED, language="en")
    for shown in (json.dumps(result.model_dump(mode="json")),  # the stored result and the REST read-outs
                  json.dumps(sections(subject, result)),  # the recording.analyzed webhook's sections
                  render(result)):  # what `callscope analyze` prints
        assert CARD not in shown and EMAIL not in shown and "Tom" not in shown and "3012" not in shown.replace(
            "**** 3012", "")
    assert result.segments[1].text == "Sure, it's [PAYMENT_CARD], and my email is [EMAIL]."
    assert result.redaction is not None
    assert result.redaction.counts == {"payment_card": 1, "email": 1, "person_name": 1}
    # the model answered the card's token (kept: the redacted transcript says it) and the e-mail it cannot have seen
    # (dropped: not said in the transcript); the card shows its last four digits
    assert {v.name: v.value for v in result.extracted_data} == {"card_number": "**** 3012", "email_address": None}
    stages = {s.name: s for s in result.stages}
    assert stages["redaction"].ran and stages["redaction"].detail == \
        "payment_card: 1, email: 1, person_name: 1 span(s)"


def test_without_redaction_the_transcript_is_as_said(tone):
    result, llm, _ = run(tone, None)
    assert result.redaction is None and result.segments[1].text == CARD_CALL[1].text
    assert not {s.name: s.ran for s in result.stages}["redaction"]
    assert any(CARD in prompt for prompt in llm.prompts)


class SkippingTranscriber:
    """Writes the first sentence of channel 0 and nothing for the second, as Whisper does with a stretch of a phone
    line it cannot read."""

    info = ModelUsed(stage="asr", name="scripted", version="0")
    multilingual = False

    def __init__(self, sentence: tuple[int, int, str]):
        self.sentence = sentence

    def transcribe(self, audio, channel, language, hints, regions):
        start, end, text = self.sentence
        step = (end - start) // len(text.split())
        words = [TranscriptWord(start_ms=start + i * step, end_ms=start + (i + 1) * step, text=" " + w, probability=0.9)
                 for i, w in enumerate(text.split())]
        return [] if channel else [TranscriptSegment(id=0, speaker="channel-0", channel=0, start_ms=start,
                                                     end_ms=end, text=text, words=words)]


@pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)
@pytest.mark.parametrize("mode", ["precise", "strict"])
def test_strict_mode_lists_the_speech_the_recogniser_wrote_nothing_for(tmp_path, mode):
    said = speech.make_call([0.5, "Can I take the expiry date please?", 1.0, "Oh four twenty eight.", 0.5])
    path = speech.write(tmp_path / "call.wav", [said.samples])
    pipeline = Pipeline(Settings(llm_enabled=False), transcriber=SkippingTranscriber(said.sentences[0]),
                        speakers=None, embedder=None, llm=None)
    result = pipeline.run(path, project(Redaction(entities=["payment_card"], mode=mode)))
    assert result.redaction is not None and result.redaction.mode == mode
    if mode == "precise":
        assert result.redaction.unheard == []
        return
    skipped_start, skipped_end, _ = said.sentences[1]
    assert len(result.redaction.unheard) == 1
    start, end = result.redaction.unheard[0]
    assert start <= skipped_start + UNHEARD_REACH_MS and end >= skipped_end - 100  # the VAD's edge, give or take
    assert "1 stretch(es) of speech without words" in {s.name: s.detail for s in result.stages}["redaction"]
