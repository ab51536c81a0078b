"""Voiceprints (operator identification) on real voices: GE2E against CAM++, the threshold fitted on one part
of the data and its false-accept and false-reject rates reported on the other.

What it measures
----------------
The real voices of the real-speech cache (`scripts/fetch_real_speech.py` downloads them): the Debian Asterisk
prompt packages, eight voices of seven people (Allison Smith records both the en and the es prompts), hundreds
of short prompts each, and the two speakers of the pyannote.audio sample phone call. Each voice's prompts are
shuffled (seeded) and halved: the "fit" half and the "report" half share no prompt. From each half, prompts
(trimmed, 0.25 s apart) are joined into one enrolment of >= 20 s (the product needs >= 10 s of speech) and
PROBES probes of >= 7 s (it needs >= 5 s); each probe is scored clean (16 kHz) and phone-band (8 kHz mu-law and
back). The two pyannote speakers (about 12 s each, real phone speech) are report-only impostors: two probes each,
voices no threshold ever saw. The four actors of the Czech and Dutch dialogues (Fish Fillets NG's dubbed lines,
with the game's underwater echo) are report-only voices: an enrolment and PROBES probes each, of their lines.

Enrolments and probes go through the product's own functions (`speakers.enroll`, `speakers.voice_embedding` over
the VAD regions). A trial is one probe against one enrolment: a target trial when they are the same person (the
Allison es enrolment against Allison en probes counts: the same voice in another language), an impostor trial
otherwise. Per model:

* the threshold is fitted on the fit half: the lowest cosine similarity above every fit impostor score plus
  MARGIN (a wrong operator is worse than an unknown one, so no impostor of the fit half may pass, with room);
* on the report half, at that threshold: the false-accept rate (impostor trials accepted) and the false-reject
  rate (target trials refused), clean and phone-band, and the equal error rate (threshold-free);
* GE2E is also scored at its old threshold 0.945 (fitted on espeak voices).

How to run (repository root; after `scripts/fetch_real_speech.py`)::

    .venv/bin/python -P benchmarks/voiceprints.py
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # scripts.*, tests.analysis.*

from callscope.analysis.models.campplus import load_campplus
from callscope.analysis.models.speaker_encoder import load_speaker_encoder
from callscope.analysis.stages import speakers, vad
from callscope.analysis.stages.decode import decode
from callscope.analysis.types import SAMPLE_RATE, Audio
from callscope.config import Settings
from scripts.fetch_real_speech import (
    ACTOR_DIALOGUES,
    FILLETS_TEXT,
    SOUNDS,
    VOICES,
    actor_lines,
    cache_dir,
    deb_root,
    load,
    pyannote_sample,
)
from tests.analysis.speech import silence, write

ENROL_S, PROBE_S, PROBES = 20.0, 7.0, 6
MARGIN = 0.05
OLD_GE2E_THRESHOLD = 0.945


@dataclass(frozen=True)
class Utterance:
    person: str
    source: str  # the voice key (or pyannote speaker) it was made from
    split: str
    wav: np.ndarray


def joined(paths: list[Path], seconds: float) -> tuple[np.ndarray, list[Path]]:
    """Prompts from `paths` joined (0.25 s apart) until `seconds` of audio; the prompts left."""
    parts, total = [], 0.0
    while paths and total < seconds:
        part = load(str(paths[0]))
        paths = paths[1:]
        if len(part) < SAMPLE_RATE // 5:
            continue
        parts += [part, silence(0.25)]
        total += len(part) / SAMPLE_RATE + 0.25
    return (np.concatenate(parts) if parts else np.zeros(0, np.float32)), paths


def prompt_voices(downloads: Path) -> tuple[list[Utterance], list[Utterance]]:
    """(enrolments, probes) of every Debian voice, fit and report halves."""
    enrolments, probes = [], []
    for key, voice in VOICES.items():
        root = deb_root(downloads, voice.deb)
        if root is None:
            continue
        files = sorted((root[0] / SOUNDS / voice.deb.voice_dir).rglob(f"*.{voice.deb.extension}"))
        random.Random(key).shuffle(files)
        for split, half in (("fit", files[::2]), ("report", files[1::2])):
            enrolment, its_probes = enrolment_and_probes(voice.speaker, key, split, half)
            enrolments.append(enrolment)
            probes += its_probes
    return enrolments, probes


def enrolment_and_probes(person: str, source: str, split: str, files: list[Path]) -> tuple[Utterance, list[Utterance]]:
    """One enrolment of >= ENROL_S and up to PROBES probes of >= PROBE_S, of recordings `files` in turn."""
    wav, rest = joined(files, ENROL_S)
    enrolment, probes = Utterance(person, source, split, wav), []
    for _ in range(PROBES):
        wav, rest = joined(rest, PROBE_S)
        if len(wav) >= PROBE_S * SAMPLE_RATE:
            probes.append(Utterance(person, source, split, wav))
    return enrolment, probes


def actor_voices(downloads: Path) -> tuple[list[Utterance], list[Utterance]]:
    """(enrolments, probes) of the four actors of the Czech and Dutch dialogues, report half only: voices no
    threshold saw, enrolled and probed on their lines (with the game's underwater echo)."""
    text = deb_root(downloads, FILLETS_TEXT)
    enrolments, probes = [], []
    for spec in ACTOR_DIALOGUES:
        sounds = deb_root(downloads, spec.deb)
        if not text or not sounds:
            continue
        lines: dict[str, list[Path]] = {}
        for path, actor, _ in actor_lines(sounds[0], text[0], spec.language):
            lines.setdefault(actor, []).append(path)
        for person, files in sorted(lines.items()):
            random.Random(person).shuffle(files)
            enrolment, its_probes = enrolment_and_probes(person, person, "report", files)
            enrolments.append(enrolment)
            probes += its_probes
    return enrolments, probes


def call_speakers(downloads: Path) -> list[Utterance]:
    """Two report probes of each speaker of the pyannote sample call (their speech where the other is silent)."""
    sample = pyannote_sample(downloads)
    if sample is None:
        return []
    wav = decode(sample[0]).channels[0]
    turns = [(float(f[3]), float(f[3]) + float(f[4]), f[7]) for f in
             (line.split() for line in sample[1].read_text().splitlines() if line.startswith("SPEAKER"))]
    out = []
    for person in sorted({t[2] for t in turns}):
        alone = np.zeros(len(wav), dtype=bool)  # their speech where the other does not speak
        for a, b, p in sorted(turns, key=lambda t: t[2] != person):
            alone[int(a * SAMPLE_RATE):int(b * SAMPLE_RATE)] = p == person
        speech = wav[alone]
        half = len(speech) // 2
        out += [Utterance(f"call-{person}", person, "report", part) for part in (speech[:half], speech[half:])]
    return out


def phone_band(wav: np.ndarray, folder: Path) -> np.ndarray:
    path = write(folder / "probe.wav", [wav], rate=8000, codec="pcm_mulaw")
    return decode(path).channels[0]


def regions_of(wav: np.ndarray) -> tuple[Audio, list]:
    audio = Audio(channels=(np.asarray(wav, dtype=np.float32),))
    return audio, vad.detect_speech(audio, 0)


def scores(model, enrolments: list[Utterance], probes: list[Utterance], folder: Path) -> list[dict]:
    """Every (enrolment, probe, condition) trial of the same split with its cosine similarity."""
    prints = []
    for e in enrolments:
        audio, regions = regions_of(e.wav)
        prints.append((e, speakers.enroll(model, audio, regions).embedding))
    out = []
    for p in probes:
        for condition, wav in (("clean", p.wav), ("phone", phone_band(p.wav, folder))):
            audio, regions = regions_of(wav)
            embedding, speech_ms = speakers.voice_embedding(model, audio.channels[0],
                                                            [(r.start_ms, r.end_ms) for r in regions])
            if embedding is None or speech_ms < speakers.IDENTIFY_MIN_MS:
                continue
            for e, voiceprint in prints:
                if e.split == p.split:
                    out.append({"split": p.split, "condition": condition, "target": e.person == p.person,
                                "score": float(np.dot(voiceprint, embedding)), "enrol": e.source, "probe": p.source})
    return out


def rates(trials: list[dict], threshold: float) -> tuple[float, float, int, int]:
    """(false-accept rate, false-reject rate, impostor trials, target trials) at `threshold`."""
    impostors = [t["score"] for t in trials if not t["target"]]
    targets = [t["score"] for t in trials if t["target"]]
    far = sum(s >= threshold for s in impostors) / max(len(impostors), 1)
    frr = sum(s < threshold for s in targets) / max(len(targets), 1)
    return far, frr, len(impostors), len(targets)


def eer(trials: list[dict]) -> float:
    candidates = sorted({t["score"] for t in trials})
    return min((max(rates(trials, c)[:2]) for c in candidates), default=0.0)


def report(name: str, trials: list[dict], threshold: float, fitted: bool) -> dict:
    fit = [t for t in trials if t["split"] == "fit"]
    impostor_max = max(t["score"] for t in fit if not t["target"])
    target_min = min(t["score"] for t in fit if t["target"])
    how = (f"fitted: fit impostors <= {impostor_max:.3f} (fit targets >= {target_min:.3f}), + margin {MARGIN}"
           if fitted else "given")
    print(f"\n{name}: threshold {threshold:.3f} ({how})")
    print(f"  {'split':<7} {'probes':<6} {'impostor':>8} {'target':>6} {'FAR':>6} {'FRR':>6} {'EER':>6}  "
          f"{'impostor max':>12} {'target median':>13}")
    figures = {}
    for split in ("fit", "report"):
        for condition in ("clean", "phone"):
            part = [t for t in trials if t["split"] == split and t["condition"] == condition]
            far, frr, n_imp, n_tar = rates(part, threshold)
            imp = max(t["score"] for t in part if not t["target"])
            tar = float(np.median([t["score"] for t in part if t["target"]]))
            figures[f"{split}-{condition}"] = {"far": far, "frr": frr, "eer": eer(part), "impostor_trials": n_imp,
                                               "target_trials": n_tar}
            print(f"  {split:<7} {condition:<6} {n_imp:>8} {n_tar:>6} {far:>6.1%} {frr:>6.1%} {eer(part):>6.1%}  "
                  f"{imp:>12.3f} {tar:>13.3f}")
    return {"threshold": threshold, "figures": figures}


def fitted_threshold(trials: list[dict]) -> float:
    return round(max(t["score"] for t in trials if t["split"] == "fit" and not t["target"]) + MARGIN, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    args = parser.parse_args()
    downloads = cache_dir() / "downloads"
    enrolments, probes = prompt_voices(downloads)
    actors = actor_voices(downloads)
    enrolments += actors[0]
    probes += actors[1] + call_speakers(downloads)
    if not enrolments:
        sys.exit(f"no voices under {downloads}: run scripts/fetch_real_speech.py first")
    print(f"{len(enrolments)} enrolments, {len(probes)} probes of {len({p.person for p in probes})} people "
          f"(clean and phone-band each)")
    settings = Settings()
    models = {"GE2E": load_speaker_encoder(settings), "CAM++": load_campplus(threads=settings.analysis_threads)}
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, model in models.items():
            trials = scores(model, enrolments, probes, Path(folder))
            out[name] = report(name, trials, fitted_threshold(trials), fitted=True)
            if name == "GE2E":
                out["GE2E-0.945"] = report("GE2E", trials, OLD_GE2E_THRESHOLD, fitted=False)
    if args.save:
        args.save.write_text(json.dumps(out, indent=1))
        print(f"saved {args.save}")


if __name__ == "__main__":
    main()
