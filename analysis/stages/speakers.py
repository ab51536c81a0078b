"""Speaker identification: which speaker is the agent and which the customer, and which operator the agent is.

`identify_speakers` scores each speaker's role evidence (an enrolled operator's voiceprint, agent and customer
phrases, who spoke first, the stereo channel convention): the highest is the agent, every other voice a customer,
except a voice matching an enrolled operator or, on a call of more than two voices, one with a clear agent phrase.
`enroll` makes a voiceprint of >= 10 s of an operator's speech; `identify` compares a speaker's voice with the
account's voiceprints of the same model only. The rules: docs/analysis.md; the thresholds: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from callscope.analysis.models.campplus import CamPlusPlus, load_campplus
from callscope.analysis.models.segmentation import load_segmenter
from callscope.analysis.models.speaker_encoder import (
    SpeakerEncoder,
    l2_normalize,
    load_speaker_encoder,
    normalize_volume,
)
from callscope.analysis.result import IdentifiedSpeaker, ModelUsed, Role, TranscriptSegment
from callscope.analysis.stages import diarize_by_voice
from callscope.analysis.stages.diarize_by_pyannote import PyannotePipeline, load_pyannote_pipeline
from callscope.analysis.stages.evidence import says, tokens
from callscope.analysis.types import SAMPLE_RATE, Audio, SpeechRegion
from callscope.config import Settings

ENROLL_MIN_MS = 10_000  # spec Limits: at least 10 s of speech to enrol
IDENTIFY_MIN_MS = 5_000  # spec Limits: at least 5 s of a speaker's speech to identify them
# a speaker is compared with the voiceprints by at most this much of their speech: an hour's call embedded all of
# each speaker's (50 minutes of speech, 1.5-2.5 min on 2 CPUs, benchmarks/long_calls.py), and 2 minutes is 12
# enrolments' worth
IDENTIFY_MAX_MS = 120_000
# Cosine similarity from which a voice is an enrolled operator's, per voiceprint model (see the module's docstring)
VOICEPRINT_THRESHOLDS = {"campplus": 0.72, "ge2e": 0.945}
DEFAULT_VOICEPRINT_THRESHOLD = VOICEPRINT_THRESHOLDS["campplus"]
MIN_CONFIDENCE = 0.6
_SLOPE = 1.5  # confidence = logistic(_SLOPE * score margin): one clear phrase ~0.82, two ~0.95

# Phrase -> weight. Matched on lower-case text with punctuation removed; each phrase counts at most twice.
AGENT_PHRASES: dict[str, float] = {
    "thank you for calling": 2.0, "thanks for calling": 2.0, "welcome to": 1.0, "you've reached": 1.0,
    "you have reached": 1.0, "how can i help": 1.5, "how may i help": 1.5, "how can i assist": 1.5,
    "how may i assist": 1.5, "what can i do for you": 1.0, "please hold": 1.0, "bear with me": 1.0,
    "let me check": 1.0, "let me look": 1.0, "look that up": 1.0, "anything else i can": 1.5,
    "could you give me your": 1.0, "can i have your": 1.0, "could i have your": 1.0, "may i have your": 1.0,
    "can you confirm": 1.0, "could you confirm": 1.0, "for security": 1.0, "i can see": 0.5,
    "our records": 1.0, "customer service": 0.5, "calling from": 1.0, "have a nice day": 0.5,
    "have a great day": 0.5, "my name is": 0.5,
}
CUSTOMER_PHRASES: dict[str, float] = {
    "i would like to": 1.0, "i'd like to": 1.0, "i want to": 1.0, "i'm calling about": 1.5,
    "i am calling about": 1.5, "i'm calling because": 1.5, "i am calling because": 1.5, "my account": 1.0,
    "my bill": 1.0, "my order": 1.0, "my invoice": 1.0, "i have a problem": 1.0, "i have a question": 1.0,
    "i was charged": 1.0, "can you help me": 1.0, "could you help me": 1.0, "send me": 0.5,
}
SECOND_AGENT_CONTENT = 1.5  # with more than two voices, a voice whose own phrases score this is an agent too
FIRST_SPEAKER_WEIGHT = 0.5
CHANNEL_WEIGHT = 0.5
OPERATOR_WEIGHT = 3.0


class EnrollmentError(ValueError):
    """Audio that cannot make a voiceprint (too little speech); the message says how much there was."""


@dataclass(frozen=True)
class VoiceprintData:
    """One operator's voice: the L2-normalised mean embedding of their speech, and which encoder made it."""

    embedding: np.ndarray  # float32 (256,)
    speech_ms: int
    model: str


@dataclass(frozen=True)
class KnownVoice:
    operator_id: int
    embedding: np.ndarray
    model: str


def model_id(encoder: SpeakerEncoder | CamPlusPlus) -> str:
    """The key stored with a voiceprint: voiceprints of another encoder are not comparable."""
    return f"{encoder.info.name}@{encoder.info.version}"[:128]


# --- voiceprints ---------------------------------------------------------------------------------------------


def speech_audio(samples: np.ndarray, spans: list[tuple[int, int]]) -> tuple[np.ndarray, int]:
    """The audio of `spans` (ms) concatenated, and how many ms of speech that is."""
    parts = [np.asarray(samples[s * SAMPLE_RATE // 1000 : e * SAMPLE_RATE // 1000], dtype=np.float32)
             for s, e in spans if e > s]
    wav = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    return wav, len(wav) * 1000 // SAMPLE_RATE


def voice_embedding(encoder: SpeakerEncoder | CamPlusPlus, samples: np.ndarray, spans: list[tuple[int, int]]) -> tuple[
        np.ndarray | None, int]:
    """The utterance embedding of the speech in `spans`, with its length in ms (None when under 1 s)."""
    wav, speech_ms = speech_audio(samples, spans)
    if speech_ms < 1000:
        return None, speech_ms
    # GE2E was trained on volume-normalised utterances; CAM++ normalises its own features per segment
    return encoder.embed_utterance(wav if isinstance(encoder, CamPlusPlus) else normalize_volume(wav)), speech_ms


def enroll(encoder: SpeakerEncoder | CamPlusPlus, audio: Audio, regions: list[SpeechRegion],
           channel: int = 0) -> VoiceprintData:
    """A voiceprint from one speaker's recording: its VAD speech regions on `channel` must add up to >= 10 s."""
    spans = [(r.start_ms, r.end_ms) for r in regions if r.channel == channel]
    embedding, speech_ms = voice_embedding(encoder, audio.channels[channel], spans)
    if embedding is None or speech_ms < ENROLL_MIN_MS:
        raise EnrollmentError(f"enrolment needs at least {ENROLL_MIN_MS // 1000} s of speech; "
                              f"this recording has {speech_ms / 1000:.1f} s")
    return VoiceprintData(embedding=embedding.astype(np.float32), speech_ms=speech_ms, model=model_id(encoder))


def identify(embedding: np.ndarray | None, speech_ms: int, voices: list[KnownVoice], model: str,
             threshold: float = DEFAULT_VOICEPRINT_THRESHOLD) -> tuple[int | None, float | None]:
    """(operator_id, similarity) of the best voiceprint when its cosine similarity reaches `threshold`;
    (None, best similarity) for an unknown voice; (None, None) under 5 s of speech or with no voiceprints."""
    comparable = [v for v in voices if v.model == model]
    if embedding is None or speech_ms < IDENTIFY_MIN_MS or not comparable:
        return None, None
    scores = [float(np.dot(l2_normalize(v.embedding), embedding)) for v in comparable]
    best = int(np.argmax(scores))
    return (comparable[best].operator_id if scores[best] >= threshold else None), round(scores[best], 4)


# --- roles ---------------------------------------------------------------------------------------------------


def phrase_score(text: str) -> tuple[float, list[str]]:
    """Agent phrases minus customer phrases in `text`, and which phrases were found."""
    words = tokens(text)
    score, found = 0.0, []
    for phrases, sign in ((AGENT_PHRASES, 1.0), (CUSTOMER_PHRASES, -1.0)):
        for phrase, weight in phrases.items():
            count = min(says(words, phrase), 2)
            if count:
                score += sign * weight * count
                found.append(f"{'agent' if sign > 0 else 'customer'} phrase \"{phrase}\""
                             + (" x2" if count > 1 else ""))
    return score, found


def talk_ms(segments: list[TranscriptSegment]) -> int:
    """Time covered by the segments (overlaps counted once)."""
    total, reach = 0, 0
    for s in sorted(segments, key=lambda s: s.start_ms):
        start = max(s.start_ms, reach)
        if s.end_ms > start:
            total += s.end_ms - start
            reach = s.end_ms
    return total


@dataclass
class _Evidence:
    score: float = 0.0
    items: list[str] = field(default_factory=list)
    strongest: str = "none"  # the kind of evidence that weighed most
    strongest_weight: float = 0.0
    content: float = 0.0  # what they said alone: agent phrases minus customer phrases

    def add(self, weight: float, kind: str, *what: str) -> None:
        self.score += weight
        self.items.extend(what)
        if abs(weight) > self.strongest_weight:
            self.strongest, self.strongest_weight = kind, abs(weight)


def identify_speakers(
    dialogue: list[TranscriptSegment],
    *,
    stereo: bool,
    embeddings: dict[str, tuple[np.ndarray | None, int]] | None = None,
    voices: list[KnownVoice] | None = None,
    model: str = "",
    threshold: float = DEFAULT_VOICEPRINT_THRESHOLD,
    agent_channel: int | None = 0,
) -> list[IdentifiedSpeaker]:
    """One IdentifiedSpeaker per speaker of `dialogue` (in label order).

    `embeddings[label]` is that speaker's (embedding, speech_ms) for operator identification (see
    `speaker_embeddings`); `voices` the account's voiceprints; `agent_channel` the stereo channel convention
    (None: no convention).
    """
    labels = sorted({s.speaker for s in dialogue}, key=lambda label: (len(label), label))
    if not labels:
        return []
    first = min(dialogue, key=lambda s: (s.start_ms, s.id)).speaker
    evidence = {label: _Evidence() for label in labels}
    matches: dict[str, tuple[int | None, float | None]] = {}
    for label in labels:
        own = [s for s in dialogue if s.speaker == label]
        ev = evidence[label]
        embedding, speech_ms = (embeddings or {}).get(label, (None, 0))
        matches[label] = identify(embedding, speech_ms, voices or [], model, threshold)
        if matches[label][0] is not None:
            ev.add(OPERATOR_WEIGHT, "operator-voice",
                   f"voice matches operator {matches[label][0]} (similarity {matches[label][1]:.3f})")
        score, found = phrase_score(" ".join(s.text for s in own))
        ev.add(score, "content", *found)
        ev.content = score
        if label == first and len(labels) > 1:
            ev.add(FIRST_SPEAKER_WEIGHT, "first-speaker", "spoke first")
        if stereo and agent_channel is not None and own and own[0].channel == agent_channel:
            ev.add(CHANNEL_WEIGHT, "channel", f"channel {agent_channel} (agent channel convention)")
    return _decide(labels, evidence, matches, dialogue)


def _decide(labels: list[str], evidence: dict[str, _Evidence], matches: dict,
            dialogue: list[TranscriptSegment]) -> list[IdentifiedSpeaker]:
    # A recognised operator's voice outranks any phrase; otherwise the highest score is the agent.
    agent = max(labels, key=lambda label: (matches[label][0] is not None, evidence[label].score))
    others = [evidence[label].score for label in labels if label != agent]
    # One speaker: their score against no evidence; several: the agent's lead over the runner-up.
    margin = evidence[agent].score - (max(others) if others else 0.0)
    if matches[agent][0] is not None:
        margin = max(margin, OPERATOR_WEIGHT)
    confidence = 1 / (1 + math.exp(-_SLOPE * margin))
    out = []
    for label in labels:
        ev = evidence[label]
        if len(labels) == 1:
            role: Role = "agent" if ev.score > 0 else "customer" if ev.score < 0 else "unknown"
            conf = 1 / (1 + math.exp(-_SLOPE * abs(ev.score)))
        elif label != agent and len(labels) > 2 and ev.content >= SECOND_AGENT_CONTENT:
            # more than two voices: one that speaks like an agent itself is one (a transfer, a supervisor)
            role, conf = "agent", 1 / (1 + math.exp(-_SLOPE * ev.content))
        else:
            role = "agent" if label == agent else "customer"
            conf = confidence
        if conf < MIN_CONFIDENCE:
            role = "unknown"
        # A second voice matching an operator is an agent too (a transfer, a supervisor).
        if matches[label][0] is not None:
            role, conf = "agent", max(conf, 1 / (1 + math.exp(-_SLOPE * OPERATOR_WEIGHT)))
        decided = "none" if role == "unknown" else _decider(labels, evidence, label, agent)
        out.append(IdentifiedSpeaker(
            label=label, role=role, role_confidence=round(conf, 3), role_evidence=ev.items,
            decided_by=decided, operator_id=matches[label][0], operator_similarity=matches[label][1],
            talk_ms=talk_ms([s for s in dialogue if s.speaker == label]),
        ))
    return out


def _decider(labels: list[str], evidence: dict[str, _Evidence], label: str, agent: str) -> str:
    """The kind of evidence that weighed most in this speaker's role (the agent's, for the customer)."""
    if evidence[label].strongest == "operator-voice":
        return "operator-voice"
    strongest = max((evidence[x] for x in labels), key=lambda e: e.strongest_weight)
    return strongest.strongest if strongest.strongest_weight else evidence[agent].strongest


def speaker_spans(dialogue: list[TranscriptSegment]) -> dict[str, list[tuple[int, int]]]:
    """Each speaker's speech as (start_ms, end_ms) spans: their words, or their segments where words are missing."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for s in dialogue:
        spans.setdefault(s.speaker, []).extend(
            [(w.start_ms, w.end_ms) for w in s.words] if s.words else [(s.start_ms, s.end_ms)])
    return spans


def spread(spans: list[tuple[int, int]], max_ms: int) -> list[tuple[int, int]]:
    """About `max_ms` of `spans` (in time order), taken evenly over them (every n-th span); all under `max_ms`."""
    total = sum(end - start for start, end in spans)
    return spans if total <= max_ms else spans[:: math.ceil(total / max_ms)]


def speaker_embeddings(encoder: SpeakerEncoder | CamPlusPlus, audio: Audio, dialogue: list[TranscriptSegment]) -> dict[
        str, tuple[np.ndarray | None, int]]:
    """Each speaker's (embedding, speech_ms) from the audio of their segments on their channel: at most about
    IDENTIFY_MAX_MS of it, taken evenly over the call."""
    out = {}
    for label, spans in speaker_spans(dialogue).items():
        channel = next(s.channel for s in dialogue if s.speaker == label)
        out[label] = voice_embedding(encoder, audio.channels[min(channel, len(audio.channels) - 1)],
                                     spread(spans, IDENTIFY_MAX_MS))
    return out


class SpeakerAnalyzer:
    """The speaker stages with their loaded models and the settings' thresholds: what a Ray actor owns.

    Mono diarization and voiceprints each use CAM++ or the GE2E encoder (`diarization_model`, `voiceprint_model`),
    diarization pyannote.audio's pipeline too; only the models they need are loaded. Arguments and results are
    plain data (Audio, regions, segments, dataclasses, pydantic models).
    """

    def __init__(self, settings: Settings) -> None:
        chosen = {settings.diarization_model, settings.voiceprint_model}
        loaded = {"ge2e": load_speaker_encoder(settings) if "ge2e" in chosen else None,
                  "campplus": load_campplus(threads=settings.analysis_threads) if "campplus" in chosen else None,
                  "pyannote": (load_pyannote_pipeline(settings.pyannote_pipeline, settings.pyannote_device)
                               if "pyannote" in chosen else None)}
        self.diarization_model = settings.diarization_model
        self._diarizer = loaded[settings.diarization_model]
        # CAM++ diarization places turns and overlapped speech with the segmentation model (diarize_by_voice.py)
        self._segmenter = (load_segmenter(threads=settings.analysis_threads)
                           if settings.diarization_model == "campplus" else None)
        self.encoder = loaded[settings.voiceprint_model]  # embeds voiceprints and the speakers compared with them
        self.diarization_threshold = settings.diarization_threshold
        self.voiceprint_threshold = (settings.voiceprint_threshold if settings.voiceprint_threshold is not None
                                     else VOICEPRINT_THRESHOLDS[settings.voiceprint_model])

    @property
    def info(self) -> ModelUsed:
        return self.encoder.info

    @property
    def model(self) -> str:
        """The model key of this analyzer's voiceprints (`model_id`); others' voiceprints are not compared."""
        return model_id(self.encoder)

    def turns(self, audio: Audio, regions: list[SpeechRegion]) -> diarize_by_voice.SpeakerTurns:
        """Who speaks when in a mono call, from its audio alone (`diarize_by_voice.find_turns`;
        `diarize_by_voice.pipeline_turns` with
        the pyannote.audio pipeline): the pipeline asks for them while Whisper transcribes."""
        if isinstance(self._diarizer, PyannotePipeline):
            return diarize_by_voice.pipeline_turns(self._diarizer.turns(np.asarray(audio.channels[0])),
                                                   self._diarizer.info)
        return diarize_by_voice.find_turns(audio, regions, self._diarizer, self.diarization_threshold,
                                  segmenter=self._segmenter)

    def diarize(self, audio: Audio, regions: list[SpeechRegion], segments: list[TranscriptSegment]) -> tuple[
            list[TranscriptSegment], diarize_by_voice.DiarizationInfo]:
        """A mono call's segments by speaker: its `turns`, and the words given to them (`diarize_by_voice.assign`)."""
        return diarize_by_voice.assign(segments, self.turns(audio, regions))

    def speakers(self, audio: Audio, dialogue: list[TranscriptSegment], voices: list[KnownVoice] | None = None,
                 agent_channel: int | None = 0) -> list[IdentifiedSpeaker]:
        """Role and operator of each speaker of `dialogue` (`voices`: the account's voiceprints; `agent_channel`:
        the stereo channel convention)."""
        embeddings = speaker_embeddings(self.encoder, audio, dialogue) if voices else None
        return identify_speakers(dialogue, stereo=len(audio.channels) > 1, embeddings=embeddings, voices=voices,
                                 model=self.model, threshold=self.voiceprint_threshold,
                                 agent_channel=agent_channel)

    def enroll(self, audio: Audio, regions: list[SpeechRegion], channel: int = 0) -> VoiceprintData:
        return enroll(self.encoder, audio, regions, channel)


def load_speaker_analyzer(settings: Settings) -> SpeakerAnalyzer:
    return SpeakerAnalyzer(settings)
