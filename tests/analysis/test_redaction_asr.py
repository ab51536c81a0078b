"""analysis.stages.redaction on text as ASR writes it on a phone line: answers read in the context of the
question that asked for them (digits glued to punctuation, misheard, failing their checks; e-mails without "at";
addresses), values volunteered after their own cue, a run holding a card redacted whole, read-backs heard a digit
or two differently, and the numbers that are still not personal data."""

from __future__ import annotations

from callscope.analysis.stages.redaction import EntityType
from tests.analysis.test_redaction import AGENT, CARD, CUSTOMER, asked, said
from tests.analysis.transcripts import call


def test_a_card_asked_for_is_redacted_as_heard_even_failing_luhn():
    heard = "4 -9 -2 -6, Niro -181, I -9 -0 -8, 3 -0 -1 -2."
    assert asked("Can I take the long number on the front of the card?", f"Sure, it's {heard}",
                 EntityType.PAYMENT_CARD) == [heard]
    assert asked("Can I get the card number?", "Yeah, 60, 40, 97, 40, 60, 97, 52, 91,",
                 EntityType.PAYMENT_CARD) == ["60, 40, 97, 40, 60, 97, 52, 91,"]


def test_an_answer_in_pieces_over_segments_is_the_asked_entity():
    segments = call((AGENT, "And to verify your social security number."), (CUSTOMER, "I'm pre -6,"),
                    (CUSTOMER, "7 -2,"), (CUSTOMER, "or 4 -1 -8."))
    assert [s[2] for s in said(segments)] == ["national_id"] * 3


def test_expiry_and_code_asked_together_with_the_card():
    segments = call((AGENT, "No problem, card number, expiry and security code please."),
                    (CUSTOMER, "6,242,685,199,152,898,429, and the code is 711."))
    assert said(segments) == [(1, "6,242,685,199,152,898,429, and the code is 711.", "payment_card")]


def test_a_run_holding_a_card_after_a_card_cue_is_redacted_whole():
    # the digits around the card's are heard with it: none may be left ("[PAYMENT_CARD] ,111 ,111")
    assert said(call((CUSTOMER, f"my card number is {CARD[:4]} {CARD[4:]} ,111 ,111"))) == [
        (0, f"{CARD[:4]} {CARD[4:]} ,111 ,111", "payment_card")]


def test_a_card_volunteered_in_pieces_is_a_card():
    segments = call((AGENT, "How would you like to pay?"), (CUSTOMER, "Master card, the number is I1821993."),
                    (AGENT, "MM."), (CUSTOMER, "I181998."))
    assert said(segments) == [(1, "I1821993.", "payment_card"), (3, "I181998.", "payment_card")]


def test_a_read_back_heard_two_digits_differently_is_redacted():
    segments = call((AGENT, "Can I take the card number?"), (CUSTOMER, CARD),
                    (AGENT, f"So that's {CARD[:5]}9{CARD[6:12]}7{CARD[13:]}?"))
    assert [s[0] for s in said(segments, EntityType.PAYMENT_CARD)] == [1, 2]


def test_an_email_asked_for_without_its_at():
    assert asked("Can I get an email for the receipt?", "Yes, it's mark .gencer .outlook .com",
                 EntityType.EMAIL) == ["mark .gencer .outlook .com"]
    assert asked("Can you confirm your email?", "It's Marcus Mel's access mail .com", EntityType.EMAIL) == [
        "Marcus Mel's access mail .com"]


def test_an_email_volunteered_after_my_email_is():
    segments = call((CUSTOMER, "and my email is"), (AGENT, "Yeah."), (CUSTOMER, "I will run the store on "
                                                                     "realtimeCloud.com."))
    assert said(segments, EntityType.EMAIL) == [(2, "I will run the store on realtimeCloud.com.", "email")]


def test_an_address_asked_for_from_its_number_to_the_end_of_its_sentence():
    assert asked("What's the delivery address?", "312 Maple Dries, Portland, Oregon, 9th Heaven to no one.",
                 EntityType.ADDRESS) == ["312 Maple Dries, Portland, Oregon, 9th Heaven to no one."]
    assert asked("And the new address?", "Slap 2 .14 .1 .1 .1 .1 .2", EntityType.ADDRESS) == [
        "2 .14 .1 .1 .1 .1 .2"]


def test_a_birth_date_asked_for_heard_without_its_day():
    assert asked("And your date of birth?", "It's on September 1946.", EntityType.DATE_OF_BIRTH) == [
        "September 1946."]


def test_a_whole_date_decades_back_is_a_birth_date_without_its_cue():
    assert said(call((CUSTOMER, "won one more on the 30th of January, 1951.")), EntityType.DATE_OF_BIRTH) == [
        (0, "the 30th of January, 1951.", "date_of_birth")]


def test_what_was_not_asked_for_is_left():
    # an order number asked for, a time, an amount, a year after a card cue said unasked
    assert said(call((AGENT, "What's the order number?"), (CUSTOMER, "5301 8822 1904."))) == []
    assert said(call((AGENT, "And the card number?"), (CUSTOMER, "Sorry, can you call back at 4:30?"))) == []
    assert said(call((AGENT, "Thanks, the card is renewed until 2027. You have 3 books due on Friday."))) == []
    assert said(call((AGENT, "And the card number?"), (CUSTOMER, "It's 4 -5 -3 -2, and my order number is 5301 "
                                                               "8822."))) == [(1, "4 -5 -3 -2,", "payment_card")]


def test_a_short_question_is_no_acknowledgement():
    # "And your native number?" asks again: what follows answers it, not the national insurance question before
    segments = call((AGENT, "Your national insurance number?"), (CUSTOMER, "The 48th, 25th and 16th, I"),
                    (AGENT, "And your native number?"), (CUSTOMER, "won one more on the bus"))
    assert said(segments, EntityType.NATIONAL_ID) == [(1, "48th, 25th and 16th,", "national_id")]


# --- names as ASR writes them ------------------------------------------------------------------------------


def test_the_answer_to_a_name_question_runs_to_the_end_of_its_sentence():
    # "Yes, it's Mrs. Joan Whitfield." heard with commas inside the misheard name
    assert said(call((AGENT, "Can I have your name?"), (CUSTOMER, "Yes, it's missing, don't wait, feel.")),
                EntityType.PERSON_NAME) == [(1, "missing, don't wait, feel.", "person_name")]
    # unasked, a comma still ends a name
    assert said(call((CUSTOMER, "my name is tom, and i want to renew")), EntityType.PERSON_NAME) == [
        (0, "tom,", "person_name")]


def test_a_word_in_lower_case_before_speaking_at_a_sentence_end_is_a_name():
    # "Pensions service, Daniel speaking." heard with the name misheard
    assert said(call((AGENT, "Attention, service, manual, speaking.")), EntityType.PERSON_NAME) == [
        (0, "manual,", "person_name")]
    assert said(call((AGENT, "Okay, generally speaking, the bill is due Friday.")), EntityType.PERSON_NAME) == []
    assert said(call((AGENT, "Thanks for calling, billing support, speaking.")), EntityType.PERSON_NAME) == []


def test_a_name_before_speaking_at_a_sentence_end_needs_no_comma():
    # "Claims department, Gloria speaking." heard without its comma
    assert said(call((AGENT, "Billing Department Ottilie speaking.")), EntityType.PERSON_NAME) == [
        (0, "Ottilie", "person_name")]


def test_a_name_after_youre_speaking_to():
    assert said(call((AGENT, "Hello, you're speaking to Torvald.")), EntityType.PERSON_NAME) == [
        (0, "Torvald.", "person_name")]


def test_a_name_after_youre_through_to():
    assert said(call((AGENT, "Hello, East Rookman, you're through to Oliver.")), EntityType.PERSON_NAME) == [
        (0, "Oliver.", "person_name")]


def test_a_name_of_the_call_heard_a_letter_differently_after_a_cue():
    segments = call((AGENT, "Checkout support, this is Ravi."), (CUSTOMER, "Hi Rami, I'll pay by phone."),
                    (AGENT, "The Rams won."))
    assert said(segments, EntityType.PERSON_NAME) == [(0, "Ravi.", "person_name"), (1, "Rami,", "person_name")]


def test_a_question_answered_ends_its_askers_utterance():
    # the agent's next words are no longer read after "address": "five posters" is no house number
    segments = call((AGENT, "And is there a second address for work?"), (CUSTOMER, "munderscore.gencer.nz"),
                    (AGENT, "Thanks. The five posters cost $60, and they will be ready at 4pm."))
    assert said(segments, EntityType.ADDRESS) == []


# --- numbers as ASR writes them: amounts, times, birth dates ---------------------------------------------------


def test_a_currency_sign_in_the_answer_to_a_card_question_is_digits_in_groups():
    heard = "$45 .26 Niro 181, $59 .08, $3 .012."
    assert asked("Can I take the long number on the front of the card?", f"Sure, it's {heard}",
                 EntityType.PAYMENT_CARD) == [heard]
    # said unasked, or asked for a price, it is an amount
    assert said(call((AGENT, "Your total?"), (CUSTOMER, "It's $45 .26."))) == []


def test_a_number_after_a_currency_word_or_at_as_a_time_is_no_value():
    # "$82.40" heard as "dollar 82.4", "at 10:15" as "at 1015": within 20 words of an expiry or security code cue
    segments = call((AGENT, "And the expiry date?"), (CUSTOMER, "0927."), (AGENT, "And the security code?"),
                    (CUSTOMER, "412."), (AGENT, "Lovely, the payment on dollar 82 .4 went through, at 1015."))
    assert [s[0] for s in said(segments)] == [1, 3]


def test_your_date_asks_for_a_birth_date():
    # "And your date of birth?" heard as "and your date number,"
    assert asked("and your date number,", "So free 22 -9910.", EntityType.DATE_OF_BIRTH) == ["22 -9910."]
