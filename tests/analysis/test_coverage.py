"""analysis.coverage: the rule that says whether a summary states a key point, on the hand-labelled pairs of
tests/analysis/key_points.py (fitted on FIT, measured on REPORT), and the key-point data's shape."""

from __future__ import annotations

from callscope.analysis.coverage import COVERAGE_THRESHOLD, KeyPoint, coverage, has_words, similarities, stated
from tests.analysis.key_points import FIT_PAIRS, KEY_POINTS, REPORT_PAIRS, point


def _verdicts(pairs, embedder) -> list[tuple[bool, bool]]:
    """(labelled, found) of each pair."""
    return [(label, stated(sentence, [point(call, index)], embedder)[0]) for sentence, call, index, label in pairs]


def test_the_rule_counts_no_fit_pair_wrongly_and_misses_one(embedder):
    verdicts = _verdicts(FIT_PAIRS, embedder)
    assert not any(found and not label for label, found in verdicts)  # the threshold's choice
    assert sum(label and not found for label, found in verdicts) == 1  # "There were two payments of $49.99" (0.43)


def test_the_rule_holds_on_the_report_pairs(embedder):
    verdicts = _verdicts(REPORT_PAIRS, embedder)
    right = sum(label == found for label, found in verdicts)
    # measured: 20 of 22 (a quote of the wrong password prompt counted, a sentence with "the agent, Diane" missed)
    assert right >= len(verdicts) - 2, verdicts


def test_both_words_and_meaning_are_needed(embedder):
    technician = KeyPoint("A technician will visit tomorrow morning.",
                          (("technician", "visit"), ("tomorrow", "morning")))
    assert has_words("The technician comes tomorrow.", technician)
    assert not has_words("The technician was booked.", technician)  # no "tomorrow" or "morning"
    close = "A technician will come tomorrow morning between eight and twelve."
    assert similarities([close], [technician], embedder)[0, 0] >= COVERAGE_THRESHOLD
    assert coverage(f"The customer thanked the agent. {close}", [technician], embedder) == 1.0
    assert coverage("", [technician], embedder) == 0.0 and coverage("Anything.", [], embedder) == 1.0


def test_every_call_has_key_points_and_a_split():
    assert {c.split for c in KEY_POINTS.values()} == {"fit", "report"}
    for name, call in KEY_POINTS.items():
        assert 3 <= len(call.points) <= 4, name  # a summary of three or four sentences can state them all
        assert all(p.words and all(p.words) for p in call.points), name
    for _sentence, call, index, _label in FIT_PAIRS + REPORT_PAIRS:
        assert index < len(KEY_POINTS[call].points)
    assert all(KEY_POINTS[call].split == "fit" for _, call, _, _ in FIT_PAIRS)
    assert all(KEY_POINTS[call].split == "report" for _, call, _, _ in REPORT_PAIRS)
