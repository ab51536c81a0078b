"""Words the recogniser doubted (evidence.DOUBTFUL_WORD_PROBABILITY): never quoted in a summary, no support for a
summary's number, and a field value said only in them is uncertain. Segments are built with words and probabilities;
the text model is a bag of words (no model is loaded)."""

from __future__ import annotations

import zlib
from datetime import date

import numpy as np

from callscope.analysis.result import ExtractedValue, TranscriptSegment, TranscriptWord
from callscope.analysis.stages.evidence import (
    DOUBTFUL_WORD_PROBABILITY,
    Doubts,
    doubtful_sentences,
    sentence_words,
    span_words,
    tokens,
)
from callscope.analysis.stages.faithfulness import SupportChecker, extractive_summary, key_sentences
from callscope.analysis.stages.fields import extract_fields, with_confidence
from callscope.analysis.stages.salience import Turn
from callscope.analysis.stages.summary import _Quotes, summarize
from callscope.resources.kinds import ExtractedField
from tests.analysis.scripted_model import briefs

SURE, DOUBTED = 0.95, DOUBTFUL_WORD_PROBABILITY / 2
ROLES = {"speaker-1": "agent", "speaker-2": "customer"}


def said(index: int, speaker: str, text: str, doubted: set[str] = frozenset()) -> TranscriptSegment:
    """A segment of text with one word per whitespace-separated piece, as Whisper gives them (" word,"); the pieces
    in `doubted` (punctuation aside) have a low probability."""
    pieces = text.split()
    words = [TranscriptWord(start_ms=index * 10_000 + k * 300, end_ms=index * 10_000 + k * 300 + 250, text=f" {w}",
                            probability=DOUBTED if w.strip(".,?!") in doubted else SURE)
             for k, w in enumerate(pieces)]
    return TranscriptSegment(id=index, speaker=speaker, channel=int(speaker[-1]) - 1, start_ms=index * 10_000,
                             end_ms=index * 10_000 + len(pieces) * 300, text=" " + text, words=words)


class BagOfWords:
    """A text embedder for tests: normalised counts of hashed words."""

    def embed(self, texts):
        out = np.zeros((len(texts), 512), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in tokens(text):
                out[row, zlib.crc32(word.encode()) % 512] += 1
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


# --- which sentences are doubtful ------------------------------------------------------------------------------


def test_each_sentence_has_the_words_said_in_it_and_is_doubtful_when_one_of_them_is():
    segment = said(0, "speaker-2", "My number is 555-1234. Thanks a lot, bye.", {"555-1234"})
    sentences = sentence_words(segment)
    assert [text for text, _ in sentences] == ["My number is 555-1234.", "Thanks a lot, bye."]
    assert [[w.text for w in words] for _, words in sentences] == [
        [" My", " number", " is", " 555-1234."], [" Thanks", " a", " lot,", " bye."]]  # one word, two tokens
    assert doubtful_sentences(segment) == [("My number is 555-1234.", True), ("Thanks a lot, bye.", False)]
    # the value's own words, by characters of the text
    start = segment.text.index("555")
    assert [w.text for w in span_words(segment, start, start + 3)] == [" 555-1234."]


def test_a_segment_without_words_is_sure_and_a_word_the_text_lacks_is_passed_over():
    written = TranscriptSegment(id=0, speaker="speaker-1", channel=0, start_ms=0, end_ms=1, text="Hello. It is 5.")
    assert doubtful_sentences(written) == [("Hello.", False), ("It is 5.", False)]
    assert not Doubts([written]).any
    edited = said(1, "speaker-1", "Call me at nine today.", {"um"})
    edited = edited.model_copy(update={"words": [*edited.words[:3], TranscriptWord(
        start_ms=0, end_ms=1, text=" um", probability=DOUBTED), *edited.words[3:]]})
    assert doubtful_sentences(edited) == [("Call me at nine today.", False)]  # "um" is said in no sentence


def test_the_words_of_a_quote_are_doubtful_only_when_said_nowhere_else_without_doubt():
    call = [said(0, "speaker-1", "The refund is forty dollars.", {"forty"}),
            said(1, "speaker-2", "Forty dollars, fine.")]
    doubts = Doubts(call)
    assert doubts.only_doubtful("the refund is forty dollars", "speaker-1")
    assert not doubts.only_doubtful("forty dollars")  # speaker-2 said it with no doubt
    assert doubts.only_doubtful("forty dollars", "speaker-1") and not doubts.only_doubtful("never said")
    assert "forty" not in doubts.sure.splitlines()[0] and "Forty" in doubts.sure


# --- the summary never quotes doubtful words ------------------------------------------------------------------


CALL = [
    said(0, "speaker-1", "Thank you for calling, this is Maria, how can I help you today?"),
    said(1, "speaker-2", "My internet connection drops every evening since Monday."),
    said(2, "speaker-1", "I see a fault on your line, a technician will replace the router tomorrow morning.",
         {"router"}),
    said(3, "speaker-2", "Great, the technician can come between eight and noon."),
    said(4, "speaker-1", "You will also get a credit of twenty dollars on your next bill.", {"twenty"}),
]
TURNS = [Turn(s.speaker, " ".join(s.text.split())) for s in CALL]


def test_a_repair_never_quotes_a_sentence_with_a_doubtful_word():
    wrong = "A technician will replace the router on your line tomorrow."
    doubting = _Quotes(TURNS, BagOfWords(), ROLES, CALL)
    trusting = _Quotes(TURNS, BagOfWords(), ROLES, [s.model_copy(update={"words": []}) for s in CALL])
    assert "replace the router" in trusting.closest(wrong)  # the closest sentence, when its words are sure
    quote = doubting.closest(wrong)
    assert quote and "router" not in quote and "twenty" not in quote


def test_what_was_left_out_and_a_quarter_are_never_quoted_from_doubtful_words():
    summary = ["The customer's connection drops every evening."]
    trusting = _Quotes(TURNS, BagOfWords(), ROLES)
    assert any("twenty dollars" in q for q in trusting.untold(summary, 3))
    untold = _Quotes(TURNS, BagOfWords(), ROLES, CALL).untold(summary, 3)
    assert untold and not any("twenty" in q or "router" in q for q in untold)
    # a long call's quarter whose only statement is doubtful is told by no quote
    parts = [Turn(t.speaker, t.text, part=i % 4) for i, t in enumerate(TURNS)]
    assert any("twenty dollars" in q for q in _Quotes(parts, BagOfWords(), ROLES).parts_untold([]))
    assert not any("twenty" in q for q in _Quotes(parts, BagOfWords(), ROLES, CALL).parts_untold([]))


def test_summarize_repairs_with_sure_words_only():
    model = briefs(["The technician will replace the router on the line for 99 dollars."])
    result = summarize(CALL, "en", model, roles=ROLES, embedder=BagOfWords())
    assert result.method == "repaired" and result.removed[0].details == ("99",)
    assert 'said: "' in result.text and "router" not in result.text and "twenty" not in result.text


def test_the_key_sentences_prefer_sure_ones():
    call = [said(0, "speaker-1", "The technician replaces the broken router in the basement tomorrow morning.",
                 {"router"}),
            said(1, "speaker-2", "Thanks, I will be home all day.")]
    assert [text for _, text in key_sentences(call, None, count=1)] == ["Thanks, I will be home all day."]
    assert "router" not in extractive_summary(call, None, ROLES, count=1)
    sure = [s.model_copy(update={"words": []}) for s in call]
    assert "router" in key_sentences(sure, None, count=1)[0][1]  # the longest, when nothing is doubted
    doubted = [call[0], said(1, "speaker-2", "Thanks, I will be home all day.", {"home"})]
    assert len(key_sentences(doubted, None, count=1)) == 1  # all doubtful: still a summary


# --- numbers ---------------------------------------------------------------------------------------------------


def test_a_number_said_only_in_doubtful_words_supports_no_sentence():
    call = [said(0, "speaker-1", "Your refund of 49.99 arrives in five days.", {"49.99", "five"}),
            said(1, "speaker-2", "Great, thank you Maria.")]
    sentences = ["The refund is 49.99.", "It arrives in five days.", "It arrives in 5 days.", "Maria helped."]
    checks = SupportChecker(call, None).check(sentences)
    assert [c.doubtful for c in checks] == [("49.99",), ("five",), ("5",), ()]
    assert [c.supported() for c in checks] == [False, False, False, True]
    assert "doubted" in checks[0].reason() and checks[0].details == ()
    # the same words, sure: supported; said again without doubt: supported
    sure = [s.model_copy(update={"words": []}) for s in call]
    assert all(c.supported() for c in SupportChecker(sure, None).check(sentences))
    again = [*call, said(2, "speaker-1", "So 49.99 in five days.")]
    assert all(c.supported() for c in SupportChecker(again, None).check(sentences))
    # a number the transcript does not have at all is a detail, as before
    assert SupportChecker(call, None).check(["It costs 12."])[0].details == ("12",)


def test_a_summary_sentence_with_a_doubted_number_is_removed():
    call = [said(0, "speaker-1", "Your refund of 49.99 arrives in five days.", {"49.99"})]
    result = summarize(call, "en", briefs(["The agent refunded 49.99 to the customer."]), roles=ROLES)
    assert result.method == "extractive" and result.removed[0].doubtful == ("49.99",)


def test_a_field_value_said_only_in_doubtful_words_is_uncertain():
    fields = [ExtractedField(name="callback_number", type="phone", description="The number to call back."),
              ExtractedField(name="visit_date", type="date", description="The day of the technician's visit."),
              ExtractedField(name="devices", type="number", description="How many devices are connected.")]
    call = [said(0, "speaker-2", "Please call me back at 212 555 0187 about the visit.", {"0187"}),
            said(1, "speaker-1", "The visit date is March 5th, 2025. How many devices are connected?"),
            said(2, "speaker-2", "Three devices are connected.")]
    values = extract_fields(fields, call)
    assert [v.value for v in values] == ["+12125550187", "2025-03-05", 3.0]  # the value is kept, with its evidence
    # the least sure word where each value is said: the phone number's last four digits were doubted
    assert [v.confidence for v in with_confidence(fields, values, call)] == [DOUBTED, SURE, SURE]
    sure = [s.model_copy(update={"words": []}) for s in call]  # no word timings: it cannot be told
    assert [v.confidence for v in with_confidence(fields, extract_fields(fields, sure), sure)] == [None] * 3
    # said again without doubt: the surer place counts
    again = [*call, said(3, "speaker-2", "Yes, 212 555 0187.")]
    assert with_confidence(fields, extract_fields(fields, again), again)[0].confidence == SURE
    doubted_year = [call[0], said(1, "speaker-1", "The visit date is March 5th, 2025.", {"2025"}), call[2]]
    [visit] = with_confidence(fields[1:2], extract_fields(fields[1:2], doubted_year, reference_date=date(2025, 1, 1)),
                              doubted_year)
    assert visit.confidence == DOUBTED
    unsaid = [ExtractedField(name="plan", type="string", description="The plan."),
              ExtractedField(name="callback_requested", type="boolean", description="A callback was asked for.")]
    assert [v.confidence for v in with_confidence(unsaid, [ExtractedValue(name="plan", type="string", value=None),
                                                           ExtractedValue(name="callback_requested", type="boolean",
                                                                          value=True)], call)] == [None, None]


def test_the_fields_stage_names_an_uncertain_value():
    from callscope.analysis.runtime.pipeline import Pipeline, _Run
    from callscope.config import Settings
    from callscope.resources.kinds import ProjectSpec

    project = ProjectSpec(name="calls", language="en", fields=[
        ExtractedField(name="callback_number", type="phone", description="The number to call back.")])
    pipeline = Pipeline(Settings(), transcriber=None, speakers=None, embedder=None, llm=None)
    for call, detail in (([said(0, "speaker-2", "Call me back at 212 555 0187.", {"0187"})],
                          "1 of 1 found; uncertain, said in words the recogniser doubted: callback_number"),
                         ([said(0, "speaker-2", "Call me back at 212 555 0187.")], "1 of 1 found")):
        run = _Run(lambda stage, fraction: None)
        found = pipeline._fields(project, call, ROLES, None, None, run)
        assert found[0].value == "+12125550187" and found[0].confidence in (DOUBTED, SURE)
        assert run.stages[-1].detail == f"{detail}; typed extractors only (no language model)"
