"""Accuracy of the analysis pipeline on synthetic calls it can regenerate: WER, diarization error, pauses, goals,
extracted fields.

What it measures
----------------
``--calls`` scripted support calls (seeded: the same seed makes the same calls) between two espeak-ng voices of
tests/analysis/voices.py. Each call has known words, speakers and silences and known goal outcomes, drawn per call:
whether the agent greets properly ("thank you for calling ..., my name is ..."), whether they announce the hold
before a 4-6 s silence (a compliant long pause, or not), whether they ask "is there anything else ...", plus a
phone number and an e-mail address the customer spells out in words. Turn gaps are 0.3-0.8 s (under the 1 s minimum
pause) except one 1.5-2.5 s gap per call (a short pause). Every call is rendered three ways:

* ``stereo``: agent left, customer right, 16 kHz WAV;
* ``mono``: both voices on one channel, 16 kHz WAV (diarization by speaker embeddings);
* ``phone``: stereo, 8 kHz mu-law WAV (telephone quality).

Printed per rendering:

* WER: word errors of the whole transcript against the script, over the script's words (all calls pooled; digits
  and e-mail notation read out as words on both sides first, see ``normalised``);
* DER: pyannote.metrics' DiarizationErrorRate (missed + false alarm + confusion, 0.25 s collar each side) of the
  dialogue segments against the scripted turns, pooled;
* pauses: precision and recall of detected pauses (at least 1 s) against the inserted ones (matched when they
  overlap by half of the shorter), and how many matched long pauses got the right ``compliant``;
* goals: share of goal verdicts (``met``) equal to the script's outcome (3 goals per call);
* fields: share of the phone number (E.164) and e-mail address extracted exactly.

The settings come from the environment like the server's (CALLSCOPE_WHISPER_MODEL, CALLSCOPE_LLM_*...), so the
figures are for the configured models; ``--no-llm`` leaves the language model out (verdicts and typed fields do not
need it; it only phrases explanations and writes the summary).

How to run (repository root; needs espeak-ng)::

    .venv/bin/python -P benchmarks/accuracy.py                  # 4 calls x 3 renderings
    .venv/bin/python -P benchmarks/accuracy.py --calls 10 --seed 7 --no-llm
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import phonenumbers

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.analysis.*

from callscope.analysis.result import AnalysisResult
from callscope.analysis.runtime.pipeline import MODELS, Pipeline, load_model
from callscope.config import Settings
from callscope.resources.kinds import ExtractedField, Goal, ProjectSpec
from tests.analysis import speech
from tests.analysis.voices import VOICE_PAIRS

LONG_PAUSE_S = 3
PROJECT = ProjectSpec(
    name="Accuracy", language="en", long_pause_threshold_seconds=LONG_PAUSE_S,
    goals=[
        Goal(id=1, name="Greeting", description="The agent thanks the caller for calling and gives their name.",
             phrases=["thank you for calling", "thanks for calling"], speaker="agent"),
        Goal(id=2, name="Hold etiquette", description="The agent asks the customer to hold before a silence.",
             phrases=["please hold", "bear with me"], speaker="agent"),
        Goal(id=3, name="Closing", description="The agent asks whether there is anything else they can help with.",
             phrases=["anything else"], speaker="agent"),
    ],
    fields=[ExtractedField(name="phone", description="The customer's phone number.", type="phone"),
            ExtractedField(name="email", description="The customer's e-mail address.", type="email")],
)
DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
NAMES = ["john", "maria", "peter", "anna", "lucas", "sofia", "david", "emma"]
SURNAMES = ["smith", "miller", "garcia", "brown", "wilson", "taylor", "moore", "clark"]


@dataclass
class Script:
    turns: list[tuple[int, str, float]]  # (speaker 0 agent / 1 customer, sentence, silence after in s)
    goals: dict[int, bool]
    phone: str  # E.164
    email: str
    compliant_hold: bool


@dataclass
class Rendered:
    path: Path
    turns: list[tuple[int, int, int]]  # (start_ms, end_ms, speaker)
    pauses: list[tuple[int, int]]  # inserted silences >= 1 s
    text: str


def spoken_digits(digits: str) -> str:
    return ", ".join(" ".join(DIGITS[int(d)] for d in group) for group in (digits[:3], digits[3:6], digits[6:]))


def script(rng: random.Random) -> Script:
    while True:
        national = (f"{rng.choice(['415', '212', '617'])}{rng.randint(2, 9)}"
                    f"{rng.randint(10, 99)}{rng.randint(1000, 9999)}")
        if phonenumbers.is_valid_number(phonenumbers.parse(national, "US")):
            break
    first, last = rng.choice(NAMES), rng.choice(SURNAMES)
    greet, hold, close = (rng.random() < 0.5 for _ in range(3))
    gap = lambda: rng.uniform(0.3, 0.8)  # noqa: E731 - a short local generator
    turns = [
        (0, "Thank you for calling Acme support, my name is Anna, how can I help you today?" if greet
         else "Hello, this is Acme. What is it?", gap()),
        (1, "Hello, I would like to change the address on my account.", gap()),
        (0, "Of course. Could you tell me your phone number please?", gap()),
        (1, f"Yes, it is {spoken_digits(national)}.", rng.uniform(1.5, 2.5)),
        (0, "Thank you. And what is your email address?", gap()),
        (1, f"It is {first} dot {last} at example dot com.", gap()),
        (0, "Please hold while I look that up for you." if hold else "Okay, thank you for that information.",
         rng.uniform(4.0, 6.0)),
        (0, "Thank you. I can see your account and I will change the address now.", gap()),
    ]
    if close:
        turns.append((0, "Is there anything else I can help you with today?", gap()))
        turns.append((1, "No, that is all, thank you very much.", gap()))
    else:
        turns.append((1, "Great, thank you very much.", gap()))
    turns.append((0, "Goodbye.", 0.5))
    return Script(turns=turns, goals={1: greet, 2: hold, 3: close}, phone=f"+1{national}",
                  email=f"{first}.{last}@example.com", compliant_hold=hold)


def render(s: Script, voices: tuple[str, str], folder: Path, name: str) -> dict[str, Rendered]:
    left, right, mono, turns, pauses, pos = ([speech.silence(0.4)], [speech.silence(0.4)], [speech.silence(0.4)],
                                             [], [], int(0.4 * speech.RATE))
    for speaker, line, gap in s.turns:
        spoken = speech.speak(line, voices[speaker])
        turns.append((pos * 1000 // speech.RATE, (pos + len(spoken)) * 1000 // speech.RATE, speaker))
        pos += len(spoken)
        silence = speech.silence(gap)
        if gap >= 1.0:
            pauses.append((pos * 1000 // speech.RATE, (pos + len(silence)) * 1000 // speech.RATE))
        pos += len(silence)
        quiet = np.zeros(len(spoken), dtype=np.float32)
        left += [spoken if speaker == 0 else quiet, silence]
        right += [spoken if speaker == 1 else quiet, silence]
        mono += [spoken, silence]
    text = " ".join(line for _, line, _ in s.turns)
    stereo = [np.concatenate(left), np.concatenate(right)]
    return {
        "stereo": Rendered(speech.write(folder / f"{name}-stereo.wav", stereo), turns, pauses, text),
        "mono": Rendered(speech.write(folder / f"{name}-mono.wav", [np.concatenate(mono)]), turns, pauses, text),
        "phone": Rendered(speech.write(folder / f"{name}-phone.wav", stereo, rate=8000, codec="pcm_mulaw"), turns,
                          pauses, text),
    }


@dataclass
class Tally:
    word_errors: float = 0.0
    words: int = 0
    der: object = None
    detected: int = 0
    true_detected: int = 0
    reference_pauses: int = 0
    found_pauses: int = 0
    compliance_right: int = 0
    compliance_total: int = 0
    goals_right: int = 0
    goals_total: int = 0
    fields_right: int = 0
    fields_total: int = 0
    seconds: float = 0.0
    audio_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def normalised(text: str) -> str:
    """Text as words for WER: digits spelt out one by one and e-mail notation read aloud ("415-342" -> "four one
    five three four two", "a.b@c.com" -> "a dot b at c dot com"), so a number or address Whisper writes in digits
    or symbols is not counted as several wrong words."""
    text = re.sub(r"(?<=\w)\.(?=\w)", " dot ", text.replace("@", " at "))
    return re.sub(r"\d", lambda m: f" {DIGITS[int(m.group())]} ", text)


def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    shared = min(a[1], b[1]) - max(a[0], b[0])
    return shared >= 0.5 * min(a[1] - a[0], b[1] - b[0])


def score(tally: Tally, s: Script, rendered: Rendered, result: AnalysisResult) -> None:
    from pyannote.core import Annotation, Segment

    hypothesis_text = " ".join(seg.text for seg in sorted(result.segments, key=lambda x: x.start_ms))
    words = len(rendered.text.split())
    tally.word_errors += speech.wer(normalised(rendered.text), normalised(hypothesis_text)) * words
    tally.words += words

    reference, hypothesis = Annotation(), Annotation()
    for start, end, speaker in rendered.turns:
        reference[Segment(start / 1000, end / 1000)] = f"s{speaker}"
    for seg in result.segments:
        if seg.end_ms > seg.start_ms:
            hypothesis[Segment(seg.start_ms / 1000, seg.end_ms / 1000), seg.id] = seg.speaker
    tally.der(reference, hypothesis)

    detected = [(p.start_ms, p.end_ms) for p in result.pauses]
    tally.detected += len(detected)
    tally.true_detected += sum(1 for d in detected if any(overlaps(d, r) for r in rendered.pauses))
    tally.reference_pauses += len(rendered.pauses)
    tally.found_pauses += sum(1 for r in rendered.pauses if any(overlaps(d, r) for d in detected))
    hold = max(rendered.pauses, key=lambda p: p[1] - p[0])
    for pause in result.pauses:
        if pause.long and overlaps((pause.start_ms, pause.end_ms), hold):
            tally.compliance_total += 1
            tally.compliance_right += pause.compliant == s.compliant_hold

    verdicts = {g.goal_id: g.met for g in result.goals}
    for goal_id, met in s.goals.items():
        tally.goals_total += 1
        tally.goals_right += verdicts.get(goal_id) == met
    values = {f.name: f.value for f in result.extracted_data}
    tally.fields_total += 2
    tally.fields_right += (values.get("phone") == s.phone) + (values.get("email") == s.email)
    if values.get("phone") != s.phone or values.get("email") != s.email:
        tally.notes.append(f"fields: got {values.get('phone')!r}, {values.get('email')!r}; "
                           f"expected {s.phone!r}, {s.email!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=4, help="calls per rendering")
    parser.add_argument("--seed", type=int, default=1, help="the same seed makes the same calls")
    parser.add_argument("--no-llm", action="store_true", help="leave the language model out")
    parser.add_argument("--verbose", action="store_true", help="print what went wrong per call")
    args = parser.parse_args()
    if speech.ESPEAK is None:
        sys.exit(speech.SKIP_REASON)
    from pyannote.metrics.diarization import DiarizationErrorRate

    settings = Settings(llm_enabled=False) if args.no_llm else Settings()
    pipeline = Pipeline(settings, **{name: load_model(name, settings) for name in MODELS})
    print("models: " + ", ".join(f"{name}={getattr(getattr(m, 'info', None), 'name', 'none')}"
                                 for name, m in pipeline._models.items()))
    rng = random.Random(args.seed)
    tallies = {kind: Tally(der=DiarizationErrorRate(collar=0.5)) for kind in ("stereo", "mono", "phone")}
    with tempfile.TemporaryDirectory(prefix="callscope-accuracy-") as tmp:
        for n in range(args.calls):
            s = script(rng)
            voices = VOICE_PAIRS[n % len(VOICE_PAIRS)]
            for kind, rendered in render(s, voices, Path(tmp), f"call{n}").items():
                start = time.perf_counter()
                result = pipeline.run(rendered.path, PROJECT)
                tally = tallies[kind]
                tally.seconds += time.perf_counter() - start
                tally.audio_seconds += result.duration_ms / 1000
                score(tally, s, rendered, result)
            print(f"call {n + 1}/{args.calls} done ({voices[0]} / {voices[1]}; goals {s.goals})", flush=True)

    print(f"\n{'rendering':<9} {'WER':>6} {'DER':>6} {'pause P':>8} {'pause R':>8} {'compliant':>10} "
          f"{'goals':>7} {'fields':>7} {'RTF':>6}")
    for kind, t in tallies.items():
        print(f"{kind:<9} {t.word_errors / t.words:6.1%} {abs(t.der):6.1%} "
              f"{t.true_detected / max(t.detected, 1):8.2f} {t.found_pauses / max(t.reference_pauses, 1):8.2f} "
              f"{t.compliance_right:>4}/{t.compliance_total:<5} {t.goals_right / t.goals_total:7.1%} "
              f"{t.fields_right / t.fields_total:7.1%} {t.seconds / t.audio_seconds:6.3f}")
        if args.verbose:
            for note in t.notes:
                print(f"  {note}")


if __name__ == "__main__":
    main()
