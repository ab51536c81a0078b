"""Measure mono diarization (DER, speaker count) and voiceprint similarity on synthetic espeak-ng voices.

What it measures
----------------
* Diarization: for each voice pair of tests/analysis/voices.py and each of ``--seeds`` seeds, a mono call of 12
  alternating agent/customer turns with random pauses (0.15-1.0 s; pauses under the VAD's 300 ms join two turns
  into one speech region) and a one-voice call of 8 sentences. Silero VAD finds the speech,
  `diarize_by_voice.label_speech`
  labels it, and the DER (missed + false alarm + confusion over reference speech, 250 ms collar) is computed on
  the VAD regions labelled by their nearest window: diarization without ASR. Printed per call, then the mean and
  the worst, for each ``--thresholds`` value (the cosine-distance threshold of the clustering).
* Voiceprints: each voice of VOICES is enrolled from >= 10 s of speech (3 sentences) and compared, as
  identification does, with 5-7 s samples of other sentences of every voice. Prints the same-voice and
  different-voice cosine similarity distributions and the thresholds that separate them.

How to run (repository root; needs espeak-ng)::

    .venv/bin/python -P benchmarks/speakers.py                   # ~1 minute on 2 CPU cores
    .venv/bin/python -P benchmarks/speakers.py --seeds 3 --thresholds 0.15 0.2 0.25
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.analysis.*

from callscope.analysis.models.speaker_encoder import load_speaker_encoder
from callscope.analysis.stages import diarize_by_voice, speakers, vad
from callscope.analysis.types import Audio, SpeechRegion
from callscope.config import Settings
from tests.analysis.speech import speak
from tests.analysis.voices import AGENT, CUSTOMER, SIMILAR_PAIRS, VOICE_PAIRS, conversation, der, dialogue_lines

PAIRS = VOICE_PAIRS + SIMILAR_PAIRS
VOICES = sorted({v for pair in PAIRS for v in pair} | {"en+m4", "en+f2"})
ENROL = AGENT[:3]  # ~11-13 s
PROBES = [CUSTOMER[0] + " " + CUSTOMER[3], AGENT[3] + " " + CUSTOMER[1]]  # ~5-7 s each


def _variant(voice: str) -> str:
    """The espeak-ng variant (timbre) of a voice; the language part only changes the accent."""
    return voice.split("+")[1] if "+" in voice else "m1"


def labelled_regions(regions: list[SpeechRegion], windows, labels) -> list[tuple[int, int, int]]:
    centers = np.array([w.center_ms for w in windows])
    return [(t, min(t + 100, r.end_ms),
             diarize_by_voice.speaker_at(centers, labels, t, min(t + 100, r.end_ms)) if windows else 0)
            for r in regions for t in range(r.start_ms, r.end_ms, 100)]


def diarization(encoder, seeds: int, thresholds: list[float]) -> None:
    calls = []
    for seed, pair in itertools.product(range(seeds), PAIRS):
        rng = np.random.default_rng(seed * 100 + PAIRS.index(pair))
        lines = dialogue_lines(12)
        if seed % 2:  # odd seeds: the customer speaks first
            lines = [(1 - k, text) for k, text in dialogue_lines(13)[1:]]
        calls.append((pair, conversation(pair, lines, list(rng.uniform(0.15, 1.0, len(lines))))))
        if seed == 0:
            calls.append(((pair[0],), conversation((pair[0],), [(0, t) for t in AGENT + CUSTOMER[:2]], 0.5)))
    prepared = []
    for pair, call in calls:
        audio = Audio(channels=(call.samples,))
        prepared.append((pair, call, audio, vad.detect_speech(audio, 0)))
    for threshold in thresholds:
        started, rows = time.perf_counter(), []
        for pair, call, audio, regions in prepared:
            windows, labels = diarize_by_voice.label_speech(audio, regions, encoder, threshold)
            found = int(labels.max()) + 1 if len(labels) else 0
            rows.append((pair, found, der(call.turns, labelled_regions(regions, windows, labels))))
        print(f"threshold {threshold:g} ({time.perf_counter() - started:.1f} s)")
        for pair, found, error in rows:
            print(f"  {' vs '.join(pair):28} speakers {found}  DER {error:.3f}")
        for name, group in (("distinct pairs", [r for r in rows if r[0] in VOICE_PAIRS]),
                            ("similar pairs", [r for r in rows if r[0] in SIMILAR_PAIRS]),
                            ("one voice", [r for r in rows if len(r[0]) == 1])):
            errors = [r[2] for r in group]
            print(f"  {name}: mean DER {np.mean(errors):.3f}, worst {max(errors):.3f}, DER < 0.15 in "
                  f"{sum(e < 0.15 for e in errors)}/{len(group)}, speaker count right "
                  f"{sum(r[1] == len(r[0]) for r in group)}/{len(group)}")


def voiceprints(encoder) -> None:
    def sample(voice: str, sentences: list[str]) -> tuple[np.ndarray, list[SpeechRegion]]:
        wav = np.concatenate([np.concatenate([speak(s, voice), np.zeros(4000, np.float32)]) for s in sentences])
        audio = Audio(channels=(wav,))
        return audio, vad.detect_speech(audio, 0)

    prints, probes = {}, {}
    for voice in VOICES:
        prints[voice] = speakers.enroll(encoder, *sample(voice, ENROL))
        probes[voice] = []
        for text in PROBES:
            audio, regions = sample(voice, [text])
            embedding, speech_ms = speakers.voice_embedding(
                encoder, audio.channels[0], [(r.start_ms, r.end_ms) for r in regions])
            probes[voice].append((embedding, speech_ms))
    same, diff = [], []
    similar = {frozenset(pair) for pair in SIMILAR_PAIRS}
    hardest, close = [], []  # close: SIMILAR_PAIRS, and one variant in two accents
    for enrolled, probed in itertools.product(VOICES, VOICES):
        for embedding, _ in probes[probed]:
            score = float(prints[enrolled].embedding @ embedding)
            if enrolled == probed:
                same.append(score)
            elif frozenset((enrolled, probed)) not in similar and _variant(enrolled) != _variant(probed):
                diff.append(score)
                hardest.append((score, enrolled, probed))
            else:
                close.append(score)
    pct = [0, 1, 5, 50, 95, 99, 100]
    print(f"voiceprints: {len(VOICES)} voices, enrolment {min(p.speech_ms for p in prints.values()) / 1000:.1f}-"
          f"{max(p.speech_ms for p in prints.values()) / 1000:.1f} s, probes "
          f"{min(s for v in probes.values() for _, s in v) / 1000:.1f}-"
          f"{max(s for v in probes.values() for _, s in v) / 1000:.1f} s")
    print(f"  same voice ({len(same)}): percentiles {pct}: {np.percentile(same, pct).round(3).tolist()}")
    print(f"  different voices (other variant, SIMILAR_PAIRS left out) ({len(diff)}): percentiles {pct}: "
          f"{np.percentile(diff, pct).round(3).tolist()}")
    threshold = speakers.VOICEPRINT_THRESHOLDS["ge2e"]  # the encoder here is GE2E
    print(f"  similar pairs and same-variant accents ({len(close)}): {np.percentile(close, pct).round(3).tolist()}, "
          f"{sum(c >= threshold for c in close)} at or over {threshold}")
    print(f"  closest different voices: {sorted(hardest, reverse=True)[:3]}")
    print(f"  separating thresholds: ({max(diff):.3f}, {min(same):.3f}); "
          f"at {threshold}: false accepts {sum(d >= threshold for d in diff)}, "
          f"false rejects {sum(s < threshold for s in same)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--thresholds", type=float, nargs="+", default=[diarize_by_voice.DEFAULT_THRESHOLD])
    parser.add_argument("--skip-voiceprints", action="store_true")
    parser.add_argument("--skip-diarization", action="store_true")
    args = parser.parse_args()
    encoder = load_speaker_encoder(Settings())
    print(f"encoder {encoder.info}")
    if not args.skip_diarization:
        diarization(encoder, args.seeds, args.thresholds)
    if not args.skip_voiceprints:
        voiceprints(encoder)


if __name__ == "__main__":
    main()
