"""Strict redaction (analysis/stages/redaction.py, mode strict): the answer to a request for a sensitive value taken
out whole whatever the recogniser heard, runs of spoken digits and their mishearings anywhere, spans widened where
the recogniser was unsure; precise mode as before; the Project spec's redaction.mode and maxAnswerSeconds."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from callscope.analysis.result import TranscriptSegment, TranscriptWord
from callscope.analysis.stages.redaction import Mode, find_spans, redact
from callscope.resources.kinds import ProjectSpec

WORD_MS, GAP_MS, TURN_GAP_MS = 300, 60, 600


def call(*turns: tuple[str, str], unsure: set[str] = frozenset(), start_ms: int = 0) -> list[TranscriptSegment]:
    """Timed segments: each word WORD_MS long; words in unsure are heard with probability 0.2."""
    out, t = [], start_ms
    for index, (speaker, text) in enumerate(turns):
        words = []
        for w in text.split():
            words.append(TranscriptWord(start_ms=t, end_ms=t + WORD_MS, text=" " + w,
                                        probability=0.2 if w in unsure else 0.9))
            t += WORD_MS + GAP_MS
        out.append(TranscriptSegment(id=index, speaker=speaker, channel=0, start_ms=words[0].start_ms,
                                     end_ms=words[-1].end_ms, text=text, words=words))
        t += TURN_GAP_MS
    return out


AGENT, CUSTOMER = "speaker-1", "speaker-2"
# the card 4242 4242 4242 4242 read briskly, heard as words and mishearings no rule reads as a card
MISHEARD = call(
    (AGENT, "Can I have the long number on the card please?"),
    (CUSTOMER, "Yeah it's for to for to, for 242 for to to for to, 42 for to."),
    (AGENT, "That's 4242 4242 4242 4242?"),
    (CUSTOMER, "Yes that's right."),
    (AGENT, "Thank you. Is there anything else I can help you with today?"),
    (CUSTOMER, "No, I think I want to go for a walk now, thanks."),
)


def texts(segments: list[TranscriptSegment]) -> list[str]:
    return [s.text for s in segments]


def test_precise_mode_is_the_default_and_leaves_misheard_digits():
    assert find_spans(MISHEARD, ["payment_card"]) == find_spans(MISHEARD, ["payment_card"], mode=Mode.PRECISE)
    redaction = redact(MISHEARD, ["payment_card"])
    assert "for to for to" in redaction.segments[1].text and redaction.summary.mode == "precise"


def test_the_answer_to_a_card_request_is_redacted_whole_with_the_read_back_until_the_agent_moves_on():
    redaction = redact(MISHEARD, ["payment_card"], mode="strict")
    assert texts(redaction.segments) == [
        "Can I have the long number on the card please?",
        "[PAYMENT_CARD].",
        "[PAYMENT_CARD]?",  # the read-back: the asker's digits are part of the answer
        "[PAYMENT_CARD].",
        "Thank you. Is there anything else I can help you with today?",  # the asker moved on: the answer ended
        "No, I think I want to go for a walk now, thanks.",  # "to", "for" in a sentence: no run
    ]
    assert redaction.summary.mode == "strict" and redaction.summary.counts == {"payment_card": 3}
    assert all(w.redacted for w in redaction.segments[1].words)  # every word: its audio goes too


@pytest.mark.parametrize(("request_", "entity"), [
    ("And what's the expiry date?", "payment_card"),
    ("And the three digits on the back?", "payment_card"),
    ("What's your sort code?", "bank_account"),
    ("Could I take your social security number?", "national_id"),
    ("And your date of birth please?", "date_of_birth"),
    ("Could you spell your e-mail for me?", "email"),
])
def test_each_request_takes_the_answer_whatever_was_heard(request_, entity):
    said = call((AGENT, request_), (CUSTOMER, "Sure, it's Ole Mars Kevin, Bravo Tango."), (AGENT, "Great, thanks."))
    redaction = redact(said, [entity], mode="strict")
    assert redaction.segments[1].text == f"[{entity.upper()}]."
    assert redaction.segments[2].text == "Great, thanks."
    # an entity the project does not redact: its request takes nothing
    other = "email" if entity != "email" else "payment_card"
    assert redact(said, [other], mode="strict").segments[1].text == "Sure, it's Ole Mars Kevin, Bravo Tango."


def test_an_answer_is_bounded_by_max_answer_ms():
    said = call((AGENT, "What is the card number?"), (CUSTOMER, "one two three four"),
                (CUSTOMER, " ".join(["it's a long story really"] * 8)), (CUSTOMER, "well okay then"))
    redaction = redact(said, ["payment_card"], mode="strict", max_answer_ms=5_000)
    words = redaction.segments[2].words
    limit = said[0].end_ms + 5_000
    assert all(w.redacted for w in words if w.start_ms < limit)
    assert not any(w.redacted for w in words if w.start_ms >= limit)
    assert redaction.segments[3].text == "well okay then"  # starts past the bound


def test_digit_runs_anywhere_are_redacted_with_mishearings_but_not_amounts_times_or_years():
    said = call(
        (CUSTOMER, "My callback is Macon for 1-5-5-5-5-2-6-7-1 okay"),
        (CUSTOMER, "The reference is oh for ate too five nine"),
        (CUSTOMER, "I paid $1,250.00 at 13:30 in 2024 for the two of them"),
    )
    redaction = redact(said, ["payment_card", "phone_number"], mode="strict")
    assert texts(redaction.segments) == [
        "My callback is Macon [PHONE_NUMBER] okay",  # its cue: the callback number
        "The reference is [PAYMENT_CARD]",  # no cue: the first numeric entity asked for
        "I paid $1,250.00 at 13:30 in 2024 for the two of them",
    ]
    # no numeric entity asked for: no digit-run rule
    assert redact(said, ["email"], mode="strict").segments[1].text == "The reference is oh for ate too five nine"


def test_a_span_heard_with_low_probability_takes_the_words_around_it_in_its_turn():
    said = call((CUSTOMER, "right so my card is the 4242 4242 4242 4242 and that was it from me today"),
                unsure={"the"})
    sure = call((CUSTOMER, "right so my card is the 4242 4242 4242 4242 and that was it from me today"))
    narrow = redact(sure, ["payment_card"], mode="strict").segments[0]
    wide = redact(said, ["payment_card"], mode="strict").segments[0]
    assert narrow.text == "right so my card is the [PAYMENT_CARD] and that was it from me today"
    # the words within 2 s of the span's words (360 ms a word): the turn's start, and three words after it
    assert wide.text == "[PAYMENT_CARD] it from me today"


def test_the_spec_takes_the_mode_and_refuses_others_with_their_path():
    spec = ProjectSpec.model_validate({"name": "P", "language": "en", "redaction": {
        "entities": ["payment_card"], "mode": "strict", "maxAnswerSeconds": 40}})
    assert spec.redaction.mode == "strict" and spec.redaction.max_answer_seconds == 40
    assert ProjectSpec.model_validate({"name": "P", "language": "en", "redaction": {
        "entities": ["email"]}}).redaction.mode == "precise"
    for bad, loc in [({"mode": "loose"}, ("redaction", "mode")), ({"maxAnswerSeconds": 1},
                                                                 ("redaction", "maxAnswerSeconds"))]:
        with pytest.raises(ValidationError) as err:
            ProjectSpec.model_validate({"name": "P", "language": "en", "redaction": {"entities": ["email"], **bad}})
        assert [e["loc"] for e in err.value.errors()] == [loc]


def test_a_turn_that_is_one_written_number_is_a_run_but_not_inside_a_sentence_or_as_a_year():
    said = call((AGENT, "And next diary."), (CUSTOMER, "1228."),  # "And the expiry?" garbled; "twelve twenty eight"
                (CUSTOMER, "2024."), (AGENT, "Your confirmation number is 22918 then."))
    redaction = redact(said, ["payment_card"], mode="strict")
    assert texts(redaction.segments)[1:] == ["[PAYMENT_CARD].", "2024.", "Your confirmation number is 22918 then."]
    assert redaction.summary.found_by["payment_card"]["digit_run"] == 1


def test_digits_heard_with_a_letter_stuck_to_them_are_digits_in_a_run():
    # Whisper on an 8 kHz line: "four nine one seven, three three oh eight, two two five six, four one oh five" read
    # back as "So, X4 -I -1 -M3308 -225 -6 -410 -I -M."
    said = call((AGENT, "So, X4 -I -1 -M3308 -225 -6 -410 -I -M."), (CUSTOMER, "Yes! Room 4B is upstairs."))
    redaction = redact(said, ["payment_card"], mode="strict")
    assert "3308" not in redaction.segments[0].text and "[PAYMENT_CARD]" in redaction.segments[0].text
    assert redaction.segments[1].text == "Yes! Room 4B is upstairs."  # no run: one digit
