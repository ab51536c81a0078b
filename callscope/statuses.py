"""A recording's status, one enum for the catalog's column, the REST bodies and filters, the members' pages and
the webhooks; and the state of its audio's redaction. Each a `StrEnum`: each member is its string, so stored rows,
JSON and query strings need no conversion."""

from __future__ import annotations

from enum import StrEnum


class RecordingStatus(StrEnum):
    PENDING = "pending"  # uploaded, waiting for its analysis
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"


# an analysis reached an end: what may be re-analysed, and what a page stops refreshing for
FINISHED = (RecordingStatus.COMPLETED, RecordingStatus.FAILED)


class AudioRedaction(StrEnum):
    """The stored audio of a recording whose project redacts audio (the column is null where it does not)."""

    PENDING = "pending"  # the audio as uploaded, not yet redacted: never served
    DONE = "done"  # the redacted copy, served
