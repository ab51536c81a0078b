"""A summary names the speakers as the recording page does, by the roles the results carry: where the page says Agent
and Customer, the transcript the model reads and the quotes the summary adds say so too, even when the agent says
nothing that sounds like one (a bare "Hello."), where "speaker-1" used to reach the model and "Speaker 1 said" the
summary. The model's own sentences still may not make a service call of a call without a sounding agent."""

from __future__ import annotations

import re

from callscope.analysis.stages.summary import named_roles, summarize, transcript_prompt
from tests.analysis.scripted_model import briefs
from tests.analysis.transcripts import segments

ROLES = {"speaker-1": "agent", "speaker-2": "customer"}
TERSE_SUPPORT_CALL = segments([
    ("speaker-1", "Hello."),
    ("speaker-2", "I was charged twice for my internet bill this month, two payments of forty nine dollars."),
    ("speaker-1", "I see the two payments. I will refund the second payment to your card today."),
    ("speaker-2", "Great. Bye."),
])


def test_the_terse_agent_is_not_one_the_models_own_sentences_may_name():
    assert set(named_roles(TERSE_SUPPORT_CALL, ROLES).values()) == {"unknown"}  # the premise of these tests


def test_the_model_reads_the_speakers_by_the_roles_the_page_shows():
    model = briefs(["The customer was charged twice for the internet bill."])
    summarize(TERSE_SUPPORT_CALL, "en", model, roles=ROLES, embedder=None, judge=False)
    [prompt] = model.prompts
    assert prompt.startswith(transcript_prompt(TERSE_SUPPORT_CALL, roles=ROLES))  # the prefix other stages share
    assert "\nAgent: Hello.\nCustomer: I was charged twice" in prompt
    assert "speaker-1" not in prompt and "speaker-2" not in prompt
    assert "Agent and Customer only tell the voices apart" in prompt  # no service call made of it by the model


def test_unknown_roles_are_read_by_their_labels_as_before():
    model = briefs(["They talked about a bill."])
    summarize(TERSE_SUPPORT_CALL, "en", model, roles={"speaker-1": "unknown", "speaker-2": "unknown"}, embedder=None,
              judge=False)
    assert "\nspeaker-1: Hello.\n" in model.prompts[0] and "Nobody in it is an agent" in model.prompts[0]


def test_quotes_in_a_summary_name_the_agent_and_customer_never_speaker_1(embedder):
    model = briefs(["The agent sold the customer a new phone for 300 dollars.",
                    "The caller asked about a holiday in Spain."])
    result = summarize(TERSE_SUPPORT_CALL, "en", model, roles=ROLES, embedder=embedder, judge=False)
    quotes = re.findall(r'(\w+(?: \w+)?) said: "', result.text)
    assert quotes and set(quotes) <= {"The agent", "The customer"}, result.text
    assert not re.search(r"speaker[ -]?\d", result.text, re.IGNORECASE), result.text
