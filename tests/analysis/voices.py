"""Synthetic mono calls of several espeak-ng voices with known turns, and the diarization error rate.

Different voices are espeak-ng *variants* (`+m3`, `+f4`, `klatt`...: another pitch, formants, glottal source).
Accents of the same variant (en-us vs en-gb vs en-029, all the default `m1` timbre) are one voice to a speaker
encoder: they are not used as "different" voices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from tests.analysis.speech import RATE, silence, speak

# (agent voice, customer voice) pairs of clearly different variants.
VOICE_PAIRS = [
    ("en-us", "en+f4"),
    ("en-us+m3", "en-us+f3"),
    ("en+m7", "en-gb-x-rp+f2"),
    ("en-us+klatt", "en+m2"),
]
# Pairs of neighbouring variants whose 10 s voiceprints are as similar to each other (cosine ~0.93) as two
# recordings of one variant are: the speaker encoder cannot tell them apart (benchmarks/speakers.py).
SIMILAR_PAIRS = [
    ("en-us", "en+m5"),
    ("en+f1", "en-us-nyc+f5"),
]

AGENT = [
    "Thank you for calling customer service, my name is Anna, how can I help you today?",
    "Of course. Could you give me your account number please?",
    "Thank you. Please hold while I look that up for you.",
    "I can see the new address is not on file yet. I will change it now.",
    "Is there anything else I can help you with?",
    "Thank you for calling, have a nice day.",
]
CUSTOMER = [
    "Hello, I would like to change the address on my account.",
    "Yes, it is four five seven two one nine.",
    "Sure, no problem, I will wait.",
    "Great, and could you send me a copy of the last invoice?",
    "No, that is all, thank you very much.",
    "Goodbye.",
]
# A support call about an internet outage that ends with a technician's visit booked (the summary's benchmark,
# benchmarks/summary_coverage.py, and its key points, tests/analysis/key_points.py).
OUTAGE_AGENT = [
    "Thank you for calling customer service, my name is Tom, how can I help you?",
    "I am sorry to hear that. Could you give me your account number please?",
    "Thank you. I can see an outage in your area, and a test shows a fault on your line too.",
    "I will book a technician to visit you and repair the line.",
    "The technician can come tomorrow morning between eight and twelve.",
    "Great, the visit is booked. You will get a text message to confirm it.",
]
OUTAGE_CUSTOMER = [
    "Hi, my internet has been down since yesterday evening, there is no connection at all.",
    "Yes, it is three eight one five two.",
    "I work from home, so I really need it fixed soon.",
    "When can the technician come?",
    "Tomorrow morning is fine.",
    "Thank you for your help, goodbye.",
]


@dataclass
class MonoCall:
    samples: np.ndarray  # 16 kHz float32
    turns: list[tuple[int, int, int]]  # (start_ms, end_ms, speaker index) of each sentence


def conversation(voices: tuple[str, ...], lines: list[tuple[int, str]], gaps: list[float] | float = 0.6,
                 lead: float = 0.4) -> MonoCall:
    """One channel: `lines` of (speaker index, sentence) spoken in `voices[index]`, `gaps` seconds apart."""
    gap_list = list(gaps) if isinstance(gaps, list) else [gaps] * len(lines)
    pieces, turns, pos = [silence(lead)], [], int(lead * RATE)
    for (speaker, text), gap in zip(lines, gap_list, strict=True):
        chunk = speak(text, voices[speaker])
        turns.append((pos * 1000 // RATE, (pos + len(chunk)) * 1000 // RATE, speaker))
        pieces += [chunk, silence(gap)]
        pos += len(chunk) + int(gap * RATE)
    return MonoCall(samples=np.concatenate(pieces).astype(np.float32), turns=turns)


def dialogue_lines(turns: int = 12) -> list[tuple[int, str]]:
    """Agent and customer alternating, the agent first."""
    return [(i % 2, (AGENT if i % 2 == 0 else CUSTOMER)[(i // 2) % len(AGENT)]) for i in range(turns)]


def der(reference: list[tuple[int, int, int]], hypothesis: list[tuple[int, int, object]], collar_ms: int = 250,
        step_ms: int = 10) -> float:
    """Diarization error rate: (missed + false alarm + confusion) / reference speech, on a `step_ms` grid.

    Frames within `collar_ms` of a reference turn boundary are not scored (the NIST convention); hypothesis
    labels are mapped to reference speakers by the best one-to-one assignment.
    """
    end = max([e for _, e, _ in reference] + [e for _, e, _ in hypothesis] + [0])
    n = end // step_ms + 1
    ref, hyp = np.full(n, -1), np.full(n, -1)
    scored = np.ones(n, dtype=bool)
    for s, e, spk in reference:
        ref[s // step_ms : e // step_ms] = spk
        for edge in (s, e):
            scored[max(0, (edge - collar_ms) // step_ms) : (edge + collar_ms) // step_ms] = False
    names = sorted({label for _, _, label in hypothesis}, key=str)
    for s, e, label in hypothesis:
        hyp[s // step_ms : e // step_ms] = names.index(label)
    ref, hyp = ref[scored], hyp[scored]
    total = int((ref >= 0).sum())
    speakers = max(int(ref.max()) + 1, 1)
    # overlap[i, j]: frames where hypothesis label i and reference speaker j both speak; the mapping keeps most.
    overlap = np.zeros((max(len(names), 1), speakers))
    both = (ref >= 0) & (hyp >= 0)
    np.add.at(overlap, (hyp[both], ref[both]), 1)
    rows, cols = linear_sum_assignment(overlap, maximize=True)
    matched = int(overlap[rows, cols].sum())
    errors = total - matched + int(((ref < 0) & (hyp >= 0)).sum())  # missed + confused + false alarm
    return errors / max(total, 1)
