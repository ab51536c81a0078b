"""analysis.faithfulness and its fallbacks: a summary sentence the transcript does not support never reaches the
result; a model that invents gets its sentence removed, or replaced by the call's key sentences; a
model that fails leaves the key sentences and a `stages` entry that says so."""

from __future__ import annotations

import numpy as np
import pytest

from callscope.analysis.models.language_model import LanguageModelError, OpenAICompatibleModel
from callscope.analysis.runtime.pipeline import Pipeline
from callscope.analysis.stages.faithfulness import SupportChecker, extractive_summary, key_sentences, split_sentences
from callscope.analysis.stages.summary import summarize
from callscope.config import Settings
from callscope.resources.kinds import ProjectSpec
from tests.analysis import speech
from tests.analysis.scripted_model import briefs
from tests.analysis.summary_claims import FIT, REPORT
from tests.analysis.transcripts import BILLING_CALL, segments
from tests.analysis.voices import OUTAGE_AGENT, OUTAGE_CUSTOMER

CALL = segments(BILLING_CALL)
ROLES = {"speaker-1": "agent", "speaker-2": "customer"}
INVENTED = "The customer thanked the agent and said they would not buy anything."


def test_sentences_of_written_text():
    assert split_sentences("Dr. Lee saw him on the 3. March. It costs $49.99! Done? and a tail") == [
        "Dr. Lee saw him on the 3. March.", "It costs $49.99!", "Done?", "and a tail"]
    assert split_sentences("  ") == []


def test_without_an_embedder_only_names_and_numbers_count():
    checker = SupportChecker(CALL, None)
    kept, removed = checker.supported_text(f"Maria refunded $49.99. The agent refunded $59.99. {INVENTED}")
    assert kept == ["Maria refunded $49.99.", INVENTED]  # meaning unchecked: only the wrong number goes
    assert [r.details for r in removed] == [("59.99",)] and "59.99" in removed[0].reason()


def test_the_threshold_separates_the_fit_set_and_holds_on_the_report_set(embedder):
    def rates(sets) -> tuple[float, float]:
        kept = caught = supported = unsupported = 0
        for claims in sets:
            checker = SupportChecker(segments(claims.call), embedder)
            kept += sum(c.supported() for c in checker.check(claims.supported))
            caught += sum(not c.supported() for c in checker.check(claims.unsupported))
            supported, unsupported = supported + len(claims.supported), unsupported + len(claims.unsupported)
        return kept / supported, caught / unsupported

    assert rates(FIT) == (1.0, 1.0)
    kept, caught = rates(REPORT)  # measured: 7/9 kept, 11/11 caught (see analysis/stages/faithfulness.py)
    assert kept >= 7 / 9 and caught == 1.0


def test_a_sentence_with_words_the_call_lacks_is_not_supported(embedder):
    checker = SupportChecker(CALL, embedder)
    offer, refund = checker.check(["The agent offered a discount on the next bill.",
                                   "The agent refunded the duplicate payment to the customer's card."])
    assert offer.new == ("discount",) and not offer.supported() and "discount" in offer.reason()
    assert refund.new == () and refund.supported()  # "refunded" is "refund" said; "agent", "customer" are roles


def test_an_invented_sentence_is_repaired_with_what_was_said(embedder):
    model = briefs(["The customer was charged twice for the internet bill.", INVENTED,
                    "The agent refunded the duplicate payment of $49.99."])
    result = summarize(CALL, "en", model, roles=ROLES, embedder=embedder)
    first, quote, last, *untold = split_sentences(result.text)
    assert all(extra.startswith(("The agent said: \"", "The customer said: \"")) for extra in untold)
    assert first == "The customer was charged twice for the internet bill."
    assert last == "The agent refunded the duplicate payment of $49.99."
    assert quote.startswith(("The agent said: \"", "The customer said: \""))  # in the slot's place, as said
    assert result.method == "repaired" and [r.sentence for r in result.removed] == [INVENTED]
    assert result.note == "1 sentence(s) the transcript does not support replaced by what was said"
    assert len(model.asked) == 1  # the brief is never asked for again
    assert all(c.supported() for c in SupportChecker(CALL, embedder).check(split_sentences(result.text)))


def test_no_role_is_named_where_the_call_has_no_agent(embedder):
    chat = segments([("speaker-1", "Hello, this is Diane in New Jersey."),
                     ("speaker-2", "And I'm Sheila in Texas, originally from Chicago."),
                     ("speaker-1", "I'm originally from Chicago too.")])
    # the roles stage makes the first voice the agent; nothing either says sounds like one
    roles = {"speaker-1": "agent", "speaker-2": "customer"}
    model = briefs(["The agent, Diane, informed the caller that she is in New Jersey.",
                    "Diane and Sheila are both originally from Chicago."])
    result = summarize(chat, "en", model, roles=roles, embedder=embedder)
    # the speakers read as the recording page names them, but no service call made of the chat by the model
    assert "\nAgent: Hello, this is Diane" in model.prompts[0]
    assert "Agent and Customer only tell the voices apart" in model.prompts[0]
    assert "informed the caller" not in result.text, result.text
    assert "Diane and Sheila are both originally from Chicago." in result.text
    assert result.removed[0].roles == ("agent", "caller")


def test_a_fallback_never_repeats_a_sentence(embedder):
    said = "He might even have been made amiable by the long journey."
    long_call = segments([(f"speaker-{i % 2 + 1}", said if i % 3 == 0 else f"Turn {i} is about topic {i} of the call.")
                          for i in range(300)])
    for text in (extractive_summary(long_call, embedder), extractive_summary(long_call, None)):
        sentences = split_sentences(text)
        assert len(sentences) == len(set(sentences)) == 3, text
    # the repair quotes each thing said at most once, whatever the model repeats
    model = briefs(["They talked about a journey to Mars.", "They talked about a journey to Venus.",
                    "They talked about a journey to Pluto."])
    text = summarize(long_call, "en", model, embedder=embedder).text
    assert len(split_sentences(text)) == len(set(split_sentences(text))), text


def test_key_sentences_are_said_in_the_call_in_order(embedder):
    chosen = key_sentences(CALL, embedder)
    assert len(chosen) == 3 and [s.id for s, _ in chosen] == sorted(s.id for s, _ in chosen)
    assert all(text in segment.text and len(text.split()) >= 5 for segment, text in chosen)
    text = extractive_summary(CALL, embedder, ROLES)
    assert text.startswith(("The agent said: \"", "The customer said: \""))
    checker = SupportChecker(CALL, embedder)
    assert all(c.supported() for c in checker.check(split_sentences(text)))
    assert "Goodbye" not in text  # short turns are not key sentences


def test_a_short_call_without_long_sentences_is_its_turns(embedder):
    short = segments([("speaker-1", "Hello?"), ("speaker-2", "Wrong number, sorry.")])
    assert extractive_summary(short, embedder) == 'Speaker 1 said: "Hello?" Speaker 2 said: "Wrong number, sorry."'
    assert extractive_summary(segments([("speaker-1", " ")]), embedder) == ""


@pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)
def test_a_model_that_fails_leaves_a_summary_from_the_transcript(embedder, tmp_path):
    lines = ["Thank you for calling customer service, my name is Anna.",
             "I would like to change the address on my account please.",
             "Of course, I have changed the address on your account now."]
    pieces = []
    for line in lines:
        pieces += [speech.speak(line), speech.silence(0.6)]
    path = speech.write(tmp_path / "call.wav", [np.concatenate(pieces)])
    unreachable = OpenAICompatibleModel("http://127.0.0.1:9/v1", "none", timeout=2)  # nothing listens on port 9
    with pytest.raises(LanguageModelError):
        unreachable.generate_json("x", {"type": "object"})
    pipeline = Pipeline(Settings(llm_enabled=False), speakers=None, embedder=embedder, llm=unreachable)
    result = pipeline.run(path, ProjectSpec(name="p", language="en"))
    stage = next(s for s in result.stages if s.name == "summary")
    assert stage.ran and "language model failed" in stage.detail and "key sentences instead" in stage.detail
    assert "said: \"" in result.summary and "address" in result.summary.lower()


def test_what_the_brief_left_out_is_quoted_after_it_but_no_question_or_courtesy(embedder):
    outage = segments([(f"speaker-{i % 2 + 1}", (OUTAGE_AGENT if i % 2 == 0 else OUTAGE_CUSTOMER)[i // 2])
                       for i in range(12)])
    model = briefs(["The customer's internet has been down since yesterday evening.",
                    "The agent booked a technician to visit and repair the line."])
    result = summarize(outage, "en", model, roles=ROLES, embedder=embedder)
    quotes = split_sentences(result.text)[2:]
    assert "tomorrow morning" in result.text  # when the technician comes: the brief did not say
    assert result.method == "model" and 1 <= len(quotes) <= 2, result.text
    assert not any(q.endswith('?"') or "thank you for calling" in q.lower() or "goodbye" in q.lower()
                   for q in quotes), result.text
    # nothing the brief already says is quoted again
    assert "has been down since yesterday" not in " ".join(quotes)


# --- the claim judge (analysis/stages/entailment.py) after the similarity checks -----------------------------------

AGREED = "The customer agreed to pay the internet bill again."  # the call's own words; nobody agrees to that


def test_a_sentence_the_judge_finds_not_stated_is_repaired_though_its_words_are_the_calls(embedder):
    model = briefs(["The customer was charged twice for the internet bill.", AGREED],
                   verdicts=[["yes", "no"]])
    assert SupportChecker(CALL, embedder).check([AGREED])[0].supported()  # word overlap alone passes it
    result = summarize(CALL, "en", model, roles=ROLES, embedder=embedder)
    assert AGREED not in result.text and result.text.startswith("The customer was charged twice")
    assert [(r.sentence, r.unstated) for r in result.removed] == [(AGREED, (AGREED,))]
    assert "does not state it" in result.removed[0].reason() and result.method == "repaired"
    # one request, each claim a question of its own after the very transcript the brief was written from (the
    # model's cache holds it)
    [judgement] = model.judgements
    brief = model.asked[0]
    transcript = brief[:brief.index("[end of transcript]")]
    assert judgement.head.startswith(transcript)
    assert [q.split("\n")[0] for q in judgement.questions] == ["The customer was charged twice for the internet bill.",
                                                                AGREED]


def test_each_claim_of_a_sentence_is_judged_and_one_not_stated_removes_it(embedder):
    joined = "The agent fixed the problem on the account, and the customer will be charged twice next month."
    model = briefs([joined], verdicts=[["yes", "no"]])
    result = summarize(CALL, "en", model, roles=ROLES, embedder=embedder)
    assert [q.split("\n")[0] for q in model.judgements[0].questions] == [
        "The agent fixed the problem on the account.", "The customer will be charged twice next month."]
    assert [r.unstated for r in result.removed] == [("The customer will be charged twice next month.",)]


def test_quotes_and_sentences_already_unsupported_are_not_judged_and_judge_off_asks_nothing(embedder):
    quote = 'The agent said: "I can see the two payments."'
    model = briefs([quote, "The caller was refunded $99 by Maria.", "The agent fixed the problem on the account."])
    summarize(CALL, "en", model, roles=ROLES, embedder=embedder)
    assert [q.split("\n")[0] for q in model.judgements[0].questions] == ["The agent fixed the problem on the account."]
    off = briefs(["The agent fixed the problem on the account."])
    assert summarize(CALL, "en", off, roles=ROLES, embedder=embedder, judge=False).text.startswith("The agent fixed")
    assert off.judgements == []


class _JudgeFails:
    """The scripted brief, then an error where the judgement is asked."""

    def __init__(self, brief: list[str]):
        self.model = briefs(brief)
        self.info, self.context_tokens = self.model.info, self.model.context_tokens

    def generate_json(self, prompt: str, schema: dict, max_tokens: int = 512) -> dict:
        return self.model.generate_json(prompt, schema, max_tokens)

    def yes_probabilities(self, head: str, questions: list[str]) -> list[float]:
        raise LanguageModelError("the judge's prompt is longer than the context")


def test_a_judge_that_fails_leaves_the_similarity_checks_standing(embedder):
    result = summarize(CALL, "en", _JudgeFails(["The agent fixed the problem on the account.", AGREED]), roles=ROLES,
                       embedder=embedder)
    assert result.text.startswith(f"The agent fixed the problem on the account. {AGREED}")
    assert result.removed == ()
