"""The analysis pipeline on one recording: decode → VAD per channel → language → ASR per channel (where it runs on a
GPU, a mono call's speaker turns found from its audio beside it) → diarization (by channel for stereo; for mono the
words given to the speaker turns) → speaker identification (roles, enrolled operators) → emotions → pauses →
characteristics → goals, categories, extracted fields → summary; where the project redacts, redaction right after the
speakers, so that every later stage and the language model read the redacted transcript.

The stages are pure functions over audio and segments (the modules beside this one), each returning a part of the
one result model (result.py); this class only owns the models they need, runs them in order and assembles the
``AnalysisResult``. Models are given ready-made (a Ray actor's proxy, a test's shared model) or loaded on first use
from Settings; a model that is not installed or configured leaves its stages out, and a language-model stage that
fails leaves its part out: the recording still completes, and ``stages`` says what ran and why not. Every model a
stage used is listed in ``models``: a result says what produced it.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from callscope import tracing
from callscope.analysis.models.language_model import LanguageModelError
from callscope.analysis.result import (
    AnalysisResult,
    CategoryResult,
    ExtractedValue,
    GoalResult,
    IdentifiedSpeaker,
    ModelUsed,
    Pause,
    PauseRules,
    RedactionSummary,
    StageRun,
    TranscriptSegment,
)
from callscope.analysis.runtime.idle import IdleModels
from callscope.analysis.stages import diarize_by_voice, emotions, vad
from callscope.analysis.stages.asr import site_model_settings
from callscope.analysis.stages.categories import classify
from callscope.analysis.stages.characteristics import characteristics
from callscope.analysis.stages.decode import decode
from callscope.analysis.stages.diarize_by_channel import merge_channels, split_at_gaps
from callscope.analysis.stages.evidence import DOUBTFUL_WORD_PROBABILITY
from callscope.analysis.stages.faithfulness import extractive_summary
from callscope.analysis.stages.fields import extract_fields, with_confidence
from callscope.analysis.stages.goals import evaluate_goals
from callscope.analysis.stages.pauses import find_pauses, rules_for
from callscope.analysis.stages.redaction import Redaction, redact, redact_fields
from callscope.analysis.stages.speakers import identify_speakers
from callscope.analysis.stages.summary import summarize
from callscope.analysis.stages.timing import to_speech
from callscope.analysis.stored import draft_document
from callscope.analysis.types import Audio, SpeechRegion, language_code
from callscope.config import Settings
from callscope.errors import one_line

if TYPE_CHECKING:
    from callscope.analysis.stages.diarize_by_voice import SpeakerTurns
    from callscope.resources.kinds import ProjectSpec

log = structlog.get_logger()

Progress = Callable[[str, float], None]
# Told the transcript once it is final (speakers found, redacted), before the later stages: a reader sees it while
# goals, fields and the summary are worked out (analysis/stored.py draft_document's shape).
Transcribed = Callable[[dict[str, Any]], None]

# Where each stage starts, as a fraction of the whole run (ASR dominates on a CPU); progress rises 0 -> 1.
_STARTS = {"decode": 0.0, "vad": 0.03, "asr": 0.08, "diarization": 0.62, "speakers": 0.68, "redaction": 0.70,
           "emotions": 0.72,
           "pauses": 0.78, "characteristics": 0.79, "goals": 0.80, "categories": 0.84, "fields": 0.86,
           "summary": 0.90, "done": 1.0}
_UNSET: Any = object()


class AnalysisError(Exception):
    """A recording that cannot be analysed (missing, corrupt); the message is one line."""


def _optional(factory: Callable[[], Any], what: str) -> Any:
    """A model that may be absent: None (logged once per load) when it is not installed or configured."""
    try:
        return factory()
    except (FileNotFoundError, ImportError) as exc:
        log.warning("analysis_model_unavailable", model=what, reason=one_line(exc))
        return None


@dataclass
class _Run:
    """One run's record as it goes: progress reported, what each stage did, how long it took, and the models used.
    A stage's seconds run from the end of the one before, so they add up to the run (the language's detection falls
    in the ASR's, a mono call's speaker turns, found when diarization asks for them, in diarization's). Where tracing
    is on, each stage is a span of those same seconds (callscope/tracing.py)."""

    progress: Progress
    stages: list[StageRun] = field(default_factory=list)
    models: list[ModelUsed] = field(default_factory=list)
    _last: float = field(default_factory=time.perf_counter)

    def at(self, stage: str) -> None:
        self.progress(stage, _STARTS[stage])

    def ran(self, stage: str, detail: str = "") -> None:
        self._record(StageRun(name=stage, ran=True, detail=detail, seconds=self._lap()))

    def skipped(self, stage: str, why: str) -> None:
        self._record(StageRun(name=stage, ran=False, detail=why, seconds=self._lap()))

    def _record(self, stage: StageRun) -> None:
        self.stages.append(stage)
        tracing.stage(stage.name, stage.ran, stage.detail, stage.seconds)

    def _lap(self) -> float:
        now = time.perf_counter()
        seconds, self._last = now - self._last, now
        return round(seconds, 4)


# Stages that read the transcript with English phrase lists, English prototype sentences or the English text
# embedding model (all-MiniLM-L6-v2): on another language their results are weaker, and `stages` says so.
ENGLISH_TEXT_STAGES = frozenset({"speakers", "emotions", "goals", "categories", "fields"})


def _note_language(run: _Run, language: str | None) -> None:
    """Each English-built text stage that ran on a transcript in another language says so in its detail."""
    if not language or language == "en":
        return
    note = f"built for English, the transcript is in {language}: results may be weaker"
    run.stages = [stage.model_copy(update={"detail": f"{stage.detail}; {note}" if stage.detail else note})
                  if stage.ran and stage.name in ENGLISH_TEXT_STAGES else stage for stage in run.stages]


class Pipeline:
    """The analysis stages with their models loaded once; ``run`` analyses one local file."""

    def __init__(self, settings: Settings, transcriber: Any = _UNSET, speakers: Any = _UNSET, embedder: Any = _UNSET,
                 llm: Any = _UNSET, site_transcriber: Callable[[str], Any] | None = None) -> None:
        """`site_transcriber(name)`: the transcriber of the site's model `name` that a project names (on Ray, its
        own actor's proxy; the actor stops itself when idle); None: loaded here on first use, and unloaded once
        unused for CALLSCOPE_SITE_MODEL_IDLE_SECONDS."""
        self.settings = settings
        self._models = {"transcriber": transcriber, "speakers": speakers, "embedder": embedder, "llm": llm}
        self._site_transcriber = site_transcriber
        self.site_models = IdleModels(lambda name: load_model("transcriber", site_model_settings(settings, name)),
                                      settings.site_model_idle_seconds)

    def _model(self, name: str) -> Any:
        if self._models[name] is _UNSET:
            self._models[name] = load_model(name, self.settings)
        return self._models[name]

    @property
    def transcriber(self):
        return self._model("transcriber")

    @contextmanager
    def transcriber_for(self, project: ProjectSpec | None) -> Iterator[Any]:
        """The transcriber of the project's calls, held while the block runs (a site model is not unloaded while a
        call is transcribed on it): the site model it names, else the default. A name the site does not configure
        (any more) fails the recording with a message that says so."""
        name = project.transcription_model if project else None
        if name is None:
            yield self.transcriber
            return
        with ExitStack() as held:
            try:
                transcriber = (held.enter_context(self.site_models.use(name)) if self._site_transcriber is None
                               else self._site_transcriber(name))
            except FileNotFoundError as exc:
                raise AnalysisError(one_line(exc)) from None
            yield transcriber

    @property
    def llm(self):
        """The language model (None where none is configured): `callscope analyze` asks it its forms' questions."""
        return self._model("llm")

    @property
    def embedder(self):
        """The text model (None where none is installed): it finds the evidence of a form's llm answers."""
        return self._model("embedder")

    def run(self, path: Path, project: ProjectSpec | None = None, progress: Progress | None = None,
            voices: list | None = None, called_on: date | None = None,
            agent_channel: int | None = None, redacted_before: Mapping[str, int] | None = None,
            transcribed: Transcribed | None = None) -> AnalysisResult:
        """Analyse the recording at ``path`` with the rules of ``project`` (a ProjectSpec, or None: defaults).

        ``voices`` are the account's enrolled operator voiceprints (KnownVoice); ``called_on`` the call's date,
        which anchors dates said without a year or relative ones ("next Friday") in extracted fields.
        ``agent_channel``: the stereo channel the agent is known to speak on (a phone call's operator leg);
        None: the configured convention (CALLSCOPE_AGENT_CHANNEL).
        ``redacted_before``: where ``path`` is the redacted copy an earlier analysis made (its unredacted audio is
        gone), that analysis's redaction counts: what the copy no longer says is counted with what this run redacts.
        ``progress(stage, fraction)`` is called as the run goes, ``transcribed(document)`` once the transcript is
        final. Raises AnalysisError when the file is missing or cannot be decoded.
        """
        run = _Run(progress or (lambda stage, fraction: None))
        audio = self._decode(Path(path), run)
        speech = self._speech(audio, run)
        rules = rules_for(project)
        with self.transcriber_for(project) as transcriber:
            language = self._language(transcriber, audio, project, run)
            turns = self._start_turns(transcriber, audio, speech)
            segments = self._transcribe(transcriber, audio, speech, language, project, rules, run)
        segments = self._diarize(audio, segments, turns, run)
        speakers = self._speakers(audio, segments, voices,
                                  self.settings.agent_channel if agent_channel is None else agent_channel, run)
        roles = {s.label: s.role for s in speakers}
        segments = [s.model_copy(update={"role": roles[s.speaker]}) for s in segments]
        # the transcript is final: from here on every stage (and the language model) reads it redacted
        redaction = self._redact(project, segments, speech, called_on, run, redacted_before, language)
        if redaction is not None:
            segments = redaction.segments
        if transcribed is not None:
            transcribed(draft_document(segments, speakers))
        segments = self._emotions(audio, segments, run)
        run.at("pauses")
        pauses = find_pauses(segments, speech, audio.duration_ms, rules)
        run.ran("pauses", f"{len(pauses)} pause(s)")
        run.at("characteristics")
        traits = characteristics(segments, audio.duration_ms)
        run.ran("characteristics")
        embedder, llm = self._model("embedder"), self._model("llm")
        run.models += [model.info for model in (llm, embedder) if model is not None]
        goals = self._goals(project, segments, roles, pauses, embedder, llm, run)
        categories = self._categories(project, segments, embedder, run)
        # the text model that chooses the spans the fields are asked about reads English only
        fields = self._fields(project, segments, roles, llm, called_on, run, embedder if language == "en" else None)
        if redaction is not None:
            fields = redact_fields(fields, redaction)
        summary_language = (project.summary_language if project else None) or language or "en"
        # the text model that checks the summary's sentences reads English only
        checker = embedder if summary_language == language == "en" else None
        summary = self._summary(segments, summary_language, roles, llm, checker, run, self.settings.llm_checks_claims)
        run.at("done")
        _note_language(run, language)
        return AnalysisResult(
            duration_ms=audio.duration_ms, channels=len(audio.channels), language=language, speakers=speakers,
            segments=segments, pauses=pauses, pause_rules=rules, characteristics=traits, goals=goals,
            categories=categories, extracted_data=fields, summary=summary,
            summary_language=summary_language if summary is not None else None,
            redaction=(redaction.summary.model_copy(update={"audio": bool(project and project.redacts_audio)})
                       if redaction is not None else None),
            models=list(dict.fromkeys(run.models)), stages=run.stages,
        )

    # ----- the stages, in the order they run ----------------------------------------------------

    @staticmethod
    def _decode(path: Path, run: _Run) -> Audio:
        run.at("decode")
        if not path.is_file():
            raise AnalysisError(f"{path}: no such file")
        try:
            audio = decode(path)
        except Exception as exc:  # any decoder failure is "cannot decode"
            raise AnalysisError(f"{path}: cannot decode audio: {one_line(exc)}") from exc
        run.ran("decode", f"{len(audio.channels)} channel(s), 16 kHz")
        return audio

    @staticmethod
    def _speech(audio: Audio, run: _Run) -> list[SpeechRegion]:
        run.at("vad")
        speech = vad.call_speech(audio)
        run.ran("vad", f"{len(speech)} speech region(s)")
        run.models.append(vad.MODEL)
        return speech

    @staticmethod
    def _transcribe(transcriber: Any, audio: Audio, speech: list[SpeechRegion], language: str | None,
                    project: ProjectSpec | None, rules: PauseRules, run: _Run) -> list[TranscriptSegment]:
        """The dialogue in `language` (None: Whisper detects it per window), one speaker per channel; word and segment
        times follow each channel's speech (timing.to_speech)."""
        hints = (project.transcription_hints if project else None) or None
        channels = len(audio.channels)
        per_channel = []
        for channel in range(channels):
            run.progress("asr", _STARTS["asr"] + (_STARTS["diarization"] - _STARTS["asr"]) * channel / channels)
            # one segment per utterance: a pause inside a Whisper segment cuts it (diarize_by_channel.split_at_gaps)
            regions = [r for r in speech if r.channel == channel]
            segments = split_at_gaps(transcriber.transcribe(audio, channel, language, hints, regions),
                                     rules.min_pause_ms)
            per_channel.append(to_speech(segments, regions))
        segments = merge_channels(per_channel)
        run.ran("asr", f"{len(segments)} segment(s)")
        run.models.append(transcriber.info)
        return segments

    @staticmethod
    def _language(transcriber: Any, audio: Audio, project: ProjectSpec | None, run: _Run) -> str | None:
        """The language the recording is transcribed in: the recording's (the project's) language, else (none, or
        "auto") what a multilingual Whisper model detects, else (an English-only model, nothing given) English. A
        language the
        configured model cannot transcribe is an AnalysisError (the recording fails with that reason) rather than
        a transcript of English words."""
        multilingual = getattr(transcriber, "multilingual", True)
        language = language_code(project.language if project else None)
        if language is None:
            detect = getattr(transcriber, "detect_language", None)
            if multilingual and detect is not None:
                language = language_code(detect(audio))
            elif not multilingual:
                language = "en"  # an English-only model given no language assumes English
        if language is not None and not multilingual and language != "en":
            name = getattr(transcriber, "name", None) or "whisper"
            fix = ("name a multilingual one in the project's transcription.model"
                   if project and project.transcription_model
                   else "set CALLSCOPE_WHISPER_MODEL to a multilingual Whisper model")
            raise AnalysisError(f"the configured transcription model ({name}) transcribes English only; this "
                                f"recording's language is {language} ({fix})")
        return language

    def _start_turns(self, transcriber: Any, audio: Audio,
                     speech: list[SpeechRegion]) -> Callable[[], SpeakerTurns] | None:
        """What gives a mono call's speaker turns (SpeakerAnalyzer.turns); None when there are none to find (stereo:
        a speaker per channel; no speaker model). Where Whisper runs on a GPU they are found beside the
        transcription: they need the audio only, and the CPUs are free meanwhile. Where it runs on the CPUs they are
        found when asked for, after it: side by side the two models only took the same cores from each other (a
        4.4-minute mono call on 2 CPUs, benchmarks/speed.py: 47.2 s against 43.1 s in turn)."""
        analyzer = self._model("speakers")
        if len(audio.channels) > 1 or analyzer is None:
            return None
        regions = [r for r in speech if r.channel == 0]
        if getattr(transcriber, "device", "cpu") == "cpu":
            return lambda: analyzer.turns(audio, regions)
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="speaker-turns")
        future = pool.submit(analyzer.turns, audio, regions)
        pool.shutdown(wait=False)  # its one thread ends with the task
        return future.result

    def _diarize(self, audio: Audio, segments: list[TranscriptSegment], turns: Callable[[], SpeakerTurns] | None,
                 run: _Run) -> list[TranscriptSegment]:
        run.at("diarization")
        if len(audio.channels) > 1:
            run.ran("diarization", f"by channel: {len(audio.channels)} channels, one speaker each")
            return segments
        if turns is None:
            run.skipped("diarization", "no speaker encoder: the mono call is one speaker, speaker-1")
            return segments
        segments, found = diarize_by_voice.assign(segments, turns())
        run.models += [model for model in (found.model, found.segmentation) if model is not None]
        run.ran("diarization", found.detail)
        return segments

    def _speakers(self, audio: Audio, segments: list[TranscriptSegment], voices: list | None,
                  agent_channel: int | None, run: _Run) -> list[IdentifiedSpeaker]:
        run.at("speakers")
        analyzer = self._model("speakers")
        if analyzer is None:
            run.ran("speakers", "roles from content and channel only")
            return identify_speakers(segments, stereo=len(audio.channels) > 1, agent_channel=agent_channel)
        speakers = analyzer.speakers(audio, segments, voices or None, agent_channel)
        run.models.append(analyzer.info)
        known = sum(1 for s in speakers if s.operator_id is not None)
        # voiceprints of another embedding model cannot be compared (speakers.identify skips them): say so
        other = sum(1 for v in voices or [] if v.model != analyzer.model)
        run.ran("speakers", ", ".join(f"{s.label}: {s.role}" for s in speakers)
                + (f"; {known} enrolled operator(s) recognised" if voices else "; no enrolled voices")
                + (f"; {other} voiceprint(s) enrolled with another speaker model were not compared: re-enrol "
                   "them (callscope operators enroll)" if other else ""))
        return speakers

    def _redact(self, project: ProjectSpec | None, segments: list[TranscriptSegment], speech: list[SpeechRegion],
                called_on: date | None, run: _Run, redacted_before: Mapping[str, int] | None = None,
                language: str | None = None) -> Redaction | None:
        """The transcript with the project's redaction entities taken out (redaction.redact), None when the
        project redacts nothing. `redacted_before`: the counts of the earlier analysis whose redacted copy of the
        audio this run read; its spans are silence or a tone there (nothing to find again), and are still redacted:
        each requested type's count adds them to what this run found. `language`: the call's (a project's "auto"
        one as detected), whose request phrases and examples strict mode reads; `speech`: the call's speech regions,
        whose stretches without words strict mode lists for the audio."""
        run.at("redaction")
        if not (project and project.redaction and project.redaction.entities):
            run.skipped("redaction", "the project redacts nothing")
            return None
        # strict mode finds requests by their meaning too, with the text model where it is installed
        embedder = self._model("embedder") if project.redaction.mode == "strict" else None
        redaction = redact(segments, project.redaction.entities, region=self.settings.default_phone_region,
                           reference=called_on, mode=project.redaction.mode, language=language or project.language,
                           max_answer_ms=project.redaction.max_answer_seconds * 1000, embedder=embedder,
                           speech=speech)
        carried = {e: redacted_before.get(e, 0) for e in redaction.summary.counts} if redacted_before else {}
        if any(carried.values()):
            counts = {e: n + carried[e] for e, n in redaction.summary.counts.items()}
            redaction = replace(redaction, summary=redaction.summary.model_copy(update={"counts": counts}))
        run.ran("redaction", _redaction_detail(redaction.summary) + (
            f"; {sum(carried.values())} of them redacted by the earlier analysis, whose redacted audio this one read"
            if any(carried.values()) else ""))
        return redaction

    def _emotions(self, audio: Audio, segments: list[TranscriptSegment], run: _Run) -> list[TranscriptSegment]:
        run.at("emotions")
        embedder = self._model("embedder")
        probabilities = emotions.segment_emotions(audio, segments, embedder)
        info = emotions.model_info(embedder)
        run.models.append(info)
        run.ran("emotions", f"{info.name}: {len(segments)} segment(s)")
        return [s.model_copy(update={"emotions": p}) for s, p in zip(segments, probabilities, strict=True)]

    def _goals(self, project: ProjectSpec | None, segments: list[TranscriptSegment], roles: dict[str, str],
               pauses: list[Pause], embedder, llm, run: _Run) -> list[GoalResult]:
        run.at("goals")
        if not (project and project.goals):
            run.skipped("goals", "the project defines no goals")
            return []
        verdicts = evaluate_goals(project.goals, segments, roles, embedder, llm,
                                  judge_with_model=self.settings.llm_judges_goals,
                                  phrase_with_model=self.settings.llm_phrases_goals, pauses=pauses)
        applicable = [v for v in verdicts if v.applicable]
        run.ran("goals", f"{sum(1 for v in applicable if v.met)} of {len(applicable)} met"
                + ("" if embedder is not None else "; phrase rules only (no text embedding model)")
                + ("" if llm is not None and self.settings.llm_phrases_goals else "; explanations are the evidence"))
        return verdicts

    @staticmethod
    def _categories(project: ProjectSpec | None, segments: list[TranscriptSegment], embedder,
                    run: _Run) -> list[CategoryResult]:
        run.at("categories")
        if not (project and project.categories):
            run.skipped("categories", "the project defines no categories")
            return []
        found = classify(project.categories, segments, embedder)
        run.ran("categories", f"{sum(1 for c in found if c.matched)} of {len(found)} matched"
                + ("" if embedder is not None else "; keywords only (no text embedding model)"))
        return found

    def _fields(self, project: ProjectSpec | None, segments: list[TranscriptSegment], roles: dict[str, str], llm,
                called_on: date | None, run: _Run, embedder=None) -> list[ExtractedValue]:
        run.at("fields")
        if not (project and project.fields):
            run.skipped("fields", "the project defines no fields")
            return []
        # a language model that fails leaves the values it was asked for null (fields.extract_fields)
        found = extract_fields(project.fields, segments, llm, region=self.settings.default_phone_region,
                               reference_date=called_on, roles=roles, embedder=embedder,
                               field_tokens=self.settings.llm_field_tokens)
        found = with_confidence(project.fields, found, segments, region=self.settings.default_phone_region,
                                reference_date=called_on)
        doubted = [f.name for f in found if f.confidence is not None and f.confidence < DOUBTFUL_WORD_PROBABILITY]
        run.ran("fields", f"{sum(1 for f in found if f.value is not None)} of {len(found)} found"
                + (f"; uncertain, said in words the recogniser doubted: {', '.join(doubted)}" if doubted else "")
                + ("" if llm is not None else "; typed extractors only (no language model)"))
        return found

    @staticmethod
    def _summary(segments: list[TranscriptSegment], language: str, roles: dict[str, str], llm, embedder,
                 run: _Run, judge: bool = False) -> str | None:
        """The model's summary, its unsupported sentences removed (summary.py); when the model fails, the call's
        key sentences. `embedder` checks the sentences' meaning (None: names and numbers only)."""
        run.at("summary")
        if llm is None:
            run.skipped("summary", "no language model installed or configured")
            return None
        if not segments:
            run.skipped("summary", "no speech to summarise")
            return None
        try:
            result = summarize(segments, language, llm, roles=roles, embedder=embedder,  # roles: who is who
                               judge=judge)
        except LanguageModelError as exc:
            run.ran("summary", f"language model failed ({one_line(exc)}): the call's key sentences instead")
            # quoted by the roles the results carry, as the recording page names the speakers
            return extractive_summary(segments, embedder, roles)
        checked = "" if embedder is not None else "; meaning not checked (English calls with the text model only)"
        run.ran("summary", f"in {language}" + (f"; {result.note}" if result.note else "") + checked)
        return result.text


def _redaction_detail(summary: RedactionSummary) -> str:
    return ", ".join(f"{entity}: {summary.counts.get(entity, 0)}" for entity in summary.entities) + " span(s)" + (
        f", strict, {len(summary.unheard)} stretch(es) of speech without words" if summary.mode == "strict" else "")


# Pipeline keyword -> factory (module:function) building the model object from Settings. Ray actors own one each
# (analysis/runtime/actors.py); inline, the Pipeline loads them on first use.
MODELS = {
    "transcriber": "callscope.analysis.stages.asr:transcriber_from_settings",
    "speakers": "callscope.analysis.stages.speakers:load_speaker_analyzer",
    "embedder": "callscope.analysis.models.text_embedding:text_embedder_from_settings",
    "llm": "callscope.analysis.models.language_model:language_model_from_settings",
}
OPTIONAL = frozenset({"speakers", "embedder", "llm"})  # the pipeline runs without these (fewer stages)


def load_model(name: str, settings: Settings) -> Any:
    """Build the model ``name`` of MODELS from settings; None for an optional one that is not available."""
    module, function = MODELS[name].split(":")
    factory = getattr(importlib.import_module(module), function)
    return _optional(lambda: factory(settings), name) if name in OPTIONAL else factory(settings)
