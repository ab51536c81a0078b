"""What the members' pages call the stages of an analysis: a name a reader understands for each stage the pipeline
reports, not its internal name ("asr", "vad")."""

from __future__ import annotations


def test_every_stage_has_a_name_a_reader_understands() -> None:
    from callscope.analysis.runtime.pipeline import _STARTS
    from callscope.statuses import STAGE_NAMES, stage_name

    assert set(_STARTS) - {"done"} <= set(STAGE_NAMES)  # each stage the pipeline reports
    assert stage_name("asr") == "Transcribing" and stage_name(None) == "Waiting in the queue"
    assert stage_name("reanalysis_failed") == "Reanalysis failed"  # one not listed: its own name, readable
