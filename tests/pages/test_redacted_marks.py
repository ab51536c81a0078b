"""The recording page shows a redacted span as such: a marked chip with its entity type ([PAYMENT_CARD], titled
"Redacted: payment card") where the value was, never the value, and the note lists what was redacted."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from jinja2 import ChainableUndefined

from callscope.analysis.stages.redaction import redact
from callscope.api.pages import views, web
from callscope.api.pages.recording_actions import ActionsView, Rights
from tests.analysis.test_redaction_strict import MISHEARD

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def test_redacted_spans_are_marked_with_their_type_and_no_digit_of_the_value_is_shown() -> None:
    redaction = redact(MISHEARD, ["payment_card"], mode="strict")
    speakers = {s: views.SpeakerView(s, s.title(), "unknown", i) for i, s in enumerate(["speaker-1", "speaker-2"])}
    segments = [views._segment(s, speakers[s.speaker], 20_000) for s in redaction.segments]
    view = views.RecordingView(public_id="p", name="call", status="completed", stage=None, progress=100,
                               status_reason=None, duration_ms=20_000, language="en", called_at=None, created_at=NOW,
                               project="Payments", operator=None, tags=[], audio_url=None, segments=segments,
                               speakers=list(speakers.values()), redaction=redaction.summary)
    # the page's other panels (scorecards, notes) are left empty: the transcript is under test
    page = web.TEMPLATES.overlay(undefined=ChainableUndefined).get_template("recording.html")
    html = page.render(v=view, person=None, account="acme", emotions={},
                       actions=ActionsView(Rights(share=False, manage=False), page_url="", back=""))
    marks = re.findall(r'<span class="redacted" title="Redacted: payment card">([^<]*)</span>', html)
    assert marks == ["[PAYMENT_CARD].", "[PAYMENT_CARD]?"]  # one chip a span, none a word
    transcript = html[html.index('class="text"'):]
    assert not re.search(r"4242|\bfor to\b", transcript)  # nothing of what was said, however it was heard
    assert "Redacted from this call" in html and "payment card (2)" in html


def test_speech_without_words_taken_out_of_the_audio_is_told_with_its_length() -> None:
    summary = redact(MISHEARD, ["payment_card"], mode="strict").summary.model_copy(
        update={"audio": True, "unheard": [(1_000, 2_500), (4_000, 4_400)]})
    view = views.RecordingView(public_id="p", name="call", status="completed", stage=None, progress=100,
                               status_reason=None, duration_ms=20_000, language="en", called_at=None, created_at=NOW,
                               project="Payments", operator=None, tags=[], audio_url=None, redaction=summary)
    page = web.TEMPLATES.overlay(undefined=ChainableUndefined).get_template("recording.html")
    html = page.render(v=view, person=None, account="acme", emotions={},
                       actions=ActionsView(Rights(share=False, manage=False), page_url="", back=""))
    assert "Speech the recogniser wrote no words for (1.9 s) is taken out of the audio too." in html
