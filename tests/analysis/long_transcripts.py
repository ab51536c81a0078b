"""Written long calls whose quarters each have a subject of their own, for the summary of a long call
(tests/analysis/test_summary.py, benchmarks/long_summaries.py): does it read the whole call, or only its opening?

Two colleagues of a small bakery, Laura (speaker-1) and Daniel (speaker-2), on a long weekly call: they greet, and
each quarter of the call is one subject, its turns said again until the quarter is full (an hour: each subject's
exchange about 15 times over), then they say goodbye. Recording "A" and recording "B" share only their first
quarter (the shop's move), so a summary read from the opening alone is the same for both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from callscope.analysis.result import TranscriptSegment
from tests.analysis.transcripts import segments

GREETING = [
    ("speaker-1", "Hi Daniel, it's Laura. Do you have an hour for our weekly call?"),
    ("speaker-2", "Hi Laura, yes, I have blocked the whole morning for it."),
]
GOODBYE = [
    ("speaker-1", "I think that was everything for this week. Talk to you next Monday."),
    ("speaker-2", "Talk to you then, bye Laura."),
]
SUBJECTS = {
    # the first quarter of both recordings
    "move": [
        ("speaker-1", "First the move. We signed the lease for the new shop on Harbor Street yesterday."),
        ("speaker-2", "Great news. When do we get the keys for the Harbor Street shop?"),
        ("speaker-1", "The landlord hands over the keys on the first of June, and the ovens are moved on June 3."),
        ("speaker-2", "The movers need the floor plan of the new shop before they can quote for the ovens."),
        ("speaker-1", "I will send the movers the floor plan tonight. The old shop closes for two days during "
                      "the move."),
        ("speaker-2", "We should put a sign in the old shop window about the move to Harbor Street."),
    ],
    # recording A
    "website": [
        ("speaker-2", "Next, the website. The designer sent her quote for the new website: 4,000 dollars."),
        ("speaker-1", "That is more than we planned. Does the website quote include online ordering?"),
        ("speaker-2", "Yes, customers could order cakes on the website and pay online before they collect them."),
        ("speaker-1", "Then the website pays for itself. We need new photos of the cakes for it."),
        ("speaker-2", "My cousin is a photographer; he can take the cake photos for the website next week."),
        ("speaker-1", "Good, let's accept the designer's quote and launch the website in September."),
    ],
    "accountant": [
        ("speaker-1", "Now the accountant. We had twelve applications for the accountant job."),
        ("speaker-2", "How many accountant candidates do you want to interview?"),
        ("speaker-1", "Three candidates have experience with bakeries and small shops, so those three."),
        ("speaker-2", "Can we interview the accountant candidates on Wednesday afternoon?"),
        ("speaker-1", "Wednesday works. I will ask each candidate to bring the payroll of a small business."),
        ("speaker-2", "The new accountant should start before the tax return is due in October."),
    ],
    "trip": [
        ("speaker-2", "Last, the summer trip. The staff voted for a day at the lake in August."),
        ("speaker-1", "A trip to the lake sounds lovely. How do we get all the staff to the lake?"),
        ("speaker-2", "We can rent a minibus for the trip; it takes fourteen people."),
        ("speaker-1", "Book the minibus, and we close the shop on the day of the lake trip."),
        ("speaker-2", "Some of the staff want to go swimming and have a barbecue by the lake."),
        ("speaker-1", "Then we bring the barbecue from the old shop's garden on the trip."),
    ],
    # recording B
    "van": [
        ("speaker-2", "Next, the delivery van. The van broke down on Tuesday morning on the way to the market."),
        ("speaker-1", "Oh no. What does the garage say is wrong with the van?"),
        ("speaker-2", "The gearbox of the van is broken; the garage wants 2,500 dollars to repair it."),
        ("speaker-1", "That is a lot for an old van. How long does the gearbox repair take?"),
        ("speaker-2", "Two weeks, so I rented a van for the deliveries until the garage is done."),
        ("speaker-1", "Keep the rented van, and ask a second garage for a price for the gearbox."),
    ],
    "complaint": [
        ("speaker-1", "Now the complaint. A bride wrote that her wedding cake arrived an hour late on Saturday."),
        ("speaker-2", "The wedding cake was late because the van had broken down. I am sorry about the complaint."),
        ("speaker-1", "She asks for a refund of the delivery fee and an apology for the late wedding cake."),
        ("speaker-2", "Let's refund the delivery fee and send her a letter of apology with a voucher."),
        ("speaker-1", "I will write the apology letter today and put a voucher for a birthday cake in it."),
        ("speaker-2", "And from now on two people check every wedding cake delivery the day before."),
    ],
    "sourdough": [
        ("speaker-2", "Last, the autumn menu. I have a new sourdough recipe with rye flour and walnuts."),
        ("speaker-1", "A walnut sourdough would sell well in autumn. Where do we buy the rye flour?"),
        ("speaker-2", "The mill in Riverton delivers rye flour every Thursday for the sourdough."),
        ("speaker-1", "Can we have a tasting of the walnut sourdough with the staff on Friday?"),
        ("speaker-2", "Yes, I will bake ten loaves of the sourdough on Friday morning for the tasting."),
        ("speaker-1", "If the staff like it, the walnut sourdough goes on the autumn menu in October."),
    ],
}
RECORDINGS = {"A": ("move", "website", "accountant", "trip"), "B": ("move", "van", "complaint", "sourdough")}
# Words that name each subject: a summary names the subject when it has one of them (stems aside, whole words).
SUBJECT_WORDS = {
    "move": ("move", "moving", "moved", "harbor", "lease", "keys", "movers"),
    "website": ("website", "designer", "online", "photos", "photographer"),
    "accountant": ("accountant", "candidates", "candidate", "applications", "interview", "interviews"),
    "trip": ("trip", "lake", "minibus", "barbecue", "swimming"),
    "van": ("van", "gearbox", "garage", "repair", "repairs"),
    "complaint": ("complaint", "wedding", "bride", "apology", "refund", "voucher"),
    "sourdough": ("sourdough", "rye", "walnut", "walnuts", "flour", "tasting", "loaves", "recipe"),
}
ROLES = {"speaker-1": "unknown", "speaker-2": "unknown"}  # peers: neither is an agent
WORDS_PER_SECOND = 2.5  # transcripts.segments' pace: 150 words a minute


def long_call(recording: str, minutes: float) -> list[TranscriptSegment]:
    """Recording "A" or "B" of `minutes`: the greeting, each of its four subjects said again and again through its
    quarter, the goodbye; timed as transcripts.segments times a dialogue."""
    quarter_s = minutes * 60 / 4
    turns: list[tuple[str, str]] = list(GREETING)
    for subject in RECORDINGS[recording]:
        exchange = SUBJECTS[subject]
        seconds = sum(len(text.split()) / WORDS_PER_SECOND + 0.4 for _, text in exchange)
        turns += exchange * max(1, round(quarter_s / seconds))
    return segments([*turns, *GOODBYE], WORDS_PER_SECOND)


def subjects_named(summary: str, subjects: Sequence[str]) -> list[str]:
    """The subjects among `subjects` that `summary` names (one of its SUBJECT_WORDS, as a whole word)."""
    words = set(re.findall(r"[a-z]+", summary.lower()))
    return [s for s in subjects if words & set(SUBJECT_WORDS[s])]
