"""Enrolling an operator's voice from a file: decode, find the speech, make the voiceprint."""

from __future__ import annotations

from pathlib import Path

from callscope.analysis.stages import vad
from callscope.analysis.stages.decode import decode
from callscope.analysis.stages.speakers import SpeakerAnalyzer, VoiceprintData


def enroll_file(analyzer: SpeakerAnalyzer, path: Path, channel: int = 0) -> VoiceprintData:
    """The voiceprint of the speech on `channel` of `path`. Raises EnrollmentError under 10 s of speech,
    ValueError for a channel the file does not have, and the decoder's errors for an unreadable file."""
    audio = decode(Path(path))
    if not 0 <= channel < len(audio.channels):
        raise ValueError(f"{path} has {len(audio.channels)} channel(s): no channel {channel}")
    return analyzer.enroll(audio, vad.detect_speech(audio, channel), channel)
