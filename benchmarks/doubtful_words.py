"""How well Whisper's word probability tells a wrong word from a right one, on recorded human speech: the figures
behind evidence.DOUBTFUL_WORD_PROBABILITY.

What it measures
----------------
Every clip of the real-speech set with a reference transcript (`scripts/fetch_real_speech.py`) is transcribed as
the pipeline transcribes (decode, VAD, the configured Whisper model per channel, `Pipeline._transcribe`; Whisper
base by default; no diarization: it does not change the words) in the clip's language. The recognised words (in
time order) are aligned to the reference by an edit distance of normalised words (benchmarks/real_speech.tokens:
lower case, no accents or punctuation, digits spelt out); a recognised word is **right** when all its normalised
words are matched to equal reference words, else **wrong** (substituted or inserted). A reference word no
recognised word stands for (a deletion) has no probability and is not counted.

The threshold is chosen on the FIT clips only: the highest value on a grid of 0.05 that flags at most 5 % of the
right words (MAX_RIGHT_FLAGGED; the value that maximises wrong flagged minus right flagged, Youden's J, is printed
beside: it flags a quarter of the right words); `--threshold` sets one instead. For it and a few others, per split
(and per clip for the one chosen):

* words: share of the wrong words flagged (probability below the threshold), share of the right words flagged;
* sentences (SENTENCE of each segment's text; wrong when a word of it is wrong, doubtful when a word of it is below
  the threshold, evidence.sentence_words): share of the wrong ones and of the right ones flagged;
* number words (digits, or a number word of the clip's language: its digit words, and English number words):
  the same as words.

Transcripts are cached in ~/.cache/callscope/doubtful-words/ (by clip and Whisper model): a rerun only aligns.

How to run (repository root; after `scripts/fetch_real_speech.py`)::

    .venv/bin/python -P benchmarks/doubtful_words.py
    .venv/bin/python -P benchmarks/doubtful_words.py --threshold 0.4
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # scripts.*, benchmarks.*

from benchmarks.real_speech import load_manifest, tokens
from callscope.analysis.result import TranscriptSegment
from callscope.analysis.stages.evidence import DOUBTFUL_WORD_PROBABILITY, sentence_words
from callscope.analysis.stages.spoken import NUMBER_WORDS
from scripts.fetch_real_speech import DIGIT_WORDS

CACHE = Path.home() / ".cache" / "callscope" / "doubtful-words"
GRID = [round(0.05 * i, 2) for i in range(1, 20)]
# A doubtful word costs a right sentence its quote and a right value its certainty: at most this share of the right
# words of the FIT clips may be flagged.
MAX_RIGHT_FLAGGED = 0.05


def transcribe(clips: list[dict], folder: Path) -> dict[str, list[TranscriptSegment]]:
    """Each clip's segments as the pipeline transcribes them, from the cache where they are there."""
    from callscope.analysis.models.files import whisper_model_dir
    from callscope.analysis.runtime.pipeline import Pipeline, _Run, load_model
    from callscope.analysis.stages.pauses import rules_for
    from callscope.config import Settings
    from callscope.resources.kinds import ProjectSpec

    settings = Settings(llm_enabled=False)
    model = whisper_model_dir(settings).name
    out, pipeline = {}, None
    for clip in clips:
        path = CACHE / f"{clip['id']}.{model}.json"
        if not path.is_file():
            if pipeline is None:
                pipeline = Pipeline(settings, transcriber=load_model("transcriber", settings), speakers=None,
                                    embedder=None, llm=None)
            run = _Run(lambda stage, fraction: None)
            audio = pipeline._decode(folder / clip["path"], run)
            project = ProjectSpec(name="doubtful words", language=clip["language"])
            segments = pipeline._transcribe(pipeline.transcriber, audio, pipeline._speech(audio, run),
                                            clip["language"], project, rules_for(project), run)
            CACHE.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps([s.model_dump() for s in segments], ensure_ascii=False))
            print(f"{clip['id']}: transcribed", file=sys.stderr, flush=True)
        out[clip["id"]] = [TranscriptSegment.model_validate(s) for s in json.loads(path.read_text())]
    return out


def align(reference: list[str], hypothesis: list[str]) -> list[bool]:
    """For each hypothesis token, whether the edit-distance alignment matches it to an equal reference token."""
    n, m = len(reference), len(hypothesis)
    cost = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        cost[i][0] = i
    for j in range(m + 1):
        cost[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost[i][j] = min(cost[i - 1][j] + 1, cost[i][j - 1] + 1,
                             cost[i - 1][j - 1] + (reference[i - 1] != hypothesis[j - 1]))
    matched = [False] * m
    i, j = n, m
    while i > 0 and j > 0:
        if cost[i][j] == cost[i - 1][j - 1] + (reference[i - 1] != hypothesis[j - 1]):
            matched[j - 1] = reference[i - 1] == hypothesis[j - 1]
            i, j = i - 1, j - 1
        elif cost[i][j] == cost[i][j - 1] + 1:
            j -= 1
        else:
            i -= 1
    return matched


def number_word(text: str, language: str) -> bool:
    """Digits, or a number word of the language (its digit words; English number words in English)."""
    vocabulary = set(DIGIT_WORDS.get(language, "").split()) | (NUMBER_WORDS if language == "en" else set())
    words = tokens(re.sub(r"\d", "", text), language)
    return bool(re.search(r"\d", text)) or any(w in vocabulary for w in words)


def scored(clip: dict, segments: list[TranscriptSegment]) -> dict[str, list[tuple[float, bool]]]:
    """(lowest probability, right) of each recognised word, sentence and number word of the clip."""
    language = clip["language"]
    words = [(w, s) for s in sorted(segments, key=lambda s: s.start_ms) for w in s.words]
    hypothesis, owner = [], []
    for k, (w, _) in enumerate(words):
        for token in tokens(w.text, language):
            hypothesis.append(token)
            owner.append(k)
    matched = align(tokens(clip["transcript"], language), hypothesis)
    right = [True] * len(words)
    has_tokens = [False] * len(words)
    for k, ok in zip(owner, matched, strict=True):
        right[k] = right[k] and ok
        has_tokens[k] = True
    index = {id(w): k for k, (w, _) in enumerate(words)}
    rows: dict[str, list[tuple[float, bool]]] = {"words": [], "sentences": [], "numbers": []}
    for k, (w, _) in enumerate(words):
        if has_tokens[k]:
            rows["words"].append((w.probability, right[k]))
            if number_word(w.text, language):
                rows["numbers"].append((w.probability, right[k]))
    for segment in segments:
        for _, said in sentence_words(segment):
            said = [w for w in said if has_tokens[index[id(w)]]]
            if said:
                rows["sentences"].append((min(w.probability for w in said), all(right[index[id(w)]] for w in said)))
    return rows


def flagged(rows: list[tuple[float, bool]], threshold: float) -> tuple[float | None, float | None, int, int]:
    """Share of the wrong ones below the threshold, share of the right ones below it, how many wrong and right."""
    wrong = [p for p, ok in rows if not ok]
    right = [p for p, ok in rows if ok]
    share = lambda ps: sum(p < threshold for p in ps) / len(ps) if ps else None  # noqa: E731 - a local helper
    return share(wrong), share(right), len(wrong), len(right)


def fitted(rows: list[tuple[float, bool]]) -> float:
    """The highest threshold of GRID that flags at most MAX_RIGHT_FLAGGED of the right words: the most wrong words
    flagged within that budget of right ones."""
    return max([t for t in GRID if (flagged(rows, t)[1] or 0) <= MAX_RIGHT_FLAGGED], default=GRID[0])


def youden(rows: list[tuple[float, bool]]) -> float:
    """The threshold of GRID that maximises wrong flagged minus right flagged (the lowest of equals), for comparison."""
    def j(t: float) -> float:
        wrong, right, _, _ = flagged(rows, t)
        return (wrong or 0) - (right or 0)
    return max(GRID, key=lambda t: (round(j(t), 6), -t))


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threshold", type=float, help="report this threshold (default: the one fitted on FIT)")
    args = parser.parse_args()
    folder, clips = load_manifest(None)
    clips = [c for c in clips if c["transcript"]]
    segments = transcribe(clips, folder)
    rows = {split: {kind: [] for kind in ("words", "sentences", "numbers")} for split in ("fit", "report")}
    for clip in clips:
        for kind, found in scored(clip, segments[clip["id"]]).items():
            rows[clip["split"]][kind] += found
    threshold = fitted(rows["fit"]["words"])
    chosen = args.threshold if args.threshold is not None else threshold
    print(f"clips: fit {sum(c['split'] == 'fit' for c in clips)}, report {sum(c['split'] == 'report' for c in clips)}; "
          f"threshold fitted on FIT words (the highest flagging at most {MAX_RIGHT_FLAGGED:.0%} of right words): "
          f"{threshold:.2f} (max wrong - right flagged, Youden: {youden(rows['fit']['words']):.2f}); "
          f"evidence.DOUBTFUL_WORD_PROBABILITY = {DOUBTFUL_WORD_PROBABILITY}")
    print("\nshare flagged (probability below the threshold): wrong / right  [wrong n, right n]")
    print(f"{'threshold':>9}  {'kind':<9}  {'FIT':>26}  {'REPORT':>26}")
    for t in sorted({0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, chosen}):
        for kind in ("words", "sentences", "numbers"):
            cells = []
            for split in ("fit", "report"):
                wrong, right, n_wrong, n_right = flagged(rows[split][kind], t)
                cells.append(f"{pct(wrong):>4} / {pct(right):>4}  [{n_wrong:>4}, {n_right:>4}]")
            print(f"{t:>8.2f}{'*' if t == chosen else ' '}  {kind:<9}  {cells[0]:>26}  {cells[1]:>26}")
    print(f"\nper clip at {chosen:.2f}: words wrong / right flagged  [wrong n, right n]; sentences the same")
    for clip in clips:
        found = scored(clip, segments[clip["id"]])
        words, sentences = flagged(found["words"], chosen), flagged(found["sentences"], chosen)
        print(f"{clip['id']:<20} {clip['split']:<6} {pct(words[0]):>4} / {pct(words[1]):>4}  [{words[2]:>3}, "
              f"{words[3]:>3}]   {pct(sentences[0]):>4} / {pct(sentences[1]):>4}  "
              f"[{sentences[2]:>3}, {sentences[3]:>3}]")
    print("\n* the threshold chosen")


if __name__ == "__main__":
    main()
