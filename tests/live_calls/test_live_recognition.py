"""Live recognition's rules without a model (analysis/runtime/live.py): the local-agreement policy confirms only what
two successive hypotheses agree on and never takes a word back; a final is checked for phrase goals (once, by the
right speaker) and live alerts (every time); a silence longer than the pause threshold is one alert, a hold
announced by the agent moves the threshold."""

from __future__ import annotations

from callscope.analysis.result import TranscriptSegment, TranscriptWord
from callscope.analysis.runtime.live import Agreement, CallMonitor, Heard
from callscope.analysis.stages.emotions import NEGATIVE
from callscope.live.events import Alert, Final, GoalMet, Word
from callscope.resources.kinds import ProjectSpec
from tests.search.calls import text_embedder  # noqa: F401 - the session's text model, a fixture

ROLES = {"channel-0": "agent", "channel-1": "customer"}


def heard(*words: str, start: float = 0.0) -> list[Heard]:
    return [Heard(w, start + i * 0.5, start + i * 0.5 + 0.4, 0.9) for i, w in enumerate(words)]


def test_only_words_two_hypotheses_agree_on_are_confirmed_and_never_taken_back() -> None:
    a = Agreement()
    a.hypothesis(heard("thank", "you"))
    assert a.confirmed == [] and [w.text for w in a.tentative] == ["thank", "you"]
    a.hypothesis(heard("Thank", "you,", "for"))  # case and punctuation aside, two words agree
    assert [w.text for w in a.confirmed] == ["Thank", "you,"] and [w.text for w in a.tentative] == ["for"]
    a.hypothesis(heard("Hank", "ewe", "for", "calling"))  # the head heard otherwise now: the confirmed stay
    assert [w.text for w in a.confirmed] == ["Thank", "you,", "for"] and [w.text for w in a.tentative] == ["calling"]
    a.hypothesis(heard("Thank", "you", "for", "calling", "us"))
    assert [w.text for w in a.confirmed] == ["Thank", "you,", "for", "calling"]
    final = a.close(heard("Thank", "you", "for", "calling", "us", "today."))
    assert [w.text for w in final] == ["Thank", "you,", "for", "calling", "us", "today."]


def test_a_repeat_of_the_confirmed_tail_is_not_confirmed_twice() -> None:
    a = Agreement()
    a.hypothesis(heard("my", "name"))
    a.hypothesis(heard("my", "name", "is"))
    shifted = [Heard("name", 0.55, 0.9, 0.9), *heard("is", "Anna", start=1.0)]  # "name" again, timed a bit later
    assert [w.text for w in a.close(shifted)] == ["my", "name", "is", "Anna"]


def test_a_word_heard_right_after_the_confirmed_ones_is_kept_whatever_their_times() -> None:
    """A short hypothesis stretches its last word ("You are in.": "are" to 13.69 s); the longer one that follows
    starts the next word before that ("entering" at 13.3 s). Heard after the confirmed words, it is kept (the
    phrase goal "are entering conference" of tiny.en on a phone call was missed when the times decided)."""
    a = Agreement()
    a.hypothesis([Heard("You", 12.6, 13.0, 0.9), Heard("are", 13.0, 13.69, 0.9), Heard("in.", 13.69, 13.9, 0.5)])
    a.hypothesis([Heard("You", 12.6, 13.0, 0.9), Heard("are", 13.0, 13.69, 0.9), Heard("entering", 13.7, 14.1, 0.8)])
    assert [w.text for w in a.confirmed] == ["You", "are"]
    final = a.close([Heard("You", 12.6, 13.0, 0.9), Heard("are", 13.0, 13.3, 0.9), Heard("entering", 13.3, 13.8, 0.9),
                     Heard("conference", 13.8, 14.4, 0.9), Heard("number.", 14.4, 14.8, 0.9)])
    assert [w.text for w in final] == ["You", "are", "entering", "conference", "number."]


def final(text: str, speaker: str, start: float) -> tuple[Final, TranscriptSegment]:
    words = text.split()
    timed = [Word(text=w, start=start + i * 0.3, end=start + i * 0.3 + 0.25, probability=0.9)
             for i, w in enumerate(words)]
    event = Final(at=timed[-1].end, speaker=speaker, role=ROLES[speaker], start=start, end=timed[-1].end, text=text,
                  words=timed)
    segment = TranscriptSegment(id=0, channel=int(speaker[-1]), speaker=speaker, start_ms=int(start * 1000),
                                end_ms=int(timed[-1].end * 1000), text=text,
                                words=[TranscriptWord(start_ms=int(w.start * 1000), end_ms=int(w.end * 1000),
                                                      text=w.text, probability=w.probability) for w in timed])
    return event, segment


def monitor() -> CallMonitor:
    return CallMonitor(ProjectSpec.model_validate({
        "name": "Support", "language": "en", "longPauseThresholdSeconds": 2,
        "goals": [{"id": 7, "name": "greeting", "description": "Greets", "phrases": ["thank you for calling"],
                   "speaker": "agent"}],
        "liveAlerts": [{"name": "Cancellation", "phrases": ["cancel my subscription"], "speaker": "customer"}]}),
        ROLES)


def test_phrase_goals_are_met_once_by_the_right_speaker_and_alerts_every_time() -> None:
    m = monitor()
    assert m.heard(*final("Thank you for calling Acme", "channel-1", 1.0)) == []  # the customer: not the goal
    [goal] = m.heard(*final("Thank you for calling Acme", "channel-0", 2.0))
    assert isinstance(goal, GoalMet) and (goal.goal_id, goal.phrase, goal.start) == (7, "thank you for calling", 2.0)
    assert m.heard(*final("Thank you for calling again", "channel-0", 5.0)) == []  # met already
    for at in (6.0, 9.0):
        [alert] = m.heard(*final("I want to cancel my subscription", "channel-1", at))
        assert isinstance(alert, Alert) and (alert.kind, alert.name, alert.role) == ("phrase", "Cancellation",
                                                                                     "customer")
        assert alert.start == at + 3 * 0.3 and "cancel my subscription" in alert.quote
    assert m.heard(*final("Do not cancel my subscription", "channel-0", 12.0)) == []  # the agent's words: no alert


def test_a_silence_over_the_threshold_is_one_alert_and_a_hold_allows_longer() -> None:
    m = monitor()
    assert m.silence(3.0, False, None) == []  # nobody has spoken yet: ringing, not a pause
    assert m.silence(4.9, False, 3.0) == []
    [alert] = m.silence(5.2, False, 3.0)
    assert (alert.kind, alert.start, alert.threshold) == ("silence", 3.0, 2.0)
    assert m.silence(9.0, False, 3.0) == []  # one alert per silence
    assert m.silence(9.5, True, 3.0) == []
    m.heard(*final("Please hold while I check", "channel-0", 10.0))
    assert m.silence(20.0, False, 11.45) == []  # announced: up to the hold allowed (120 s by default)


ANGRY = "That is unacceptable. I am very angry."
UPSET = "I am really upset, this is the third time my internet is down."
CALM = "Okay, thank you, that works."


def test_a_customer_negative_in_two_utterances_in_a_row_is_one_alert_until_calmer(text_embedder) -> None:
    m = monitor()
    m.embedder = text_embedder  # the model the batch analysis's emotions read words with
    assert m.heard(*final(ANGRY, "channel-0", 1.0)) == []  # the agent's words: no emotion alert
    assert m.heard(*final(ANGRY, "channel-1", 3.0)) == []  # one utterance is not yet a run
    [alert] = m.heard(*final(UPSET, "channel-1", 6.0))
    assert (alert.kind, alert.name, alert.role, alert.start, alert.quote) == ("emotion", "Customer upset",
                                                                              "customer", 6.0, UPSET)
    assert alert.emotion in NEGATIVE
    assert m.heard(*final(ANGRY, "channel-1", 9.0)) == []  # the same run: alerted once
    assert m.heard(*final(CALM, "channel-1", 12.0)) == []
    assert m.heard(*final(ANGRY, "channel-1", 14.0)) == []
    assert [a.kind for a in m.heard(*final(UPSET, "channel-1", 17.0))] == ["emotion"]  # a new run after a calm one
    m.negative_utterances = 0  # CALLSCOPE_LIVE_NEGATIVE_UTTERANCES=0: none
    assert m.heard(*final(ANGRY, "channel-1", 20.0)) == [] and m.heard(*final(UPSET, "channel-1", 23.0)) == []


def test_on_a_cpu_an_english_call_is_heard_live_by_the_english_model_unless_the_site_says_otherwise() -> None:
    from callscope.analysis.runtime.live import ENGLISH_ON_CPU, LiveModels
    from callscope.config import Settings

    cpu = LiveModels(Settings(whisper_device="cpu", whisper_model="base"))
    assert cpu.model_for("en") == cpu.model_for("en-GB") == ENGLISH_ON_CPU
    assert cpu.model_for("es") == cpu.model_for("auto") == cpu.model_for(None) == "base"  # tiny.en is English only
    assert LiveModels(Settings(whisper_device="cuda", whisper_model="base")).model_for("en") == "base"
    chosen = LiveModels(Settings(whisper_device="cpu", live_whisper_model="base"))
    assert chosen.model_for("en") == chosen.model_for("es") == "base"
