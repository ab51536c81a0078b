"""Scoring a call against a QA form (analysis/stages/scorecard.py) and the form's own rules
(callscope/resources/scorecards.py): every answer source, n/a, automatic fails, weights, conditions, overrides and
their recomputation, and the validation errors with their paths. Pure functions: no server, no model."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, get_args

import pytest
from pydantic import ValidationError

from callscope.analysis import scorecards, stored
from callscope.analysis.result import EMOTIONS, AnalysisResult, ScorecardResult
from callscope.analysis.stages.scorecard import (
    LLM_NOTE_NO_MODEL,
    AnswerOverride,
    apply_overrides,
    carry_overrides,
    recompute,
    score_call,
)
from callscope.analysis.stages.summary import transcript_budget, transcript_prompt
from callscope.analysis.stored import Completion
from callscope.errors import ValidationFailed
from callscope.resources.kinds import ProjectSpec
from callscope.resources.scorecards import Emotion, ScorecardForm, missing_references
from tests.analysis.conftest import embedder  # noqa: F401  (the fixture)
from tests.analysis.scripted_model import ScriptedModel

AT = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)

LINES = [  # (speaker, start s, end s, text, emotions)
    ("speaker-1", 0, 4, "Thank you for calling Acme, my name is Dana.", {"neutral": 0.9, "calm": 0.1}),
    ("speaker-2", 5, 9, "Hi, I was charged twice on my bill this month.", {"angry": 0.6, "neutral": 0.4}),
    ("speaker-1", 10, 13, "Please hold while I check your account.", {"neutral": 1.0}),
    ("speaker-1", 45, 50, "I refunded the second charge of 49 dollars.", {"neutral": 1.0}),
    ("speaker-2", 51, 54, "Great, thanks a lot, that is all.", {"happy": 0.9, "neutral": 0.1}),
]


def call(**changes: Any) -> AnalysisResult:
    """A scored-ready result: an agent (speaker-1) and a customer (speaker-2), a 32 s announced hold, a 3 s pause
    that broke no rule, goal 1 met, goal 2 not met, goal 3 not applicable, category billing found, fields."""
    segments = [{"id": i, "speaker": who, "role": "agent" if who == "speaker-1" else "customer", "channel": 0,
                 "start_ms": a * 1000, "end_ms": b * 1000, "text": text, "emotions": emotions}
                for i, (who, a, b, text, emotions) in enumerate(LINES)]
    document: dict[str, Any] = {
        "duration_ms": 55_000, "channels": 1, "language": "en",
        "speakers": [
            {"label": "speaker-1", "role": "agent", "role_confidence": 1.0, "operator_id": None,
             "operator_similarity": None, "talk_ms": 12_000, "role_evidence": [], "decided_by": "content"},
            {"label": "speaker-2", "role": "customer", "role_confidence": 1.0, "operator_id": None,
             "operator_similarity": None, "talk_ms": 8_000, "role_evidence": [], "decided_by": "content"}],
        "segments": segments,
        "pauses": [
            {"start_ms": 13_000, "end_ms": 45_000, "duration_ms": 32_000, "compliant": True, "after_dialogue_id": 2,
             "long": True},
            {"start_ms": 50_000, "end_ms": 51_000, "duration_ms": 1_000, "compliant": True, "after_dialogue_id": 3,
             "long": False}],
        "pause_rules": {},
        "characteristics": {"duration_ms": 55_000, "talk_time_ms": 20_000, "non_talk_time_ms": 35_000, "speakers": [
            {"speaker": "speaker-1", "channel": 0, "talk_time_ms": 12_000, "words": 30, "words_per_minute": 150,
             "interruptions": 2},
            {"speaker": "speaker-2", "channel": 0, "talk_time_ms": 8_000, "words": 20, "words_per_minute": 150,
             "interruptions": 1}]},
        "goals": [
            {"goal_id": 1, "goal_name": "Greeting", "met": True, "score": 0.9, "explanation": "Met",
             "evidence": [{"dialogue_id": 0, "start_ms": 0, "quote": "Thank you for calling Acme"}]},
            {"goal_id": 2, "goal_name": "Upsell", "met": False, "score": 0.1, "explanation": "Not met: no offer",
             "evidence": []},
            {"goal_id": 3, "goal_name": "Hold etiquette", "met": False, "score": 0.0, "explanation": "",
             "evidence": [], "applicable": False}],
        "categories": [
            {"name": "Billing", "matched": True, "score": 0.8,
             "evidence": [{"dialogue_id": 1, "start_ms": 5000, "quote": "I was charged twice on my bill"}]},
            {"name": "Cancellation", "matched": False, "score": 0.1, "evidence": []}],
        "extracted_data": [
            {"name": "refund_amount", "type": "number", "value": 49.0,
             "evidence": [{"dialogue_id": 3, "start_ms": 45_000, "quote": "49 dollars"}]},
            {"name": "plan", "type": "enum", "value": "Gold", "evidence": []},
            {"name": "account_number", "type": "string", "value": None, "evidence": []}],
        "models": [], "stages": [],
    }
    document.update(changes)
    return AnalysisResult.model_validate(document)


def q(qid: str, answer: dict, weight: int = 100, **more: Any) -> dict:
    return {"id": qid, "text": f"{qid}?", "weight": weight, "answer": answer, **more}


def form(*questions: dict, **section: Any) -> ScorecardForm:
    """A form of one section holding these questions."""
    return ScorecardForm.model_validate({"sections": [{"name": "Main", "weight": 100, "questions": list(questions),
                                                        **section}]})


def scored(f: ScorecardForm, result: AnalysisResult | None = None, llm: Any = None,
           embedder: Any = None) -> ScorecardResult:
    return score_call(f, result or call(), scorecard_id=7, name="Support QA", version=3, llm=llm, embedder=embedder)


def answer_of(card: ScorecardResult, qid: str):
    return next(a for a in card.answers if a.question_id == qid)


def one(answer: dict, result: AnalysisResult | None = None, **question: Any):
    return answer_of(scored(form(q("x", answer, **question)), result), "x")


# ----- every source -----------------------------------------------------------------------------------------------

def test_a_goal_answers_yes_when_met_no_when_not_and_na_where_its_situation_did_not_occur():
    met = one({"source": "goal", "goal_id": 1})
    assert (met.answer, met.points, met.max_points, met.source) == ("yes", 1.0, 1.0, "goal")
    assert [(e.text, e.start, e.end) for e in met.evidence] == [("Thank you for calling Acme", 0.0, 4.0)]
    assert one({"source": "goal", "goal_id": 2}).answer == "no"
    na = one({"source": "goal", "goal_id": 3})
    assert (na.answer, na.points) == ("n/a", None) and "did not occur" in na.note
    assert one({"source": "goal", "goal_id": 9}).note == "goal 9 was not evaluated in this call"


def test_a_category_found_or_absent():
    found = one({"source": "category", "name": "billing"})  # names compare case-insensitively
    assert found.answer == "yes" and found.evidence[0].text == "I was charged twice on my bill"
    assert found.evidence[0].start == 5.0
    assert one({"source": "category", "name": "Cancellation"}).answer == "no"
    assert one({"source": "category", "name": "Cancellation", "yes_when": "absent"}).answer == "yes"
    assert one({"source": "category", "name": "Billing", "yesWhen": "absent"}).answer == "no"


def test_pauses_yes_when_every_pause_complied_and_the_count_of_those_that_did_not():
    assert one({"source": "pauses"}).answer == "yes"
    broken = call(pauses=[{"start_ms": 13_000, "end_ms": 45_000, "duration_ms": 32_000, "compliant": False,
                           "after_dialogue_id": 2, "long": True}])
    no = one({"source": "pauses"}, broken)
    assert no.answer == "no" and (no.evidence[0].start, no.evidence[0].end) == (13.0, 45.0)
    count = one({"source": "pauses"}, broken, type="number", ranges=[{"max": 0, "points": 10}, {"min": 1, "points": 0}])
    assert (count.answer, count.points, count.max_points) == (1.0, 0.0, 10.0)


def test_talk_share_against_its_bounds_or_as_a_number():
    within = one({"source": "talk_share", "role": "agent", "max": 0.7})  # 12 of 20 s: 60 %
    assert within.answer == "yes" and "60%" in within.evidence[0].text
    assert one({"source": "talk_share", "role": "agent", "max": 0.5}).answer == "no"
    assert one({"source": "talk_share", "role": "customer", "min": 0.3}).answer == "yes"
    share = one({"source": "talk_share", "role": "agent"}, type="number",
                ranges=[{"min": 0, "max": 0.5, "points": 5}, {"min": 0.5001, "max": 0.7, "points": 10}])
    assert (share.answer, share.points) == (0.6, 10.0)
    nobody = call(speakers=[s for s in call().model_dump()["speakers"] if s["role"] == "customer"])
    assert one({"source": "talk_share", "max": 0.7}, nobody).answer == "n/a"


def test_interruptions_by_role_or_anyone():
    assert one({"source": "interruptions", "max": 2}).answer == "yes"  # the agent's 2
    assert one({"source": "interruptions", "max": 1}).answer == "no"
    assert one({"source": "interruptions", "role": "any", "max": 2}).answer == "no"  # 3
    counted = one({"source": "interruptions", "role": "customer"}, type="number", ranges=[{"max": 1, "points": 1}])
    assert (counted.answer, counted.points) == (1.0, 1.0)


def test_the_longest_silence_and_the_longest_hold():
    silence = one({"source": "longest_silence", "max_seconds": 30})
    assert silence.answer == "no" and (silence.evidence[0].start, silence.evidence[0].end) == (13.0, 45.0)
    assert one({"source": "longest_silence", "maxSeconds": 60}).answer == "yes"
    assert one({"source": "hold", "max_seconds": 60}).answer == "yes"  # after "Please hold ..."
    assert one({"source": "hold", "max_seconds": 20}).answer == "no"
    no_hold = call(pauses=[{"start_ms": 50_000, "end_ms": 51_000, "duration_ms": 1_000, "compliant": True,
                            "after_dialogue_id": 3, "long": False}])
    assert one({"source": "hold", "max_seconds": 20}, no_hold).note == "the call had no hold"
    seconds = one({"source": "longest_silence"}, type="number", ranges=[{"max": 10, "points": 2}, {"min": 10.001,
                                                                                                  "points": 0}])
    assert (seconds.answer, seconds.points) == (32.0, 0.0)


def test_the_customers_emotion_over_the_call_at_its_end_and_as_an_option():
    angry = one({"source": "emotion", "emotions": ["angry"], "max": 0.2})  # 4 s at 0.6, 3 s at 0: 34 %
    assert angry.answer == "no" and "34%" in angry.evidence[0].text
    assert angry.evidence[1].text == "Hi, I was charged twice on my bill this month."
    assert one({"source": "emotion", "emotions": ["angry"], "part": "end", "max": 0.5}).answer == "yes"
    mood = one({"source": "emotion", "part": "end"}, type="choice",
               options=[{"value": "happy", "points": 2}, {"value": "neutral", "points": 1}, {"value": "angry",
                                                                                           "points": 0}])
    assert (mood.answer, mood.points, mood.max_points) == ("happy", 2.0, 2.0)
    flat = call(segments=[{**s, "emotions": {}} for s in call().model_dump()["segments"]])
    assert one({"source": "emotion", "max": 0.5}, flat).answer == "n/a"


def test_an_extracted_field_present_equal_in_range_as_option_and_number():
    assert one({"source": "field", "name": "refund_amount"}).answer == "yes"
    assert one({"source": "field", "name": "refund_amount", "max": 50}).answer == "yes"
    assert one({"source": "field", "name": "refund_amount", "min": 50}).answer == "no"
    assert one({"source": "field", "name": "plan", "equals": "gold"}).answer == "yes"
    assert one({"source": "field", "name": "refund_amount", "equals": "49"}).answer == "yes"  # as numbers
    assert one({"source": "field", "name": "account_number"}).answer == "no"  # not found
    assert one({"source": "field", "name": "account_number", "equals": "1"}).answer == "n/a"  # nothing to compare
    plan = one({"source": "field", "name": "plan"}, type="choice",
               options=[{"value": "Silver", "points": 1}, {"value": "GOLD", "points": 3}])
    assert (plan.answer, plan.points) == ("GOLD", 3.0)
    amount = one({"source": "field", "name": "refund_amount"}, type="number", ranges=[{"max": 100, "points": 4}])
    assert (amount.answer, amount.points) == (49.0, 4.0)
    assert [e.text for e in amount.evidence] == ["49 dollars", "refund_amount: 49.0"]


def test_a_manual_question_is_unanswered_and_counts_for_nothing_until_a_reviewer_answers():
    card = scored(form(q("greet", {"source": "goal", "goal_id": 1}, 50), q("tone", {"source": "manual"}, 50)))
    manual = answer_of(card, "tone")
    assert (manual.answer, manual.points, manual.automatic) == (None, None, None)
    assert card.score == 100.0  # the manual question left the denominator


# ----- the language model -----------------------------------------------------------------------------------------

LLM_FORM = (q("refund", {"source": "llm", "prompt": "Did the agent give a refund?"}, 40),
            q("promise", {"source": "llm", "prompt": "Did the agent promise a callback?"}, 30),
            q("lied", {"source": "llm", "prompt": "Did the agent apologise?"}, 30))


def test_llm_questions_are_read_from_one_answer_token_each_after_the_shared_transcript(embedder):
    """One judgement: the transcript prefix the summary and the claim judge share (so a local model finds it
    evaluated), then each question alone; the probability of "yes" decides, and a yes quotes the closest sentence."""
    model = ScriptedModel(verdicts=[["yes", "no", "no"]])
    card = scored(form(*LLM_FORM), llm=model, embedder=embedder)
    [judgement] = model.judgements
    assert judgement.head.startswith(transcript_prompt(call().segments, transcript_budget(model),
                                                       {"speaker-1": "agent", "speaker-2": "customer"}))
    assert "Agent: Thank you for calling Acme" in judgement.head
    assert judgement.questions[1] == "Did the agent promise a callback?\nAnswer yes or no."
    refund = answer_of(card, "refund")
    assert refund.answer == "yes" and refund.evidence[0].text == "I refunded the second charge of 49 dollars."
    assert refund.evidence[0].start == 45.0 and "P(yes) 1.00" in refund.note
    assert answer_of(card, "promise").answer == "no" and not answer_of(card, "promise").evidence
    assert card.score == 40.0  # 40 of the 100 answered


def test_an_llm_yes_without_the_text_model_has_no_quote_but_stands():
    card = scored(form(*LLM_FORM), llm=ScriptedModel(verdicts=[["yes", "yes", "no"]]))
    assert [(a.answer, a.evidence) for a in card.answers] == [("yes", []), ("yes", []), ("no", [])]


def test_an_llm_yes_quotes_the_role_the_question_is_about(embedder):
    """The customer's "I was charged twice" is closest to a question about a charge, but no evidence of the agent."""
    f = form(q("agent", {"source": "llm", "prompt": "Did the agent talk about the double charge on the bill?"}, 50),
             q("customer", {"source": "llm", "prompt": "Did the customer complain about a double charge?"}, 50))
    card = scored(f, llm=ScriptedModel(verdicts=[["yes", "yes"]]), embedder=embedder)
    assert answer_of(card, "agent").evidence[0].text == "I refunded the second charge of 49 dollars."
    assert answer_of(card, "customer").evidence[0].text == "Hi, I was charged twice on my bill this month."


def test_without_a_language_model_llm_questions_are_na_with_the_reason():
    card = scored(form(*LLM_FORM))
    assert {(a.answer, a.note) for a in card.answers} == {("n/a", LLM_NOTE_NO_MODEL)}
    assert card.score is None


def test_a_failing_model_leaves_its_questions_na():
    from callscope.analysis.models.language_model import LanguageModelError

    class Failing(ScriptedModel):
        def yes_probabilities(self, head: str, questions: Sequence[str]) -> list[float]:
            raise LanguageModelError("timed out")

    card = scored(form(*LLM_FORM), llm=Failing())
    assert all(a.answer == "n/a" and "timed out" in a.note for a in card.answers)


def test_an_llm_question_the_call_rules_out_is_not_asked():
    model = ScriptedModel(verdicts=[["yes"]])
    f = form(q("refund", {"source": "llm", "prompt": "Refund?"}, 50),
             q("cancel", {"source": "llm", "prompt": "Did the agent try to keep the customer?"}, 50,
               applies_when={"category": "Cancellation"}))
    card = scored(f, llm=model)
    assert model.judgements[0].questions == ("Refund?\nAnswer yes or no.",)
    assert answer_of(card, "cancel").answer == "n/a" and not answer_of(card, "cancel").applicable


# ----- n/a, weights, sections, automatic fails ---------------------------------------------------------------------

def test_weights_within_a_section_and_between_sections_with_na_out_of_the_denominator():
    f = ScorecardForm.model_validate({"sections": [
        {"name": "Opening", "weight": 40, "questions": [
            q("greet", {"source": "goal", "goal_id": 1}, 70), q("upsell", {"source": "goal", "goal_id": 2}, 30)]},
        {"name": "Handling", "weight": 60, "questions": [
            q("hold", {"source": "goal", "goal_id": 3}, 50),  # n/a
            q("billing", {"source": "category", "name": "Billing"}, 50)]}]})
    card = scored(f)
    assert [(s.name, s.score) for s in card.sections] == [("Opening", 70.0), ("Handling", 100.0)]
    assert card.score == 88.0  # 0.4 * 70 + 0.6 * 100
    assert (card.scorecard_id, card.name, card.version, card.auto_failed) == (7, "Support QA", 3, False)


def test_a_section_whose_questions_are_all_na_leaves_the_forms_denominator():
    f = ScorecardForm.model_validate({"sections": [
        {"name": "A", "weight": 50, "questions": [q("greet", {"source": "goal", "goal_id": 1})]},
        {"name": "B", "weight": 50, "questions": [q("hold", {"source": "goal", "goal_id": 3})]}]})
    card = scored(f)
    assert [s.score for s in card.sections] == [100.0, None] and card.score == 100.0


def test_subsections_count_by_their_weight_in_their_section():
    f = ScorecardForm.model_validate({"sections": [{"name": "Call", "weight": 100, "questions": [
        q("greet", {"source": "goal", "goal_id": 1}, 50)], "sections": [
        {"name": "Money", "weight": 50, "questions": [
            q("upsell", {"source": "goal", "goal_id": 2}, 25),
            q("billing", {"source": "category", "name": "Billing"}, 75)]}]}]})
    card = scored(f)
    assert card.sections[0].sections[0].score == 75.0
    assert card.sections[0].score == 87.5 and card.score == 87.5


def test_an_automatic_fail_zeroes_its_section():
    f = ScorecardForm.model_validate({"sections": [
        {"name": "Opening", "weight": 50, "questions": [
            q("greet", {"source": "goal", "goal_id": 1}, 90),
            q("upsell", {"source": "goal", "goal_id": 2}, 10, auto_fail="section")]},
        {"name": "Close", "weight": 50, "questions": [q("billing", {"source": "category", "name": "Billing"})]}]})
    card = scored(f)
    assert [(s.score, s.auto_failed) for s in card.sections] == [(0.0, True), (100.0, False)]
    assert card.score == 50.0 and card.auto_failed


def test_an_automatic_fail_zeroes_the_form_and_true_means_form():
    f = form(q("greet", {"source": "goal", "goal_id": 1}, 90), q("upsell", {"source": "goal", "goal_id": 2}, 10,
                                                                  auto_fail=True))
    card = scored(f)
    assert card.score == 0.0 and card.auto_failed and card.sections[0].score == 90.0
    # an n/a answer never fails
    na = form(q("greet", {"source": "goal", "goal_id": 1}, 90), q("hold", {"source": "goal", "goal_id": 3}, 10,
                                                                   autoFail="form"))
    assert scored(na).score == 100.0 and not scored(na).auto_failed


def test_a_choice_option_worth_nothing_fails_automatically():
    f = form(q("plan", {"source": "field", "name": "plan"}, type="choice", auto_fail="form",
               options=[{"value": "Gold", "points": 0}, {"value": "Silver", "points": 2}]))
    assert scored(f).auto_failed and scored(f).score == 0.0


# ----- conditions -------------------------------------------------------------------------------------------------

def test_conditions_on_the_call_and_on_another_questions_answer():
    f = form(q("billing", {"source": "category", "name": "Billing"}, 25),
             q("refund", {"source": "field", "name": "refund_amount"}, 25, applies_when={"question": "billing"}),
             q("retain", {"source": "goal", "goal_id": 2}, 25, applies_when={"category": "Cancellation"}),
             q("said", {"source": "goal", "goal_id": 2}, 25, appliesWhen={"phrases": ["charged twice"],
                                                                          "longPause": True}))
    card = scored(f)
    assert answer_of(card, "refund").answer == "yes" and answer_of(card, "refund").applicable
    retain = answer_of(card, "retain")
    assert (retain.answer, retain.applicable, retain.automatic) == ("n/a", False, "no")
    assert answer_of(card, "said").answer == "no"  # both parts held
    no_phrase = call(segments=[{**s, "text": "Hello."} for s in call().model_dump()["segments"]])
    assert answer_of(scored(f, no_phrase), "said").answer == "n/a"


# ----- overrides and recomputation --------------------------------------------------------------------------------

OVERRIDE_FORM = (q("greet", {"source": "goal", "goal_id": 1}, 50),
                 q("refund", {"source": "field", "name": "refund_amount"}, 50, applies_when={"question": "greet"}))


def test_an_override_recomputes_the_score_keeps_the_automatic_answer_and_the_history():
    f = form(*OVERRIDE_FORM)
    card = scored(f)
    assert card.score == 100.0
    changed = apply_overrides(f, card, [AnswerOverride(question_id="greet", answer="no", comment="no name given")],
                              by="ana@example.com", at=AT)
    greet = answer_of(changed, "greet")
    assert (greet.answer, greet.automatic, greet.overridden, greet.points) == ("no", "yes", True, 0.0)
    assert [(h.by, h.at, h.from_answer, h.to_answer, h.comment) for h in greet.history] == [
        ("ana@example.com", AT, "yes", "no", "no name given")]
    # the refund question depended on greet being yes: it no longer applies
    assert answer_of(changed, "refund").answer == "n/a" and changed.score == 0.0
    again = apply_overrides(f, changed, [AnswerOverride(question_id="greet", answer="YES")], by="bo", at=AT)
    assert answer_of(again, "refund").answer == "yes" and again.score == 100.0
    assert [h.to_answer for h in answer_of(again, "greet").history] == ["no", "yes"]
    assert recompute(f, again) == again  # nothing changes a second time


def test_overriding_a_manual_question_counts_it():
    f = form(q("greet", {"source": "goal", "goal_id": 1}, 50), q("tone", {"source": "manual"}, 50, type="choice",
             options=[{"value": "warm", "points": 2}, {"value": "cold", "points": 0}]))
    card = apply_overrides(f, scored(f), [AnswerOverride(question_id="tone", answer="Warm")], by="a", at=AT)
    assert answer_of(card, "tone").answer == "warm" and card.score == 100.0
    card = apply_overrides(f, card, [AnswerOverride(question_id="tone", answer="cold")], by="a", at=AT)
    assert card.score == 50.0


def test_bad_overrides_are_refused_each_with_its_place_and_nothing_changes():
    f = form(q("greet", {"source": "goal", "goal_id": 1}, 50),
             q("amount", {"source": "field", "name": "refund_amount"}, 50, type="number", ranges=[{"points": 1}]))
    card = scored(f)
    with pytest.raises(ValidationFailed) as caught:
        apply_overrides(f, card, [AnswerOverride(question_id="greet", answer="maybe"),
                                  AnswerOverride(question_id="nope", answer="yes"),
                                  AnswerOverride(question_id="amount", answer="lots"),
                                  AnswerOverride(question_id="greet", answer="no")], by="a", at=AT)
    assert caught.value.errors == ["answers.0.answer must be yes, no or n/a",
                                   "answers.1.question_id names no question of the form (nope)",
                                   "answers.2.answer must be a number or n/a",
                                   "answers.3.question_id must not repeat a question (greet)"]
    assert apply_overrides(f, card, [AnswerOverride(question_id="amount", answer=12)], by="a",
                           at=AT).answers[1].answer == 12.0


def test_a_rescored_call_keeps_the_reviewers_answers():
    f = form(*OVERRIDE_FORM)
    reviewed = apply_overrides(f, scored(f), [AnswerOverride(question_id="greet", answer="no", comment="c")],
                               by="a", at=AT)
    rescored = carry_overrides(f, scored(f), reviewed)
    greet = answer_of(rescored, "greet")
    assert (greet.answer, greet.automatic, greet.overridden, len(greet.history)) == ("no", "yes", True, 1)
    assert rescored.score == 0.0


def test_the_card_survives_its_stored_json_and_older_results_have_no_scorecards():
    f = form(*OVERRIDE_FORM)
    card = apply_overrides(f, scored(f), [AnswerOverride(question_id="greet", answer="no")], by="a", at=AT)
    assert ScorecardResult.model_validate_json(card.model_dump_json()) == card
    old = call().model_dump(mode="json")
    del old["scorecards"]
    assert AnalysisResult.model_validate(old).scorecards == []


# ----- the form's rules -------------------------------------------------------------------------------------------

def errors(document: dict) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as caught:
        ScorecardForm.model_validate(document)
    return [(".".join(map(str, e["loc"])), e["msg"]) for e in caught.value.errors()]


def one_section(*questions: dict, weight: int = 100) -> dict:
    return {"sections": [{"name": "Main", "weight": weight, "questions": list(questions)}]}


def test_the_issues_shape_reads_in_rest_and_yaml_spelling():
    rest = ScorecardForm.model_validate(one_section(
        {"id": "greeting", "text": "Did the agent greet the caller and give their name?", "type": "yes_no",
         "weight": 100, "auto_fail": False, "answer": {"source": "goal", "goal_id": 1}}))
    yaml = ScorecardForm.model_validate(one_section(
        {"id": "greeting", "text": "Did the agent greet the caller and give their name?", "type": "yes_no",
         "weight": 100, "autoFail": "none", "answer": {"source": "goal", "goalId": 1}}))
    assert rest == yaml
    assert rest.model_dump(by_alias=True)["sections"][0]["questions"][0]["autoFail"] == "none"


def test_weights_must_add_up_to_100_in_each_place():
    assert errors(one_section(q("a", {"source": "manual"}, 60), q("b", {"source": "manual"}, 30))) == [
        ("sections.0.questions", "the weights of a section's questions and sections must add up to 100 (they add up "
                                 "to 90)")]
    assert errors(one_section(q("a", {"source": "manual"}), weight=40)) == [
        ("sections", "the weights of the form's sections must add up to 100 (they add up to 40)")]
    assert errors({"sections": [{"name": "S", "weight": 100, "sections": [
        {"name": "T", "weight": 100, "questions": [q("a", {"source": "manual"}, 99)]}]}]}) == [
        ("sections.0.sections.0.questions", "the weights of a section's questions must add up to 100 (they add up "
                                            "to 99)")]
    assert errors(one_section(q("a", {"source": "manual"}, 101)))[0][0] == "sections.0.questions.0.weight"


def test_ids_and_section_names_are_unique_and_ids_are_slugs():
    document = {"sections": [
        {"name": "Main", "weight": 50, "questions": [q("a", {"source": "manual"}, 50),
                                                     q("a", {"source": "manual"}, 50)]},
        {"name": "MAIN", "weight": 50, "questions": [q("b", {"source": "manual"})]}]}
    assert errors(document) == [("sections.1.name", "must not repeat a section name (MAIN)"),
                                ("sections.0.questions.1.id", "must not repeat a question id (a)")]
    assert errors(one_section(q("Not A Slug", {"source": "manual"})))[0][0] == "sections.0.questions.0.id"


def test_options_and_ranges():
    choice = q("c", {"source": "manual"}, type="choice", options=[{"value": "A", "points": 0}, {"value": "a",
                                                                                                "points": 0}])
    assert errors(one_section(choice)) == [
        ("sections.0.questions.0.options.1.value", "must not repeat an option (a)"),
        ("sections.0.questions.0.options", "at least one option must earn points")]
    assert errors(one_section(q("c", {"source": "manual"}, type="choice"))) == [
        ("sections.0.questions.0.options", "a choice question needs options")]
    number = q("n", {"source": "manual"}, type="number", ranges=[{"min": 0, "max": 5, "points": 1},
                                                                 {"min": 5, "points": 2}, {"min": 9, "max": 1,
                                                                                          "points": 1}])
    found = errors(one_section(number))
    assert ("sections.0.questions.0.ranges.2.min", "must not be greater than max (9.0 > 1.0)") in found
    assert ("sections.0.questions.0.ranges.1", "overlaps range 0") in found
    assert errors(one_section(q("y", {"source": "manual"}, options=[{"value": "a", "points": 1}]))) == [
        ("sections.0.questions.0.options", "only a choice question has options, not a yes_no one")]


def test_a_source_must_fit_its_question():
    assert errors(one_section(q("t", {"source": "talk_share", "role": "agent"}))) == [
        ("sections.0.questions.0.answer", "a yes_no question from talk_share needs max or min to compare with")]
    assert errors(one_section(q("g", {"source": "goal", "goal_id": 1}, type="number", ranges=[{"points": 1}]))) == [
        ("sections.0.questions.0.answer.source", "goal cannot answer a number question (it answers: yes_no)")]
    assert errors(one_section(q("f", {"source": "field", "name": "x", "min": 5, "max": 1}))) == [
        ("sections.0.questions.0.answer.min", "must not be greater than max (5.0 > 1.0)")]
    bad_source = errors(one_section(q("z", {"source": "telepathy"})))
    assert bad_source[0][0] == "sections.0.questions.0.answer"


def test_conditions_name_existing_questions_and_form_no_cycle():
    cycle = one_section(q("a", {"source": "manual"}, 34, applies_when={"question": "c"}),
                        q("b", {"source": "manual"}, 33, applies_when={"question": "a"}),
                        q("c", {"source": "manual"}, 33, appliesWhen={"question": "b"}))
    assert errors(cycle) == [("sections.0.questions.0.applies_when.question",
                              "conditions form a cycle: a -> c -> b -> a")]
    assert errors(one_section(q("a", {"source": "manual"}, applies_when={"question": "a"}))) == [
        ("sections.0.questions.0.applies_when.question", "a question cannot depend on itself (a)")]
    assert errors(one_section(q("a", {"source": "manual"}, applies_when={"question": "zz"}))) == [
        ("sections.0.questions.0.applies_when.question", "names no question of the form (zz)")]
    assert errors(one_section(q("a", {"source": "manual"}, 50), q("b", {"source": "manual"}, 50, applies_when={
        "question": "a", "answers": ["maybe"]}))) == [
        ("sections.0.questions.1.applies_when.answers", "maybe is not an answer of the yes_no question a (yes, no or "
                                                         "n/a)")]
    assert errors(one_section(q("a", {"source": "manual"}, applies_when={})))[0][0] == \
        "sections.0.questions.0.applies_when"


def test_absurd_sizes_are_refused():
    many = [q(f"q{i}", {"source": "manual"}, 2) for i in range(50)]
    document = {"sections": [{"name": f"S{s}", "weight": 25, "questions": many} for s in range(3)]
                + [{"name": "S3", "weight": 25, "questions": [q("x", {"source": "manual"})]}]}
    found = errors(document)
    assert ("sections", "a form has at most 100 questions (this one has 151)") in found
    assert errors(one_section(*[q(f"q{i}", {"source": "manual"}, 2) for i in range(51)]))[0] == (
        "sections.0.questions", "List should have at most 50 items after validation, not 51")
    llm = one_section(*[q(f"q{i}", {"source": "llm", "prompt": "?"}, 10 if i < 10 else 0) for i in range(11)])
    assert errors(llm) == [("sections.0.questions.10.answer", "a form puts at most 10 questions to the language "
                                                              "model")]
    assert errors(one_section(q("a", {"source": "llm", "prompt": "x" * 2001})))[0][0] == \
        "sections.0.questions.0.answer.llm.prompt"


def test_references_to_goals_categories_and_fields_of_the_attached_projects():
    f = form(q("g", {"source": "goal", "goal_id": 2}, 50), q("c", {"source": "category", "name": "billing"}, 25),
             q("f", {"source": "field", "name": "plan"}, 25, applies_when={"category": "Refunds"}))
    project = ProjectSpec.model_validate({
        "name": "Support", "language": "en", "goals": [{"id": 1, "name": "Greet", "description": "Greet"}],
        "categories": [{"name": "Billing"}]})
    assert missing_references(f, [("Support", project)]) == [
        "sections.0.questions.0.answer.goal_id: no goal 2 in project Support",
        "sections.0.questions.2.answer.name: no field plan in project Support",
        "sections.0.questions.2.applies_when.category: no category Refunds in project Support"]


def test_the_forms_emotions_are_the_analysis_emotions():
    assert get_args(Emotion) == EMOTIONS


def test_the_analysis_answers_the_llm_questions_and_storing_keeps_them_a_changed_form_is_scored_again():
    """The analysis scores the call where the language model is (analysis/runtime/work.py); the dispatcher stores
    that card, and scores there only a form made or changed since (without the model: its llm questions keep the
    model's answers of the analysis's card of that form, and are n/a on a form new to the call)."""
    f = form(*LLM_FORM)
    model = ScriptedModel(verdicts=[["yes", "no", "no"]])
    analysed = call().model_copy(update={"scorecards": [scored(f, llm=model)]})
    results, transcript = stored.documents(analysed)
    kept = Completion(results, transcript, 0, 0, False, None, None, {}, {})  # type: ignore[arg-type]  # documents only
    [card] = scorecards.score([scorecards.Form(7, "Support QA", 3, f)], kept)[1]
    assert answer_of(card, "refund").answer == "yes" and len(model.judgements) == 1
    [changed] = scorecards.score([scorecards.Form(7, "Support QA", 4, f)], kept)[1]
    assert changed.version == 4 and answer_of(changed, "refund").answer == "yes" and len(model.judgements) == 1
    [new] = scorecards.score([scorecards.Form(8, "Other QA", 1, f)], kept)[1]
    assert {a.answer for a in new.answers} == {"n/a"}
