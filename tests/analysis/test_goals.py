"""analysis.goals: each evidence rule on hand-built segments, the quote verifier, the explanation guard, the
similarity threshold re-measured on labelled utterances with the real text model, and (slow) the embedded
language model phrasing an explanation."""

from __future__ import annotations

import re

import numpy as np
import pytest

from callscope.analysis.result import Evidence, GoalResult, Pause, TranscriptSegment
from callscope.analysis.stages.evidence import (
    QUOTE_MAX_CHARS,
    excerpt,
    query_text,
    quote_in_transcript,
    quoted_strings,
    similarity_score,
    token_spans,
)
from callscope.analysis.stages.goal_examples import examples
from callscope.analysis.stages.goals import (
    EXAMPLE_THRESHOLD,
    SIMILARITY_THRESHOLD,
    Finding,
    evaluate_goals,
    verified_explanation,
)
from callscope.figures import figures
from callscope.resources.kinds import Goal
from tests.analysis.scripted_model import ScriptedModel
from tests.analysis.summary_claims import REAL_CALL, SUPPORT_CALL
from tests.analysis.transcripts import BILLING_CALL, segments, word

ROLES = {"speaker-1": "agent", "speaker-2": "customer"}


def seg(id: int, speaker: str, start_ms: int, text: str, ms_per_word: int = 400) -> TranscriptSegment:
    """A segment with one timed word per word of text, ms_per_word apart."""
    words = [word(start_ms + i * ms_per_word, start_ms + (i + 1) * ms_per_word, w, 0.9)
             for i, w in enumerate(text.split())]
    return TranscriptSegment(id=id, channel=int(speaker[-1]) - 1, speaker=speaker, start_ms=start_ms,
                             end_ms=start_ms + len(words) * ms_per_word, text=text, words=words)


def goal(**kwargs) -> Goal:
    return Goal(**{"id": 1, "name": "greeting", "description": "The agent greets the caller.", **kwargs})


CALL = [
    seg(0, "speaker-1", 1_000, "Good morning. Thank you, for calling ACME! My name is Jane."),
    seg(1, "speaker-2", 6_000, "Hi Jane, my router keeps disconnecting."),
    seg(2, "speaker-1", 9_000, "I’m sorry to hear that, let me check the line."),
    seg(3, "speaker-2", 40_000, "Thanks, bye."),
]


def only(goal_: Goal, segments_=CALL, roles=ROLES, embedder=None, **kwargs) -> GoalResult:
    [verdict] = evaluate_goals([goal_], segments_, roles, embedder, **kwargs)
    return verdict


# --- phrases, speaker and time rules ---------------------------------------------------------------


def test_phrase_said_meets_the_goal_with_its_quote_and_time():
    verdict = only(goal(phrases=["thank you for calling"]))
    assert verdict.met and verdict.score == 1.0
    [evidence] = verdict.evidence
    # the sentence holding the phrase, verbatim, and the time of the phrase's first word ("Thank" is word 2)
    assert evidence == Evidence(dialogue_id=0, start_ms=1_800, quote="Thank you, for calling ACME!")
    assert verdict.explanation == ('Met: at 0:01 the agent said "Thank you, for calling ACME!" '
                                   '(phrase "thank you for calling").')


def test_result_serialises_to_the_documented_shape():
    dumped = only(goal(phrases=["my name is"])).model_dump()
    assert set(dumped) == {"goal_id", "goal_name", "met", "score", "explanation", "evidence", "applicable"}
    assert dumped["applicable"] is True
    assert (dumped["goal_id"], dumped["goal_name"]) == (1, "greeting")
    assert dumped["evidence"] == [{"dialogue_id": 0, "start_ms": 3_800, "quote": "My name is Jane."}]


HOLD = {"name": "hold etiquette", "description": "The agent asks before putting the caller on hold and thanks them.",
        "phrases": ["thank you for holding"], "speaker": "agent"}


def test_a_goal_whose_situation_did_not_occur_is_not_applicable_not_unmet():
    unheld = only(goal(**HOLD, applies_when={"long_pause": True, "phrases": ["on hold", "please hold"]}))
    assert (unheld.applicable, unheld.met, unheld.score, unheld.evidence) == (False, False, 0.0, [])
    assert unheld.explanation == ('Not applicable: the situation this goal is about did not occur (no long pause '
                                  'and none of "on hold", "please hold" said).')
    long_gap = Pause(start_ms=12_000, end_ms=40_000, duration_ms=28_000, compliant=False, after_dialogue_id=2,
                     long=True)
    held = only(goal(**HOLD, applies_when={"long_pause": True}), pauses=[long_gap])
    assert held.applicable and not held.met  # it happened, and the agent did not thank the caller
    said = only(goal(**HOLD, applies_when={"phrases": ["let me check"]}))  # said at 0:09
    assert said.applicable and not said.met
    assert only(goal(**HOLD)).applicable  # a goal without a situation applies to every call


def test_a_goal_that_does_not_apply_counts_in_no_rate():
    results = {"goals": [{"goal_id": 1, "met": True, "applicable": True}, {"goal_id": 2, "met": False},
                         {"goal_id": 3, "met": False, "applicable": False}]}
    assert figures(results, None).goals == {1: True, 2: False}  # an older result without the field applies


def test_phrase_not_said_is_not_met():
    verdict = only(goal(phrases=["welcome to", "good afternoon"]))
    assert not verdict.met and verdict.score == 0.0 and verdict.evidence == []
    assert verdict.explanation.startswith('Not met: no sentence says "welcome to" or "good afternoon"')


def test_phrases_match_whole_words_ignoring_case_punctuation_and_apostrophe_style():
    assert only(goal(phrases=["I'm SORRY"])).met  # the transcript has a curly apostrophe
    assert only(goal(phrases=["thank you for calling acme"])).met  # across the comma
    assert not only(goal(phrases=["rout"])).met  # "router" is another word
    assert only(goal(phrases=["calling acme my name"])).met  # across the sentences of one segment...
    assert not only(goal(phrases=["jane hi jane"])).met  # ...but never across two segments


def test_wrong_speaker_is_not_counted():
    verdict = only(goal(phrases=["router"], speaker="agent"))
    assert not verdict.met and verdict.evidence == []
    assert "the customer said \"Hi Jane, my router keeps disconnecting.\", but it was said by the customer, " \
           "not the agent" in verdict.explanation
    assert only(goal(phrases=["router"], speaker="customer")).met
    assert only(goal(phrases=["router"], speaker="any")).met


def test_unknown_role_does_not_count_for_a_role_rule():
    roles = {"speaker-1": "agent", "speaker-2": "unknown"}
    assert not only(goal(phrases=["router"], speaker="customer"), roles=roles).met
    assert not only(goal(phrases=["router"], speaker="customer"), roles={}).met
    assert only(goal(phrases=["router"]), roles={}).met


def test_outside_the_time_window_is_not_counted():
    late = only(goal(phrases=["bye"], within_seconds=30))
    assert not late.met and "but it was after the first 30 s" in late.explanation
    assert only(goal(phrases=["bye"], within_seconds=41)).met  # "bye." is word 2 of a turn at 40 s: 40.4 s
    # the phrase's own time counts, not the segment's start: "let me check" starts at 9 s + 5 words x 0.4 s
    assert not only(goal(phrases=["let me check"], within_seconds=10)).met
    assert only(goal(phrases=["let me check"], within_seconds=11)).met


def test_segment_start_is_the_time_without_word_timings():
    untimed = [TranscriptSegment(id=5, channel=0, speaker="speaker-1", start_ms=20_000, end_ms=25_000,
                                 text="Sorry, one more thing: thank you for calling.")]
    verdict = only(goal(phrases=["thank you for calling"], within_seconds=20), segments_=untimed)
    assert verdict.met and verdict.evidence[0].start_ms == 20_000


def test_every_counted_phrase_is_evidence_one_per_segment_in_time_order():
    verdict = only(goal(phrases=["jane", "my name is"]))
    assert [e.dialogue_id for e in verdict.evidence] == [0, 1]
    assert [e.quote for e in verdict.evidence] == ["My name is Jane.", "Hi Jane, my router keeps disconnecting."]


def test_no_speech_and_no_rules():
    assert only(goal(phrases=["hello"]), segments_=[]).explanation == "Not met: the call has no speech."
    verdict = only(goal())  # no phrases, no text model: nothing can show it
    assert not verdict.met and "no text model" in verdict.explanation


# --- score mapping and the query --------------------------------------------------------------------


def test_similarity_score_maps_floor_threshold_and_ceiling():
    assert similarity_score(0.05, 0.45) == 0.0
    assert similarity_score(0.10, 0.45) == 0.0
    assert similarity_score(0.45, 0.45) == 0.5
    assert similarity_score(0.70, 0.45) == 1.0 and similarity_score(0.95, 0.45) == 1.0
    assert 0.0 < similarity_score(0.30, 0.45) < 0.5 < similarity_score(0.55, 0.45) < 1.0
    assert similarity_score(0.60, 0.60) == 0.5  # a goal's own min_similarity is its midpoint


def test_query_drops_role_words_and_keeps_the_name():
    assert query_text("anything_else", "The agent asks whether there is anything else the caller needs.") == \
        "anything else: asks whether there is anything else needs."
    assert query_text("outage", "") == "outage"


# --- quotes: the verifier and the guard on the model's explanation ----------------------------------


def test_quote_verifier_finds_only_what_a_segment_says():
    found = quote_in_transcript("thank you for calling acme", CALL)
    assert found is not None and found[0].id == 0 and found[1] == 2
    assert quote_in_transcript("My router keeps disconnecting!", CALL)[0].id == 1
    assert quote_in_transcript("my router keeps dropping", CALL) is None  # a paraphrase is not a quote
    assert quote_in_transcript("Jane. Hi Jane", CALL) is None  # not across two segments
    assert quote_in_transcript("  ", CALL) is None
    assert quoted_strings('She said "hi there" and “bye now”.') == ["hi there", "bye now"]
    assert quoted_strings("He said 'I'm Jane' and ‘bye’; the agents' script was 'fine'.") == ["I'm Jane", "bye", "fine"]
    assert quoted_strings("Jane's greeting was polite.") == []


def _finding(segment: TranscriptSegment, quote: str) -> Finding:
    return Finding(Evidence(dialogue_id=segment.id, start_ms=segment.start_ms, quote=quote), segment, "x", None,
                   1.0, True, None)


def test_explanation_is_used_only_when_its_quotes_are_in_the_transcript():
    chosen = [_finding(CALL[0], "Thank you, for calling ACME!")]
    good = {"explanation": 'The agent opened with "Thank you, for calling ACME!" as required.', "quote_ids": [1]}
    assert verified_explanation(good, chosen, CALL, met=True) == \
        'Met: The agent opened with "Thank you, for calling ACME!" as required.'
    invented = {"explanation": 'The agent said "Welcome to ACME".', "quote_ids": [1]}
    assert verified_explanation(invented, chosen, CALL, met=True) is None
    assert verified_explanation({"explanation": "Fine.", "quote_ids": [2]}, chosen, CALL, met=True) is None
    assert verified_explanation({"explanation": "Fine.", "quote_ids": []}, chosen, CALL, met=True) is None
    # the verdict is ours: a model that restates it gets it replaced
    restated = {"explanation": "Not met: the agent greeted nobody.", "quote_ids": []}
    assert verified_explanation(restated, [], CALL, met=False) == "Not met: the agent greeted nobody."


def test_a_model_that_quotes_what_was_not_said_falls_back_to_the_evidence():
    model = ScriptedModel({"goal_1": {"explanation": 'The agent said "welcome to ACME".', "quote_ids": [1]}})
    verdict = only(goal(phrases=["thank you for calling"]), llm=model)
    assert verdict.met and verdict.explanation.startswith('Met: at 0:01 the agent said "Thank you')
    assert 'goal_1: Goal "greeting"' in model.prompts[0]
    assert '[1] the agent: "Thank you, for calling ACME!"' in model.prompts[0]
    assert model.prompts[0].startswith("Transcript of a phone call")  # the prefix shared with the summary


def test_met_goals_are_phrased_in_one_request_and_checked_one_by_one():
    goals = [goal(phrases=["thank you for calling"]), goal(id=2, name="name", description="Says a name.",
                                                          phrases=["my name is"])]
    model = ScriptedModel({"goal_1": {"explanation": 'The agent opened with "Thank you, for calling ACME!"',
                                      "quote_ids": [1]},
                           "goal_2": {"explanation": "The agent said her name is Maria.", "quote_ids": [1]}})
    first, second = evaluate_goals(goals, CALL, ROLES, None, model)
    assert len(model.prompts) == 1 and "goal_2: " in model.prompts[0]
    assert first.explanation == 'Met: The agent opened with "Thank you, for calling ACME!"'
    # "Maria" is not in the evidence: the deterministic explanation stands
    assert second.explanation.startswith('Met: at 0:')


def test_a_goal_not_met_is_explained_from_the_evidence_without_the_model():
    model = ScriptedModel()
    verdict = only(goal(phrases=["welcome"]), llm=model)
    assert not verdict.met and verdict.explanation.startswith('Not met: no sentence says "welcome"')
    assert model.prompts == []  # nothing to phrase: the model is not asked (nor can it claim what the call lacks)


def test_a_judging_model_needs_a_quote_that_passes_the_rules():
    said = {"met": True, "score": 0.9, "explanation": "Greeted.", "quotes": ["Thank you, for calling ACME!"]}
    verdict = only(goal(speaker="agent"), llm=ScriptedModel(said), judge_with_model=True)
    assert verdict.met and verdict.score == 0.9 and verdict.evidence[0].dialogue_id == 0
    # a quote the transcript lacks, or one said by the wrong speaker: the evidence decides instead
    for quote in ("Welcome to ACME, I am Jane.", "my router keeps disconnecting"):
        judged = {"met": True, "score": 0.9, "explanation": "Greeted.", "quotes": [quote]}
        phrased = {"explanation": "No greeting was found.", "quote_ids": []}
        verdict = only(goal(speaker="agent"), llm=ScriptedModel(judged, phrased), judge_with_model=True)
        assert not verdict.met and verdict.evidence == [] and verdict.score < 0.5
    # a quote said by both speakers counts where the right one says it
    judged = {"met": True, "score": 0.8, "explanation": "Named Jane.", "quotes": ["Jane"]}
    verdict = only(goal(speaker="customer"), llm=ScriptedModel(judged), judge_with_model=True)
    assert verdict.met and [e.dialogue_id for e in verdict.evidence] == [1]


REDACTED_CALL = [
    seg(0, "speaker-1", 1_000, "Can I take the card number please?"),
    seg(1, "speaker-2", 4_000, "Sure. [PAYMENT_CARD], that is the card I use."),
    seg(2, "speaker-2", 9_000, "It is " + "really " * 40 + "the one ending [PAYMENT_CARD] " + "okay " * 40 + "."),
]


def test_evidence_quotes_never_cut_a_redaction_token():
    # a sentence that starts with the token: its quote starts at the token's "[" (was "PAYMENT_CARD], that ...")
    verdict = only(goal(phrases=["the card I use"]), REDACTED_CALL)
    assert [e.quote for e in verdict.evidence] == ["[PAYMENT_CARD], that is the card I use."]
    judged = {"met": True, "score": 0.9, "explanation": "Paid.", "quotes": ["PAYMENT_CARD that is the card"]}
    verdict = only(goal(), REDACTED_CALL, llm=ScriptedModel(judged), judge_with_model=True)
    assert [e.quote for e in verdict.evidence] == ["[PAYMENT_CARD], that is the card I use."]
    # a sentence too long to quote whole, narrowed to the words around the phrase: the token stays whole
    verdict = only(goal(phrases=["ending payment_card"]), REDACTED_CALL)
    [quote] = [e.quote for e in verdict.evidence]
    assert len(quote) <= QUOTE_MAX_CHARS and "the one ending [PAYMENT_CARD] okay" in quote
    for found in (verdict.evidence[0].quote, verdict.explanation):
        assert re.sub(r"\[PAYMENT_CARD\]", "", found).count("PAYMENT_CARD") == 0, found
    for first in range(len(token_spans(REDACTED_CALL[2].text))):  # wherever a quote is cut
        for count in (1, 3, 60):
            quote, _ = excerpt(REDACTED_CALL[2], first, count)
            assert re.sub(r"\[PAYMENT_CARD\]", "", quote).count("PAYMENT_CARD") == 0, quote


# --- matching by meaning with the real text model --------------------------------------------------

# Labelled utterances: (goal name, description, utterances that meet it). Two sets written apart (call
# centre; clinic, bank, insurance, shop); each goal's negatives are the other goals' utterances of its set
# and the ordinary talk below. SIMILARITY_THRESHOLD was chosen on these (see analysis/stages/goals.py).
GOAL_SETS = [
    ({
        "greeting": ("The agent greets the caller and introduces themselves by name.", [
            "Good morning, thank you for calling ACME, my name is Jane, how can I help you?",
            "Hi, you've reached FiberMax support, this is Tom speaking.",
            "Hello and welcome to ACME support, I'm Sarah, what can I do for you today?",
            "Good afternoon, Mike here from the billing team, how may I help?"]),
        "verification": ("The agent verifies the caller's identity by asking for their date of birth or account "
                         "number.", [
            "Before we continue, can you confirm your date of birth for me?",
            "Could you please give me your account number so I can verify who I'm speaking with?",
            "For security reasons I need to verify your identity, what's the postcode on the account?",
            "Can I have the account holder's full name and date of birth please?"]),
        "recording": ("The agent tells the caller that the call is being recorded.", [
            "Just so you know, this call is recorded for quality and training purposes.",
            "Please note that this conversation may be recorded.",
            "I have to let you know that we record all calls on this line."]),
        "resolution": ("The caller's problem is solved or a follow-up is agreed.", [
            "Great, the internet is working again now, thanks so much.",
            "I'll call you back tomorrow morning once the engineer has checked the line.",
            "So we've agreed that a technician will visit on Thursday to fix it.",
            "Okay, the refund has been processed, so that's sorted for you."]),
        "anything_else": ("The agent asks whether there is anything else they can help with.", [
            "Is there anything else I can help you with today?", "Anything else I can do for you?",
            "Was there something else you needed help with?"]),
        "apology": ("The agent apologises for the inconvenience.", [
            "I'm really sorry about the trouble this has caused you.", "I apologise for the inconvenience.",
            "Sorry to hear that, I understand how frustrating that must be."]),
        "closing": ("The agent thanks the customer and says goodbye at the end of the call.", [
            "Thanks for calling, have a great day, goodbye.", "Thank you for your patience, bye now.",
            "Alright, take care, bye bye."]),
        "upsell": ("The agent offers an upgrade to a faster internet plan.", [
            "Since you use a lot of data, would you be interested in upgrading to our gigabit plan?",
            "We have a faster fibre package for just five dollars more a month, want me to switch you?",
            "You could get double the speed if you move to our premium plan."]),
    }, [
        "My router keeps disconnecting every few minutes.", "Yes, that's right.", "Okay.", "Mm-hm.",
        "Let me check that for you.", "It's been happening since Monday.",
        "Can you restart the router for me and tell me what lights you see?", "The lights on the box are blinking "
        "orange.", "I was charged twice on my last bill.", "Sure, one moment please.", "My name is John Smith.",
        "I need to cancel my subscription.", "Hi, I'm calling because my internet is down.",
        "It's john dot smith at example dot com.", "My phone number is five five five, one two three four.",
        "I live at 42 Elm Street.", "I tried unplugging it already and it didn't help.", "How long will that take?",
        "I've been waiting on hold for twenty minutes.", "That's ridiculous, this is the third time I've called.",
        "Can you hear me okay?", "I'm not sure, my wife set it up.", "The Wi-Fi is slow in the bedroom upstairs.",
        "Do you want me to email you the invoice?", "What plan am I on at the moment?",
        "Right, so I just click on settings?", "No, nothing changed.", "The TV box is also not working.",
        "I see a red light on the modem.", "It says error code 651.",
        "I'm going to run a line test now, it takes about a minute.", "Your contract ends in March.",
        "Fine, thanks.", "Yeah, I'm at home now.", "Could you spell your last name?",
        "The payment was taken on the fifth.",
    ]),
    ({
        "confirm_appointment": ("The receptionist confirms the date and time of the patient's appointment.", [
            "So that's booked for Tuesday the ninth at three thirty in the afternoon.",
            "Your appointment is confirmed for Monday at ten a.m. with Doctor Patel.",
            "Okay, I've got you down for next Friday at nine."]),
        "insurance_check": ("The caller is asked which insurance provider they have.", [
            "And who is your insurance with?", "Can you tell me the name of your health insurer?",
            "Do you have insurance, and if so which company is it?"]),
        "fraud_warning": ("The agent warns the customer never to share their PIN with anyone.", [
            "Remember, we will never ask you for your PIN, so don't give it to anyone.",
            "Please never share your PIN code, not even with bank staff."]),
        "card_block": ("The card is blocked or cancelled.", [
            "I've blocked the card now so nobody can use it.",
            "Your old card has been cancelled and a new one is on its way."]),
        "claim_number": ("The agent gives the customer a claim reference number.", [
            "Your claim reference is C as in Charlie four four seven two.",
            "I'll give you a reference number for the claim, have you got a pen?"]),
        "delivery_time": ("The customer is told when their order will be delivered.", [
            "Your parcel should arrive by Thursday at the latest.",
            "The courier will deliver it tomorrow between eight and twelve."]),
    }, [
        "Hi, I'd like to book an appointment please.", "I've had a headache for three days.",
        "Can I get your date of birth?", "My card was stolen yesterday at the train station.",
        "I don't remember the last four digits.", "Hold on, let me find my wallet.",
        "The order number is on the email you sent.", "It was a red jacket, size medium.",
        "Thank you so much, you've been very helpful.", "I'm calling about the water damage in my kitchen.",
        "Is the doctor available on weekends?", "Yes, I'm still here.", "No, that's the old address.",
        "Could you repeat that please?", "I paid with my credit card.", "Alright, bye.",
        "Good morning, City Clinic, Anna speaking.", "The photos of the damage are already uploaded.",
        "I want to speak to a manager.", "Sorry, the line is really bad.", "What time do you close today?",
        "It's the one on Main Street.", "I'll transfer you to the claims department.",
        "My husband usually deals with this.",
    ]),
]


def measure(embedder, threshold: float) -> tuple[float, int, int, int]:
    """(recall of the positives, negative pairs at or above threshold, number of negative pairs, goals whose
    best negative reaches the threshold: a call of only negatives would meet them)."""
    texts = sorted({t for goals, talk in GOAL_SETS for t in talk + [u for _, us in goals.values() for u in us]}
                   | {query_text(n, d) for goals, _ in GOAL_SETS for n, (d, _) in goals.items()})
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    hits = positives = false_pairs = pairs = false_goals = 0
    for goals, talk in GOAL_SETS:
        for name, (description, said) in goals.items():
            query = vectors[query_text(name, description)]
            negatives = talk + [u for other, (_, us) in goals.items() if other != name for u in us]
            pos = np.array([vectors[u] for u in said]) @ query
            neg = np.array([vectors[u] for u in negatives]) @ query
            hits, positives = hits + int((pos >= threshold).sum()), positives + len(said)
            false_pairs, pairs = false_pairs + int((neg >= threshold).sum()), pairs + len(negatives)
            false_goals += int(neg.max() >= threshold)
    return hits / positives, false_pairs, pairs, false_goals


def test_threshold_measured_on_the_labelled_utterances(embedder):
    recall, false_pairs, pairs, false_goals = measure(embedder, SIMILARITY_THRESHOLD)
    assert pairs == 691
    assert recall >= 0.55 and false_pairs <= 2 and false_goals <= 2
    # and it is the knee: 0.05 lower lets many more false matches through
    _, lower_pairs, _, lower_goals = measure(embedder, SIMILARITY_THRESHOLD - 0.05)
    assert lower_pairs >= 3 * false_pairs and lower_goals >= 2 * false_goals


def test_semantic_match_found_by_meaning(embedder):
    call = segments(BILLING_CALL)
    verification = Goal(id=5, name="verification",
                        description="The agent verifies the caller's identity by asking for their account number.")
    upsell = Goal(id=4, name="upsell", description="The agent offers an upgrade to a faster internet plan.")
    met, not_met = evaluate_goals([verification, upsell], call, ROLES, embedder)
    assert met.met and 0.5 <= met.score < 1.0
    assert met.evidence[0] == Evidence(dialogue_id=2, start_ms=call[2].start_ms,
                                       quote="Can I have your account number, please?")
    assert re.match(r'Met: at 0:17 the agent said "Can I have your account number, please\?" \(similarity 0\.\d\d',
                    met.explanation)
    assert not not_met.met and not_met.score < 0.5 and not_met.evidence == []
    assert "(closest: at " in not_met.explanation
    # matching by meaning off (1), or the rules exclude the sentence: not met
    assert not evaluate_goals([verification.model_copy(update={"min_similarity": 1.0})], call, ROLES, embedder)[0].met
    assert not evaluate_goals([verification.model_copy(update={"speaker": "customer"})], call, ROLES, embedder)[0].met


# --- the embedded language model phrasing explanations (slow) ---------------------------------------


@pytest.mark.slow
@pytest.mark.xdist_group("language_model")
@pytest.mark.timeout(900)  # minutes when other work shares the 2 cores
def test_language_model_phrases_but_does_not_decide(language_model):
    call = segments(BILLING_CALL)
    goals = [Goal(id=1, name="greeting", description="The agent greets the caller and says their own name.",
                  phrases=["thank you for calling"], speaker="agent", within_seconds=30),
             Goal(id=2, name="upsell", description="The agent offers a faster plan.", phrases=["upgrade"])]
    plain = evaluate_goals(goals, call, ROLES, None)
    phrased = evaluate_goals(goals, call, ROLES, None, language_model)
    assert [(v.met, v.score, v.evidence) for v in phrased] == [(v.met, v.score, v.evidence) for v in plain]
    assert [v.met for v in phrased] == [True, False]
    met, not_met = phrased
    assert met.explanation.startswith("Met: ")
    assert all(quote_in_transcript(q, call) for q in quoted_strings(met.explanation))
    assert not_met.explanation == plain[1].explanation  # what was looked for: the model is not asked
    print([v.explanation for v in phrased])


def test_evidence_rows_are_plain_numbers():
    verdict = only(goal(phrases=["jane"]))
    assert all(isinstance(e.start_ms, int) and not isinstance(e.start_ms, np.integer) for e in verdict.evidence)


def test_the_greeting_of_a_real_call_is_found(embedder):
    # the pyannote.audio conversation as Whisper writes it: "Hello." ... "This is Diane in New Jersey,"
    greeting = Goal(id=1, name="Greeting", description="The speaker greets the other party and introduces themselves.")
    [verdict] = evaluate_goals([greeting], segments(REAL_CALL), ROLES, embedder)
    assert verdict.met and verdict.evidence[0].quote == "Hello." and verdict.evidence[0].start_ms == 0


# --- example utterances of the acts a goal names ------------------------------------------------------


def test_goals_that_name_an_act_are_matched_against_its_examples():
    assert [act.name for act, _ in examples("Greeting", "The speaker greets the other party and introduces themselves.")
            ] == ["a greeting"] * 4 + ["an introduction"] * 4
    assert {act.name for act, _ in examples("Closing", "The agent asks whether there is anything else to help with.")
            } == {"a closing", "an offer of further help"}
    assert examples("upsell", "The agent offers an upgrade to a faster internet plan.") == []


def test_greeting_and_closing_said_in_set_phrases_are_found(embedder):
    # the synthetic support call: its greeting and closing are 0.29 and 0.34 similar to the goals' own text
    call = segments(SUPPORT_CALL)
    greeting = Goal(id=1, name="Greeting", description="The speaker greets the other party and introduces themselves.")
    closing = Goal(id=2, name="Closing", description="The agent asks whether there is anything else to help with.")
    met_greeting, met_closing = evaluate_goals([greeting, closing], call, ROLES, embedder)
    assert met_greeting.met and met_greeting.evidence[0].quote.startswith("Thank you for calling customer service")
    assert met_greeting.explanation.startswith('Met: at 0:00 the agent said "Thank you for calling customer service')
    assert "of a greeting)" in met_greeting.explanation
    assert met_closing.met and "Is there anything else I can help you with?" in [e.quote for e in met_closing.evidence]
    # "How can I help you today?" is close to "Can I help you with anything else today?" but lacks "else"
    assert not any(e.quote.startswith("How can I help") for e in met_closing.evidence)
    # the real conversation greets and does not close
    greets, closes = evaluate_goals([greeting, closing], segments(REAL_CALL), ROLES, embedder)
    assert greets.met and greets.evidence[0].quote == "Hello." and not closes.met
    assert closes.explanation.startswith("Not met: no sentence is close in meaning to the goal or to an example of "
                                         "an offer of further help or a closing")


def test_a_goal_with_phrases_is_not_met_by_an_act_it_does_not_ask_for(embedder):
    # benchmarks/accuracy.py's greeting: said as its phrases ask, or not met by any other greeting
    greeting = Goal(id=1, name="Greeting", description="The agent thanks the caller for calling and gives their name.",
                    phrases=["thank you for calling", "thanks for calling"], speaker="agent")
    closing = Goal(id=3, name="Closing",
                   description="The agent asks whether there is anything else they can help with.",
                   phrases=["anything else"], speaker="agent")
    call = segments([("speaker-1", "Hello, this is Acme. What is it?"),
                     ("speaker-2", "Hello, I would like to change the address on my account."),
                     ("speaker-1", "Okay, thank you for that information."),
                     ("speaker-2", "Great, thank you very much."),
                     ("speaker-1", "Goodbye.")])
    met = evaluate_goals([greeting, closing], call, ROLES, embedder)
    assert [g.met for g in met] == [False, False]


def test_example_threshold_measured_on_the_labelled_utterances(embedder):
    """Of the labelled goals that name an act, every positive of the offer and the closing passes EXAMPLE_THRESHOLD
    and one negative pair does: "My name is John Smith." for a greeting that asks for a name (said by the customer:
    the goal's speaker rule is what keeps it out)."""
    passed, false_pairs = {}, []
    for goals, talk in GOAL_SETS:
        for name, (description, said) in goals.items():
            acts = examples(name, description)
            if not acts:
                continue
            negatives = talk + [u for other, (_, us) in goals.items() if other != name for u in us]
            vectors = embedder.embed([text for _, text in acts] + said + negatives)
            sims = vectors[len(acts):] @ vectors[:len(acts)].T
            usable = np.array([[act.requires is None or bool(act.requires.search(u)) for act, _ in acts]
                               for u in said + negatives])
            best = np.where(usable, sims, -1).max(axis=1)
            passed[name] = float(np.mean(best[:len(said)] >= EXAMPLE_THRESHOLD))
            false_pairs += [u for u, s in zip(negatives, best[len(said):], strict=True) if s >= EXAMPLE_THRESHOLD]
    assert passed["anything_else"] >= 0.66 and passed["closing"] == 1.0
    assert false_pairs == ["My name is John Smith."]
