"""Written call transcripts for the stages that read text (summary): dialogue segments as ASR would give them."""

from __future__ import annotations

from callscope.analysis.result import TranscriptSegment, TranscriptWord
from callscope.resources.kinds import ExtractedField

# About 80 s of speech (183 words at 150 words a minute): a billing call, as Whisper writes it.
BILLING_CALL = [
    ("speaker-1", "Thank you for calling Northwind Internet, this is Maria speaking. How can I help you today?"),
    ("speaker-2", "Hi Maria. I was charged twice for my internet bill this month. "
                  "There are two payments of $49.99 on my card, both on March 3rd."),
    ("speaker-1", "I'm sorry about that. Can I have your account number, please?"),
    ("speaker-2", "Yes, it's 58213."),
    ("speaker-1", "Thank you. I can see the two payments. The second one was a mistake in our billing system. "
                  "I will refund the duplicate payment of $49.99 to your card now."),
    ("speaker-2", "Great. How long will the refund take?"),
    ("speaker-1", "It usually takes 5 business days to show on your card. "
                  "Your refund reference is R7741. I will also send you an email confirmation."),
    ("speaker-2", "Okay. And will this happen again next month?"),
    ("speaker-1", "No, we fixed the problem on your account, so next month you will be charged only once. "
                  "If you see a double charge again, call us and mention the reference."),
    ("speaker-2", "All right, thank you for your help."),
    ("speaker-1", "You're welcome. Is there anything else I can help you with today?"),
    ("speaker-2", "No, that's all. Goodbye."),
    ("speaker-1", "Goodbye, and have a nice day."),
]
# Content a faithful summary of BILLING_CALL mentions (any one word of each group).
BILLING_KEY_WORDS = (("charged", "charge", "payment", "billing", "bill"), ("refund", "refunded"),
                     ("twice", "duplicate", "double"))

# A short call where the caller gives his name: the summary may use it, but no time or day that was not said.
DENTAL_CALL = [
    ("speaker-1", "Good morning, Bright Smile Dental, how can I help?"),
    ("speaker-2", "Hello, my name is Tom Becker. I have an appointment on Thursday at 10 and I need to move it."),
    ("speaker-1", "Of course, Mr. Becker. Is it for the cleaning with Dr. Lee?"),
    ("speaker-2", "Yes. I have to travel for work on Thursday."),
    ("speaker-1", "I can offer Friday at 2 in the afternoon, or next Monday at 9 in the morning."),
    ("speaker-2", "Monday at 9 works."),
    ("speaker-1", "Done, you are booked for Monday at 9 with Dr. Lee. "
                  "Please arrive ten minutes early to update your insurance card."),
    ("speaker-2", "Will do. Thanks."),
]
# The roles the speakers stage finds in both written calls, and two fields a language model answers from them
# (tests/analysis/test_served_model.py, benchmarks/served_model.py).
WRITTEN_ROLES = {"speaker-1": "agent", "speaker-2": "customer"}
WRITTEN_FIELDS = [
    ExtractedField(name="account_number", type="string", description="The customer's account number"),
    ExtractedField(name="new_appointment", type="string", description="The day and time of the new appointment"),
]
DENTAL_KEY_WORDS = (("appointment", "booked", "rescheduled", "reschedule"), ("monday",))

# A warehouse team's weekly call, to be said again and again around another call's turns (the fields' spans:
# tests/analysis/test_fields.py, benchmarks/field_spans.py): numbers, and nothing about a dog, a flight or a policy.
WAREHOUSE = [
    ("speaker-1", "Let's go through the warehouse schedule for next week."),
    ("speaker-2", "The first delivery of pallets arrives on Monday morning at the north gate."),
    ("speaker-1", "How many drivers do we have on the early shift?"),
    ("speaker-2", "We have twelve drivers, and three of them can also run the forklift."),
    ("speaker-1", "Good. The inventory count should be finished before the end of the month."),
    ("speaker-2", "I will ask the team to count the shelves in aisle seven first."),
    ("speaker-1", "The new scanners still lose their connection in the cold storage area."),
    ("speaker-2", "The supplier promised a firmware update for the scanners this week."),
    ("speaker-1", "Let's also plan the safety training for the new staff."),
    ("speaker-2", "The safety training is on Thursday afternoon and takes two hours."),
]


def segments(turns: list[tuple[str, str]], words_per_second: float = 2.5) -> list[TranscriptSegment]:
    """Timed dialogue segments of (speaker, text) turns; the timing follows the number of words."""
    out, t = [], 0
    for index, (speaker, text) in enumerate(turns):
        duration = int(len(text.split()) / words_per_second * 1000)
        channel = int(speaker.rsplit("-", 1)[1]) - 1
        out.append(TranscriptSegment(id=index, channel=channel, speaker=speaker, start_ms=t, end_ms=t + duration,
                                     text=text))
        t += duration + 400
    return out


def word(start_ms: int, end_ms: int, text: str, probability: float = 0.9) -> TranscriptWord:
    return TranscriptWord(start_ms=start_ms, end_ms=end_ms, text=text, probability=probability)


def segment(id: int, channel: int, speaker: str, start_ms: int, end_ms: int, text: str,
            words: list[TranscriptWord] | None = None) -> TranscriptSegment:
    return TranscriptSegment(id=id, channel=channel, speaker=speaker, start_ms=start_ms, end_ms=end_ms, text=text,
                             words=words or [])


WORD_MS = 400  # one word every so many ms in `call`


def call(*turns: tuple[str, str], gap_ms: int = 600) -> list[TranscriptSegment]:
    """Timed segments of (speaker, text) turns, speakers named "speaker-N" (on channel N - 1), one word every
    WORD_MS; words keep their punctuation and leading space, as Whisper's."""
    out, t = [], 0
    for index, (speaker, text) in enumerate(turns):
        words = [word(t + WORD_MS * i, t + WORD_MS * i + WORD_MS - 50, " " + w) for i, w in enumerate(text.split())]
        out.append(segment(index, int(speaker[-1]) - 1, speaker, t, words[-1].end_ms, text, words))
        t = words[-1].end_ms + gap_ms
    return out


def long_dialogue(minutes: float) -> list[TranscriptSegment]:
    """`minutes` of two speakers taking turns, words timed, built in memory (an hour: 1,200 segments, 9,600 words):
    every fifth turn starts 0.5 s before the other's ends (an interruption), every third after a 1.5 s pause."""
    out, t, index = [], 0, 0
    while t < minutes * 60_000:
        speaker = index % 2
        start = t - 500 if index % 5 == 4 else t + (1500 if index % 3 == 0 else 200)
        words = [word(start + 300 * i, start + 300 * i + 250, "word") for i in range(8)]
        out.append(segment(index, 0, f"speaker-{speaker + 1}", start, start + 2400, " ".join(["word"] * 8), words))
        t, index = start + 2400, index + 1
    return out


