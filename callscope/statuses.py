"""A recording's status, one enum for the catalog's column, the REST bodies and filters, the members' pages and
the webhooks; what the pages call each stage of its analysis; and the state of its audio's redaction. Each a
`StrEnum`: each member is its string, so stored rows, JSON and query strings need no conversion."""

from __future__ import annotations

from enum import StrEnum


class RecordingStatus(StrEnum):
    PENDING = "pending"  # uploaded, waiting for its analysis
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"


# an analysis reached an end: what may be re-analysed, and what a page stops refreshing for
FINISHED = (RecordingStatus.COMPLETED, RecordingStatus.FAILED)


# The stages as the members' pages name them; the API's `stage` stays the pipeline's own name (analysis/runtime/
# pipeline.py) and the job queue's (callscope/catalog/jobs.py).
STAGE_NAMES = {
    "queued": "Waiting in the queue", "reanalyzing": "Waiting to be analysed again", "retrying": "Waiting to try again",
    "decode": "Reading the audio", "vad": "Finding the speech", "asr": "Transcribing",
    "diarization": "Telling the speakers apart", "speakers": "Recognising the speakers", "redaction": "Redacting",
    "emotions": "Reading the tone of voice", "pauses": "Measuring the pauses", "characteristics": "Counting talk time",
    "goals": "Checking the goals", "categories": "Finding the categories", "fields": "Extracting the fields",
    "summary": "Writing the summary", "done": "Storing the results",
}


def stage_name(stage: str | None) -> str:
    """A stage of an analysis as a reader understands it (one this list lacks: its own name, readable)."""
    return STAGE_NAMES.get(stage or "queued") or (stage or "").replace("_", " ").capitalize()


class AudioRedaction(StrEnum):
    """The stored audio of a recording whose project redacts audio (the column is null where it does not)."""

    PENDING = "pending"  # the audio as uploaded, not yet redacted: never served
    DONE = "done"  # the redacted copy, served
