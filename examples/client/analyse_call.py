"""Upload a call, wait for its analysis and print its summary and transcript, with a client generated from the
served OpenAPI document (docs/api.md, "Generating a client"); there is no hand-kept SDK:

    openapi-python-client generate --url "$CALLSCOPE_URL/api/v1/public/openapi.json" \\
        --config examples/client/openapi-python-client.yaml
    PYTHONPATH=callscope-client python examples/client/analyse_call.py call.wav --project-id 1

CALLSCOPE_URL (default http://127.0.0.1:8080) says where the service is, CALLSCOPE_KEY the API key (read and
write permissions). tests/test_generated_client.py runs it against a live server."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import httpx
from callscope_client import AuthenticatedClient
from callscope_client.api.recordings import (
    get_recording,
    get_recording_summary,
    get_recording_transcription,
    upload_recording,
)
from callscope_client.models import (
    Recording,
    RecordingStatus,
    RecordingSummary,
    RecordingTranscription,
    RecordingUpload,
)
from callscope_client.types import File

DONE = (RecordingStatus.COMPLETED, RecordingStatus.FAILED)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("audio", type=Path, help="the call: MP3, WAV, FLAC, M4A, OGG or WebM")
    parser.add_argument("--project-id", type=int, required=True, help="the project to upload into")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for the analysis")
    args = parser.parse_args()
    client = AuthenticatedClient(base_url=os.environ.get("CALLSCOPE_URL", "http://127.0.0.1:8080"),
                                 token=os.environ["CALLSCOPE_KEY"], timeout=httpx.Timeout(60))
    with client:
        # 1. Upload (multipart/form-data): the recording starts pending and is analysed in the background.
        with args.audio.open("rb") as audio:
            form = RecordingUpload(project_id=args.project_id, file=File(payload=audio, file_name=args.audio.name))
            uploaded = upload_recording.sync(client=client, body=form)
        if not isinstance(uploaded, Recording):
            print(f"Upload refused: {uploaded}", file=sys.stderr)
            return 1
        public_id = uploaded.data.public_id
        print(f"Uploaded {public_id} ({uploaded.data.duration_ms / 1000:.1f} s of audio)")

        # 2. Poll the recording until its analysis has completed (or failed).
        deadline = time.monotonic() + args.timeout
        recording = uploaded
        while recording.data.status not in DONE:
            if time.monotonic() > deadline:
                print(f"Still {recording.data.status} after {args.timeout:.0f} s", file=sys.stderr)
                return 1
            time.sleep(1)
            polled = get_recording.sync(public_id, client=client)
            if not isinstance(polled, Recording):
                print(f"Polling failed: {polled}", file=sys.stderr)
                return 1
            recording = polled
        if recording.data.status == RecordingStatus.FAILED:
            print(f"Analysis failed: {recording.data.status_reason}", file=sys.stderr)
            return 1

        # 3. The read-outs.
        summary = get_recording_summary.sync(public_id, client=client)
        transcription = get_recording_transcription.sync(public_id, client=client)
        if not isinstance(summary, RecordingSummary) or not isinstance(transcription, RecordingTranscription):
            print(f"Reading the analysis failed: {summary} {transcription}", file=sys.stderr)
            return 1
        print(f"Summary: {summary.data.summary or '(none: the service runs without a language model)'}")
        print("Transcript:")
        for segment in transcription.data.segments:
            print(f"  [{segment.start_ms / 1000:6.1f} s] {segment.speaker}: {segment.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
