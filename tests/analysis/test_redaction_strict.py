"""Strict redaction (analysis/stages/redaction.py, mode strict): the answer to a request for a sensitive value taken
out whole whatever the recogniser heard, runs of spoken digits and their mishearings anywhere, spans widened where
the recogniser was unsure; precise mode as before; the Project spec's redaction.mode and maxAnswerSeconds."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from callscope.analysis.result import TranscriptSegment, TranscriptWord
from callscope.analysis.stages.redaction import Mode, find_spans, redact
from callscope.analysis.stages.timing import UNHEARD_REACH_MS
from callscope.analysis.types import SpeechRegion
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
        "Yes that's right.",  # confirming the read-back, no digits: not the value
        "Thank you. Is there anything else I can help you with today?",  # the asker moved on: the answer ended
        "No, I think I want to go for a walk now, thanks.",  # "to", "for" in a sentence: no run
    ]
    assert redaction.summary.mode == "strict" and redaction.summary.counts == {"payment_card": 2}
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
    limit = said[1].end_ms + 5_000  # after the last digits: a card's window lasts while digits are said
    assert all(w.redacted for w in words if w.start_ms < limit)
    assert not any(w.redacted for w in words if w.start_ms >= limit)
    assert redaction.segments[3].text == "well okay then"  # starts past the bound


def test_digit_runs_anywhere_are_redacted_with_mishearings_but_not_amounts_times_or_years():
    said = call(
        (CUSTOMER, "My callback is Macon for 1-5-5-5-5-2-6-7-1 okay"),
        (CUSTOMER, "The reference is oh for ate too five nine"),
        (CUSTOMER, "I paid $1,250.00 at 13:30 in 2024 for the two of them"),
    )
    # each turn alone (a value found opens a window that would take the next turns with a number in them)
    assert [redact([turn], ["payment_card", "phone_number"], mode="strict").segments[0].text for turn in said] == [
        "My callback is Macon [PHONE_NUMBER] okay",  # its cue: the callback number
        "The reference is [PAYMENT_CARD]",  # no cue: the first numeric entity asked for
        "I paid $1,250.00 at 13:30 in 2024 for the two of them",
    ]
    # no numeric entity asked for: no digit-run rule
    assert redact(said, ["email"], mode="strict").segments[1].text == "The reference is oh for ate too five nine"
    # one written number is a run alone where it has four digits (PCI's leak), is not a year and is not named as
    # something else right before it; six digits are one however named
    alone = call((CUSTOMER, "Yes my mobile now is 0770090123. and the old one is gone"),
                 (CUSTOMER, "Same card as my opponent and mid, 3309, I think"),
                 (CUSTOMER, "Room 20518 please, we were there in 1998"),
                 (CUSTOMER, "The order number is 4410736 I think"))
    assert texts(redact(alone, ["phone_number"], mode="strict").segments) == [
        "Yes my mobile now is [PHONE_NUMBER]. and the old one is gone",
        "Same card as my opponent and mid, [PHONE_NUMBER], I think", "Room 20518 please, we were there in 1998",
        "The order number is [PHONE_NUMBER] I think"]


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
                (AGENT, "Thanks."), (CUSTOMER, "2024."), (AGENT, "Your confirmation number is 22918 then."))
    redaction = redact(said, ["payment_card"], mode="strict")
    assert texts(redaction.segments)[1:] == ["[PAYMENT_CARD].", "Thanks.", "2024.",
                                             "Your confirmation number is 22918 then."]
    assert redaction.summary.found_by["payment_card"]["digit_run"] == 1


def test_digits_heard_with_a_letter_stuck_to_them_are_digits_in_a_run():
    # Whisper on an 8 kHz line: "four nine one seven, three three oh eight, two two five six, four one oh five" read
    # back as "So, X4 -I -1 -M3308 -225 -6 -410 -I -M."
    said = call((AGENT, "So, X4 -I -1 -M3308 -225 -6 -410 -I -M."))
    redaction = redact(said, ["payment_card"], mode="strict")
    assert "3308" not in redaction.segments[0].text and "[PAYMENT_CARD]" in redaction.segments[0].text
    # "three seven four two, eight one nine three oh six, five two oh oh four", and a read-back of "five five zero two"
    assert strict((CUSTOMER, "Yes, it's her name, X3M42819306, I'm 244.")) == ["Yes, it's her name, [PAYMENT_CARD]."]
    assert strict((CUSTOMER, "It's 414M and 2 NLI 83316, I'm I'm NL2.")) == ["[PAYMENT_CARD]."]
    # an ordinal and a time are no digits heard with letters
    assert strict((AGENT, "See you on the 4th at 3pm then.")) == ["See you on the 4th at 3pm then."]
    room = call((CUSTOMER, "Yes! Room 4B is upstairs."))
    assert redact(room, ["payment_card"], mode="strict").segments[0].text == room[0].text  # no run: one digit


# --- what Whisper made of values on 8 and 16 kHz lines (benchmarks/redaction.py --speech, fit and report parts) ---


def strict(*turns: tuple[str, str], entities=("payment_card",), **kwargs) -> list[str]:
    return texts(redact(call(*turns, **kwargs), list(entities), mode="strict").segments)


def test_zero_heard_as_nero_is_a_digit():
    assert strict((CUSTOMER, "Yeah so it was 9 Nero 4 Nero right")) == ["Yeah so it was [PAYMENT_CARD] right"]


def test_a_run_goes_on_over_one_misheard_word_after_a_digit():
    # "eleven oh two, nineteen eighty five" heard as "11 Nash 2 Nash 19185"; "for room 1400" is no run of "for"
    assert strict((CUSTOMER, "It's 11 Nash 2 Nash 19185 okay.")) == ["It's [PAYMENT_CARD] okay."]
    assert strict((AGENT, "It is confirmed for room 1400 and eight.")) == ["It is confirmed for room [PAYMENT_CARD]."]


def test_one_number_with_a_letter_stuck_to_it_is_a_run():
    # "five one eight two one double nine three" heard as "I1821 double-dine free."
    assert strict((CUSTOMER, "Right, the number is I1821 double-dine free.")) == [
        "Right, the number is [PAYMENT_CARD]."]


def test_after_a_card_cue_three_digits_are_a_run_and_a_turn_saying_only_them_goes_whole():
    # "oh two, twenty nine" heard as "So 2, 29."
    assert strict((CUSTOMER, "It's the Visa, and it's valid until"), (CUSTOMER, "So 2, 29.")) == [
        "It's the Visa, and it's valid until", "[PAYMENT_CARD]."]
    assert strict((CUSTOMER, "I got it in a shop"), (CUSTOMER, "So 2, 29.")) == ["I got it in a shop", "So 2, 29."]


def test_after_the_card_ending_two_digits_of_its_last_four_are_a_run():
    # "nine zero nine eight" heard as "I'm 0, I'm 8" ("I'm": a misheard digit)
    assert strict((AGENT, "Thank you, the card ending, I'm 0, I'm 8, it will ship by March 5th.")) == [
        "Thank you, the card ending, [PAYMENT_CARD], it will ship by March 5th."]


def test_the_words_right_after_the_card_ending_are_its_last_four_however_heard():
    # "... from the card ending five oh four two. Would you like ..." cut into two segments
    assert strict((AGENT, "it's gone through, taken from the card ending, I know for"),
                  (AGENT, "two, would you like a receipt?"), (CUSTOMER, "No thanks.")) == [
        "it's gone through, taken from the card ending, [PAYMENT_CARD]", "[PAYMENT_CARD], would you like a receipt?",
        "No thanks."]
    # a question about them, and what a cue names after "of", are no last four
    assert strict((AGENT, "Which card is it, can you read me the last four?"), (CUSTOMER, "It's the blue one."),
                  (AGENT, "And the last four of your social please"), entities=["payment_card"]) == [
        "Which card is it, can you read me the last four?", "It's the blue one.",
        "And the last four of your social please"]


def test_a_month_or_an_ordinal_with_a_year_decades_back_is_a_birth_date():
    # "fifth of December nineteen forty six" heard as "It's on September 1946." after a garbled request
    assert strict((AGENT, "Thank you, and can they come first?"), (CUSTOMER, "It's on September 1946."),
                  (AGENT, "Your appointment is on August 3rd 2024 then."), (AGENT, "Order number is $1,731,2009 then."),
                  entities=["date_of_birth"]) == [
        "Thank you, and can they come first?", "[DATE_OF_BIRTH].", "Your appointment is on August 3rd 2024 then.",
        "Order number is $1,731,2009 then."]


def test_a_year_decades_back_with_a_day_and_a_month_after_it_is_a_birth_date_from_the_turns_start():
    # "Oh four, twelve, nineteen forty-one. Sorry, I mean the fourth of December" after "And her date of birth?"
    # heard as "Answer, Nate Umpers."
    assert strict((AGENT, "Answer, Nate Umpers."),
                  (CUSTOMER, "So for, well, 1941, sorry, I mean, the Fourth of December, I always mix up the order."),
                  (AGENT, "We opened in 1998, and in 2012 moved here."), entities=["date_of_birth"])[1:] == [
        "[DATE_OF_BIRTH], I always mix up the order.", "We opened in 1998, and in 2012 moved here."]


def test_a_day_and_a_month_with_two_digits_after_them_are_a_birth_date_without_a_cue():
    # "And your date of birth, please, Shanice?" heard as "And your name on me, please, can it?"
    assert strict((AGENT, "And your name on me, please, can it?"), (CUSTOMER, "The 9th of May, 79."),
                  (AGENT, "It ships on the 9th of May, 10 boxes."), entities=["date_of_birth"]) == [
        "And your name on me, please, can it?", "[DATE_OF_BIRTH].", "It ships on the 9th of May, 10 boxes."]
    # a day and a month said as ordinals ("The second of the ninth, seventy-seven.")
    assert strict((AGENT, "Lovely, and can I check the account holder?"), (CUSTOMER, "The second on the 9th, 77th,"),
                  (AGENT, "Is that the second on the 9th floor?"), entities=["date_of_birth"])[1:] == [
        "[DATE_OF_BIRTH],", "Is that the second on the 9th floor?"]
    # "twelfth of June, seventy-four" heard with the year as an ordinal
    assert strict((AGENT, "And your name's Umber, Margaret."), (CUSTOMER, "the 12th of June, 24th"),
                  (AGENT, "We're closed from the 3rd of May to the 24th."), entities=["date_of_birth"])[1:] == [
        "[DATE_OF_BIRTH]", "We're closed from the 3rd of May to the 24th."]
    # the agent's read-back of "twelfth of November, nineteen fifty-eight", the next request right on
    assert strict((AGENT, "12th on the 11th, 58th and the BBS number,"), entities=["date_of_birth"]) == [
        "[DATE_OF_BIRTH] and the BBS number,"]


def test_speech_without_words_is_listed_in_strict_mode_only():
    said = call((AGENT, "And the expiry?"), (CUSTOMER, "Yes."))
    speech = [SpeechRegion(channel=0, start_ms=0, end_ms=said[-1].end_ms + 3_000)]
    assert redact(said, ["payment_card"], mode="strict", speech=speech).summary.unheard == [
        (said[-1].end_ms + UNHEARD_REACH_MS, said[-1].end_ms + 3_000)]
    assert redact(said, ["payment_card"], mode="precise", speech=speech).summary.unheard == []
    assert redact(said, ["payment_card"], mode="strict").summary.unheard == []


def test_a_turn_spelling_something_out_soon_after_an_email_is_named_is_the_email():
    # "R, M E H T A, two zero two zero, at P R O T O N, dot M E." after a garbled new address and "spell that"
    said = ((AGENT, "I have an email here, it's old."), (CUSTOMER, "The new one is Armada has broken."),
            (AGENT, "Could you spell that for me?"), (CUSTOMER, "Sure, R, M, E, H, T, A, T, N, O, not M, E."))
    assert strict(*said, entities=["email"])[3] == "[EMAIL]."
    # a name spelled with no e-mail named is no e-mail's
    assert strict(*said[2:], entities=["email"])[1] == "Sure, R, M, E, H, T, A, T, N, O, not M, E."


def test_a_mail_providers_name_is_an_email_said_around_it_however_garbled():
    # "josh w eighty-eight at gmail" read back on an 8 kHz line
    assert strict((AGENT, "Will do, it'll go to noshnublub8a .gmail, anything else?"), entities=["email"]) == [
        "[EMAIL], anything else?"]
    assert strict((AGENT, "It's j.w at hotmail dot co dot uk, thanks."), entities=["email"]) == ["[EMAIL], thanks."]
    assert strict((AGENT, "I'll mail it to you, sir."), entities=["email"]) == ["I'll mail it to you, sir."]
    # the provider at the end of the address heard as one word, before the domain's end
    assert strict((CUSTOMER, "it's brand -and -kateoutlook .com, thanks"), entities=["email"]) == [
        "[EMAIL], thanks"]


def test_an_address_written_without_its_at_is_an_email():
    # "f dot fairbairn at btinternet dot com", read back; a site is not one
    assert strict((AGENT, "The tickets will be emailed to f.airman.me.internet.com."),
                  (AGENT, "Our terms are on www.horizon.co.uk if you need them."), entities=["email"]) == [
        "[EMAIL].", "Our terms are on www.horizon.co.uk if you need them."]


def test_two_dots_heard_soon_after_an_email_is_named_are_an_email():
    # "Email's olivia dot ngata at xtra dot co dot nz." and the agent's read-back of another
    assert strict((AGENT, "Where should I send the claim form?"),
                  (CUSTOMER, "Email me or not and doctorate extra, not go not and then."),
                  (AGENT, "So, I are not medium of MWM .co .nl."), entities=["email"])[1:] == ["[EMAIL].", "[EMAIL]."]
    # "underscore" joins an address's pieces too ("Niall underscore fitz eighty-two at eircom dot net" read back)
    assert strict((CUSTOMER, "Email please."), (AGENT, "I'll underscore if it's a bit too bad I come not next."),
                  entities=["email"])[1] == "[EMAIL]."
    # one "dot" before a domain's end as heard ("beth hollis oh three at icloud dot com")
    assert strict((AGENT, "I've found your email."), (AGENT, "Which one would you like the letters to go to?"),
                  (CUSTOMER, "Or, it's met on Emobria like I've not come all one word."), entities=["email"])[2] == \
        "[EMAIL] one word."
    # "at" and a domain's end soon after it ("a p underscore invoices at lakeshorecollision dot c a")
    assert strict((AGENT, "I've found your email."), (AGENT, "Where should the invoices go from now on?"),
                  (CUSTOMER, "Sure, A P under store invoices at Lake Shore Collision .ca, cheers."),
                  entities=["email"])[2] == "[EMAIL], cheers."
    assert strict((CUSTOMER, "Meet me at the cafe, it's on the corner."), entities=["email"]) == [
        "Meet me at the cafe, it's on the corner."]
    # no e-mail named: "not" is a word
    assert strict((CUSTOMER, "No, nobody, not a call, not an SMS, nothing."), entities=["email"]) == [
        "No, nobody, not a call, not an SMS, nothing."]


def test_a_number_the_recogniser_cut_into_segments_is_one_run():
    # an account number read slowly, heard "2 / 0 1 / 9 2 / 0 6": each segment alone is under a run's digits
    said = call((CUSTOMER, "Okay."), (CUSTOMER, "2"), (CUSTOMER, "0 1"), (CUSTOMER, "9 2"), (CUSTOMER, "0 6"))
    assert texts(redact(said, ["bank_account"], mode="strict").segments) == [
        "Okay.", "[BANK_ACCOUNT]", "[BANK_ACCOUNT]", "[BANK_ACCOUNT]", "[BANK_ACCOUNT]"]
    apart = call((CUSTOMER, "I have 2"), (AGENT, "Right."), (CUSTOMER, "0 1 of them"))  # someone else between
    assert texts(redact(apart, ["bank_account"], mode="strict").segments) == texts(apart)


def test_a_value_spelled_with_its_digits_goes_whole_with_its_run():
    # a driving licence "P R I T C nine zero one two two four O W nine X Y" read back letter by letter
    assert strict((AGENT, "-R -I -D -C -I -N -E -R -1 -2 -2 -4 -O -W -I -N -X -Y"), entities=["national_id"]) == [
        "[NATIONAL_ID]"]
    assert strict((AGENT, "It's flight B A 2 9 to Rome."), entities=["national_id"]) == [
        "It's flight B A 2 9 to Rome."]  # two digits and a sentence: no run, no value alone


def test_the_first_group_of_a_card_heard_before_the_rest_is_taken_with_it():
    # "Four five six four..." "Mm-hm." "...seven seven zero two..." heard "4 -I -6 -4" / "M -M -A -K -M" / the rest
    said = strict((AGENT, "No worries, go ahead with the numbers."), (CUSTOMER, "4 -I -6 -4"),
                  (AGENT, "M -M -A -K -M"), (CUSTOMER, "4556 7702 1938 8046"), (AGENT, "And the expiry?"))
    assert said[1:4] == ["[PAYMENT_CARD]", "M -M -A -K -M", "[PAYMENT_CARD]"]
    # where each later group is heard as a short run alone and no card is recognised, the runs take it too
    said = strict((AGENT, "No worries, go ahead with the numbers."), (CUSTOMER, "4 -I -64"),
                  (AGENT, "M -M -A -K -M"), (CUSTOMER, "7 -7 -0 -2"), (AGENT, "Yeah,"),
                  (CUSTOMER, "1 -I -38 -0 -4 -6"), (AGENT, "And the expiry?"))
    assert said[1:6] == ["[PAYMENT_CARD]", "M -M -A -K -M", "[PAYMENT_CARD]", "Yeah,", "[PAYMENT_CARD]"]


def test_the_rest_of_a_read_back_the_recogniser_cut_off_is_taken_with_it():
    # "... three five five zero, expiring July twenty-six." heard in segments, the last "right -wentifics"
    said = strict((AGENT, "Go ahead with the card number."), (CUSTOMER, "5 3 9 9 2 2 0 8 7 1 4 6 3 5 5 0."),
                  (AGENT, "So that's 5399 2208 7146 3550"), (AGENT, "right -wentifics"),
                  (CUSTOMER, "Yes."), (AGENT, "Lovely, that's all done."))
    assert said[2:] == ["[PAYMENT_CARD]", "[PAYMENT_CARD]", "Yes.", "Lovely, that's all done."]


def test_a_short_tail_of_the_request_does_not_end_its_answer():
    assert strict((AGENT, "Thanks and an email for the order confirmation"), (AGENT, "Your"),
                  (CUSTOMER, "Yeah, I'm just gonna rock up or maybe I tap yeah, who not come."),
                  (AGENT, "Thanks, it ships in three to five days."), entities=["email"]) == [
        "Thanks and an email for the order confirmation", "Your", "[EMAIL].", "Thanks, it ships in three to five days."]


def test_a_speaker_announcing_their_own_value_is_answered_by_their_next_turns():
    # "my email is jane dot doe eighty four at yahoo dot com" heard as sentences
    assert strict((CUSTOMER, "My human aim is to email."), (CUSTOMER, "You cannot donate before that."),
                  (CUSTOMER, "You cannot come."), (AGENT, "I'll send the repair link now then."),
                  entities=["email"]) == [
        "My human aim is to email.", "[EMAIL].", "[EMAIL].", "I'll send the repair link now then."]


def test_a_turn_that_says_the_value_is_no_request_for_it():
    assert strict((AGENT, "What's the best email for you?"), (CUSTOMER, "It's diego at fernandes dot net or e-mail"),
                  (AGENT, "Lovely, I will send you a listing of the house."), entities=["email"])[2] == \
        "Lovely, I will send you a listing of the house."


def test_once_the_asker_moves_on_the_answerers_turns_of_digits_are_still_the_value_until_another_request():
    # 16 kHz: the expiry and the security code written as amounts after garbled questions
    said = call((AGENT, "Can I take the long number on the front of the card?"),
                (CUSTOMER, "Sure, it's $45.26 Niro 181, $59.08, $3.012."),
                (AGENT, "Thank you so much, 4526, 0181, 5908, 39012"), (CUSTOMER, "That's right,"),
                (AGENT, "And yeah, fiery date."), (CUSTOMER, "$9 .27,"),
                (AGENT, "And the free digit on the Mac."), (CUSTOMER, "$4 .12."),
                (AGENT, "And your sort code?"), (CUSTOMER, "4D1, 756."), (AGENT, "Great, anything else?"),
                (CUSTOMER, "No thanks, bye."))
    redaction = redact(said, ["payment_card", "bank_account"], mode="strict", max_answer_ms=120_000)
    assert texts(redaction.segments)[3:] == [
        "That's right,", "And yeah, fiery date.", "[PAYMENT_CARD],", "And the free digit on the Mac.",
        "[PAYMENT_CARD].", "And your sort code?", "[BANK_ACCOUNT].", "Great, anything else?", "No thanks, bye."]


def test_no_widening_around_a_run_its_cue_names_an_order_or_claim_number():
    said = "Done, your claim number is 4 4001 291 and it was approved today"
    assert strict((AGENT, said), unsure={"approved"}) == [
        "Done, your claim number is [PAYMENT_CARD] and it was approved today"]
    # an unnamed run is widened: the value may reach further than heard
    assert strict((AGENT, "Done, it is 4 4001 291 and it was approved today"), unsure={"approved"}) == [
        "[PAYMENT_CARD] today"]


def test_a_new_request_by_the_asker_ends_the_answer_at_once():
    # "And the source code?" for "and the sort code?": its answer is still the account's, not the birth date's
    assert strict((AGENT, "Can you tell me your date of birth?"), (CUSTOMER, "Yes, the 14th of July 1979."),
                  (AGENT, "And the account number?"), (CUSTOMER, "2M441906."), (AGENT, "And the source code?"),
                  (CUSTOMER, "4D1, 756."), entities=["date_of_birth", "bank_account"])[3:] == [
        "[BANK_ACCOUNT].", "And the source code?", "[BANK_ACCOUNT]."]


def test_digits_asked_for_are_a_card_request_whatever_else_was_heard():
    """ "Go ahead with the sixteen digits": the answer is taken whole, though Whisper heard "four five" as "4 times"
    (no run: one digit a segment)."""
    said = call((AGENT, "Go ahead with the fixing digits whenever you're ready."), (CUSTOMER, "Um, 4 times."),
                (CUSTOMER, "3 times."), (AGENT, "Got it, thanks."))
    assert texts(redact(said, ["payment_card"], mode="strict").segments)[1:3] == ["[PAYMENT_CARD].", "[PAYMENT_CARD]."]


def test_an_unsure_value_is_widened_into_the_speakers_next_segment():
    """A code heard "66 to Nero," and its last word, unsure, cut off by Whisper as a segment of its own ("So,")."""
    said = call((CUSTOMER, "It is 66 to Nero 14"), (CUSTOMER, "So,"), (AGENT, "Great, you are all booked."),
                unsure={"Nero", "So,"})
    redacted = redact(said, ["payment_card"], mode="strict")
    assert texts(redacted.segments)[1:] == ["[PAYMENT_CARD],", "Great, you are all booked."]
    assert redacted.summary.found_by["payment_card"]["low_confidence"] == 1


def test_a_month_with_a_number_soon_after_a_card_is_its_expiry_however_garbled_its_question():
    said = call((AGENT, "Lovely, and the number across the front on the card."),
                (CUSTOMER, "49, 16, 33, 80, 65, 20, 10, 34,"), (AGENT, "and when the number backpire,"),
                (CUSTOMER, "and on August 28th."))
    assert texts(redact(said, ["payment_card"], mode="strict").segments)[3] == "[PAYMENT_CARD]."  # the card's window
    assert texts(redact(said, ["payment_card"], mode="precise").segments)[3] == "and on August 28th."
    named = call((CUSTOMER, "I'll pay with my Visa card then."), (AGENT, "Okay."),
                 (CUSTOMER, "and on August 28th."))  # a card named, none given or asked for: the expiry rule alone
    assert texts(redact(named, ["payment_card"], mode="strict").segments)[2] == "and on [PAYMENT_CARD]."
    later = call((AGENT, "Can I take the card number?"), start_ms=0)[0], *call(
        (CUSTOMER, "We fly out on August 28th."), start_ms=61_000)
    assert texts(redact(list(later), ["payment_card"], mode="strict").segments)[1] == "We fly out on August 28th."


def test_every_turn_with_a_number_in_a_card_payment_is_taken_until_the_agent_says_it_went_through():
    """A card read in fours with backchannels between ("7692," heard after "Mm-hm. Go on.", outside the first
    answer), the agent's read-back heard "sevens", a turn without a number left; the window closes when the payment
    is done, and the amount said after it is no card's."""
    said = call((AGENT, "Sure, what's the long number on the card?"), (CUSTOMER, "Okay, let me see, 4128,"),
                (AGENT, "Mm-hm."), (CUSTOMER, "3309,"), (AGENT, "Mm-hm, go on."),
                (CUSTOMER, "7692, and the last four are, um, so 882,"), (AGENT, "So one nine three sevens?"),
                (CUSTOMER, "Yes, hang on, let me find my glasses."), (CUSTOMER, "Yes that's it."),
                (AGENT, "Thanks, that's processed."), (AGENT, "That was 62 dollars."))
    redaction = redact(said, ["payment_card"], mode="strict")
    assert texts(redaction.segments) == [
        "Sure, what's the long number on the card?", "[PAYMENT_CARD],", "Mm-hm.", "[PAYMENT_CARD],",
        "Mm-hm, go on.", "[PAYMENT_CARD],", "[PAYMENT_CARD]?", "Yes, hang on, let me find my glasses.",
        "Yes that's it.", "Thanks, that's processed.", "That was 62 dollars."]
    assert redaction.summary.found_by["payment_card"]["value_window"] >= 2


def test_a_card_payments_window_closes_at_a_request_for_another_value_or_after_the_longest_answer():
    other = call((AGENT, "And the card number?"), (CUSTOMER, "4 1 2 8 3 3 0 9"), (AGENT, "And your email address?"),
                 (CUSTOMER, "It's bob 2 at example.com"), (CUSTOMER, "I have 2 of them."))
    assert texts(redact(other, ["payment_card"], mode="strict").segments)[3:] == [
        "It's bob 2 at example.com", "I have 2 of them."]
    late = [*call((AGENT, "And the card number?"), (CUSTOMER, "4 1 2 8 3 3 0 9")),
            *call((AGENT, "Okay."), (CUSTOMER, "We have 3 dogs."), start_ms=40_000)]
    assert texts(redact(late, ["payment_card"], mode="strict", max_answer_ms=30_000).segments)[3] == \
        "We have 3 dogs."
    assert texts(redact(late, ["payment_card"], mode="strict", max_answer_ms=60_000).segments)[3] == \
        "[PAYMENT_CARD]."


def test_an_email_spelled_back_by_the_agent_is_part_of_the_answer():
    said = call((AGENT, "And an email for the remittance advice?"),
                (CUSTOMER, "It's you're not murderin' or it's not F R"),
                (AGENT, "JOM .M .I .R .C .I .E .R at orange .F .R?"), (CUSTOMER, "Exactly."),
                (AGENT, "Done, it can take up to five working days."))
    assert texts(redact(said, ["email"], mode="strict").segments)[1:] == [
        "[EMAIL]", "[EMAIL]?", "Exactly.", "Done, it can take up to five working days."]


def test_a_callback_number_is_asked_for_and_im_is_a_five_heard_on_a_phone_line():
    said = call((AGENT, "And a good call back number in case the adjuster has questions?"),
                (CUSTOMER, "Sure, it's 617, I'm I'm I'm 0142"), (AGENT, "Thank you, anything else?"))
    assert texts(redact(said, ["phone_number"], mode="strict").segments)[1] == "[PHONE_NUMBER]"
    anywhere = call((CUSTOMER, "Can you write down 617, I'm I'm I'm 0142 thank you so much"),
                    (CUSTOMER, "I'm sure I'm right."))
    assert texts(redact(anywhere, ["phone_number"], mode="strict").segments) == [
        "Can you write down [PHONE_NUMBER] thank you so much", "I'm sure I'm right."]


def test_a_card_talked_about_but_not_given_opens_no_payment_window():
    said = call((AGENT, "We stopped a payment, have you still got the card?"), (CUSTOMER, "Yes, it's in my purse."),
                (AGENT, "I'm cancelling it now, a new one arrives in 3 working days."), (CUSTOMER, "Okay, 3 days."))
    assert texts(redact(said, ["payment_card"], mode="strict").segments)[2:] == [
        "I'm cancelling it now, a new one arrives in 3 working days.", "Okay, 3 days."]


def test_a_long_run_without_a_cue_opens_a_card_window_that_takes_an_expiry_heard_as_words():
    """16 digits after "the long one across the middle" (no card cue), then the expiry and code heard as words no
    rule reads as digits; a question about the weather in between ends nothing."""
    said = call((AGENT, "Okay, and the long one across the middle."),
                (CUSTOMER, "6 -0 -1 -1 -0 -4 -9 -2 -9 -3 -8 -1 -7 -7 -5 -6."), (AGENT, "Aren't you an exploration?"),
                (CUSTOMER, "too flash too high."), (AGENT, "And the code?"), (CUSTOMER, "2 mirrored eyes,"),
                (AGENT, "Lovely, that went through."), (CUSTOMER, "I want to go for a walk 2 days from now."))
    assert texts(redact(said, ["payment_card"], mode="strict").segments)[3:] == [
        "[PAYMENT_CARD].", "And the code?", "[PAYMENT_CARD],", "Lovely, that went through.",
        "I want to go for a walk 2 days from now."]


def test_in_a_card_payment_the_givers_turns_are_taken_and_digits_keep_it_open():
    """The expiry heard as words no rule reads as digits ("Seven slash twenty-nine." heard "Hermann's last went in
    iron."), more than the longest answer after the request but soon after the last digits; the customer's
    confirmation of a read-back and the agent's own turns without a number stay."""
    said = call((AGENT, "Can I get the card number?"), (CUSTOMER, "It's 6-0-1-1 4-4-2-0."),
                (AGENT, "And then?"), (CUSTOMER, "Double 7 5 8 3 1 6 7."), (AGENT, "7 7 5 8 3 1 6 7?"),
                (CUSTOMER, "Yes that's it."), (AGENT, "Lovely and the date on it"),
                (CUSTOMER, "Hermann's last went in iron."), (AGENT, "That's gone through, thank you."),
                (CUSTOMER, "Great, have a nice day."))
    assert said[7].start_ms > said[0].end_ms + 8_000  # past the request's answer
    assert texts(redact(said, ["payment_card"], mode="strict", max_answer_ms=8_000).segments)[5:] == [
        "Yes that's it.", "Lovely and the date on it", "[PAYMENT_CARD].", "That's gone through, thank you.",
        "Great, have a nice day."]
    # the read-back ended with the next request, garbled: what comes after answers it, no confirmation
    garbled = call(*[(s.speaker, s.text) for s in said[:4]], (AGENT, "7 7 5 8 3 1 6 7 Exploration made,"),
                   (AGENT, "and"), (CUSTOMER, "Hermann's last went in iron."))
    assert texts(redact(garbled, ["payment_card"], mode="strict").segments)[-1] == "[PAYMENT_CARD]."
    # no request: no giver known, and only turns with a number are the card's
    unasked = call(*[(s.speaker, s.text) for s in said[1:]])
    assert texts(redact(unasked, ["payment_card"], mode="strict").segments)[6] == "Hermann's last went in iron."


def test_the_answer_a_read_back_repeats_is_taken_with_it():
    """The sort code heard "for the 1299." (after "source code": no request) before the agent's read-back, which
    the rules read."""
    said = call((AGENT, "Can I take the account holder name?"), (CUSTOMER, "It is Shimon Molkatsu"),
                (AGENT, "Thanks, and the bank source code."), (CUSTOMER, "for the 1299."),
                (AGENT, "4 -01299 and the account number, it'll be 8 digits."), (CUSTOMER, "730 -286."))
    redacted = texts(redact(said, ["payment_card", "bank_account"], mode="strict").segments)
    assert redacted[3] == "[BANK_ACCOUNT]." and "1299" not in " ".join(redacted)


def test_a_long_run_is_a_cards_unless_an_other_cue_names_it_right_before():
    """"the room" 12 words before the number does not make it an order's; "order number" right before does."""
    said = call((AGENT, "We just need a card to guarantee the room, nothing is taken until you arrive."),
                (AGENT, "What's the number on the front?"), (CUSTOMER, "Okay, 4559 -0147 -8263 -3018"),
                (AGENT, "at 4559 -0147 -8236 -3018,"), (CUSTOMER, "No, 8263 -6 -N3"),
                (AGENT, "sorry 8263 got it, and the X piramate,"))
    assert "8263" not in " ".join(texts(redact(said, ["payment_card"], mode="strict").segments))
    order = call((CUSTOMER, "My order number is 4559 0147 8263 3018"), (AGENT, "Thanks, it ships on the 3rd."))
    assert texts(redact(order, ["payment_card"], mode="strict").segments)[1] == "Thanks, it ships on the 3rd."


def test_at_email_and_letters_spelled_inside_a_turn_after_an_email_is_named_are_the_email():
    # "It's derek dot szymanski at gmail, S Z Y M A N S K I."
    said = strict((AGENT, "The confirmation goes by email, MaryKF at gmail.com."), (CUSTOMER, "Thanks."),
                  (CUSTOMER, "Oh and it's merit not shaman's key at email, S-Me-Y-M-N-S-K-I."), entities=["email"])
    assert said[1:] == ["Thanks.", "[EMAIL]."]
    said = strict((AGENT, "The confirmation goes by email, MaryKF at gmail.com."), (CUSTOMER, "Thanks."),
                  (CUSTOMER, "Oh and it's the other one, S-Me-Y-M-N-S-K-I, thanks."), entities=["email"])
    assert "S-Me" not in said[2] and said[2].endswith(", thanks.")
    # letters spelled with no e-mail named, or too few, are no e-mail's
    assert strict((CUSTOMER, "That's Smith, S-M-I-T-H."), entities=["email"]) == ["That's Smith, S-M-I-T-H."]
    assert strict((CUSTOMER, "I read that email on the B B C site."), entities=["email"]) == [
        "I read that email on the B B C site."]


def test_the_cards_last_digits_repeated_when_the_payment_is_confirmed_are_taken():
    # "That's approved, four sixty-five fifty on the card ending oh two eight nine. Is the best number ..."
    said = strict((AGENT, "What's the long number on the card?"),
                  (CUSTOMER, "It's 5312 7780 4461 029, no wait, 0, 2, 8, 9."),
                  (AGENT, "As approved, 46th I'm 50 on the car mending."),
                  (AGENT, "028 I'm in the month number to reach you still."), (CUSTOMER, "Yes, it's 330 on Friday."))
    assert said[2:] == ["As approved, 46th I'm 50 on the car mending.",
                        "[PAYMENT_CARD] I'm in the month number to reach you still.", "Yes, it's 330 on Friday."]


def test_a_number_going_right_on_from_a_segment_taken_whole_is_taken_with_it():
    # an SSN's last four read back over two segments the recogniser cut: "... oh nine five three matches"
    said = strict((AGENT, "And the last four of your social?"), (CUSTOMER, "It's all 1-2, 10-10-09-3."),
                  (AGENT, "Just the last four women been in time, but thank you."), (AGENT, "Oh, I'm time -free."),
                  (AGENT, "Okay, so your claim is for the rear bumper."),
                  entities=["payment_card", "national_id"], unsure={"women", "been", "in", "time,"})
    assert said[2:] == ["[PAYMENT_CARD].", "[PAYMENT_CARD].", "Okay, so your claim is for the rear bumper."]


def test_the_other_speakers_read_back_of_part_of_a_run_is_taken():
    # "Zero six four, one two three." read back, both heard in part; the request heard "ESP"
    said = strict((AGENT, "Can I get your ESP?"), (CUSTOMER, "Mirafix 4, 1, 2, 3."),
                  (AGENT, "1, 2, 3, and the account number"), entities=["bank_account"])
    assert "1, 2, 3" not in said[2]
    # an order number's digits repeated are not
    assert strict((CUSTOMER, "My order number is 5 5 1 2 3."), (AGENT, "1 2 3? Let me check that."),
                  entities=["bank_account"])[1] == "1 2 3? Let me check that."


def test_talk_with_numbers_in_it_does_not_keep_a_bank_details_window_open():
    """A fault call whose first request named the account number: "20 minutes", "5 minutes" and "90 seconds" are
    no digits being given, and the window closes its longest answer after the account number."""
    said = call((AGENT, "Can I take the account number?"), (CUSTOMER, "It's 3 1 9 2 6 8 1 9."),
                (AGENT, "Thanks, what seems to be the problem?"),
                (CUSTOMER, "The internet keeps dropping out for 20 minutes at a time."),
                (CUSTOMER, "And it's down for about 5 minutes each time, every evening this week."),
                (AGENT, "Okay, I'm running a line test now, it takes about 90 seconds to finish."))
    redacted = texts(redact(said, ["bank_account"], mode="strict", max_answer_ms=5_000).segments)
    assert redacted[1] == "[BANK_ACCOUNT]." and redacted[4:] == texts(said)[4:]
    # digits still coming keep it open
    said = call((AGENT, "Can I take the account number?"), (CUSTOMER, "It's 3 1 9 2,"),
                (AGENT, "Mm-hm, go on whenever you're ready, no rush at all."),
                (CUSTOMER, "Sorry, the glasses, the light is bad here, it's 6 8 1 9."))
    assert "6 8 1 9" not in " ".join(texts(redact(said, ["bank_account"], mode="strict", max_answer_ms=5_000).segments))
