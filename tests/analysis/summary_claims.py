"""Labelled summary sentences for the faithfulness check (analysis/stages/faithfulness.py): per call, sentences a
faithful summary says (paraphrases, as the model writes them) and sentences the transcript does not support
(inventions of the kinds the 1.5B model wrote: an outcome nobody stated, an offer never made, a feeling).

FIT: SUPPORT_THRESHOLD was chosen on these only. REPORT: written apart, on other calls (the synthetic support
call of tests/analysis/voices.py, and the real pyannote.audio conversation as Whisper transcribes it): only
measured (tests/analysis/test_faithfulness.py, benchmarks/faithfulness.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.analysis.transcripts import BILLING_CALL, DENTAL_CALL
from tests.analysis.voices import AGENT, CUSTOMER


@dataclass(frozen=True)
class Claims:
    call: list[tuple[str, str]]  # (speaker, text) turns
    supported: tuple[str, ...]
    unsupported: tuple[str, ...]


SUPPORT_CALL = [(f"speaker-{i % 2 + 1}", (AGENT if i % 2 == 0 else CUSTOMER)[i // 2]) for i in range(12)]

# The first 30 s of a real phone conversation (pyannote.audio's sample.wav), as the embedded Whisper writes it.
REAL_CALL = [
    ("speaker-1", "Hello."),
    ("speaker-1", "Hello. Oh, hello. I didn't know you were there. I need"),
    ("speaker-2", "the design."),
    ("speaker-1", "Okay. I thought, you know, I heard a deep."),
    ("speaker-1", "This is Diane in New Jersey,"),
    ("speaker-2", "and I'm Sheila and Texas originally from Chicago. Oh,"),
    ("speaker-1", "I'm originally from Chicago also. I'm in New Jersey now,"),
    ("speaker-2", "though."),
    ("speaker-2",
     "Well, there isn't that much difference. At least, you know, they all call me a Yankee down here, so I"),
    ("speaker-1", "don't hear that New Jersey now."),
]

FIT = [
    Claims(BILLING_CALL, supported=(
        "The customer was charged twice for the internet bill this month.",
        "The agent refunded the duplicate payment of $49.99 to the customer's card.",
        "The refund takes 5 business days and the reference is R7741.",
        "The agent will send an email confirmation.",
        "The billing problem was fixed, so the customer will be charged only once next month.",
        "Maria from Northwind Internet took the call.",
        "The customer gave the account number 58213.",
        "The second payment was a mistake in the billing system.",
    ), unsupported=(
        "The customer thanked the agent and said they would not buy anything.",
        "The customer asked to cancel the subscription.",
        "The agent offered a discount on the next bill.",
        "The customer was unhappy with the service and threatened to leave.",
        "The agent sent a technician to the customer's home.",
        "The customer asked to upgrade to a faster internet plan.",
        "The agent transferred the call to the billing department.",
        "The customer will receive a letter in the post.",
    )),
    Claims(DENTAL_CALL, supported=(
        "Tom Becker called to move his appointment on Thursday.",
        "He has to travel for work on Thursday.",
        "The cleaning with Dr. Lee was moved to Monday at 9.",
        "The receptionist offered Friday afternoon or Monday morning.",
        "He should arrive ten minutes early to update his insurance card.",
    ), unsupported=(
        "The caller complained about a toothache.",
        "The receptionist said the clinic is closed on Fridays.",
        "The patient asked about the cost of the cleaning.",
        "The appointment was cancelled.",
        "The caller asked for a new dentist.",
        "The caller was upset about waiting too long.",
    )),
]

REPORT = [
    Claims(SUPPORT_CALL, supported=(
        "The customer called to change the address on the account.",
        "The agent, Anna, asked for the account number.",
        "The agent changed the address because the new one was not on file.",
        "The customer asked for a copy of the last invoice.",
        "The customer waited while the agent looked it up.",
    ), unsupported=(
        "The customer thanked the agent and said they would not buy anything.",
        "The agent promised that a technician will come tomorrow morning.",
        "The customer complained about a late delivery.",
        "The agent offered a discount for the inconvenience.",
        "The customer asked to close the account.",
        "The invoice was sent by post.",
    )),
    Claims(REAL_CALL, supported=(
        "Diane from New Jersey and Sheila from Texas introduced themselves.",
        "Both speakers are originally from Chicago.",
        "Sheila said people call her a Yankee down there.",
        "The call opened with greetings.",
    ), unsupported=(
        "The caller called to design something, and the agent agreed to do so.",
        "The caller asked about the caller's background and plans for the design.",
        "The agent promised to send the design by email.",
        "They agreed to meet next week.",
        "The customer complained about a product.",
    )),
]
