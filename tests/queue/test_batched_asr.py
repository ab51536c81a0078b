"""The batched Whisper path (faster-whisper's BatchedInferencePipeline, CALLSCOPE_WHISPER_BATCH_SIZE) transcribes
as well as the sequential one; on a GPU it is the fast path, here it runs on the CPU."""

from __future__ import annotations

from itertools import pairwise

import pytest

from callscope.analysis.stages.asr import transcriber_from_settings
from callscope.analysis.types import Audio
from callscope.config import Settings
from tests.analysis import speech

pytestmark = pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)


def test_batched_transcription_matches_the_speech() -> None:
    call = speech.make_call([0.3, speech.SENTENCES[1], 0.8, speech.SENTENCES[4], 0.3])
    transcriber = transcriber_from_settings(Settings(whisper_batch_size=4, whisper_device="auto"))
    assert transcriber._batched is not None

    segments = transcriber.transcribe(Audio(channels=(call.samples,)), 0, "en", None)

    assert speech.wer(call.text, " ".join(s.text for s in segments)) < 0.3
    words = [w for s in segments for w in s.words]
    assert words and all(a.start_ms <= b.start_ms for a, b in pairwise(words))  # timed, in order
