"""analysis.stages.redaction: each entity type in each spoken form, found word by word with its times; Luhn,
IBAN and SSN checks; read-backs by the other speaker; a value said across two segments; and numbers that are not
personal data (order numbers, prices, times, counts) left alone."""

from __future__ import annotations

import pytest

from callscope.analysis.result import TranscriptSegment
from callscope.analysis.stages.redaction import ENTITY_TYPES, EntityType, RedactedSpan, find_spans, is_card_number
from tests.analysis.transcripts import call

AGENT, CUSTOMER = "speaker-1", "speaker-2"
CARD = "4526018159083012"  # a Visa number passing Luhn


def said(segments: list[TranscriptSegment], entity: EntityType | None = None, **kwargs) -> list[tuple[int, str, str]]:
    """(segment, words, entity) of each span found (of one entity, or all)."""
    spans = find_spans(segments, [entity] if entity else ENTITY_TYPES, **kwargs)
    return [(s.segment, " ".join(w.text.strip() for w in segments[s.segment].words[s.first_word:s.last_word + 1]),
             s.entity.value) for s in spans]


def asked(question: str, answer: str, entity: EntityType, **kwargs) -> list[str]:
    """The words of the customer's answer found as entity."""
    return [words for seg, words, _ in said(call((AGENT, question), (CUSTOMER, answer)), entity, **kwargs)
            if seg == 1]


def spoken(digits: str, oh: bool = False) -> str:
    names = "zero one two three four five six seven eight nine".split()
    return " ".join("oh" if oh and d == "0" else names[int(d)] for d in digits)


# --- the span ---------------------------------------------------------------------------------------------


def test_a_span_names_its_segment_words_and_times():
    segments = call((AGENT, "Can I take the card number?"), (CUSTOMER, f"Sure, it's {CARD}, thanks."))
    [span] = find_spans(segments, [EntityType.PAYMENT_CARD])
    assert span == RedactedSpan(segment=1, first_word=2, last_word=2, entity=EntityType.PAYMENT_CARD,
                                start_ms=segments[1].words[2].start_ms, end_ms=segments[1].words[2].end_ms)
    assert set(ENTITY_TYPES) == {"payment_card", "bank_account", "national_id", "date_of_birth", "email",
                                 "phone_number", "person_name", "address"}


def test_only_the_requested_types_are_returned_and_strings_are_accepted():
    segments = call((CUSTOMER, f"My name is Tom Becker and my card is {CARD}."))
    assert {s.entity for s in find_spans(segments, ["person_name"])} == {EntityType.PERSON_NAME}
    assert find_spans(segments, []) == []


def test_segments_without_word_timings_use_their_text_split_on_spaces():
    segments = [TranscriptSegment(id=0, speaker=CUSTOMER, channel=1, start_ms=1000, end_ms=5000,
                                  text=f"the card is {CARD} ok")]
    [span] = find_spans(segments, [EntityType.PAYMENT_CARD])
    assert (span.first_word, span.last_word, span.start_ms, span.end_ms) == (3, 3, 3400, 4200)


# --- payment cards ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer, card_words", [
    (spoken(CARD), spoken(CARD)),  # digits one by one
    ("four five two six, oh one eight one, five nine oh eight, three oh one two.",
     "four five two six, oh one eight one, five nine oh eight, three oh one two."),  # groups, "oh" for zero
    ("4526 0181 5908 3012", "4526 0181 5908 3012"),  # written groups
    ("It's 4526-0181-5908-3012.", "4526-0181-5908-3012."),
    ("forty five twenty six, oh one eighty one, fifty nine oh eight, thirty twelve",
     "forty five twenty six, oh one eighty one, fifty nine oh eight, thirty twelve"),  # numbers in words
    ("five one eight two one nine nine three five one eight one nine oh nine eight",
     "five one eight two one nine nine three five one eight one nine oh nine eight"),
    ("five one eight two one double nine three five one eight one nine oh nine eight",
     "five one eight two one double nine three five one eight one nine oh nine eight"),  # "double nine"
    ("Four seven eight, six triple six, one seven, six oh three seven.",
     "Four seven eight, six triple six, one seven, six oh three seven."),  # 13 digits, "triple six"
    ("Amex, 3786 252760 18957, thanks", "3786 252760 18957,"),  # 15 digits
])
def test_card_numbers_in_every_spoken_form(answer, card_words):
    assert asked("What's the long number on the card?", answer, EntityType.PAYMENT_CARD) == [card_words]


def test_card_numbers_need_no_cue_but_are_checked():
    assert is_card_number(CARD) and is_card_number("378625276018957") and is_card_number("4786666176037")
    assert not is_card_number("4526018159083013")  # Luhn fails
    assert not is_card_number("9526018159083017")  # passes Luhn, but no card brand starts with 9
    assert not is_card_number("45260181590830")  # 14 digits: not a Visa length
    assert said(call((CUSTOMER, f"oh and it's {CARD} by the way"))) == [(0, CARD, "payment_card")]


def test_sixteen_digits_failing_luhn_are_not_a_card_unless_a_card_was_asked_for():
    assert said(call((CUSTOMER, "oh and it's 4526 0181 5908 3013 by the way")), EntityType.PAYMENT_CARD) == []
    # asked for, they are the card as it was heard (ASR changed a digit): redacted all the same
    assert asked("The card number?", "4526 0181 5908 3013", EntityType.PAYMENT_CARD) == ["4526 0181 5908 3013"]
    assert asked("The card number?", spoken("4526018159083013"), EntityType.PAYMENT_CARD) == [
        spoken("4526018159083013")]


def test_the_agent_reading_the_card_back_and_its_last_four_are_redacted_too():
    segments = call((AGENT, "Can I take the card number?"), (CUSTOMER, spoken(CARD, oh=True)),
                    (AGENT, "So that's 4526 0181 5908 3012?"), (CUSTOMER, "Yes."),
                    (AGENT, "Thank you, the card ending three oh one two is charged 20 dollars."))
    assert said(segments, EntityType.PAYMENT_CARD) == [
        (1, spoken(CARD, oh=True), "payment_card"), (2, "4526 0181 5908 3012?", "payment_card"),
        (4, "three oh one two", "payment_card")]


def test_a_card_said_across_two_segments_of_the_same_speaker():
    segments = call((AGENT, "And the card number?"), (CUSTOMER, "four five two six, oh one eight one"),
                    (AGENT, "Mm-hmm."), (CUSTOMER, "five nine oh eight, three oh one two."))
    assert said(segments) == [(1, "four five two six, oh one eight one", "payment_card"),
                              (3, "five nine oh eight, three oh one two.", "payment_card")]


def test_halves_split_by_a_question_are_not_joined():
    # the agent asks something else in between: the two halves are two numbers, neither of them a card
    segments = call((CUSTOMER, "four five two six, oh one eight one"), (AGENT, "And what's the order number?"),
                    (CUSTOMER, "five nine oh eight, three oh one two."))
    assert said(segments, EntityType.PAYMENT_CARD) == []


def test_expiry_and_security_code_belong_to_the_card():
    segments = call((AGENT, "Card number and expiry please."), (CUSTOMER, f"{CARD}, oh nine twenty seven."),
                    (AGENT, "And the three digits on the back?"), (CUSTOMER, "Four one two."))
    assert said(segments) == [(1, f"{CARD}, oh nine twenty seven.", "payment_card"),
                              (3, "Four one two.", "payment_card")]


# --- bank accounts ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("question, answer, found", [
    ("Can I have the IBAN?", "GB82 WEST 1234 5698 7654 32.", "GB82 WEST 1234 5698 7654 32."),
    ("Can I have the IBAN?", "G B eight two W E S T one two three four five six nine eight seven six five four "
     "three two", "G B eight two W E S T one two three four five six nine eight seven six five four three two"),
    ("What's your account number?", "three one nine two six eight one nine", "three one nine two six eight one nine"),
    ("What's your account number?", "double seven one two double oh four five", "double seven one two double oh "
     "four five"),
    ("What's your account number?", "Oh oh seven three, four four one nine.", "Oh oh seven three, four four one "
     "nine."),
    ("And the sort code?", "sixty, sixteen, thirteen", "sixty, sixteen, thirteen"),
    ("And the routing number?", "zero two one, zero zero zero, zero two one", "zero two one, zero zero zero, zero "
     "two one"),
])
def test_bank_accounts(question, answer, found):
    assert asked(question, answer, EntityType.BANK_ACCOUNT, region="GB") == [found]


def test_an_iban_or_a_routing_number_failing_its_checksum_is_still_the_account_asked_for():
    # the checks tell a value said unasked; an answer is what was asked for, however it was heard
    assert asked("The IBAN?", "GB82 WEST 1234 5698 7654 33", EntityType.BANK_ACCOUNT) == [
        "GB82 WEST 1234 5698 7654 33"]
    assert asked("And the routing number?", "zero two one zero zero zero zero two two", EntityType.BANK_ACCOUNT) == [
        "zero two one zero zero zero zero two two"]
    assert said(call((CUSTOMER, "it's GB82 WEST 1234 5698 7654 33")), EntityType.BANK_ACCOUNT) == []


def test_digits_without_an_account_cue_are_no_account():
    assert asked("How many did you order?", "three one nine two six eight", EntityType.BANK_ACCOUNT) == []


# --- national ids -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("question, answer, found", [
    ("And your social security number?", "five three six, seven two, four four one eight",
     "five three six, seven two, four four one eight"),
    ("And your social security number?", "four oh one three eight two two nine oh",
     "four oh one three eight two two nine oh"),
    ("Can I have your SSN?", "612-04-7731.", "612-04-7731."),
    ("Can I have the last four of your social?", "Four three oh two.", "Four three oh two."),
    ("Your national insurance number?", "J G one oh three seven five nine A.", "J G one oh three seven five nine A."),
    ("Your national insurance number?", "NE 48 27 16 D.", "NE 48 27 16 D."),
    ("Your national insurance number?", "P W, sixty one, ninety, thirty three, C.",
     "P W, sixty one, ninety, thirty three, C."),
    ("What's your passport number?", "five four eight, two two one, nine oh seven",
     "five four eight, two two one, nine oh seven"),
    ("What's your passport number?", "It's C, zero one X, double zero, T four seven.",
     "C, zero one X, double zero, T four seven."),
])
def test_national_ids(question, answer, found):
    assert asked(question, answer, EntityType.NATIONAL_ID) == [found]


def test_an_ssn_said_in_its_groups_needs_no_cue_but_its_ranges_are_checked():
    assert said(call((CUSTOMER, "oh it's five three six, seven two, four four one eight"))) == [
        (0, "five three six, seven two, four four one eight", "national_id")]
    # area 666 and group 00 are never issued
    assert said(call((CUSTOMER, "it's six six six, seven two, four four one eight")), EntityType.NATIONAL_ID) == []
    # asked for, an out-of-range SSN is the SSN as heard
    assert asked("Your social security number?", "five three six, oh oh, four four one eight",
                 EntityType.NATIONAL_ID) == ["five three six, oh oh, four four one eight"]


# --- dates of birth ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("question, answer, found", [
    ("And your date of birth?", "July fourteenth, nineteen seventy eight.", "July fourteenth, nineteen seventy eight."),
    ("When were you born?", "on the twenty third of may nineteen ninety nine", "the twenty third of may nineteen "
     "ninety nine"),
    ("And your DOB?", "11/02/1985.", "11/02/1985."),
    ("And your date of birth?", "Oh three, twenty two, nineteen ninety.", "Oh three, twenty two, nineteen ninety."),
    ("And your date of birth?", "04-15-1988.", "04-15-1988."),
    ("What's your birthday?", "March fifth.", "March fifth."),  # no year: still the birthday
])
def test_dates_of_birth(question, answer, found):
    assert asked(question, answer, EntityType.DATE_OF_BIRTH)[:1] == [found]


def test_other_dates_are_not_birth_dates():
    segments = call((AGENT, "Your appointment is on August 3rd 2024 at 9:30."), (CUSTOMER, "Great."),
                    (AGENT, "And your date of birth?"), (CUSTOMER, "July fourteenth, nineteen seventy eight."),
                    (AGENT, "Thanks. The refund arrives on March 5th 2025."))
    assert said(segments) == [(3, "July fourteenth, nineteen seventy eight.", "date_of_birth")]


def test_a_date_after_the_call_is_no_birth_date():
    segments = call((AGENT, "Your date of birth?"), (CUSTOMER, "March 5th 2031."))
    assert said(segments, EntityType.DATE_OF_BIRTH, reference=__import__("datetime").date(2024, 3, 6)) == []


# --- e-mail addresses -------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer, found", [
    ("Yes, it's mark dot jensen at outlook dot com.", "mark dot jensen at outlook dot com."),
    ("M underscore jensen seven seven at pixel dash works dot co dot uk", "M underscore jensen seven seven at pixel "
     "dash works dot co dot uk"),
    ("J O H N at gmail dot com", "J O H N at gmail dot com"),
    ("It's jane.doe84@yahoo.com.", "jane.doe84@yahoo.com."),
])
def test_email_addresses(answer, found):
    assert asked("Can I get an email address?", answer, EntityType.EMAIL) == [found]


def test_an_at_that_is_speech_is_no_email():
    assert said(call((CUSTOMER, "you can look at google dot com for that"))) == []


# --- phone numbers ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer, region, found", [
    ("Four one five, five five five, two six seven one.", "US", "Four one five, five five five, two six seven one."),
    ("four one five five five five two six seven one", "US", "four one five five five five two six seven one"),
    ("Nine one seven, double five five, one two three four.", "US", "Nine one seven, double five five, one two "
     "three four."),
    ("Three one oh, five five five, oh one nine nine.", "US", "Three one oh, five five five, oh one nine nine."),
    ("It's (646) 555-0142.", "US", "(646) 555-0142."),
    ("Plus four four, two oh seven nine four six, oh nine five eight.", "US", "Plus four four, two oh seven nine "
     "four six, oh nine five eight."),
    ("Oh seven nine one one, one two three four five six.", "GB", "Oh seven nine one one, one two three four five "
     "six."),
    ("Oh one one seven, four nine six, double oh two two.", "GB", "Oh one one seven, four nine six, double oh two "
     "two."),
])
def test_phone_numbers(answer, region, found):
    assert asked("What's the best number to reach you?", answer, EntityType.PHONE_NUMBER, region=region) == [found]


def test_digits_that_are_no_valid_phone_number_are_left_unless_asked_for():
    assert said(call((CUSTOMER, "one two three four five six seven")), EntityType.PHONE_NUMBER) == []
    assert said(call((CUSTOMER, "five five five, one two three four")), EntityType.PHONE_NUMBER) == []
    assert asked("And your phone number?", "five five five, one two three four", EntityType.PHONE_NUMBER) == [
        "five five five, one two three four"]


# --- names and addresses ------------------------------------------------------------------------------------


def test_names_after_their_cues_and_wherever_they_are_said_again():
    segments = call((AGENT, "Thank you for calling Northwind Energy, this is Maria speaking."),
                    (CUSTOMER, "Hi Maria, my name is Tom Becker."),
                    (AGENT, "Thanks Mr. Becker. Can I have the name on the card?"),
                    (CUSTOMER, "Kenji Watanabe."),
                    (AGENT, "Good afternoon, Harbor Books, James speaking."),
                    (CUSTOMER, "It's Sarah, S A R A H."))
    assert said(segments, EntityType.PERSON_NAME) == [
        (0, "Maria", "person_name"), (1, "Maria,", "person_name"), (1, "Tom Becker.", "person_name"),
        (2, "Becker.", "person_name"), (3, "Kenji Watanabe.", "person_name"), (4, "James", "person_name"),
        (5, "Sarah, S A R A H.", "person_name")]


def test_names_in_lower_case_after_a_strong_cue():
    segments = call((CUSTOMER, "hi my name is fatima hassan and i want to renew"), (AGENT, "thanks fatima"))
    assert said(segments) == [(0, "fatima hassan", "person_name"), (1, "fatima", "person_name")]


def test_capitalised_words_that_are_no_names():
    segments = call((AGENT, "This is Northwind Internet, how can I help?"),
                    (CUSTOMER, "Hi, I'm calling about my bill. I'm Fine with Monday."),
                    (AGENT, "Hello, Lakeside Gym memberships."))
    assert said(segments, EntityType.PERSON_NAME) == []


@pytest.mark.parametrize("answer, found", [
    ("Flat 2, 14 Rosewood Avenue, Leeds LS6 2AB.", "Flat 2, 14 Rosewood Avenue, Leeds LS6 2AB."),
    ("It's four five six Oak Lane, Springfield, Illinois, six two seven oh four.",
     "four five six Oak Lane, Springfield, Illinois, six two seven oh four."),
    ("Forty two Mill Lane, Bristol.", "Forty two Mill Lane, Bristol."),
    ("It's Apartment 4B, 350 Fifth Avenue, New York, NY 10118.", "Apartment 4B, 350 Fifth Avenue, New York, NY "
     "10118."),
    ("one two three main street", "one two three main street"),  # lower case, after the cue
])
def test_addresses(answer, found):
    assert asked("What's the delivery address?", answer, EntityType.ADDRESS) == [found]


def test_postcodes_and_zip_codes_after_their_cue():
    assert asked("And the postcode?", "B S eight, four T R.", EntityType.ADDRESS) == ["B S eight, four T R."]
    assert asked("And your billing zip code?", "Nine four one oh three.", EntityType.ADDRESS) == [
        "Nine four one oh three."]


def test_numbers_before_street_like_words_that_are_no_address():
    assert said(call((CUSTOMER, "I drove 2 miles down the road and waited 10 minutes on the Way."))) == []


# --- numbers that are not personal data ---------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "I'm calling about order number 4526 0181 5908 3012.",  # passes Luhn, but it is an order number
    "My order number is 5301 8822 1904.",
    "The tracking number is 9400 1000 0000 0000 0000 00.",
    "It was $1,234.56, and then 49.99, and four hundred and twelve dollars.",
    "It comes to one hundred and forty five dollars ninety nine.",
    "It should arrive at three thirty, or 10:15, or at 4 pm.",
    "I have 12 items and 3 boxes, twenty five in total.",
    "The case number is 6011 0009 9013 9425.",
    "The model is 4417 2290 8813 6655 and the serial one two three four five six seven eight nine.",
    "Your appointment is on the 14th of June at ten thirty, room 1408.",
])
def test_numbers_that_are_not_personal_data_are_left(text):
    assert said(call((AGENT, "Thanks for calling, how can I help?"), (CUSTOMER, text))) == []


def test_an_hour_of_dialogue_is_fast():
    import time

    from tests.analysis.transcripts import long_dialogue

    segments = long_dialogue(60)
    started = time.perf_counter()
    assert find_spans(segments) == []
    assert time.perf_counter() - started < 10  # an hour of speech; a minute takes a few milliseconds


def test_one_capitalised_word_ending_an_introduction_is_a_name():
    assert said(call((AGENT, "Hello, Lakeside Clinic, you're speaking with Oona.")), EntityType.PERSON_NAME) == [
        (0, "Oona.", "person_name")]
    assert said(call((AGENT, "Hello, you've reached Torvald.")), EntityType.PERSON_NAME) == [
        (0, "Torvald.", "person_name")]
    assert said(call((AGENT, "Hello, you've reached Harbor Books.")), EntityType.PERSON_NAME) == []
    assert said(call((CUSTOMER, "The boiler, it's Broken.")), EntityType.PERSON_NAME) == []
