"""Accuracy of the analysis pipeline on real recorded speech: WER/CER, DER, speaker count, language, speed.

What it measures
----------------
The clips of the real-speech manifest (`scripts/fetch_real_speech.py` builds it; `--split report` by default,
the clips no threshold was fitted on) are each analysed by the configured pipeline as the server would: with the
clip's language as the recording's language (`--detect`: without one, so a multilingual Whisper model detects
it and an English-only one assumes English); a mono clip is diarized. A clip the pipeline refuses (a language
its Whisper model cannot transcribe) is a row "failed" with the reason and no figures. Per clip:

* WER: word errors against the reference transcript over its words, after lower-casing, removing accents and
  punctuation and spelling digits out in the clip's language (the references write "press 1"); CER (characters,
  spaces ignored) for languages written without spaces (ja, zh, th, ...). "-" where the clip has no transcript;
* DER: pyannote.metrics' DiarizationErrorRate with no collar and overlapping speech scored (missed + false alarm
  + confusion over all reference speech) of the transcript segments, labelled by speaker, against the
  reference turns;
* speakers: found / in the reference (the speaker-count error is their difference);
* language: the result's `language` ("-" when the pipeline reports none);
* s/min: seconds of analysis per minute of audio on this machine.

`--save FILE` writes the figures as JSON; `--baseline FILE` prints each figure beside the saved one
("before > now"), so a change shows its effect on the same clips.

How to run (repository root; after `scripts/fetch_real_speech.py`)::

    .venv/bin/python -P benchmarks/real_speech.py --save /tmp/real-before.json
    .venv/bin/python -P benchmarks/real_speech.py --baseline /tmp/real-before.json
    .venv/bin/python -P benchmarks/real_speech.py --split fit --clips it-dialogue-mono en-call-mono
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # scripts.*, tests.analysis.*

from callscope.analysis.runtime.pipeline import MODELS, AnalysisError, Pipeline, load_model
from callscope.config import Settings
from scripts.fetch_real_speech import DIGIT_WORDS, MANIFEST_VERSION, cache_dir

NO_SPACES = {"ja", "zh", "th", "lo", "km", "my", "yue"}  # scored by CER


def load_manifest(split: str | None, names: list[str] | None = None) -> tuple[Path, list[dict]]:
    """The cache folder and its manifest's clips of `split` (None: all), or those named; exits when absent."""
    folder = cache_dir()
    path = folder / "manifest.json"
    if not path.is_file():
        sys.exit(f"{path} does not exist: run scripts/fetch_real_speech.py first")
    manifest = json.loads(path.read_text())
    if manifest.get("version") != MANIFEST_VERSION:
        sys.exit(f"{path} is of another version: run scripts/fetch_real_speech.py --rebuild")
    clips = [c for c in manifest["clips"]
             if (names and c["id"] in names) or (not names and split in (None, c["split"]))]
    return folder, clips


def tokens(text: str, language: str) -> list[str]:
    """Words (or characters, for languages without spaces) of `text` for scoring: lower case, no accents or
    punctuation, each digit spelt out in `language` ("1" -> "one"; digits stay digits where no words are known)."""
    words = DIGIT_WORDS.get(language, "").split()
    text = unicodedata.normalize("NFKC", text).lower()
    if words:
        text = re.sub(r"\d", lambda m: f" {words[int(m.group())]} ", text)
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    text = re.sub(r"[^\w]+|_", " ", text)
    return list(text.replace(" ", "")) if language in NO_SPACES else text.split()


def error_rate(reference: list[str], hypothesis: list[str]) -> float:
    """Token edit distance (substitutions, insertions, deletions) over the reference's length."""
    row = list(range(len(hypothesis) + 1))
    for i, r in enumerate(reference, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hypothesis, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1] / max(len(reference), 1)


def der(turns: list[list], hypothesis: list[tuple[float, float, str]]) -> float:
    """pyannote.metrics DER, no collar, overlap scored, of `hypothesis` (start_s, end_s, label) against the
    reference `turns` [start_s, end_s, speaker]."""
    from pyannote.core import Annotation, Segment
    from pyannote.metrics.diarization import DiarizationErrorRate

    reference, hyp = Annotation(), Annotation()
    for k, (start, end, speaker) in enumerate(turns):
        reference[Segment(start, end), k] = speaker
    for k, (start, end, label) in enumerate(hypothesis):
        if end > start:
            hyp[Segment(start, end), k] = label
    return float(DiarizationErrorRate(collar=0.0, skip_overlap=False)(reference, hyp))


def measure(pipeline: Pipeline, folder: Path, clip: dict, detect: bool = False) -> dict:
    from callscope.resources.kinds import ProjectSpec

    project = None if detect else ProjectSpec(name="real speech", language=clip["language"])
    started = time.perf_counter()
    try:
        result = pipeline.run(folder / clip["path"], project)
    except AnalysisError as exc:
        return {"language": "failed", "speakers": None, "s_per_min": None, "wer": None, "der": None, "text": "",
                "failed": str(exc)}
    seconds = time.perf_counter() - started
    segments = sorted(result.segments, key=lambda s: s.start_ms)
    row: dict = {"language": result.language or "-", "speakers": len({s.speaker for s in segments}),
                 "s_per_min": seconds / (result.duration_ms / 60_000), "wer": None, "der": None,
                 "text": " ".join(s.text for s in segments)}
    if clip["transcript"]:
        row["wer"] = error_rate(tokens(clip["transcript"], clip["language"]), tokens(row["text"], clip["language"]))
    if clip["turns"]:
        row["der"] = der(clip["turns"], [(s.start_ms / 1000, s.end_ms / 1000, s.speaker) for s in segments])
    return row


def cell(now: float | int | None, before: float | int | None, fmt: str, width: int, baseline: bool) -> str:
    show = lambda v: "-" if v is None else format(v, fmt)  # noqa: E731 - a local formatter
    return (f"{show(before)} > {show(now)}" if baseline else show(now)).rjust(width)


def table(clips: list[dict], rows: dict[str, dict], before: dict[str, dict] | None) -> None:
    width = 16 if before is not None else 7
    print(f"\n{'clip':<20} {'lang':<4} {'ref':>3} {'speakers':>{width}} {'WER/CER':>{width}} {'DER':>{width}} "
          f"{'language':>{width}} {'s/min':>{width}}")
    for clip in clips:
        now, old = rows[clip["id"]], (before or {}).get(clip["id"], {})
        metric = "CER" if clip["language"] in NO_SPACES else "WER"
        language = f"{old.get('language', '-')} > {now['language']}" if before is not None else now["language"]
        print(f"{clip['id']:<20} {clip['language']:<4} {clip['speakers']:>3} "
              f"{cell(now['speakers'], old.get('speakers'), 'd', width, before is not None)} "
              f"{cell(now['wer'], old.get('wer'), '.1%', width, before is not None)} "
              f"{cell(now['der'], old.get('der'), '.1%', width, before is not None)} "
              f"{language:>{width}} "
              f"{cell(now['s_per_min'], old.get('s_per_min'), '.1f', width, before is not None)}"
              + ("  (CER)" if metric == "CER" else ""))
    for clip in clips:
        if rows[clip["id"]].get("failed"):
            print(f"{clip['id']}: failed: {rows[clip['id']]['failed']}")
    scored = [(rows[c["id"]], c) for c in clips if rows[c["id"]]["speakers"] is not None]
    count_error = [abs(r["speakers"] - c["speakers"]) for r, c in scored]
    print(f"speaker count right in {count_error.count(0)}/{len(scored)} analysed, mean |error| "
          f"{sum(count_error) / max(len(scored), 1):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=["fit", "report", "all"], default="report")
    parser.add_argument("--clips", nargs="+", help="only these clip ids (any split)")
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--baseline", type=Path, help="a JSON file written by --save: print it beside")
    parser.add_argument("--verbose", action="store_true", help="print each transcript")
    parser.add_argument("--detect", action="store_true",
                        help="give the pipeline no language (it detects it, or assumes English)")
    args = parser.parse_args()
    folder, clips = load_manifest(None if args.split == "all" else args.split, args.clips)
    before = json.loads(args.baseline.read_text())["clips"] if args.baseline else None
    settings = Settings(llm_enabled=False)
    pipeline = Pipeline(settings, **{name: load_model(name, settings) for name in MODELS})
    models = {name: getattr(getattr(m, "info", None), "name", "none") for name, m in pipeline._models.items()}
    print("models: " + ", ".join(f"{name}={model}" for name, model in models.items()))
    rows = {}
    for clip in clips:
        rows[clip["id"]] = row = measure(pipeline, folder, clip, args.detect)
        print(f"{clip['id']}: " + (f"failed: {row['failed']}" if row.get("failed")
                                   else f"done ({row['s_per_min']:.1f} s/min)"), flush=True)
        if args.verbose:
            print(f"  reference:  {clip['transcript']}\n  hypothesis: {rows[clip['id']]['text']}")
    table(clips, rows, before)
    if args.save:
        args.save.write_text(json.dumps({"models": models, "clips": rows}, ensure_ascii=False, indent=1))
        print(f"saved {args.save}")


if __name__ == "__main__":
    main()
