"""Reference key points of the benchmark calls, written by hand from each call's script or reference transcript
(why the call happened, what was done or agreed, how it ended, what follows; for a conversation between peers or a
recording of prompts, its subjects), and hand-labelled (summary sentence, key point, stated) pairs for the
coverage rule of analysis/coverage.py.

Split: "fit" calls are the ones the coverage threshold and the summary's prompt were tuned on; "report" calls are
only measured (benchmarks/summary_coverage.py, tests/analysis/test_coverage.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from callscope.analysis.coverage import KeyPoint


@dataclass(frozen=True)
class CallPoints:
    split: str  # "fit" or "report"
    source: str  # where the key points were written from
    points: tuple[KeyPoint, ...]


KEY_POINTS = {
    # tests/analysis/voices.py AGENT/CUSTOMER, the synthetic call of benchmarks/speed.py and faithfulness.py
    "support": CallPoints("report", "the script of tests/analysis/voices.py AGENT, CUSTOMER", (
        KeyPoint("The customer called to change the address on the account, and the agent changed it.",
                 (("address",),)),
        KeyPoint("The agent asked for the account number and the customer gave it.", (("account",), ("number",))),
        KeyPoint("The customer asked for a copy of the last invoice.", (("invoice",),)),
    )),
    "outage": CallPoints("report", "the script of tests/analysis/voices.py OUTAGE_AGENT, OUTAGE_CUSTOMER", (
        KeyPoint("The customer's internet has been down since yesterday evening.",
                 (("internet", "connection"),)),
        KeyPoint("The agent found an outage in the area and a fault on the line.", (("outage", "fault"),)),
        KeyPoint("A technician will visit tomorrow morning to repair the line.",
                 (("technician", "visit"), ("tomorrow", "morning"))),
        KeyPoint("A text message will confirm the visit.", (("text", "message"),)),
    )),
    "billing": CallPoints("fit", "tests/analysis/transcripts.py BILLING_CALL", (
        KeyPoint("The customer was charged twice for the internet bill.",
                 (("charged", "twice", "duplicate", "double", "payments"),)),
        KeyPoint("The agent refunded the duplicate payment.", (("refund",),)),
        KeyPoint("The refund takes 5 business days.", (("5", "five"), ("days",))),
        KeyPoint("The agent fixed the problem, so next month the customer is charged only once.",
                 (("fixed", "once"),)),
    )),
    "dental": CallPoints("fit", "tests/analysis/transcripts.py DENTAL_CALL", (
        KeyPoint("Tom Becker called to move his appointment on Thursday.",
                 (("appointment", "move", "reschedule", "cleaning"),)),
        KeyPoint("He has to travel for work on Thursday.", (("travel",),)),
        KeyPoint("The cleaning with Dr. Lee was moved to Monday at 9.", (("monday",),)),
        KeyPoint("He should arrive ten minutes early to update his insurance card.", (("early", "insurance"),)),
    )),
    "en-call": CallPoints("report", "pyannote.audio's sample.wav, listened to (manifest en-call-mono, en-call-phone)", (
        KeyPoint("Diane lives in New Jersey.", (("jersey",),)),
        KeyPoint("Sheila lives in Texas.", (("texas",),)),
        KeyPoint("Both are originally from Chicago.", (("chicago",),)),
        KeyPoint("People in Texas call Sheila a Yankee.", (("yankee",),)),
    )),
    "en-read-a": CallPoints("report", "the manifest's transcript of en-read-a-mono (Asterisk prompts)", (
        KeyPoint("The person called is not at their desk and will be located.", (("desk", "locate"),)),
        KeyPoint("The password was incorrect or did not match.", (("password",),)),
        KeyPoint("The party called does not accept unidentified calls.", (("unidentified",),)),
        KeyPoint("All representatives are busy; the caller should stay on the line.",
                 (("representative", "busy", "line"),)),
    )),
    "en-read-b": CallPoints("fit", "the manifest's transcript of en-read-b-mono (Asterisk prompts)", (
        KeyPoint("The leader has left the conference and you are the only person in it.", (("conference",),)),
        KeyPoint("Nobody is available to take the call.", (("available", "nobody"),)),
        KeyPoint("There is no call parked on that extension.", (("parked", "extension"),)),
        KeyPoint("Press 8 to forward the message to another user.", (("forward",),)),
    )),
}


def point(call: str, index: int) -> KeyPoint:
    return KEY_POINTS[call].points[index]


# (summary sentence, call, key point index, stated): sentences the models wrote and sentences written to sit close
# to a point without stating it. FIT pairs chose COVERAGE_THRESHOLD; REPORT pairs only measure it.
FIT_PAIRS = [
    ("The customer was charged twice for the internet bill this month.", "billing", 0, True),
    ("There were two payments of $49.99 on the customer's card.", "billing", 0, True),
    ("The customer asked about the internet bill.", "billing", 0, False),
    ("The agent refunded the duplicate payment of $49.99 to the card.", "billing", 1, True),
    ("The customer asked how long the refund will take.", "billing", 1, False),
    ("The refund takes 5 business days to show on the card.", "billing", 2, True),
    ("The refund reference is R7741.", "billing", 2, False),
    ("The problem was fixed, so next month the customer will be charged only once.", "billing", 3, True),
    ("The customer asked whether this will happen again next month.", "billing", 3, False),
    ("Tom Becker called to reschedule his Thursday appointment.", "dental", 0, True),
    ("The customer thanked the receptionist and said goodbye.", "dental", 0, False),
    ("He cannot come on Thursday because he travels for work.", "dental", 1, True),
    ("The appointment was moved to Monday at 9 with Dr. Lee.", "dental", 2, True),
    ("The receptionist offered Friday afternoon or Monday morning.", "dental", 2, False),
    ("He should come ten minutes early to update his insurance card.", "dental", 3, True),
    ("The recording says the leader has left the conference.", "en-read-b", 0, True),
    ("Press 3 for advanced options in the conference.", "en-read-b", 0, False),
    ("The prompts say nobody is available to take the call.", "en-read-b", 1, True),
    ("No call is parked on that extension.", "en-read-b", 2, True),
    ("Press 8 to forward the message to another user.", "en-read-b", 3, True),
    ("The speaker does not know who sent the message.", "en-read-b", 3, False),
]
REPORT_PAIRS = [
    ("The customer called to change the address on their account.", "support", 0, True),
    ("The agent updated the address, which was not on file yet.", "support", 0, True),
    ("The customer thanked the agent and said goodbye.", "support", 0, False),
    ("The agent, Anna, asked for the account number.", "support", 1, True),
    ("The customer gave account number 457219.", "support", 1, True),
    ("The customer asked for a copy of the last invoice.", "support", 2, True),
    ("The customer's internet has been down since yesterday evening.", "outage", 0, True),
    ("The customer thanked the agent and said goodbye.", "outage", 0, False),
    ("The customer needs the internet for working from home.", "outage", 0, False),
    ("The agent saw an outage in the area and a fault on the line.", "outage", 1, True),
    ("A technician will come tomorrow morning between eight and twelve.", "outage", 2, True),
    ("The customer asked when the technician can come.", "outage", 2, False),
    ("The customer will get a text message confirming the visit.", "outage", 3, True),
    ("Diane is in New Jersey and Sheila in Texas.", "en-call", 0, True),
    ("Diane is in New Jersey and Sheila in Texas.", "en-call", 1, True),
    ("The agent, Diane, informed the caller that she had heard of deep and that the caller was from Texas.",
     "en-call", 1, True),
    ("Both speakers are originally from Chicago.", "en-call", 2, True),
    ("They talk about where they live.", "en-call", 2, False),
    ("Sheila says people call her a Yankee down there.", "en-call", 3, True),
    ("The recording says the password is incorrect.", "en-read-a", 1, True),
    ("The prompt asks to enter the password followed by the pound key.", "en-read-a", 1, False),
    ("The party does not accept unidentified calls.", "en-read-a", 2, True),
]
