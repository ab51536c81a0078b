"""Mono diarization of long calls of many real voices: speaker count, DER, time and memory per call length.

What it measures
----------------
Conversations are built from the voices of the real-speech manifest (`scripts/fetch_real_speech.py`): each
voice's reference turns in the one mono clip holding most of its speech (the parts where no other voice talks) are
that voice's pieces; a call is turn after turn (one piece, a random stretch of at least 1.5 s of it, gaps of 0.2-1.0 s),
each turn's voice drawn at random (never the one who just spoke, some voices more talkative than others), so that every
voice recurs throughout the call, to the length asked for. The reference turns (RTTM) are where each piece was put.
The calls are written to `~/.cache/callscope/long-calls/` (WAV and RTTM, seeded: the same call every run).

Two sets of voices, no voice in both (`VOICE_SETS`): "fit" (6 voices, seed 0), the calls any threshold of the
long-call clustering was chosen on, and "report" (7 voices, seed 1), the calls reported; "one" (seed 2) is one
voice, allison's, talking throughout (a long call of one voice must stay one speaker). Other mixes and orders, each
with a seed of its own (other talkativeness, other turn order): "fit-3", "fit-5" of fit voices (may be fitted on),
"report-3" (armelle-fr and menardi-it, the two report voices most alike, with a third), "report-5", "report-7b"
(the 7 report voices again, another order and seed) of report voices only, and "mixed-8": 8 voices are more than
either side has (6 and 7), so 4 fit and 4 report voices, a call reported and never fitted on, as "one". Without
`--sets`: fit, report and one.

Each call runs the diarization stage of the pipeline's mono path with the default install's models
(`speakers.load_speaker_analyzer`: CAM++, spectral clustering, segmentation-3.0): Silero VAD, then
`SpeakerAnalyzer.turns` and `diarize_by_voice.assign`. Whisper does not run (an hour of ASR on a CPU is far longer than
the stage measured): its segments are stood in for by the VAD's speech, one segment per region of at most 10 s with a
word every 300 ms, each word taking a speaker as a Whisper word would. Printed per call: the true and found
speakers, DER of the segments by speaker (pyannote.metrics, no collar, overlap scored, as
`benchmarks/real_speech.py`), seconds of the diarization stage (VAD not included) and of the speakers stage (roles,
each found speaker's voice compared with one enrolled voiceprint), the RSS before them and
the process's peak RSS (each call runs in a process of its own, which also holds the models and the decoded audio).
Timings on a shared machine are noisy.

`--save FILE` writes the figures as JSON; `--baseline FILE` prints each beside the saved one ("before > now").
Each run keeps each call's model outputs (VAD regions, CAM++ embeddings, the segmentation's chunks) beside its WAV;
`--cached` diarizes from them (a change to the clustering measured in seconds, not an hour; no timings, no speakers
stage), running the models only for calls that have none saved from the same WAV by the same model versions.

How to run (repository root; after `scripts/fetch_real_speech.py`)::

    .venv/bin/python -P benchmarks/long_calls.py --save /tmp/long-before.json
    .venv/bin/python -P benchmarks/long_calls.py --baseline /tmp/long-before.json
    .venv/bin/python -P benchmarks/long_calls.py --sets fit --minutes 15
    .venv/bin/python -P benchmarks/long_calls.py --sets report-3 report-5 report-7b mixed-8 --minutes 15
    .venv/bin/python -P benchmarks/long_calls.py --cached --sets fit fit-3 fit-5 report report-3 report-5 \\
        report-7b mixed-8 one --minutes 15 60
"""

from __future__ import annotations

import argparse
import functools
import json
import resource
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks.*, scripts.*

from benchmarks.real_speech import der, load_manifest
from callscope.analysis.types import SAMPLE_RATE

VOICE_SETS = {
    "fit": (0, ["allison", "june-fr", "carlo-it", "july-es", "big-fish-cs", "small-fish-cs"]),
    "report": (1, ["menardi-it", "armelle-fr", "ivrvoice-ru", "speaker90", "speaker91", "big-fish-nl",
                   "small-fish-nl"]),
    "one": (2, ["allison"]),  # one voice throughout: a long call must not split it
    # other mixes and orders (another seed: other talkativeness and turn order); thresholds are chosen on "fit*" only
    "fit-3": (3, ["july-es", "carlo-it", "small-fish-cs"]),
    "fit-5": (4, ["big-fish-cs", "allison", "june-fr", "small-fish-cs", "july-es"]),
    "report-3": (5, ["armelle-fr", "menardi-it", "speaker90"]),  # the two report voices most alike, and a third
    "report-5": (6, ["speaker91", "big-fish-nl", "ivrvoice-ru", "small-fish-nl", "speaker90"]),
    "report-7b": (7, ["small-fish-nl", "speaker90", "armelle-fr", "big-fish-nl", "menardi-it", "speaker91",
                      "ivrvoice-ru"]),
    # 8 voices: more than either side has (6 fit, 7 report), so 4 of each; reported, never fitted on (as "one")
    "mixed-8": (8, ["allison", "menardi-it", "june-fr", "armelle-fr", "big-fish-cs", "speaker91", "july-es",
                    "small-fish-nl"]),
}
DEFAULT_SETS = ("fit", "report", "one")  # the other mixes when asked for (`--sets`): all at 60 min take an hour or more
MINUTES = (15, 60)
MIN_PIECE_S = 1.5
WORD_MS, SEGMENT_MS = 300, 10_000  # the stand-in transcript's words and longest segment


def cache_folder() -> Path:
    return Path.home() / ".cache" / "callscope" / "long-calls"


def voice_pieces(voices: list[str]) -> dict[str, list[np.ndarray]]:
    """Each voice's speech: its reference turns, less where another voice talks, >= 1.5 s, in the mono clip that
    holds most of it (a voice reaches a call over one line: allison's read clips and the Spanish dialogue are
    recorded differently, and their 1.5 s windows are further apart than two voices of one recording)."""
    from callscope.analysis.stages.decode import decode

    folder, clips = load_manifest(None)
    found: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for clip in clips:
        if clip["channels"] != 1 or clip["id"].endswith("-phone"):
            continue
        for start, end, speaker in clip["turns"]:
            if speaker not in voices:
                continue
            others = sorted((s, e) for s, e, k in clip["turns"] if k != speaker and s < end and e > start)
            spans, at = [], start
            for s, e in others:
                spans.append((at, min(s, end)))
                at = max(at, e)
            spans.append((at, end))
            found.setdefault((speaker, clip["path"]), []).extend((s, e) for s, e in spans if e - s >= MIN_PIECE_S)
    pieces = {}
    for voice in voices:
        sources = {path: spans for (speaker, path), spans in found.items() if speaker == voice and spans}
        if not sources:
            sys.exit(f"no speech of {voice} in the real-speech manifest")
        path = max(sources, key=lambda p: sum(e - s for s, e in sources[p]))
        samples = decode(folder / path).channels[0]
        pieces[voice] = [np.asarray(samples[int(s * SAMPLE_RATE) : int(e * SAMPLE_RATE)]) for s, e in sources[path]]
    return pieces


def build_call(voices: list[str], seed: int, minutes: int) -> tuple[np.ndarray, list[tuple[float, float, str]]]:
    """A conversation of `voices` of `minutes` (see the module's docstring): samples and reference turns."""
    rng = np.random.default_rng(seed * 1000 + minutes)
    pieces = voice_pieces(voices)
    talkative = rng.uniform(0.5, 1.5, len(voices))
    parts, turns, at, last = [], [], 0, -1
    while at < minutes * 60 * SAMPLE_RATE:
        weights = np.where((np.arange(len(voices)) == last) & (len(voices) > 1), 0.0, talkative)
        last = int(rng.choice(len(voices), p=weights / weights.sum()))
        piece = pieces[voices[last]][rng.integers(len(pieces[voices[last]]))]
        length = int(rng.uniform(min(1.0, MIN_PIECE_S * SAMPLE_RATE / len(piece)), 1.0) * len(piece))
        offset = int(rng.integers(len(piece) - length + 1))
        gap = np.zeros(int(rng.uniform(0.2, 1.0) * SAMPLE_RATE), dtype=np.float32)
        parts += [gap, piece[offset : offset + length]]
        at += len(gap)
        turns.append((at / SAMPLE_RATE, (at + length) / SAMPLE_RATE, voices[last]))
        at += length
    return np.concatenate(parts).astype(np.float32), turns


def call_files(name: str, minutes: int) -> tuple[Path, Path]:
    """The call's WAV and RTTM in the cache folder, built when missing."""
    seed, voices = VOICE_SETS[name]
    stem = cache_folder() / f"{name}-{minutes}min-seed{seed}"
    wav_path, rttm_path = stem.with_suffix(".wav"), stem.with_suffix(".rttm")
    if not (wav_path.is_file() and rttm_path.is_file()):
        samples, turns = build_call(voices, seed, minutes)
        wav_path.parent.mkdir(parents=True, exist_ok=True)
        with wave.open(str(wav_path), "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(SAMPLE_RATE)
            out.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
        rttm_path.write_text("".join(f"SPEAKER {stem.name} 1 {s:.3f} {e - s:.3f} <NA> <NA> {k} <NA> <NA>\n"
                                     for s, e, k in turns))
    return wav_path, rttm_path


def read_rttm(path: Path) -> list[list]:
    rows = [line.split() for line in path.read_text().splitlines() if line.startswith("SPEAKER")]
    return [[float(r[3]), float(r[3]) + float(r[4]), r[7]] for r in rows]


def stand_in_segments(regions: list) -> list:
    """The transcript Whisper would give, from the VAD's speech: a segment per region (split at SEGMENT_MS), a word
    every WORD_MS."""
    from callscope.analysis.result import TranscriptSegment, TranscriptWord

    segments = []
    for region in regions:
        for start in range(region.start_ms, region.end_ms, SEGMENT_MS):
            end = min(start + SEGMENT_MS, region.end_ms)
            words = [TranscriptWord(start_ms=t, end_ms=min(t + WORD_MS, end), text="word", probability=0.9)
                     for t in range(start, end, WORD_MS)]
            segments.append(TranscriptSegment(id=len(segments), speaker="speaker-1", channel=0, start_ms=start,
                                              end_ms=end, text=" ".join(w.text for w in words), words=words))
    return segments


def outputs_file(name: str, minutes: int) -> Path:
    """Where a call's model outputs are kept (`save_outputs`)."""
    seed, _ = VOICE_SETS[name]
    return cache_folder() / f"{name}-{minutes}min-seed{seed}-outputs.npz"


def outputs_key(wav_path: Path) -> str:
    """What the saved model outputs depend on: the call's WAV (as written), the models' files and the VAD's version
    and threshold."""
    from callscope.analysis.models import campplus, segmentation
    from callscope.analysis.stages import vad

    wav = wav_path.stat()
    return json.dumps([wav.st_size, wav.st_mtime_ns, campplus.EMBEDDED_SHA256, segmentation.EMBEDDED_SHA256,
                       vad.MODEL.version, vad.THRESHOLD])


def save_outputs(path: Path, wav_path: Path, regions: list, windows: list, embeddings: np.ndarray, chunks,
                 models: list) -> None:
    """The call's model outputs: VAD regions, CAM++ windows and embeddings, the segmentation's chunks, the models
    (ModelUsed) and `outputs_key`."""
    np.savez_compressed(
        path, regions=np.array([(r.start_ms, r.end_ms) for r in regions], dtype=np.int64).reshape(-1, 2),
        windows=np.array([(w.start_ms, w.end_ms, w.speech_ms) for w in windows], dtype=np.int64).reshape(-1, 3),
        embeddings=embeddings, chunk_starts=chunks.starts, chunk_active=np.packbits(chunks.active, axis=None),
        models=np.array([json.dumps([m.model_dump() for m in models])]), key=np.array([outputs_key(wav_path)]))


def load_outputs(path: Path, wav_path: Path) -> tuple | None:
    """`save_outputs`' figures (regions, windows, embeddings, chunks, models), or None when missing or saved with
    another `outputs_key`."""
    from callscope.analysis.models.segmentation import CHUNK_FRAMES, LOCAL_SPEAKERS, ChunkActivity
    from callscope.analysis.result import ModelUsed
    from callscope.analysis.stages.diarize_by_voice import Window
    from callscope.analysis.types import SpeechRegion

    if not path.is_file():
        return None
    data = np.load(path)
    if str(data["key"][0]) != outputs_key(wav_path):
        return None
    saved = [ModelUsed(**m) for m in json.loads(str(data["models"][0]))]
    starts = data["chunk_starts"]
    active = np.unpackbits(data["chunk_active"])[: len(starts) * CHUNK_FRAMES * LOCAL_SPEAKERS].astype(bool)
    return ([SpeechRegion(0, int(a), int(b)) for a, b in data["regions"]],
            [Window(int(a), int(b), int(c)) for a, b, c in data["windows"]], data["embeddings"],
            ChunkActivity(starts, active.reshape(len(starts), CHUNK_FRAMES, LOCAL_SPEAKERS)), saved)


def run_case(name: str, minutes: int, cached: bool = False) -> dict:
    """The figures of one call (run in a process of its own, for its peak RSS). Its model outputs are saved
    (`save_outputs`); `cached`: the diarization runs on those saved by an earlier run (no models, no timings)."""
    from callscope.analysis.models.campplus import EMBEDDING_DIM, CamPlusPlus
    from callscope.analysis.models.segmentation import load_segmenter
    from callscope.analysis.stages import diarize_by_voice, vad
    from callscope.analysis.stages.decode import decode
    from callscope.analysis.stages.speakers import KnownVoice, load_speaker_analyzer
    from callscope.config import Settings

    wav_path, rttm_path = call_files(name, minutes)
    reference = read_rttm(rttm_path)
    saved = load_outputs(outputs_file(name, minutes), wav_path) if cached else None
    if saved is not None:
        regions, windows, embeddings, chunks, (model, segmentation) = saved
        turns = diarize_by_voice.campplus_turns(windows, embeddings, model, lambda: chunks, segmentation)
        segments, info = diarize_by_voice.assign(stand_in_segments(regions), turns)
        return {"speakers": len({k for _, _, k in reference}), "found": info.speakers, "windows": info.windows,
                "segmented": info.segmentation is not None,
                "der": der(reference, [(s.start_ms / 1000, s.end_ms / 1000, s.speaker) for s in segments])}
    settings = Settings(llm_enabled=False)
    analyzer = load_speaker_analyzer(settings)
    campplus = analyzer.encoder  # the default install's diarization and voiceprint model
    assert isinstance(campplus, CamPlusPlus), "the long-call benchmark runs the default install's CAM++"
    segmenter = load_segmenter(threads=settings.analysis_threads)
    audio = decode(wav_path)
    regions = [r for r in vad.detect_speech(audio, 0) if r.channel == 0]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # the stage as `SpeakerAnalyzer.turns` runs it (`find_turns`), its parts kept for `--cached` runs
    started = time.perf_counter()
    windows, embeddings = diarize_by_voice.campplus_embeddings(audio, regions, campplus)
    segment = functools.cache(lambda: segmenter.activity(np.asarray(audio.channels[0], dtype=np.float32)))
    turns = diarize_by_voice.campplus_turns(windows, embeddings, campplus.info, segment, segmenter.info)
    segments, info = diarize_by_voice.assign(stand_in_segments(regions), turns)
    seconds = time.perf_counter() - started
    started = time.perf_counter()  # the speakers stage: each speaker's voice compared with an enrolled one
    enrolled = KnownVoice(1, np.ones(EMBEDDING_DIM, dtype=np.float32) / EMBEDDING_DIM**0.5, analyzer.model)
    roles = analyzer.speakers(audio, segments, [enrolled])
    roles_s = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    save_outputs(outputs_file(name, minutes), wav_path, regions, windows, embeddings, segment(),
                 [campplus.info, segmenter.info])
    return {"speakers": len({k for _, _, k in reference}), "found": info.speakers, "windows": info.windows,
            "segmented": info.segmentation is not None,
            "der": der(reference, [(s.start_ms / 1000, s.end_ms / 1000, s.speaker) for s in segments]),
            "seconds": seconds, "roles_s": roles_s, "roles": len(roles), "rss_before_mb": rss_before,
            "peak_rss_mb": peak}


def cell(now: float | int | bool | None, before: float | int | bool | None, fmt: str, width: int,
         baseline: bool) -> str:
    show = lambda v: "-" if v is None else format(v, fmt)  # noqa: E731 - a local formatter
    return (f"{show(before)} > {show(now)}" if baseline else show(now)).rjust(width)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", choices=list(VOICE_SETS), default=list(DEFAULT_SETS),
                        help=f"voice sets (default: {' '.join(DEFAULT_SETS)})")
    parser.add_argument("--minutes", nargs="+", type=int, default=list(MINUTES))
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--baseline", type=Path, help="a JSON file written by --save: print it beside")
    parser.add_argument("--cached", action="store_true",
                        help="diarize from the model outputs an earlier run saved (no timings); calls without are run")
    parser.add_argument("--case", nargs=2, metavar=("SET", "MINUTES"), help=argparse.SUPPRESS)  # one child's call
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case[0], int(args.case[1]), args.cached)))
        return
    before = json.loads(args.baseline.read_text()) if args.baseline else {}
    rows = {}
    for name in args.sets:
        for minutes in args.minutes:
            call_files(name, minutes)  # built once, outside the measured process
            child = subprocess.run([sys.executable, "-P", __file__, "--case", name, str(minutes),
                                    *(["--cached"] if args.cached else [])], check=True, capture_output=True, text=True)
            rows[f"{name}-{minutes}"] = json.loads(child.stdout.strip().splitlines()[-1])
            print(f"{name} {minutes} min: done", flush=True)
    wide = args.baseline is not None
    width = 16 if wide else 8
    print(f"\n{'call':<10} {'true':>4} {'found':>{width}} {'DER':>{width}} {'stage s':>{width}} "
          f"{'roles s':>{width}} {'RSS MB before':>{width}} {'peak RSS MB':>{width}} {'windows':>{width}} "
          f"{'segmented':>{width + 4}}")
    for key, row in rows.items():
        old = before.get(key, {})
        print(f"{key:<10} {row['speakers']:>4} "
              + " ".join(cell(row.get(k), old.get(k), fmt, width, wide) for k, fmt in (
                  ("found", "d"), ("der", ".1%"), ("seconds", ".1f"), ("roles_s", ".1f"), ("rss_before_mb", ".0f"),
                  ("peak_rss_mb", ".0f"), ("windows", "d")))
              + " " + cell(row["segmented"], old.get("segmented"), "", width + 4, wide))
    if args.save:
        args.save.write_text(json.dumps(rows, indent=1))
        print(f"saved {args.save}")


if __name__ == "__main__":
    main()
