"""The recording page marks what the recogniser doubted: a word below evidence.DOUBTFUL_WORD_PROBABILITY is
underlined with its probability in its title, and an extracted value heard only in doubted words (its `confidence`
below the same line) says "uncertain" beside it; sure words and values carry no mark."""

from __future__ import annotations

from datetime import UTC, datetime

from callscope.analysis.result import Evidence, ExtractedValue, TranscriptSegment, TranscriptWord
from callscope.api.pages import views, web
from callscope.api.pages.recording_actions import ActionsView, Rights
from callscope.api.pages.recording_notes import NotesView
from callscope.api.pages.recording_scorecard import ScorecardPanel

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def word(text: str, start_ms: int, probability: float) -> TranscriptWord:
    return TranscriptWord(start_ms=start_ms, end_ms=start_ms + 300, text=f" {text}", probability=probability)


def test_doubted_words_and_values_are_marked_and_sure_ones_are_not() -> None:
    said = TranscriptSegment(id=0, speaker="speaker-2", channel=1, start_ms=0, end_ms=1200,
                             text=" It was maybe $1.", words=[word("It", 0, 0.98), word("was", 300, 0.97),
                                                                 word("maybe", 600, 0.41), word("$1.", 900, 0.22)])
    speaker = views.SpeakerView("speaker-2", "Customer", "customer", 2)
    segment = views._segment(said, speaker, 1200)
    assert [(w.text, w.doubt) for w in segment.words] == [("It", None), ("was", None), ("maybe", 41), ("$1.", 22)]

    amount = ExtractedValue(name="refund_amount", type="number", value=1.0, confidence=0.22,
                            evidence=[Evidence(dialogue_id=0, start_ms=600, quote="It was maybe $1.")])
    plan = ExtractedValue(name="plan", type="enum", value="fiber", confidence=0.93)
    view = views.RecordingView(public_id="p", name="call", status="completed", stage=None, progress=100,
                               status_reason=None, duration_ms=1200, language="en", called_at=None, created_at=NOW,
                               project="Support", operator=None, tags=[], audio_url=None, segments=[segment],
                               speakers=[speaker], fields=[amount, plan], uncertain_fields={"refund_amount"})
    nothing_to_do = ActionsView(Rights(share=False, manage=False), page_url="", back="")
    html = web.TEMPLATES.get_template("recording.html").render(
        v=view, person=None, account="acme", emotions={}, actions=nothing_to_do, notes=NotesView([], None),
        scorecards=ScorecardPanel([], False))
    assert '<span class="doubtful" title="The recogniser was unsure of this word (41%)">maybe</span>' in html
    assert '<span class="doubtful" title="The recogniser was unsure of this word (22%)">$1.</span>' in html
    assert "<span>It</span>" in html
    assert html.count('class="uncertain"') == 1 and "(22%): check the recording" in html
