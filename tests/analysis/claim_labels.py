"""Summary sentences labelled by hand, supported or not by their call, for the claim-level check
(analysis/stages/entailment.py) and the faithfulness checker's figures (benchmarks/claim_check.py).

Written before any run of the claim judge. They extend the set of tests/analysis/summary_claims.py (all of whose
sentences are here too) with sentences of the kinds the embedded model writes on the benchmark calls, and above all
inventions made of the call's own words ("Sheila and Texas agree to the design"): an outcome nobody stated, a number
or day moved to another fact, an action given to the wrong person, a question turned into a done deed. Such a
sentence shares its words with the transcript, so a check by word overlap or similarity passes it.

FIT: the written billing and dental calls, on which any prompt or threshold of the judge is chosen. REPORT: the
synthetic support and outage calls and the real pyannote.audio conversation as Whisper writes it, only measured.
"""

from __future__ import annotations

from tests.analysis.summary_claims import FIT, REAL_CALL, REPORT, SUPPORT_CALL, Claims
from tests.analysis.transcripts import BILLING_CALL, DENTAL_CALL
from tests.analysis.voices import OUTAGE_AGENT, OUTAGE_CUSTOMER

OUTAGE_CALL = [(f"speaker-{i % 2 + 1}", (OUTAGE_AGENT if i % 2 == 0 else OUTAGE_CUSTOMER)[i // 2])
               for i in range(2 * len(OUTAGE_AGENT))]

_MORE_FIT = [
    Claims(BILLING_CALL, supported=(
        "Maria asked for the customer's account number.",
        "The customer saw two payments of $49.99 on the card, both on March 3rd.",
        "The agent apologised for the double charge.",
        "The refund will show on the card in about 5 business days.",
        "The agent told the customer to mention the reference if a double charge happens again.",
        "The agent said the billing problem on the account was fixed.",
        "The customer asked how long the refund would take.",
        "The customer asked whether this would happen again next month.",
        "The duplicate payment was refunded to the customer's card.",
        "The customer needed nothing else.",
        "Maria could see both payments on the account.",
        "The customer called Northwind Internet about a double charge.",
        "The agent gave the refund reference R7741.",
    ), unsupported=(
        "Maria refunded both payments of $49.99.",
        "The refund reference is 58213.",
        "The customer's account number is R7741.",
        "The refund takes 3 business days.",
        "The customer was charged three times this month.",
        "The payments were made on March 5th.",
        "The customer asked Maria to fix the billing system.",
        "Maria will call the customer next month to check the bill.",
        "The agent will send a confirmation by text message.",
        "The customer agreed to pay the internet bill again.",
        "The agent said the double charge was the customer's mistake.",
        "Maria charged the customer's card again.",
        "The customer called to cancel the internet.",
        "The customer will be charged twice next month.",
    )),
    Claims(DENTAL_CALL, supported=(
        "The caller's appointment was on Thursday at 10.",
        "The receptionist at Bright Smile Dental answered the call.",
        "Tom Becker cannot come on Thursday because he travels for work.",
        "He chose Monday at 9 in the morning.",
        "The appointment is a cleaning with Dr. Lee.",
        "The receptionist asked whether it was for the cleaning with Dr. Lee.",
        "The new appointment is with the same dentist.",
        "The caller asked to move his appointment.",
        "Tom Becker called Bright Smile Dental.",
    ), unsupported=(
        "Tom Becker moved his appointment to Friday at 2.",
        "The receptionist booked him for Thursday at 9.",
        "Dr. Lee will travel for work on Thursday.",
        "The receptionist offered only Monday morning.",
        "He should arrive twenty minutes early.",
        "The appointment was moved to next Monday at 10.",
        "Tom Becker asked for a cleaning with a different dentist.",
        "He will bring his new insurance card on Thursday.",
        "The receptionist moved the appointment because Dr. Lee is away.",
        "Tom Becker chose Friday afternoon.",
        "The receptionist asked Tom Becker to call back on Monday.",
        "Tom Becker asked to arrive ten minutes early.",
    )),
]

_MORE_REPORT = [
    Claims(SUPPORT_CALL, supported=(
        "Anna answered the call for customer service.",
        "The customer gave the account number 457219.",
        "The agent asked the customer to hold while she looked up the account.",
        "The agent said she would change the address now.",
        "The new address was not yet on file.",
        "The customer needed nothing else after that.",
        "The customer agreed to wait.",
    ), unsupported=(
        "The agent sent the customer a copy of the last invoice.",
        "The customer changed the account number.",
        "The agent said the new address was already on file.",
        "The customer asked Anna to hold.",
        "Anna asked the customer for the new address.",
        "The customer refused to wait.",
        "The agent will call the customer back with the invoice.",
        "The customer gave the account number 457291.",
        "The customer asked to change the name on the account.",
        "Anna said the invoice would be sent today.",
    )),
    Claims(REAL_CALL, supported=(
        "Diane said she is in New Jersey.",
        "Sheila said she is originally from Chicago.",
        "Diane is also originally from Chicago.",
        "One speaker did not know the other was there.",
        "One speaker said there isn't that much difference.",
    ), unsupported=(
        "Sheila and Texas agree to the design.",
        "Diane needs the design from Sheila.",
        "Diane heard a beep from Sheila in Texas.",
        "Sheila is designing a project.",
        "Diane moved from New Jersey to Chicago.",
        "Sheila calls Diane a Yankee.",
        "Both speakers live in New Jersey now.",
        "Diane said there is a big difference between Chicago and New Jersey.",
    )),
    Claims(OUTAGE_CALL, supported=(
        "The customer's internet has been down since yesterday evening.",
        "Tom from customer service took the call.",
        "The agent found an outage in the area and a fault on the customer's line.",
        "A technician will visit to repair the line.",
        "The technician will come tomorrow morning between eight and twelve.",
        "The customer works from home and needs the internet fixed soon.",
        "The customer will get a text message confirming the visit.",
        "The customer gave the account number 38152.",
        "The agent booked a technician's visit.",
        "The customer agreed to a visit tomorrow morning.",
        "The customer asked when the technician could come.",
        "There was no connection at all.",
    ), unsupported=(
        "The technician will come tomorrow afternoon.",
        "The technician came yesterday evening.",
        "The agent said the outage would be fixed by tomorrow morning.",
        "The customer will get an email confirming the visit.",
        "Tom will visit the customer to repair the line.",
        "The customer's line has no fault; only the area has an outage.",
        "The customer asked to work from home.",
        "The agent gave the customer a refund for the outage.",
        "The customer's account number is 38125.",
        "The visit is booked for between eight and ten.",
        "The customer was offered a new router.",
        "The customer cancelled the technician's visit.",
        "The customer said the internet went down this morning.",
        "The technician will call the customer before the visit.",
    )),
]


def _merged(*sets: list[Claims]) -> list[Claims]:
    """One Claims per call, in order of first appearance."""
    by_call: dict[int, Claims] = {}
    for claims in (c for group in sets for c in group):
        have = by_call.get(id(claims.call))
        by_call[id(claims.call)] = claims if have is None else Claims(
            claims.call, have.supported + claims.supported, have.unsupported + claims.unsupported)
    return list(by_call.values())


CLAIM_FIT = _merged(FIT, _MORE_FIT)
CLAIM_REPORT = _merged(REPORT, _MORE_REPORT)
