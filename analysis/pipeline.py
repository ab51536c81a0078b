"""The analysis pipeline on one recording: decode → VAD per channel → ASR per channel → dialogue (diarization
by channel) → pauses → characteristics.

Stages that are not available yet (diarization of a mono call by speaker embeddings, emotions, goals, summary)
are reported as not run in ``AnalysisResult.stages``, and every model a stage used is listed in
``AnalysisResult.models``: a result says what produced it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from callscope.analysis.characteristics import CallCharacteristics, characteristics
from callscope.analysis.dialogue import merge_channels, speaker_of
from callscope.analysis.pauses import PauseRules, find_pauses
from callscope.analysis.types import ModelInfo, PauseFinding, Segment
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from callscope.resources.kinds import ProjectSpec

Progress = Callable[[str, float], None]

# Share of the whole run each stage takes (ASR dominates); progress fractions are cumulative, 0..1.
_DECODE_END, _VAD_END, _ASR_END = 0.05, 0.15, 0.95


class WordOut(BaseModel):
    start_ms: int
    end_ms: int
    text: str
    probability: float


class SegmentOut(BaseModel):
    id: int
    channel: int
    speaker: str
    start_ms: int
    end_ms: int
    text: str
    words: list[WordOut] = Field(default_factory=list)

    @classmethod
    def of(cls, segment: Segment) -> SegmentOut:
        return cls.model_validate(dataclasses.asdict(segment))


class PauseOut(BaseModel):
    """A pause, with the public API's field names (after_dialogue_id) plus whether it is long."""

    start_ms: int
    end_ms: int
    duration_ms: int
    long: bool
    compliant: bool
    after_dialogue_id: int

    @classmethod
    def of(cls, pause: PauseFinding) -> PauseOut:
        return cls(start_ms=pause.start_ms, end_ms=pause.end_ms, duration_ms=pause.duration_ms, long=pause.long,
                   compliant=pause.compliant, after_dialogue_id=pause.after_segment_id)


class ModelOut(BaseModel):
    stage: str
    name: str
    version: str


class StageOut(BaseModel):
    name: str
    ran: bool
    detail: str = ""


class AnalysisResult(BaseModel):
    duration_ms: int
    channels: int
    language: str | None = Field(description="Transcription language: the project's, or None (detected by ASR).")
    speakers: list[str]
    dialogue: list[SegmentOut]
    pauses: list[PauseOut]
    pause_rules: PauseRules
    characteristics: CallCharacteristics
    models: list[ModelOut]
    stages: list[StageOut]


class AnalysisError(Exception):
    """A recording that cannot be analysed (missing, corrupt); the message is one line."""


def _one_line(exc: BaseException) -> str:
    text = getattr(exc, "detail", None) or getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())


class Pipeline:
    """The analysis stages with their models loaded once; ``run`` analyses one local file.

    The Whisper model is loaded on the first run (so a missing or corrupt file fails fast) and kept.
    ``transcriber`` may be given ready-made (tests, a process sharing one model).
    """

    def __init__(self, settings: Any, transcriber: Any | None = None) -> None:
        self.settings = settings
        self._transcriber = transcriber

    @property
    def transcriber(self):
        if self._transcriber is None:
            from callscope.analysis.asr import Transcriber
            from callscope.analysis.models import whisper_model_dir

            self._transcriber = Transcriber(
                whisper_model_dir(self.settings),
                compute_type=getattr(self.settings, "whisper_compute_type", "int8"),
                threads=getattr(self.settings, "analysis_threads", 2),
            )
        return self._transcriber

    def run(self, path: Path, project: ProjectSpec | None = None, progress: Progress | None = None) -> AnalysisResult:
        """Analyse the recording at ``path`` with the rules of ``project`` (a ProjectSpec, or None: defaults).

        ``progress(stage, fraction)`` is called as the run goes, fraction rising from 0 to 1.
        Raises AnalysisError when the file is missing or cannot be decoded.
        """
        from callscope.analysis import vad
        from callscope.analysis.decode import decode

        report = progress or (lambda stage, fraction: None)
        path = Path(path)
        report("decode", 0.0)
        if not path.is_file():
            raise AnalysisError(f"{path}: no such file")
        try:
            audio = decode(path)
        except Exception as exc:  # any decoder failure is "cannot decode"
            raise AnalysisError(f"{path}: cannot decode audio: {_one_line(exc)}") from exc
        channels = len(audio.channels)
        duration_ms = audio.duration_ms

        speech = []
        for channel in range(channels):
            report("vad", _DECODE_END + (_VAD_END - _DECODE_END) * channel / channels)
            speech.extend(vad.detect_speech(audio, channel))

        transcriber = self.transcriber
        language = getattr(project, "language", None) or None
        hints = getattr(project, "transcription_hints", None) or None
        per_channel: list[list[Segment]] = []
        for channel in range(channels):
            report("asr", _VAD_END + (_ASR_END - _VAD_END) * channel / channels)
            per_channel.append(transcriber.transcribe(audio, channel, language, hints))

        report("dialogue", _ASR_END)
        dialogue = merge_channels(per_channel)
        report("pauses", 0.97)
        rules = PauseRules.for_project(project)
        pauses = find_pauses(dialogue, speech, duration_ms, rules)
        report("characteristics", 0.99)
        traits = characteristics(dialogue, duration_ms)
        report("done", 1.0)

        speakers = [speaker_of(c) for c in range(channels)]
        if channels > 1:
            diarization = StageOut(name="diarization", ran=True,
                                   detail=f"by channel: {channels} channels, one speaker each ({', '.join(speakers)})")
        else:
            diarization = StageOut(name="diarization", ran=False,
                                   detail="mono recording: the whole call is one speaker, speaker-1; diarization "
                                          "by speaker embeddings is not available yet")
        models: list[ModelInfo] = [vad.MODEL, transcriber.info]
        return AnalysisResult(
            duration_ms=duration_ms,
            channels=channels,
            # An English-only Whisper model always transcribes English; a multilingual one detects it.
            language=language or (None if getattr(transcriber, "multilingual", True) else "en"),
            speakers=speakers,
            dialogue=[SegmentOut.of(s) for s in dialogue],
            pauses=[PauseOut.of(p) for p in pauses],
            pause_rules=rules,
            characteristics=traits,
            models=[ModelOut(stage=m.stage, name=m.name, version=m.version) for m in models],
            stages=[
                StageOut(name="decode", ran=True, detail=f"{channels} channel(s), 16 kHz"),
                StageOut(name="vad", ran=True, detail=f"{len(speech)} speech region(s)"),
                StageOut(name="asr", ran=True, detail=f"{len(dialogue)} segment(s)"),
                diarization,
                StageOut(name="pauses", ran=True, detail=f"{len(pauses)} pause(s)"),
                StageOut(name="characteristics", ran=True),
                StageOut(name="emotions", ran=False, detail="not available yet"),
                StageOut(name="goals", ran=False, detail="not available yet"),
                StageOut(name="summary", ran=False, detail="not available yet"),
            ],
        )
