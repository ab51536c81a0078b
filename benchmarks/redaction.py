"""Recall and precision of the redaction stage (analysis/stages/redaction.py) per entity type, on scripted calls.

The calls are benchmarks/data/redaction_calls.json: short dialogues, each entity type said in each spoken form
(digits one by one, in groups, "double four", "oh", numbers in words, written), with its words marked, and calls
of distractors (order, tracking, model and case numbers, prices, times, counts, appointment dates). Each call is
in the "fit" part (read while the rules were written) or the "report" part (written with them, not tuned on).
The text is split on spaces into timed words; later the same calls can go through synthesised speech and ASR.

A true span is found when at least half its words are found with its type; a found span is right when at least
half its words are inside true spans of its type. Word figures count words. Targets on the report part: payment
cards recall >= 99 %, the other types >= 95 %, precision >= 90 %.

How to run (repository root)::

    .venv/bin/python -P benchmarks/redaction.py            # both parts
    .venv/bin/python -P benchmarks/redaction.py --misses   # and each miss and false alarm
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from callscope.analysis.result import TranscriptSegment, TranscriptWord
from callscope.analysis.stages.redaction import ENTITY_TYPES, EntityType, RedactedSpan, find_spans

DATA = Path(__file__).parent / "data" / "redaction_calls.json"
WORD_MS, GAP_MS, TURN_GAP_MS = 300, 60, 600


def segments(turns: list[list[str]]) -> list[TranscriptSegment]:
    out, t = [], 0
    for index, (speaker, text) in enumerate(turns):
        words = []
        for w in text.split():
            words.append(TranscriptWord(start_ms=t, end_ms=t + WORD_MS, text=" " + w, probability=0.9))
            t += WORD_MS + GAP_MS
        out.append(TranscriptSegment(id=index, speaker=speaker, channel=int(speaker[-1]) - 1,
                                     start_ms=words[0].start_ms, end_ms=words[-1].end_ms, text=text, words=words))
        t += TURN_GAP_MS
    return out


def word_range(text: str, sub: str, occurrence: int = 0) -> tuple[int, int]:
    """First and last word (split on spaces) of text that the substring sub touches."""
    at = -1
    for _ in range(occurrence + 1):
        at = text.index(sub, at + 1)
    first = last = -1
    pos = 0
    for i, w in enumerate(text.split()):
        pos = text.index(w, pos)
        if pos < at + len(sub) and pos + len(w) > at:
            first = i if first < 0 else first
            last = i
        pos += len(w)
    return first, last


Words = set[tuple[int, int]]  # (segment, word)


def truth(call: dict) -> dict[EntityType, list[Words]]:
    out: dict[EntityType, list[Words]] = {e: [] for e in ENTITY_TYPES}
    for turn, sub, entity, *occurrence in call["spans"]:
        first, last = word_range(call["turns"][turn][1], sub, *occurrence)
        out[EntityType(entity)].append({(turn, w) for w in range(first, last + 1)})
    return out


def words_of(span: RedactedSpan) -> Words:
    return {(span.segment, w) for w in range(span.first_word, span.last_word + 1)}


def score(calls: list[dict], misses: bool) -> tuple[dict[EntityType, list[int]], float, int]:
    # per type: true spans, found, found spans, right, true words, found words, right words
    counts = {e: [0] * 7 for e in ENTITY_TYPES}
    elapsed, words = 0.0, 0
    for call in calls:
        said = segments(call["turns"])
        words += sum(len(s.words) for s in said)
        started = time.perf_counter()
        spans = find_spans(said, ENTITY_TYPES, region=call.get("region", "US"))
        elapsed += time.perf_counter() - started
        true = truth(call)
        for e in ENTITY_TYPES:
            mine = [words_of(s) for s in spans if s.entity == e]
            all_true: Words = set().union(*true[e]) if true[e] else set()
            all_mine: Words = set().union(*mine) if mine else set()
            c = counts[e]
            c[0] += len(true[e])
            c[2] += len(mine)
            c[4] += len(all_true)
            c[5] += len(all_mine)
            c[6] += len(all_true & all_mine)
            for t in true[e]:
                hit = len(t & all_mine) * 2 >= len(t)
                c[1] += hit
                if not hit and misses:
                    print(f"  miss   {call['id']} {e}: {_quote(said, t)!r}")
            for m in mine:
                right = len(m & all_true) * 2 >= len(m)
                c[3] += right
                if not right and misses:
                    print(f"  false  {call['id']} {e}: {_quote(said, m)!r}")
    return counts, elapsed, words


def _quote(said: list[TranscriptSegment], words: Words) -> str:
    return " / ".join(" ".join(said[s].words[w].text.strip() for w in sorted(w for t, w in words if t == s))
                      for s in sorted({t for t, _ in words}))


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:6.1f}" if b else "     -"


def report(name: str, calls: list[dict], misses: bool) -> None:
    print(f"\n{name}: {len(calls)} calls")
    counts, elapsed, words = score(calls, misses)
    print(f"{'type':<15}{'spans':>6}{'recall %':>10}{'precision %':>13}{'word recall %':>15}{'word precision %':>18}")
    for e, (spans, found, mine, right, tw, mw, rw) in counts.items():
        print(f"{e:<15}{spans:>6}{_pct(found, spans):>10}{_pct(right, mine):>13}{_pct(rw, tw):>15}"
              f"{_pct(rw, mw):>18}")
    print(f"{words} words in {elapsed * 1000:.0f} ms ({elapsed / max(words, 1) * 150 * 1000:.1f} ms per minute of "
          "speech at 150 words a minute)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--misses", action="store_true", help="print each miss and false alarm")
    args = parser.parse_args()
    calls = json.loads(DATA.read_text())
    for part in ("fit", "report"):
        report(part, [c for c in calls if c["split"] == part], args.misses)


if __name__ == "__main__":
    main()
