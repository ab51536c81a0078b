"""The analysis pipeline on one recording: decode → VAD per channel → ASR per channel → diarization (by channel
for stereo, by speaker embeddings for mono) → speaker identification (roles, enrolled operators) → emotions →
pauses → characteristics → goals, categories, extracted fields → summary.

The stages are pure functions over audio and segments (the modules beside this one); this class only owns the
models they need and runs them in order. Models are given ready-made (a Ray actor's proxy, a test's shared model)
or loaded on first use from Settings; a model that is not installed or configured leaves its stages out, and a
language-model stage that fails leaves its part out: the recording still completes, and ``stages`` says what ran
and why not. Every model a stage used is listed in ``models``: a result says what produced it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from callscope.analysis.characteristics import CallCharacteristics, characteristics
from callscope.analysis.dialogue import merge_channels, split_at_gaps
from callscope.analysis.pauses import PauseRules, find_pauses
from callscope.analysis.speakers import SpeakerOut
from callscope.analysis.types import ModelInfo, PauseFinding, Segment
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from callscope.resources.kinds import ProjectSpec

log = structlog.get_logger()

Progress = Callable[[str, float], None]

# Where each stage starts, as a fraction of the whole run (ASR dominates on a CPU); progress rises 0 -> 1.
_STARTS = {"decode": 0.0, "vad": 0.03, "asr": 0.08, "diarization": 0.62, "speakers": 0.68, "emotions": 0.72,
           "pauses": 0.78, "characteristics": 0.79, "goals": 0.80, "categories": 0.84, "fields": 0.86,
           "summary": 0.90, "done": 1.0}
_UNSET: Any = object()


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
    emotions: dict[str, float] = Field(default_factory=dict)

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
    speakers: list[SpeakerOut]
    dialogue: list[SegmentOut]
    pauses: list[PauseOut]
    pause_rules: PauseRules
    characteristics: CallCharacteristics
    goals: list[dict[str, Any]] = Field(default_factory=list)
    categories: list[dict[str, Any]] = Field(default_factory=list)
    extracted_data: list[dict[str, Any]] = Field(default_factory=list)
    summary: str | None = None
    summary_language: str | None = None
    models: list[ModelOut]
    stages: list[StageOut]


class AnalysisError(Exception):
    """A recording that cannot be analysed (missing, corrupt); the message is one line."""


def _one_line(exc: BaseException) -> str:
    text = getattr(exc, "detail", None) or getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())


def _optional(factory: Callable[[], Any], what: str) -> Any:
    """A model that may be absent: None (logged once per load) when it is not installed or configured."""
    try:
        return factory()
    except (FileNotFoundError, ImportError) as exc:
        log.warning("analysis_model_unavailable", model=what, reason=_one_line(exc))
        return None


class Pipeline:
    """The analysis stages with their models loaded once; ``run`` analyses one local file."""

    def __init__(self, settings: Any, transcriber: Any = _UNSET, speakers: Any = _UNSET, embedder: Any = _UNSET,
                 llm: Any = _UNSET) -> None:
        self.settings = settings
        self._models = {"transcriber": transcriber, "speakers": speakers, "embedder": embedder, "llm": llm}

    def _model(self, name: str) -> Any:
        if self._models[name] is _UNSET:
            self._models[name] = load_model(name, self.settings)
        return self._models[name]

    @property
    def transcriber(self):
        return self._model("transcriber")

    def run(self, path: Path, project: ProjectSpec | None = None, progress: Progress | None = None,
            voices: list | None = None, called_on: date | None = None) -> AnalysisResult:
        """Analyse the recording at ``path`` with the rules of ``project`` (a ProjectSpec, or None: defaults).

        ``voices`` are the account's enrolled operator voiceprints (KnownVoice); ``called_on`` the call's date,
        which anchors dates said without a year or relative ones ("next Friday") in extracted fields. ``progress(stage, fraction)`` is
        called as the run goes. Raises AnalysisError when the file is missing or cannot be decoded.
        """
        from callscope.analysis import vad
        from callscope.analysis.decode import decode

        report = progress or (lambda stage, fraction: None)
        stages: list[StageOut] = []
        models: list[ModelInfo] = []
        path = Path(path)
        report("decode", _STARTS["decode"])
        if not path.is_file():
            raise AnalysisError(f"{path}: no such file")
        try:
            audio = decode(path)
        except Exception as exc:  # any decoder failure is "cannot decode"
            raise AnalysisError(f"{path}: cannot decode audio: {_one_line(exc)}") from exc
        channels, duration_ms = len(audio.channels), audio.duration_ms
        stages.append(StageOut(name="decode", ran=True, detail=f"{channels} channel(s), 16 kHz"))

        report("vad", _STARTS["vad"])
        speech = [region for channel in range(channels) for region in vad.detect_speech(audio, channel)]
        stages.append(StageOut(name="vad", ran=True, detail=f"{len(speech)} speech region(s)"))
        models.append(vad.MODEL)

        transcriber = self.transcriber
        language = getattr(project, "language", None) or None
        hints = getattr(project, "transcription_hints", None) or None
        rules = PauseRules.for_project(project)
        per_channel: list[list[Segment]] = []
        for channel in range(channels):
            report("asr", _STARTS["asr"] + (_STARTS["diarization"] - _STARTS["asr"]) * channel / channels)
            # one segment per utterance: a pause inside a Whisper segment cuts it (dialogue.split_at_gaps)
            per_channel.append(split_at_gaps(transcriber.transcribe(audio, channel, language, hints),
                                             rules.min_pause_ms))
        dialogue = merge_channels(per_channel)
        stages.append(StageOut(name="asr", ran=True, detail=f"{len(dialogue)} segment(s)"))
        models.append(transcriber.info)
        # An English-only Whisper model always transcribes English; a multilingual one detects it.
        language = language or (None if getattr(transcriber, "multilingual", True) else "en")

        report("diarization", _STARTS["diarization"])
        analyzer = self._model("speakers")
        if channels > 1:
            stages.append(StageOut(name="diarization", ran=True,
                                   detail=f"by channel: {channels} channels, one speaker each"))
        elif analyzer is None:
            stages.append(StageOut(name="diarization", ran=False,
                                   detail="no speaker encoder: the mono call is one speaker, speaker-1"))
        else:
            dialogue, found = analyzer.diarize(audio, [r for r in speech if r.channel == 0], dialogue)
            stages.append(StageOut(name="diarization", ran=True, detail=found.detail))

        report("speakers", _STARTS["speakers"])
        if analyzer is not None:
            speakers = analyzer.speakers(audio, dialogue, voices or None)
            models.append(analyzer.info)
            known = sum(1 for s in speakers if s.operator_id is not None)
            stages.append(StageOut(name="speakers", ran=True, detail=", ".join(
                f"{s.label}: {s.role}" for s in speakers) + (f"; {known} enrolled operator(s) recognised"
                                                            if voices else "; no enrolled voices")))
        else:
            from callscope.analysis.speakers import identify_speakers

            speakers = identify_speakers(dialogue, stereo=channels > 1,
                                         agent_channel=getattr(self.settings, "agent_channel", 0))
            stages.append(StageOut(name="speakers", ran=True, detail="roles from content and channel only"))
        roles = {s.label: s.role for s in speakers}

        report("emotions", _STARTS["emotions"])
        embedder = self._model("embedder")
        self._emotions(audio, dialogue, embedder, stages, models)

        report("pauses", _STARTS["pauses"])
        pauses = find_pauses(dialogue, speech, duration_ms, rules)
        stages.append(StageOut(name="pauses", ran=True, detail=f"{len(pauses)} pause(s)"))
        report("characteristics", _STARTS["characteristics"])
        traits = characteristics(dialogue, duration_ms)
        stages.append(StageOut(name="characteristics", ran=True))

        llm = self._model("llm")
        if llm is not None:
            models.append(llm.info)
        if embedder is not None:
            models.append(embedder.info)
        report("goals", _STARTS["goals"])
        goals = self._goals(project, dialogue, roles, embedder, llm, stages)
        report("categories", _STARTS["categories"])
        categories = self._categories(project, dialogue, embedder, stages)
        report("fields", _STARTS["fields"])
        fields = self._fields(project, dialogue, llm, called_on, stages)
        report("summary", _STARTS["summary"])
        summary_language = (getattr(project, "summary_language", None) or language or "en")
        summary = self._summary(dialogue, summary_language, roles, llm, stages)
        report("done", _STARTS["done"])

        return AnalysisResult(
            duration_ms=duration_ms, channels=channels, language=language, speakers=speakers,
            dialogue=[SegmentOut.of(s) for s in dialogue], pauses=[PauseOut.of(p) for p in pauses],
            pause_rules=rules, characteristics=traits, goals=goals, categories=categories, extracted_data=fields,
            summary=summary, summary_language=summary_language if summary is not None else None,
            models=[ModelOut(stage=m.stage, name=m.name, version=m.version) for m in dict.fromkeys(models)],
            stages=stages,
        )

    # ----- stages that depend on optional models ------------------------------------------------

    @staticmethod
    def _emotions(audio, dialogue: list[Segment], embedder, stages: list[StageOut], models: list[ModelInfo]) -> None:
        from callscope.analysis import emotions

        for segment, probabilities in zip(dialogue, emotions.segment_emotions(audio, dialogue, embedder)):
            segment.emotions = probabilities
        info = emotions.model_info(embedder)
        models.append(info)
        stages.append(StageOut(name="emotions", ran=True, detail=f"{info.name}: {len(dialogue)} segment(s)"))

    def _goals(self, project, dialogue, roles, embedder, llm, stages: list[StageOut]) -> list[dict]:
        goals = list(getattr(project, "goals", None) or [])
        if not goals:
            stages.append(StageOut(name="goals", ran=False, detail="the project defines no goals"))
            return []
        from callscope.analysis.goals import evaluate_goals

        verdicts = [_plain(v) for v in evaluate_goals(
            goals, dialogue, roles, embedder, llm,
            judge_with_model=bool(getattr(self.settings, "llm_judges_goals", False)))]
        stages.append(StageOut(name="goals", ran=True,
                               detail=f"{sum(1 for v in verdicts if v['met'])} of {len(verdicts)} met"
                               + ("" if embedder is not None else "; phrase rules only (no text embedding model)")
                               + ("" if llm is not None else "; explanations without a language model")))
        return verdicts

    @staticmethod
    def _categories(project, dialogue, embedder, stages: list[StageOut]) -> list[dict]:
        categories = list(getattr(project, "categories", None) or [])
        if not categories:
            stages.append(StageOut(name="categories", ran=False, detail="the project defines no categories"))
            return []
        from callscope.analysis.categories import classify

        found = [_plain(c) for c in classify(categories, dialogue, embedder)]
        stages.append(StageOut(name="categories", ran=True,
                               detail=f"{sum(1 for c in found if c['matched'])} of {len(found)} matched"
                               + ("" if embedder is not None else "; keywords only (no text embedding model)")))
        return found

    def _fields(self, project, dialogue, llm, called_on: date | None, stages: list[StageOut]) -> list[dict]:
        fields = list(getattr(project, "fields", None) or [])
        if not fields:
            stages.append(StageOut(name="fields", ran=False, detail="the project defines no fields"))
            return []
        from callscope.analysis.fields import extract_fields
        from callscope.analysis.language_model import LanguageModelError

        region = getattr(self.settings, "default_phone_region", "US")
        try:
            found = [_plain(f) for f in extract_fields(fields, dialogue, llm, region=region, reference_date=called_on)]
        except LanguageModelError as exc:  # the deterministic extractors still answer
            log.warning("fields_language_model_failed", error=_one_line(exc))
            found = [_plain(f) for f in extract_fields(fields, dialogue, None, region=region,
                                                       reference_date=called_on)]
        stages.append(StageOut(name="fields", ran=True,
                               detail=f"{sum(1 for f in found if f['value'] is not None)} of {len(found)} found"
                               + ("" if llm is not None else "; typed extractors only (no language model)")))
        return found

    @staticmethod
    def _summary(dialogue, language: str, roles: dict[str, str], llm, stages: list[StageOut]) -> str | None:
        if llm is None:
            stages.append(StageOut(name="summary", ran=False, detail="no language model installed or configured"))
            return None
        if not dialogue:
            stages.append(StageOut(name="summary", ran=False, detail="no speech to summarise"))
            return None
        from callscope.analysis.language_model import LanguageModelError
        from callscope.analysis.summary import summarize

        try:
            result = summarize(dialogue, language, llm, roles=roles)  # roles keep a small model from swapping them
        except LanguageModelError as exc:
            stages.append(StageOut(name="summary", ran=False, detail=f"language model failed: {_one_line(exc)}"))
            return None
        detail = f"in {language}" + (f"; not found in the transcript: {', '.join(result.unsupported)}"
                                     if result.unsupported else "")
        stages.append(StageOut(name="summary", ran=True, detail=detail))
        return result.text


def _plain(item: Any) -> dict:
    """A stage's result item as plain JSON-ready data (pydantic model, dataclass or dict)."""
    if isinstance(item, BaseModel):
        return item.model_dump(mode="json")
    if dataclasses.is_dataclass(item):
        return dataclasses.asdict(item)
    return dict(item)


# Pipeline keyword -> factory (module:function) building the model object from Settings. Ray actors own one each
# (analysis/actors.py); inline, the Pipeline loads them on first use.
MODELS = {
    "transcriber": "callscope.analysis.asr:transcriber_from_settings",
    "speakers": "callscope.analysis.speakers:load_speaker_analyzer",
    "embedder": "callscope.analysis.text_embedding:text_embedder_from_settings",
    "llm": "callscope.analysis.language_model:language_model_from_settings",
}
OPTIONAL = frozenset({"speakers", "embedder", "llm"})  # the pipeline runs without these (fewer stages)


def load_model(name: str, settings: Any) -> Any:
    """Build the model ``name`` of MODELS from settings; None for an optional one that is not available."""
    import importlib

    module, function = MODELS[name].split(":")
    factory = getattr(importlib.import_module(module), function)
    return _optional(lambda: factory(settings), name) if name in OPTIONAL else factory(settings)
