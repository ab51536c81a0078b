"""A goal that asks the speaker for their name ("greet the caller and give your name") is met only by words that give
one: a bare "Hello." or "Thank you for calling." is evidence of a greeting, not of the name, by its phrases as by
meaning, and the explanation says so; a name given the redaction's way (English), in another language's words, or
already redacted meets it. A goal that asks no name is met as before."""

from __future__ import annotations

import pytest

from callscope.analysis.result import GoalResult, TranscriptSegment, TranscriptWord
from callscope.analysis.stages.goal_examples import says_own_name
from callscope.analysis.stages.goals import NO_NAME, evaluate_goals, needs_name
from callscope.resources.kinds import Goal
from tests.analysis.transcripts import segments

ROLES = {"speaker-1": "agent", "speaker-2": "customer"}
NAMED_GREETING = Goal(id=1, name="greeting", description="Greet the caller and give your name.", speaker="agent",
                      within_seconds=30)
README_GREETING = Goal(id=2, name="greeting", description="The operator greets the caller and says their own name.",
                       phrases=["thank you for calling", "guten tag"], speaker="agent", within_seconds=30)


def verdict(goal: Goal, agent_says: str, embedder=None) -> GoalResult:
    call = segments([("speaker-1", agent_says), ("speaker-2", "Hi, I was charged twice this month.")])
    [result] = evaluate_goals([goal], call, ROLES, embedder)
    return result


def test_which_goals_ask_for_a_name():
    assert needs_name(NAMED_GREETING) and needs_name(README_GREETING)
    assert needs_name(Goal(id=3, name="intro", description="The agent introduces themselves."))
    assert not needs_name(Goal(id=4, name="greeting", description="The agent greets the caller."))
    assert not needs_name(Goal(id=5, name="callback", description="The agent asks for the customer's name."))


@pytest.mark.parametrize(("said", "met"), [
    ("Thank you for calling.", False),
    ("Thank you for calling Acme support, my name is Anna, how can I help you today?", True),
    ("Thank you for calling, Peter speaking.", True),
    ("Guten Tag.", False),
    ("Guten Tag, mein Name ist Anna Schmidt, was kann ich für Sie tun?", True),
])
def test_a_phrase_goal_that_asks_for_a_name_needs_one(said, met):
    result = verdict(README_GREETING, said)
    assert result.met is met, result.explanation
    if not met:
        assert result.explanation == (f'Not met: no sentence by the agent within the first 30 s says "thank you for '
                                      f'calling" or "guten tag" and gives a name; at 0:00 the agent said "{said}", '
                                      f"but it was {NO_NAME}.")


def test_a_goal_that_asks_no_name_is_met_by_a_greeting_alone():
    plain = README_GREETING.model_copy(update={"description": "The operator greets the caller."})
    assert verdict(plain, "Thank you for calling.").met


def test_a_name_redacted_already_is_a_name_given():
    words = [TranscriptWord(start_ms=0, end_ms=300, text="Thank", probability=0.9),
             TranscriptWord(start_ms=300, end_ms=600, text="you", probability=0.9),
             TranscriptWord(start_ms=600, end_ms=900, text="for", probability=0.9),
             TranscriptWord(start_ms=900, end_ms=1200, text="calling,", probability=0.9),
             TranscriptWord(start_ms=1200, end_ms=1500, text="[PERSON_NAME]", probability=0.9, redacted=True,
                            entity="person_name"),
             TranscriptWord(start_ms=1500, end_ms=1800, text="speaking.", probability=0.9)]
    call = [TranscriptSegment(id=0, channel=0, speaker="speaker-1", start_ms=0, end_ms=1800,
                              text="Thank you for calling, [PERSON_NAME] speaking.", words=words)]
    [result] = evaluate_goals([README_GREETING], call, ROLES, None)
    assert result.met, result.explanation


def test_own_names_in_other_languages():
    for said in ("Bonjour, je m'appelle Claire.", "Buenos días, le habla Lucía.", "Schmidt am Apparat.",
                 "Buongiorno, mi chiamo Marco.", "Goedemiddag, u spreekt met Anouk."):
        assert says_own_name(said), said
    for said in ("Bonjour, c'est pour une facture.", "Mein Name ist nicht wichtig.", "Guten Tag."):
        assert not says_own_name(said), said


@pytest.mark.parametrize(("said", "met"), [
    ("Hello.", False),
    ("Hello, thanks for calling, how can I help you?", False),
    ("Hello, my name is Laura, how can I help you?", True),
    ("Hi, it's Sam from the service desk.", True),
])
def test_by_meaning_a_greeting_without_a_name_does_not_meet_a_goal_that_asks_for_one(embedder, said, met):
    result = verdict(NAMED_GREETING, said, embedder)
    assert result.met is met, result.explanation
    assert (NO_NAME in result.explanation) is (not met)


def test_a_greeting_and_the_name_in_the_next_turn_meet_it_together_the_name_shown():
    call = segments([("speaker-1", "Thank you for calling."), ("speaker-2", "Hi."),
                     ("speaker-1", "This is Peter speaking, how can I help?")])
    [result] = evaluate_goals([README_GREETING], call, ROLES, None)
    assert result.met and [e.dialogue_id for e in result.evidence] == [0, 2]
    assert result.explanation.endswith('the agent said "This is Peter speaking, how can I help?" (a name).')
    late = README_GREETING.model_copy(update={"within_seconds": 2})  # the name said after the window
    [result] = evaluate_goals([late], call, ROLES, None)
    assert not result.met and NO_NAME in result.explanation
