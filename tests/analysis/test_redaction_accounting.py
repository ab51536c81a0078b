"""What the result's `redaction` says (found_by: the spans each rule found, per entity type) and strict mode's
requests found by their meaning: the embedded text model against example requests in English and Spanish, none in a
language without examples, never a request for what is not personal data."""

from __future__ import annotations

import pytest

from callscope.analysis.result import ModelUsed, TranscriptSegment
from callscope.analysis.runtime.pipeline import Pipeline
from callscope.analysis.stages.redaction import FOUND_BY, redact, requests_by_meaning
from callscope.config import Settings
from callscope.resources.kinds import ProjectSpec, Redaction
from tests.analysis.test_redaction_strict import AGENT, CUSTOMER, MISHEARD, call
from tests.audio_samples import make_audio

NONE_FOUND = dict.fromkeys(FOUND_BY, 0)


@pytest.fixture(scope="module")
def embedder():
    from callscope.analysis.models.text_embedding import text_embedder_from_settings
    from callscope.config import Settings

    return text_embedder_from_settings(Settings())


def test_precise_mode_counts_what_the_words_said():
    redaction = redact(MISHEARD, ["payment_card"])
    assert redaction.summary.found_by == {"payment_card": {**NONE_FOUND, "words": 1}}
    assert redaction.summary.counts == {"payment_card": 1}


def test_strict_mode_says_which_rule_found_each_span():
    redaction = redact(MISHEARD, ["payment_card"], mode="strict")
    # the answer, the read-back (a card the rules read too, widened by the request to the whole turn); the "yes"
    # confirming it is no part of the value
    assert [span.found_by for span in redaction.spans] == [("request",), ("words", "request")]
    assert redaction.summary.found_by == {"payment_card": {**NONE_FOUND, "words": 1, "request": 2}}
    digits = redact(call((CUSTOMER, "The reference is oh for ate too five nine")), ["payment_card"], mode="strict")
    assert digits.summary.found_by == {"payment_card": {**NONE_FOUND, "digit_run": 1}}
    unsure = call((CUSTOMER, "right so my card is the 4242 4242 4242 4242 and that was it from me today"),
                  unsure={"the"})
    widened = redact(unsure, ["payment_card"], mode="strict")
    assert widened.summary.found_by == {"payment_card": {**NONE_FOUND, "words": 1, "low_confidence": 1}}
    # every entity asked for is listed, found or not: the shape never depends on the call
    assert redact(MISHEARD, ["email"], mode="strict").summary.found_by == {"email": NONE_FOUND}


@pytest.mark.parametrize(("asked", "language", "entity"), [
    ("Right, go ahead and read me the numbers across the front of your card.", "en", "payment_card"),
    ("Could you tell me when you were born?", "en", "date_of_birth"),
    ("Vale. ¿Me podría decir el número completo de su tarjeta?", "es", "payment_card"),
    ("¿En qué fecha nació usted?", "es", "date_of_birth"),
])
def test_a_request_no_rule_words_is_found_by_its_meaning(embedder, asked, language, entity):
    said = call((AGENT, asked), (CUSTOMER, "Sure, it's Ole Mars Kevin, Bravo Tango."), (AGENT, "Great, thanks."))
    assert redact(said, [entity], mode="strict", language=language).segments[1].text.startswith("Sure")  # no rule
    redaction = redact(said, [entity], mode="strict", language=language, embedder=embedder)
    assert redaction.segments[1].text == f"[{entity.upper()}]."
    assert redaction.segments[2].text == "Great, thanks."
    assert redaction.summary.found_by[entity]["request_meaning"] == 1
    # precise mode never asks the text model
    assert redact(said, [entity], language=language, embedder=embedder).segments[1].text.startswith("Sure")


@pytest.mark.parametrize(("said", "language"), [
    ("What's your order number?", "en"),
    ("Is there anything else I can do for you?", "en"),
    ("¿Me da el número de su pedido, por favor?", "es"),
    ("Pourriez-vous me donner le numéro de votre carte ?", "fr"),  # no French examples: the model is not asked
])
def test_no_request_by_meaning_where_none_is_meant_or_the_language_has_no_examples(embedder, said, language):
    segments = [TranscriptSegment(id=0, speaker=AGENT, channel=0, start_ms=0, end_ms=1000, text=said)]
    assert requests_by_meaning(segments, embedder, language) == {}


# a stereo call: the agent asks for the birth date in words no request phrase has, the customer answers, misheard
BIRTH_CALL = [s.model_copy(update={"channel": 0 if s.speaker == AGENT else 1}) for s in call(
    (AGENT, "Could you tell me when you were born?"), (CUSTOMER, "Sure, it's the fit of Jew nigh tin."),
    (AGENT, "Great, thanks."))]


class Transcriber:
    """Gives each channel its speaker's segments of BIRTH_CALL (as ASR would)."""

    info = ModelUsed(stage="asr", name="scripted", version="0")
    multilingual = False

    def transcribe(self, audio, channel, language, hints, regions):
        return [s for s in BIRTH_CALL if s.channel == channel]


@pytest.mark.parametrize(("mode", "redacted", "found_by"), [
    ("strict", "[DATE_OF_BIRTH].", {**NONE_FOUND, "request_meaning": 1}),
    ("precise", "Sure, it's the fit of Jew nigh tin.", NONE_FOUND),
])
def test_the_pipeline_s_strict_mode_asks_the_text_model_and_the_result_says_so(tmp_path, embedder, mode, redacted,
                                                                                  found_by):
    audio = make_audio(tmp_path / "call.wav", "wav", seconds=8.0, channels=2)
    pipeline = Pipeline(Settings(llm_enabled=False), transcriber=Transcriber(), speakers=None, embedder=embedder,
                        llm=None)
    result = pipeline.run(audio, ProjectSpec(name="P", language="en", redaction=Redaction(
        entities=["date_of_birth"], mode=mode)))
    assert result.segments[1].text == redacted
    assert result.redaction is not None and result.redaction.found_by == {"date_of_birth": found_by}
    assert result.redaction.model_dump()["found_by"] == {"date_of_birth": found_by}  # as the result stores it
