"""Usefulness and faithfulness of the call summary, per benchmark call: key-point coverage, unsupported sentences,
words and seconds.

What it measures
----------------
Calls (English; key points and their fit/report split in tests/analysis/key_points.py):

* synthetic, espeak-ng (tests/analysis/voices.py's first voice pair): the address-change support call of
  benchmarks/speed.py and faithfulness.py, mono, 1 and 5 minutes (its dialogue repeated); the internet-outage call
  (OUTAGE_AGENT, OUTAGE_CUSTOMER: a technician's visit booked), mono and stereo;
* real speech (scripts/fetch_real_speech.py's English clips): the pyannote.audio conversation between two women
  (en-call-mono, and en-call-phone, its 8 kHz μ-law rendering) and the two clips of read phone-system prompts;
* written (no audio; the roles the speakers stage finds from the words): BILLING_CALL and DENTAL_CALL of
tests/analysis/transcripts.py, and the
  support dialogue repeated to 60 minutes (for the seconds of a long call; it has the support call's key points).

Each call's audio is analysed once by the pipeline without its language model (transcript and speaker roles,
cached under ~/.cache/callscope/summary-coverage/ so that before and after read the same transcript); then the
summary stage alone (`summary.summarize`, the text embedder checking its sentences and the claim judge reading them
where CALLSCOPE_LLM_CHECKS_CLAIMS is on, as the pipeline does for an English call) runs ``--runs`` times with the
language model's KV cache emptied first, the best time kept: its
seconds are the stage's whole cost on a call whose transcript no other stage evaluated (the pipeline's fields
stage may have evaluated a shared prefix before it). Printed per call:

* coverage: the share of the call's key points the summary states (analysis/coverage.py's rule);
* unsupported: the summary's sentences analysis/stages/faithfulness.py's checker finds unsupported, of all its
sentences;
* words, seconds, and the tokens of the stage's requests to the model (the brief's and the judge's): prompt tokens
  evaluated + tokens generated =
  the seconds they take on 2 quiet CPUs (25 ms and 100 ms each): a figure the machine's load does not disturb;
* how the summary was made (the stage's method), and the summary itself.

Totals: the key points stated of all key points, on the fit calls and on the report calls.

Before and after: ``--code DIR`` summarises with the `analysis` package in DIR (e.g. the previous commit's:
``git archive HEAD analysis | tar -x -C /tmp/before``); the coverage rule, checker and key points are this tree's.
``--save FILE`` writes the figures as JSON, ``--baseline FILE`` prints them beside a saved run ("before > now").

How to run (repository root; after scripts/fetch_real_speech.py; needs espeak-ng)::

    .venv/bin/python -P benchmarks/summary_coverage.py --code /tmp/before --save /tmp/coverage-before.json
    .venv/bin/python -P benchmarks/summary_coverage.py --baseline /tmp/coverage-before.json --runs 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks.*, scripts.*, tests.analysis.*

from callscope.analysis.coverage import stated
from callscope.analysis.result import TranscriptSegment
from callscope.analysis.stages.faithfulness import SupportChecker, split_sentences
from callscope.analysis.stages.speakers import identify_speakers
from callscope.config import Settings
from callscope.resources.kinds import ProjectSpec
from tests.analysis.key_points import KEY_POINTS

# A prompt token evaluated and a token generated, seconds on this machine's 2 CPUs when quiet (language_model.py).
QUIET_PROMPT_S, QUIET_TOKEN_S = 0.025, 0.1
# call -> (its key points, how it is made: "synthetic", "outage", "real", "written")
CALLS = {
    "support 1 min mono": ("support", "synthetic"),
    "support 5 min mono": ("support", "synthetic"),
    "outage mono": ("outage", "outage"),
    "outage stereo": ("outage", "outage"),
    "en-call-mono": ("en-call", "real"),
    "en-call-phone": ("en-call", "real"),
    "en-read-a-mono": ("en-read-a", "real"),
    "en-read-b-mono": ("en-read-b", "real"),
    "billing (written)": ("billing", "written"),
    "dental (written)": ("dental", "written"),
    "support 60 min (written)": ("support", "written"),
}


def cache_folder() -> Path:
    return Path.home() / ".cache" / "callscope" / "summary-coverage"


def outage_call(folder: Path, stereo: bool) -> Path:
    """The outage script, agent first, 0.6 s between turns: one channel, or the agent left and the customer right."""
    from tests.analysis import speech
    from tests.analysis.voices import OUTAGE_AGENT, OUTAGE_CUSTOMER, VOICE_PAIRS

    channels: list[list[np.ndarray]] = [[], []]
    for i in range(2 * len(OUTAGE_AGENT)):
        who = i % 2
        spoken = speech.speak((OUTAGE_AGENT, OUTAGE_CUSTOMER)[who][i // 2], VOICE_PAIRS[0][who])
        channels[who] += [spoken, speech.silence(0.6)]
        channels[1 - who] += [np.zeros(len(spoken), dtype=np.float32), speech.silence(0.6)]
    left, right = (np.concatenate(c) for c in channels)
    name = "outage-stereo.wav" if stereo else "outage-mono.wav"
    return speech.write(folder / name, [left, right] if stereo else [left + right])


def audio_of(call: str, folder: Path) -> Path:
    from benchmarks.faithfulness import synthetic_call
    from scripts.fetch_real_speech import cache_dir

    kind = CALLS[call][1]
    if kind == "synthetic":
        return synthetic_call(folder, float(call.split()[1]))
    if kind == "outage":
        return outage_call(folder, "stereo" in call)
    return cache_dir() / "clips" / f"{call}.wav"


def written(call: str) -> tuple[list[TranscriptSegment], dict[str, str]]:
    from benchmarks.speed import dialogue
    from tests.analysis.transcripts import BILLING_CALL, DENTAL_CALL, segments

    if call.startswith("support"):
        turns = [(f"speaker-{who + 1}", line) for who, line, _ in dialogue(60)]
    else:
        turns = BILLING_CALL if call.startswith("billing") else DENTAL_CALL
    dialogue_segments = segments(turns)
    # the roles the pipeline's speakers stage finds from the words alone (no audio, no voiceprints)
    found = identify_speakers(dialogue_segments, stereo=False)
    return dialogue_segments, {speaker.label: speaker.role for speaker in found}


def transcript(call: str, pipeline, folder: Path) -> tuple[list[TranscriptSegment], dict[str, str]]:
    """The call's segments and roles: the pipeline's (cached), or the written call's."""
    if CALLS[call][1] == "written":
        return written(call)
    cached = cache_folder() / f"{call.replace(' ', '-')}.json"
    if not cached.is_file():
        result = pipeline.run(audio_of(call, folder), ProjectSpec(name="Coverage", language="en"))
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps({"segments": [s.model_dump(mode="json") for s in result.segments],
                                      "roles": {s.label: s.role for s in result.speakers}}))
    data = json.loads(cached.read_text())
    return [TranscriptSegment.model_validate(s) for s in data["segments"]], data["roles"]


class _Counted:
    """The language model, its requests' tokens summed (the brief's and the claim judge's): [prompt tokens
    evaluated, tokens generated] of a LlamaCppModel; None for another back end."""

    def __init__(self, llm):
        self.llm, self.info, self.context_tokens = llm, llm.info, llm.context_tokens
        self.tokens: list[int] | None = [0, 0] if hasattr(llm, "last_request") else None

    def _count(self) -> None:
        request = self.llm.last_request
        if self.tokens is not None and request is not None:
            self.tokens[0] += request.prompt_tokens - request.reused_tokens
            self.tokens[1] += request.generated_tokens

    def generate_json(self, prompt: str, schema: dict, max_tokens: int = 512) -> dict:
        try:
            return self.llm.generate_json(prompt, schema, max_tokens)
        finally:
            self._count()

    def yes_probabilities(self, head: str, questions) -> list[float]:
        try:
            return self.llm.yes_probabilities(head, questions)
        finally:
            self._count()


def measure(call: str, segments, roles, llm, embedder, runs: int, judge: bool) -> dict:
    from callscope.analysis.stages.summary import summarize

    best = None
    for _ in range(runs):
        if getattr(llm, "_llama", None) is not None:
            llm._llama.reset()  # an empty KV cache: nothing of the previous call is reused
        counted = _Counted(llm)
        start = time.perf_counter()
        result = summarize(segments, "en", counted, roles=roles, embedder=embedder, judge=judge)
        seconds = time.perf_counter() - start
        if best is None or seconds < best[0]:
            best = (seconds, result, counted.tokens)
    seconds, result, tokens = best
    points = KEY_POINTS[CALLS[call][0]]
    sentences = split_sentences(result.text)
    checks = SupportChecker(segments, embedder).check(sentences)
    return {"split": points.split, "stated": stated(result.text, points.points, embedder),
            "unsupported": [c.sentence for c in checks if not c.supported()], "sentences": len(sentences),
            "words": len(result.text.split()), "seconds": seconds, "method": result.method, "summary": result.text,
            # the requests' tokens: their cost on a quiet machine, whatever the load (LlamaCppModel only)
            "tokens": tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, help="summarise with DIR/analysis (e.g. the previous commit's)")
    parser.add_argument("--runs", type=int, default=1, help="timed summaries of each call; the best is kept")
    parser.add_argument("--calls", nargs="*", choices=list(CALLS), default=list(CALLS))
    parser.add_argument("--save", type=Path)
    parser.add_argument("--baseline", type=Path)
    args = parser.parse_args()
    settings = Settings()
    from callscope.analysis.runtime.pipeline import Pipeline, load_model

    pipeline = Pipeline(settings, llm=None)
    with tempfile.TemporaryDirectory(prefix="callscope-coverage-") as tmp:
        transcripts = {call: transcript(call, pipeline, Path(tmp)) for call in args.calls}
    embedder = load_model("embedder", settings)
    if args.code:
        from benchmarks.faithfulness import use_code

        use_code(args.code.resolve())
        from callscope.analysis.runtime.pipeline import load_model
    llm = load_model("llm", settings)
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; code: {args.code or 'this tree'}; "
          f"language model: {llm.info.name if llm else 'none'}")
    figures = {}
    for call in args.calls:
        figures[call] = measure(call, *transcripts[call], llm, embedder, args.runs, settings.llm_checks_claims)
        print(f"  {call}: {figures[call]['seconds']:.1f} s", flush=True)
    report(figures, json.loads(args.baseline.read_text()) if args.baseline else None)
    if args.save:
        args.save.write_text(json.dumps(figures, indent=1))


def report(now: dict, before: dict | None) -> None:
    def cells(f: dict) -> list[str]:
        tokens = f.get("tokens")
        quiet = (f"{tokens[0]}+{tokens[1]}={QUIET_PROMPT_S * tokens[0] + QUIET_TOKEN_S * tokens[1]:.1f}" if tokens
                 else "-")
        return [f"{sum(f['stated'])}/{len(f['stated'])}", f"{len(f['unsupported'])}/{f['sentences']}",
                str(f["words"]), f"{f['seconds']:.1f}", quiet, f["method"]]

    heads = ["coverage", "unsupported", "words", "seconds", "tokens=quiet s", "method"]
    print("\nper call" + (" (before > now)" if before else ""))
    print(f"  {'call':26}{'split':>7}" + "".join(f"{h:>22}" for h in heads))
    for call, f in now.items():
        old = (before or {}).get(call)
        row = [f"{o} > {n}" if old else n for n, o in zip(cells(f), cells(old) if old else cells(f), strict=True)]
        print(f"  {call:26}{f['split']:>7}" + "".join(f"{c:>22}" for c in row))
    for split in ("fit", "report"):
        def total(figures: dict, split=split) -> str:
            marks = [m for f in figures.values() if f["split"] == split for m in f["stated"]]
            bad = sum(len(f["unsupported"]) for f in figures.values() if f["split"] == split)
            return f"{sum(marks)}/{len(marks)} ({100 * sum(marks) / max(len(marks), 1):.0f} %), {bad} unsupported"
        old = {c: before[c] for c in now if c in before} if before else None
        print(f"  {split} calls: key points stated {(total(old) + ' > ') if old else ''}{total(now)}")
    for call, f in now.items():
        print(f"\n  {call}: {f['summary']}")
        if before and call in before:
            print(f"    before: {before[call]['summary']}")
        for sentence in f["unsupported"]:
            print(f"    unsupported: {sentence}")


if __name__ == "__main__":
    main()
