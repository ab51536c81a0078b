"""analysis.spoken and .fields: spoken forms (digits, e-mail, numbers, dates) converted, each type validated,
values that cannot be shown dropped, the model's proposals checked against the transcript, the enum rule of the
resource, and (slow) the embedded language model proposing values."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest
from pydantic import ValidationError

from callscope.analysis.models.language_model import LanguageModelError
from callscope.analysis.result import Evidence, ExtractedValue, TranscriptSegment
from callscope.analysis.stages.evidence import quote_in_transcript
from callscope.analysis.stages.fields import FIELD_TOKENS, extract_fields, field_spans, supported
from callscope.analysis.stages.spoken import (
    EMAIL,
    date_mentions,
    digit_runs,
    email_mentions,
    number_mentions,
    phone_mentions,
    spoken_digits,
    spoken_number,
)
from callscope.analysis.stages.summary import CHARS_PER_TOKEN, transcript_prompt
from callscope.resources.kinds import ExtractedField, ProjectSpec
from tests.analysis.scripted_model import ScriptedModel
from tests.analysis.transcripts import BILLING_CALL, WAREHOUSE, WRITTEN_ROLES, long_dialogue, segments


def seg(text: str, id: int = 0, speaker: str = "speaker-2", start_ms: int = 0) -> TranscriptSegment:
    return TranscriptSegment(id=id, channel=int(speaker[-1]) - 1, speaker=speaker, start_ms=start_ms,
                             end_ms=start_ms + 5000, text=text)


def field(name: str, type: str, description: str = "", **kwargs) -> ExtractedField:
    return ExtractedField(name=name, type=type, description=description or name.replace("_", " "), **kwargs)


# --- spoken forms -----------------------------------------------------------------------------------


@pytest.mark.parametrize("said, written", [
    ("five five five, one two three four", "555 1234"),
    ("five five five one two three four", "5551234"),
    ("double five, triple oh", "55 000"),
    ("oh oh seven", "007"),
    ("six five zero, two five three, oh oh oh oh.", "650 253 0000."),
    ("one eight hundred five five five twenty six seventy one", "18005552671"),
    ("it's four one five five five five two six seven one thanks", "it's 4155552671 thanks"),
    ("Oh, I see. It's one two. Oh, and three", "Oh, I see. It's 12. Oh, and three"),  # "oh" as a word stays
    ("one moment please", "one moment please"),  # a lone digit word is not a number to convert
])
def test_spoken_digits(said, written):
    assert spoken_digits(said) == written


def test_digit_runs_keep_where_they_are_and_a_plus():
    [run] = digit_runs("call plus four four two zero now")
    assert run.plus and run.digits == "4420"
    text = "number is (415) 555-2671 ok"
    [run] = digit_runs(text)
    assert run.groups == ("415", "555", "2671") and text[run.start:run.end] == "415) 555-2671"


@pytest.mark.parametrize("said, address", [
    ("it's john dot smith at example dot com", "john.smith@example.com"),
    ("J O H N at gmail dot com", "john@gmail.com"),
    ("mary underscore lee one two three at my dash company dot co dot uk.", "mary_lee123@my-company.co.uk"),
    ("email me: John.Smith@Example.com.", "john.smith@example.com"),
    ("a hyphen b at x hyphen y dot org", "a-b@x-y.org"),
])
def test_spoken_email(said, address):
    [mention] = email_mentions(seg(said))
    assert mention.value == address
    assert said[mention.start:mention.end].lower().endswith(address.rsplit(".", 1)[1])


@pytest.mark.parametrize("said", [
    "you can look at google dot com",  # speech before "at", not a local part
    "it is at example dot com",
    "john at example",  # no top-level domain
    "meet me at home dot",
    "john dot at example dot com",
])
def test_not_an_email(said):
    assert email_mentions(seg(said)) == []


@pytest.mark.parametrize("address, valid", [
    ("john.smith@example.com", True), ("a_b+c@mail.co.uk", True), ("x@y.io", True),
    ("john..smith@example.com", False), ("john@example..com", False), ("john@-example.com", False),
    (".john@example.com", False), ("john@example.c", False), ("john@example.c0m", False), ("john@example", False),
    ("jo hn@example.com", False), ("john@@example.com", False),
])
def test_email_is_strict(address, valid):
    assert bool(EMAIL.match(address)) is valid


@pytest.mark.parametrize("words, value", [
    ("twenty five", 25.0), ("one hundred and fifty", 150.0), ("three point five", 3.5), ("a hundred", 100.0),
    ("two thousand three hundred", 2300.0), ("four five six seven", 4567.0), ("twenty twenty four", 2024.0),
    ("nineteen ninety nine", 1999.0), ("minus two", -2.0), ("forty nine point nine nine", 49.99), ("seven", 7.0),
    ("hello", None), ("hundred hundred", None),
])
def test_spoken_number(words, value):
    assert spoken_number(words.split()) == value


def test_number_mentions_in_a_sentence():
    text = "I paid 1,200 and then 49.99, and it took twenty five minutes, not 3rd place"
    found = [(m.value, text[m.start:m.end]) for m in number_mentions(seg(text))]
    assert found == [(1200.0, "1,200"), (49.99, "49.99"), (25.0, "twenty five")]


# --- phone numbers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("said, region, e164", [
    ("call me on six five zero, two five three, oh oh oh oh please", "US", "+16502530000"),
    ("(650) 253-0000", "US", "+16502530000"),
    ("one six five zero two five three zero zero zero zero", "US", "+16502530000"),
    ("plus four four two zero seven nine four six zero nine five eight", "US", "+442079460958"),
    ("oh two oh, seven nine four six, oh nine five eight", "GB", "+442079460958"),
])
def test_valid_phone_numbers(said, region, e164):
    assert [m.value for m in phone_mentions(seg(said), region)] == [e164]


@pytest.mark.parametrize("said, region", [
    ("one two three four five six seven", "US"),  # not a valid number
    ("five five five, one two three four", "US"),  # seven digits: no area code
    ("oh two oh, seven nine four six, oh nine five eight", "US"),  # a London number read as American
    ("six five zero two five", "US"),  # too short
])
def test_invalid_phone_numbers_are_dropped(said, region):
    assert phone_mentions(seg(said), region) == []


# --- dates ---------------------------------------------------------------------------------------------

CALL_DAY = date(2024, 3, 6)  # a Wednesday


@pytest.mark.parametrize("said, anchored, unanchored", [
    ("March 5th, 2024", "2024-03-05", "2024-03-05"),
    ("the fifth of March twenty twenty four", "2024-03-05", "2024-03-05"),
    ("on 2024-03-05 please", "2024-03-05", "2024-03-05"),
    ("3/5/2024", "2024-03-05", "2024-03-05"),  # month first in the US
    ("March twenty first", "2024-03-21", None),  # no year: only with the call's date
    ("5 March", "2024-03-05", None),
    ("tomorrow", "2024-03-07", None),
    ("the day after tomorrow", "2024-03-08", None),
    ("next Friday", "2024-03-08", None),
    ("since Monday", "2024-03-04", None),
    ("in three days", "2024-03-09", None),
    ("two weeks ago", "2024-02-21", None),
    ("February 30th 2024", None, None),  # no such day
    ("may I have your name", None, None),
    ("see you Friday", None, None),  # which Friday is not said
])
def test_dates(said, anchored, unanchored):
    def found(reference):
        return [m.value.isoformat() for m in date_mentions(seg(said), reference)] or [None]

    assert found(CALL_DAY) == [anchored]
    assert found(None) == [unanchored]


def test_numeric_dates_follow_the_region():
    assert [m.value for m in date_mentions(seg("3/5/2024"), None, "GB")] == [date(2024, 5, 3)]
    assert [m.value for m in date_mentions(seg("3/5/2024"), None, "US")] == [date(2024, 3, 5)]


# --- extract_fields -------------------------------------------------------------------------------------

CALL = [
    seg("Thanks for calling ACME, how can I help?", 0, "speaker-1", 0),
    seg("Hi, I was charged forty nine dollars twice. My contract number is four five six seven.", 1,
        "speaker-2", 4_000),
    seg("Sorry about that. What number can we call you back on?", 2, "speaker-1", 12_000),
    seg("Six five zero, two five three, oh oh oh oh. And my email is john dot smith at example dot com.", 3,
        "speaker-2", 16_000),
    seg("Great. The refund will arrive by March 12th. We are on the fiber plan, right?", 4, "speaker-1", 26_000),
    seg("Yes, fiber.", 5, "speaker-2", 33_000),
]


def test_extract_fields_typed_values_with_evidence():
    fields = [
        field("callback_number", "phone", "The number to call the customer back on."),
        field("contact_email", "email", "The customer's email address."),
        field("contract_number", "number", "The customer's contract number."),
        field("refund_date", "date", "When the refund arrives."),
        field("plan", "enum", "The plan the customer is on.", values=["Basic", "Fiber", "Gigabit"]),
    ]
    results = extract_fields(fields, CALL, reference_date=date(2024, 3, 6))
    assert [(r.name, r.type, r.value) for r in results] == [
        ("callback_number", "phone", "+16502530000"),
        ("contact_email", "email", "john.smith@example.com"),
        ("contract_number", "number", 4567.0),
        ("refund_date", "date", "2024-03-12"),
        ("plan", "enum", "Fiber"),  # as declared
    ]
    assert results[0].evidence == [Evidence(dialogue_id=3, start_ms=16_000,
                                            quote="Six five zero, two five three, oh oh oh oh.")]
    assert results[2].evidence[0].quote == "My contract number is four five six seven."
    for result in results:
        for e in result.evidence:
            assert e.quote in CALL[e.dialogue_id].text


def test_values_that_cannot_be_shown_are_null():
    fields = [
        field("refund_date", "date", "When the refund arrives."),  # March 12th has no year and no call date
        field("agent_name", "string"),  # no model
        field("callback_requested", "boolean"),  # no model
        field("tier", "enum", values=["gold", "silver"]),  # neither said
    ]
    for result in extract_fields(fields, CALL):
        assert result.value is None and result.evidence == [], result
    invalid = [seg("My number is one two three four five six seven.", 0)]
    assert extract_fields([field("phone", "phone")], invalid)[0].value is None


def test_an_ambiguous_number_is_not_guessed():
    devices = field("device_count", "number", "How many devices the customer has.")
    call = [seg("It was forty nine dollars, and the other one was twelve.")]
    assert extract_fields([devices], call)[0].value is None
    call = [seg("I have three devices at home, it cost forty nine dollars.")]
    assert extract_fields([devices], call)[0].value is None  # both in one sentence with "devices": still two candidates
    call = [seg("How many devices do you have?", 0, "speaker-1"), seg("Three.", 1), seg("It cost forty nine.", 2)]
    assert extract_fields([devices], call)[0].value == 3.0  # the answer right after the question


def test_two_phone_numbers_need_the_field_words_to_choose():
    call = [seg("My mobile is six five zero, two five three, oh oh oh oh."),
            seg("My office is four one five, five five five, two six seven one.", 1)]
    office = field("office_phone", "phone", "The customer's office phone.")
    fax = field("fax", "phone", "The fax number.")
    home = field("home_phone", "phone", "The home phone.")
    assert [r.value for r in extract_fields([office, fax, home], call)] == ["+14155552671", None, None]
    # one number in the call: a phone field takes it (a number and a date also need the field's words)
    assert extract_fields([fax], call[:1])[0].value == "+16502530000"


def test_enum_said_twice_differently_is_ambiguous_without_a_model():
    call = [seg("Is it basic or gigabit?")]
    assert extract_fields([field("plan", "enum", values=["basic", "gigabit"])], call)[0].value is None


# --- the model's proposals --------------------------------------------------------------------------------


def test_supported_values_are_said_in_the_transcript():
    assert supported("Maria", segments(BILLING_CALL))
    assert supported("R7741", segments(BILLING_CALL)) and supported("your refund reference", segments(BILLING_CALL))
    assert not supported("refund reference R7741", segments(BILLING_CALL))  # "is" is between: not said so
    assert supported("58213", [seg("it's five eight two one three")])  # spoken form
    assert supported("ACME", [seg("that's A C M E")])
    assert supported("billing", [seg("a question about my bill")])  # word endings aside
    assert supported("bills", [seg("a question about my bill")])
    assert not supported("invoice", [seg("a question about my bill")])
    assert not supported("Northwind Mobile", segments(BILLING_CALL))
    assert not supported("", segments(BILLING_CALL))


def answering(answer: dict) -> ScriptedModel:
    """A model that answers the one request about a single field with `answer`."""
    return ScriptedModel({"field_1": answer})


def test_a_proposal_is_kept_only_when_the_transcript_shows_it():
    name = field("agent_name", "string", "The agent's first name.")
    call = segments(BILLING_CALL)
    kept = answering({"found": True, "value": "Maria", "quote": "this is Maria speaking"})
    [result] = extract_fields([name], call, kept)
    assert result.value == "Maria" and result.evidence[0].dialogue_id == 0
    assert kept.prompts[0].startswith("Transcript of a phone call")
    invented = answering({"found": True, "value": "Mary", "quote": "this is Maria speaking"})
    assert extract_fields([name], call, invented)[0].value is None  # the value is not said
    # the small model often quotes the wrong line: the evidence is where the value is said
    reference = field("refund_reference", "string", "The refund reference the agent gave.")
    misquoted = answering({"found": True, "value": "R7741", "quote": "I will send you an email confirmation."})
    [result] = extract_fields([reference], call, misquoted)
    assert result.value == "R7741"
    assert result.evidence == [Evidence(dialogue_id=6, start_ms=call[6].start_ms,
                                        quote="Your refund reference is R7741.")]
    absent = answering({"found": False, "value": "", "quote": ""})
    assert extract_fields([name], call, absent)[0].value is None


def test_a_boolean_needs_a_quote_and_an_enum_a_declared_value_that_is_said():
    call = segments(BILLING_CALL)
    refund = field("refund_promised", "boolean", "Whether the agent promised a refund.")
    model = answering({"found": True, "value": True, "quote": "I will refund the duplicate payment"})
    [result] = extract_fields([refund], call, model)
    assert result.value is True and result.evidence[0].dialogue_id == 4
    model = answering({"found": True, "value": True, "quote": "I will refund your money"})  # not said so
    assert extract_fields([refund], call, model)[0] == ExtractedValue(name="refund_promised", type="boolean",
                                                                      value=None)
    plan = field("topic", "enum", values=["Billing", "Outage"])
    model = answering({"found": True, "value": "Outage", "quote": "I was charged twice"})
    assert extract_fields([plan], call, model)[0].value is None  # "outage" is never said
    assert model.schemas[0]["properties"]["field_1"]["properties"]["value"]["enum"] == ["Billing", "Outage"]


def test_the_model_chooses_among_candidates_but_cannot_add_one():
    call = [seg("It was forty nine dollars, and the other one was twelve.")]
    count = field("device_count", "number", "How many devices the customer has.")
    model = answering({"value": "12"})
    [result] = extract_fields([count], call, model)
    assert result.value == 12.0 and result.evidence[0].quote.endswith("the other one was twelve.")
    assert model.schemas[0]["properties"]["field_1"]["properties"]["value"]["enum"] == ["49", "12", "none"]
    assert extract_fields([count], call, answering({"value": "none"}))[0].value is None


def test_the_model_is_asked_about_all_fields_in_one_request():
    call = [seg("Hi, this is Maria. It was forty nine dollars, and the other one was twelve.")]
    fields = [field("agent_name", "string", "The agent's first name."),
              field("device_count", "number", "How many devices the customer has."),
              field("account_number", "number", "The account number.")]
    model = ScriptedModel({"field_1": {"found": True, "value": "Maria", "quote": "this is Maria"},
                           "field_2": {"value": "12"}, "field_3": {"value": "none"}})
    name, count, account = extract_fields(fields, call, model)
    assert len(model.prompts) == 1 and list(model.schemas[0]["properties"]) == ["field_1", "field_2", "field_3"]
    assert 'field_2: field "device_count": How many devices the customer has. The call mentions' in model.prompts[0]
    assert (name.value, count.value, account.value) == ("Maria", 12.0, None)


def test_a_model_that_fails_leaves_the_fields_it_was_asked_null():
    class Failing(ScriptedModel):
        def generate_json(self, prompt, schema, max_tokens=512):
            raise LanguageModelError("the model is down")

    call = [seg("Hi, this is Maria, call me back on 0 2 0 7 9 4 6 0 9 5 8.")]
    name, phone = extract_fields([field("agent_name", "string", "The agent's first name."),
                                  field("callback", "phone", "The callback number.")], call, Failing(), region="GB")
    assert name.value is None and phone.value == "+442079460958"


# --- the resource -------------------------------------------------------------------------------------------


def test_enum_fields_need_values_in_the_model_and_the_crd():
    with pytest.raises(ValidationError, match="an enum field needs values"):
        ExtractedField(name="plan", description="The plan.", type="enum")
    spec = ProjectSpec(name="p", language="en", fields=[{"name": "plan", "description": "d", "type": "enum",
                                                         "values": ["a"]}, {"name": "n", "description": "d"}])
    assert spec.fields[0].values == ["a"] and spec.fields[1].type == "string"
    celpy = pytest.importorskip("celpy", reason="cel-python (dev extra) evaluates x-kubernetes-validations")
    from callscope.resources.crd import build_crd
    from callscope.resources.kinds import Project

    schema = build_crd(Project)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    field_schema = schema["properties"]["spec"]["properties"]["fields"]["items"]
    [rule] = field_schema["x-kubernetes-validations"]
    env = celpy.Environment()
    program = env.program(env.compile(rule["rule"]))

    def accepts(value: dict) -> bool:
        return bool(program.evaluate({"self": celpy.json_to_cel(value)}))

    assert not accepts({"name": "plan", "description": "d", "type": "enum"})
    assert not accepts({"name": "plan", "description": "d", "type": "enum", "values": []})
    assert accepts({"name": "plan", "description": "d", "type": "enum", "values": ["a"]})
    assert accepts({"name": "n", "description": "d"}) and accepts({"name": "n", "description": "d", "type": "phone"})


# --- the embedded language model (slow) ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.xdist_group("language_model")
@pytest.mark.timeout(900)  # minutes when other work shares the 2 cores
def test_language_model_proposes_values_the_transcript_shows(language_model):
    call = segments(BILLING_CALL)
    fields = [
        field("agent_name", "string", "The first name of the agent who answered."),
        field("refund_promised", "boolean", "Whether the agent promised a refund."),
        field("topic", "enum", "What the call is about.", values=["billing", "outage", "sales"]),
        field("refund_reference", "string", "The refund reference the agent gave."),
    ]
    results = {r.name: r for r in extract_fields(fields, call, language_model)}
    print({name: r.value for name, r in results.items()})
    assert results["agent_name"].value == "Maria"
    assert results["refund_promised"].value is True
    assert results["refund_reference"].value == "R7741"  # the model quotes the wrong line; the value is said
    for result in results.values():
        for e in result.evidence:
            assert quote_in_transcript(e.quote, call) is not None
        if result.type == "string" and result.value is not None:
            assert supported(result.value, call)


def test_an_hours_thousand_different_mentions_single_none_out():
    # each mention's previous segment is looked up, not searched for among the call's thousands (its cost per
    # audio minute is in benchmarks/call_lengths.py, not timed here)
    field = ExtractedField(name="account_number", description="The customer's account number.", type="number")

    def numbered(minutes: float) -> list:
        return [s.model_copy(update={"text": f"The account number is {4000 + s.id}."}) for s in long_dialogue(minutes)]

    assert extract_fields([field], numbered(60))[0].value is None


# --- the spans each field is asked about -------------------------------------------------------------------

DOG = [("speaker-1", "By the way, how is your new puppy doing? What did you name her?"),
       ("speaker-2", "She is doing great. We named our dog Biscuit, she is a little beagle.")]


def warehouse_call(minutes: float, said_at: float) -> list[TranscriptSegment]:
    """`minutes` of WAREHOUSE said again and again, with DOG said `said_at` minutes in (timed as `segments`)."""
    turns = WAREHOUSE * int(minutes * 60 / sum(len(t.split()) / 2.5 + 0.4 for _, t in WAREHOUSE) + 1)
    at = next(s.id for s in segments(turns) if s.start_ms >= said_at * 60_000 and s.speaker == "speaker-2")
    return segments(turns[:at + 1] + DOG + turns[at + 1:])


def test_a_field_fifty_minutes_in_is_read_in_its_span_and_unrelated_fields_ask_nothing(embedder):
    call = warehouse_call(55, 50)
    dog = next(s for s in call if "Biscuit" in s.text)
    fields = [field("dog_name", "string", "The name of the dog."),
              field("blood_type", "string", "The blood type of the patient."),
              field("policy_number", "number", "The number of the customer's insurance policy.")]  # numbers abound
    model = ScriptedModel({"field_1": {"found": True, "value": "Biscuit"}})
    dog_name, blood, policy = extract_fields(fields, call, model, embedder=embedder)
    assert dog_name.value == "Biscuit" and dog_name.evidence[0].dialogue_id == dog.id
    assert dog.start_ms >= 50 * 60_000
    assert blood.value is None and policy.value is None  # no span relevant to them: not asked
    [prompt] = model.prompts
    assert list(model.schemas[0]["properties"]) == ["field_1"] and 'field "dog_name"' in prompt
    assert "blood" not in prompt and "policy" not in prompt
    transcript = prompt.split("[end of transcript]")[0]
    assert "What did you name her?" in transcript and "We named our dog Biscuit" in transcript  # question, answer
    assert len(transcript) <= FIELD_TOKENS * CHARS_PER_TOKEN + 200  # the span, not the hour: its lines and "[...]"
    # an unrelated field alone: nothing is asked
    assert extract_fields(fields[1:], call, ScriptedModel(), embedder=embedder)[0].value is None


def test_a_short_call_is_read_whole_as_the_summary_reads_it(embedder):
    call = segments(BILLING_CALL)
    fields = [field("agent_name", "string", "The first name of the agent who answered."),
              field("refund_reference", "string", "The refund reference the agent gave.")]
    model = ScriptedModel({"field_1": {"found": True, "value": "Maria"}, "field_2": {"found": True, "value": "R7741"}})
    name, reference = extract_fields(fields, call, model, roles=WRITTEN_ROLES, embedder=embedder)
    assert (name.value, reference.value) == ("Maria", "R7741")
    # the summary reads this call whole: the same transcript prefix, evaluated once for both
    assert model.prompts[0].startswith(transcript_prompt(call, None, WRITTEN_ROLES))
    model = ScriptedModel({"field_1": {"found": True, "value": "Maria"}})
    assert extract_fields(fields[:1], call, model, roles=WRITTEN_ROLES, embedder=embedder)[0].value == "Maria"
    assert model.prompts[0].startswith(transcript_prompt(call, None, WRITTEN_ROLES))  # longer than one field's spans


def test_a_choice_among_values_reads_where_they_are_said(embedder):
    call = warehouse_call(20, 12)
    at = next(i for i, s in enumerate(call) if s.start_ms >= 15 * 60_000)
    call[at:at] = segments([("speaker-1", "How many puppies did your beagle have?"),
                            ("speaker-2", "Five, and we kept one of the puppies, the other four went to friends.")])
    call = [s.model_copy(update={"id": i}) for i, s in enumerate(call)]
    puppies = field("puppy_count", "number", "How many puppies the dog had.")
    model = ScriptedModel({"field_1": {"value": "5"}})
    [result] = extract_fields([puppies], call, model, embedder=embedder)
    assert result.value == 5.0 and result.evidence[0].dialogue_id == at + 1
    # asked only among the values said in its spans (the puppies' first), not the twelve drivers of the rest of the
    # call: a question of "how many" too, but not about puppies
    choices = model.schemas[0]["properties"]["field_1"]["properties"]["value"]["enum"]
    assert choices[0] == "5" and "4" in choices and "12" not in choices and "3" not in choices
    assert len(model.prompts[0].split("[end of transcript]")[0]) <= FIELD_TOKENS * CHARS_PER_TOKEN + 200


def test_field_spans_take_the_window_around_each_relevant_segment_within_the_budget():
    relevance = np.array([0.1, 0.5, 0.2, 0.1, 0.1, 0.35, 0.0, 0.0])
    lengths = [100] * 8
    assert field_spans(relevance, range(8), lengths, 450) == [1, 0, 2, 3]  # the question before, two answers after
    assert field_spans(relevance, range(8), lengths, 800) == [1, 0, 2, 3, 5, 4, 6, 7]
    assert field_spans(relevance, [5, 6], lengths, 800) == [5, 4, 6, 7]  # a choice: only its values' segments
    assert field_spans(relevance * 0.5, range(8), lengths, 800) == []  # nothing relevant: not asked
    assert field_spans(relevance, range(8), [1000] * 8, 450) == [1]  # the best one always, clipped to fit
