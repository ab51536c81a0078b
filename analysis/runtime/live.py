"""Live recognition of one call: each track (a channel, or a carrier's inbound and outbound audio) is heard as it
arrives, its utterances decided by voice activity, and turned into events (callscope/live/events.py).

Per track (`TrackRecogniser`): Silero's speech probability per 32 ms window, in order, opens an utterance at speech
and closes it after END_SILENCE_MS of silence (hysteresis: SPEECH_ON to open, below SPEECH_OFF counts as silence).
While it is open, its audio so far is decoded FIRST_PARTIAL_MS after it opened (the first words shown soon), then
every `partial_step_s` seconds while the speaker goes on (not in a pause that may end the utterance: the final's
decode would wait behind that partial's), and only the words that two successive hypotheses agree on are confirmed
(`Agreement`: the local-agreement policy of whisper_streaming, Macháček et al. 2023, within one utterance): a
`partial` holds the confirmed words (`stable`, which never change) and the rest of the latest hypothesis. When the
utterance closes, its audio is decoded once more and the words after the confirmed ones are confirmed too: that is
the `final`, sent once and never changed. An utterance longer than MAX_UTTERANCE_S is closed at its last confirmed
word.

Per call (`CallMonitor`): each final is checked for the project's phrase goals (once each) and its `liveAlerts`
phrases (every time), by the batch goals stage's own phrase matching (analysis/stages/goals.py `phrase_findings`,
speaker and time rules included), and a silence of every track longer than the project's pause threshold (or, after
the agent announced a hold, longer than the hold allowed: analysis/stages/pauses.py's rules) is an alert once.

`LiveRecognition` is plain, synchronous and holds no socket: the API runs it in a worker thread per call, and a Ray
actor can hold one per call the same way (one live call, one actor) on the batch analysis's cluster. `LiveModels`
loads the Whisper model once per process, on the first live call.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import structlog
from faster_whisper.vad import get_vad_model

from callscope.analysis.models.files import embedded_whisper_dir, whisper_model_dir
from callscope.analysis.models.text_embedding import text_embedder_from_settings
from callscope.analysis.result import EMOTIONS, TranscriptSegment, TranscriptWord
from callscope.analysis.stages.asr import Transcriber, whisper_device
from callscope.analysis.stages.emotions import NEGATIVE, text_distributions
from callscope.analysis.stages.goals import phrase_findings
from callscope.analysis.stages.pauses import announces_hold, rules_for
from callscope.analysis.types import language_code
from callscope.config import Settings
from callscope.live.events import Alert, Event, Final, GoalMet, Partial, Role, Word
from callscope.resources.kinds import Goal, ProjectSpec

log = structlog.get_logger()

RATE = 16_000
WINDOW = 512  # Silero's window at 16 kHz (32 ms)
SPEECH_ON = 0.5  # Silero's own default threshold
SPEECH_OFF = 0.35  # faster-whisper's default: 0.15 under it
END_SILENCE_MS = 600  # silence that ends an utterance: longer than a breath between words
FIRST_PARTIAL_MS = 500  # audio of an utterance before its first partial (later ones: every partial_step_s)
QUIET_MS = 250  # a pause this long holds the partials back: the utterance may be ending
EARLY_FINAL_MS = 300  # a pause this long has the final decoded ahead: sent as it is if the pause ends the utterance
MIN_SPEECH_MS = 250  # shorter speech is a click or a cough, never decoded
PAD_BEFORE_MS = 200  # audio kept before an utterance's first speech window: the VAD opens late on soft onsets
PAD_AFTER_MS = 150
MAX_UTTERANCE_S = 20.0
SLICE_S = 0.25  # audio judged at a time, whatever a turn brings: silences are timed to a quarter second
# The share of a customer utterance's emotions (from its words) that is negative from which it reads as negative;
# not fitted on labelled calls: "That is unacceptable" 0.68, "I want to cancel my contract" 0.43, "Okay, thank
# you" 0.06 (MiniLM prototypes, analysis/stages/emotions.py).
NEGATIVE_SHARE = 0.35
CATCH_UP_S = 1.5  # a turn that brings more audio than this is behind: no partials in it, so the next turn is shorter
_SLACK_S = 0.1  # a new hypothesis's word this much before the last confirmed word's end is that word again
_REPEAT_MAX = 5  # words of the confirmed tail looked for again at the head of a new hypothesis
# Whisper's own "this is no speech" rule (faster-whisper's defaults), applied to each decoded segment
_NO_SPEECH_PROB = 0.6
_LOG_PROB = -1.0
_WORD = re.compile(r"[\W_]+")


def _norm(text: str) -> str:
    return _WORD.sub("", text.casefold())


@dataclass(frozen=True)
class Heard:
    text: str
    start: float  # seconds since the call began
    end: float
    probability: float


class Agreement:
    """The local-agreement policy within one utterance: a word is confirmed once two successive hypotheses have it
    at the same place after the confirmed words; confirmed words are never taken back."""

    def __init__(self) -> None:
        self.confirmed: list[Heard] = []
        self.tentative: list[Heard] = []

    def _after_confirmed(self, words: Sequence[Heard]) -> list[Heard]:
        """The words of a hypothesis that come after the confirmed ones. Each hypothesis is of the utterance from
        its start: where it begins with the confirmed words, what follows them (their times move from one decode to
        the next: a word heard right after them may start before the end a shorter hypothesis gave them); else the
        words later in time, less a repeat of the confirmed tail at their head."""
        new = list(words)
        heard_again = [_norm(w.text) for w in new[:len(self.confirmed)]] == [_norm(w.text) for w in self.confirmed]
        if self.confirmed and heard_again:
            return new[len(self.confirmed):]
        if self.confirmed:
            last = self.confirmed[-1].end
            new = [w for w in new if w.start > last - _SLACK_S]
            for n in range(min(_REPEAT_MAX, len(new), len(self.confirmed)), 0, -1):
                if [_norm(w.text) for w in self.confirmed[-n:]] == [_norm(w.text) for w in new[:n]]:
                    new = new[n:]
                    break
        return new

    def hypothesis(self, words: Sequence[Heard]) -> None:
        new = self._after_confirmed(words)
        agreed = 0
        while (agreed < min(len(new), len(self.tentative))
               and _norm(new[agreed].text) == _norm(self.tentative[agreed].text)):
            agreed += 1
        self.confirmed += new[:agreed]
        self.tentative = new[agreed:]

    def close(self, words: Sequence[Heard]) -> list[Heard]:
        """The utterance's last hypothesis: what follows the confirmed words is confirmed as it is."""
        self.confirmed += self._after_confirmed(words)
        self.tentative = []
        return self.confirmed


# On a CPU, an English call is recognised live by the embedded English model: Whisper base keeps one call 1.3 s
# behind on 2 cores (every decode encodes a 30 s window) and misses the first words' and finals' targets; tiny.en
# keeps it 0.4 s behind with the same word error rate on recorded speech (benchmarks/RESULTS.md, "Live calls").
# The batch analysis still transcribes the stored call with its own model.
ENGLISH_ON_CPU = "tiny.en"


class LiveModels:
    """What live recognition runs on, loaded once per process: Whisper (CALLSCOPE_LIVE_WHISPER_MODEL; unset, the
    project's site model on a GPU, else on a CPU the embedded English model for English calls and the batch
    analysis's model for the others) and Silero VAD (faster-whisper's ONNX copy)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._transcribers: dict[str | None, Transcriber] = {}
        self._embedder: Any | None = None
        self._embedder_loaded = False
        self._lock = threading.Lock()

    def embedder(self) -> Any | None:
        """The text embedding model the emotion alert reads utterances with (None where it is not installed)."""
        with self._lock:
            if not self._embedder_loaded:
                try:
                    self._embedder = text_embedder_from_settings(self.settings)
                except FileNotFoundError as exc:  # live calls go on without their emotion alert
                    log.warning("live_emotions_unavailable", error=str(exc))
                self._embedder_loaded = True
            return self._embedder

    def load(self) -> None:
        """Load every model a call may use, now (a call's actor, or a spare one, is ready before the call's audio,
        whatever its language)."""
        for language in {"en", None}:
            self.transcriber(language)
        if self.settings.live_negative_utterances:
            self.embedder()

    def model_for(self, language: str | None, site_model: str | None = None) -> str | None:
        """The Whisper model (a name or directory; None: the embedded default) a call in `language` is heard with;
        `site_model`: the project's transcription.model. The operator's live model wins; else the project's site
        model, on a GPU (on a CPU, a larger model falls behind the call: only with CALLSCOPE_LIVE_SITE_MODEL_ON_CPU);
        a name the site no longer has is passed over (the stored call's analysis says so)."""
        s = self.settings
        cpu = whisper_device(s.whisper_device) == "cpu"
        if s.live_whisper_model:
            return s.live_whisper_model
        if site_model in s.whisper_models and (not cpu or s.live_site_model_on_cpu):
            return s.whisper_models[site_model]
        if language_code(language) == "en" and cpu and embedded_whisper_dir(ENGLISH_ON_CPU) is not None:
            return ENGLISH_ON_CPU
        return s.whisper_model

    def transcriber(self, language: str | None, site_model: str | None = None) -> Transcriber:
        model = self.model_for(language, site_model)
        with self._lock:
            if model not in self._transcribers:
                s = self.settings
                self._transcribers[model] = Transcriber(
                    whisper_model_dir(s.model_copy(update={"whisper_model": model})),
                    compute_type=s.whisper_compute_type, threads=s.analysis_threads,
                    device=whisper_device(s.whisper_device))
                log.info("live_model_loaded", model=self._transcribers[model].name)
            return self._transcribers[model]

    @staticmethod
    def speech_probabilities(context: np.ndarray, windows: np.ndarray) -> np.ndarray:
        """Silero's speech probability of each whole window of `windows`; `context` is the window before them (or
        zeros), whose end Silero reads with the first (faster-whisper's model takes each window with the last 64
        samples of the one before)."""
        out = get_vad_model()(np.concatenate([context, windows]).astype(np.float32))
        return np.asarray(out, dtype=np.float32).reshape(-1)[1:]

    def recognition(self, spec: ProjectSpec, tracks: Sequence[tuple[str, Role]]) -> LiveRecognition:
        s = self.settings
        return LiveRecognition(self, spec, tracks, s.live_partial_interval_seconds, s.whisper_beam_size,
                               self.embedder() if s.live_negative_utterances else None, s.live_negative_utterances)


class TrackRecogniser:
    """One track: voice activity, partial hypotheses with local agreement, finals."""

    def __init__(self, models: LiveModels, speaker: str, role: Role, language: str | None, hints: str | None,
                 partial_step_s: float, final_beam: int, site_model: str | None = None):
        self.models, self.speaker, self.role = models, speaker, role
        self.language, self.hints, self.site_model = language, hints, site_model
        self.partial_step = int(partial_step_s * RATE)
        self.final_beam = final_beam
        self.audio = np.zeros(0, dtype=np.float32)
        self.offset = 0  # the call's sample index of audio[0]
        self.judged = 0  # the call's samples the VAD has judged
        self.start: int | None = None  # first sample of the open utterance (padding included)
        self.speech = 0  # samples of speech in the open utterance
        self.silence = 0  # samples of silence since its last speech
        self.next_partial = 0  # the judged samples at which the open utterance is decoded next
        self.last_speech_end: int | None = None
        self.agreement = Agreement()
        self.last_partial = ""
        self.early: tuple[int, list[Heard]] | None = None  # (the speech's last sample, the final decoded up to it)

    @property
    def speaking(self) -> bool:
        return self.start is not None

    def feed(self, samples: np.ndarray, partial: bool = True) -> list[Event]:
        """New samples; `partial`: decode the open utterance if it is time (False: more audio follows at once)."""
        self.audio = np.concatenate([self.audio, samples.astype(np.float32)])
        events: list[Event] = []
        count = (self.offset + len(self.audio) - self.judged) // WINDOW
        if count:
            at = self.judged - self.offset
            context = self.audio[at - WINDOW:at] if at >= WINDOW else np.zeros(WINDOW, dtype=np.float32)
            probabilities = self.models.speech_probabilities(context, self.audio[at:at + count * WINDOW])
            for p in probabilities:
                self.judged += WINDOW
                events += self._judge(float(p))
        if partial:
            events += self.partial()
        self._trim()
        return events

    def partial(self) -> list[Event]:
        """The open utterance decoded again if it is time, and the speaker is not pausing; in a pause that may end
        it, its final decoded ahead (the pause must last END_SILENCE_MS before the final can leave: decoded by then,
        it leaves at once)."""
        if self.start is None:
            return []
        if self.silence >= EARLY_FINAL_MS * RATE // 1000:
            self._decode_early()
            return []
        if self.judged < self.next_partial or self.silence >= QUIET_MS * RATE // 1000:
            return []
        return self._partial()

    def finish(self) -> list[Event]:
        """The call is over: the open utterance ends where the audio does."""
        if self.start is None or self.speech < MIN_SPEECH_MS * RATE // 1000:
            return []
        return self._final(self.offset + len(self.audio))

    def _judge(self, p: float) -> list[Event]:
        if self.start is None:
            if p >= SPEECH_ON:
                self.start = max(self.offset, self.judged - WINDOW - PAD_BEFORE_MS * RATE // 1000)
                self.speech, self.silence = WINDOW, 0
                self.next_partial = self.judged + min(FIRST_PARTIAL_MS * RATE // 1000, self.partial_step)
            return []
        if p < SPEECH_OFF:
            self.silence += WINDOW
        else:
            self.speech += WINDOW
            self.silence = 0
        if self.silence >= END_SILENCE_MS * RATE // 1000:
            end = self.judged - self.silence
            self.last_speech_end = end
            if self.speech < MIN_SPEECH_MS * RATE // 1000:
                self._reset()
                return []
            return self._final(end + PAD_AFTER_MS * RATE // 1000)
        if self.judged - self.start >= MAX_UTTERANCE_S * RATE:
            return self._cut()
        return []

    def _decode(self, start: int, end: int, beam: int) -> list[Heard]:
        transcriber = self.models.transcriber(self.language, self.site_model)
        language = "en" if not transcriber.multilingual else language_code(self.language)
        samples = self.audio[start - self.offset:end - self.offset]
        segments, _ = transcriber.model.transcribe(
            samples, language=language, initial_prompt=self.hints or None, beam_size=beam, temperature=0.0,
            word_timestamps=True, condition_on_previous_text=False, vad_filter=False)
        words = []
        for segment in segments:
            if segment.no_speech_prob > _NO_SPEECH_PROB and segment.avg_logprob < _LOG_PROB:
                continue  # Whisper's own verdict: not speech
            for w in segment.words or []:
                if w.word.strip():
                    words.append(Heard(w.word.strip(), round(start / RATE + w.start, 3),
                                       round(start / RATE + w.end, 3), float(w.probability)))
        return words

    def _decode_early(self) -> None:
        assert self.start is not None
        speech_end = self.judged - self.silence
        if self.speech >= MIN_SPEECH_MS * RATE // 1000 and (self.early is None or self.early[0] != speech_end):
            self.early = (speech_end, self._decode(self.start, speech_end + PAD_AFTER_MS * RATE // 1000,
                                                   beam=self.final_beam))

    def _partial(self) -> list[Event]:
        assert self.start is not None
        self.next_partial = self.judged + self.partial_step
        self.agreement.hypothesis(self._decode(self.start, self.judged, beam=1))
        stable = " ".join(w.text for w in self.agreement.confirmed)
        text = " ".join(w.text for w in self.agreement.confirmed + self.agreement.tentative)
        if not text or text == self.last_partial:
            return []
        self.last_partial = text
        return [Partial(at=self.judged / RATE, speaker=self.speaker, role=self.role, start=self.start / RATE,
                        stable=stable, text=text)]

    def _final(self, end: int) -> list[Event]:
        assert self.start is not None
        if self.early is not None and self.early[0] + PAD_AFTER_MS * RATE // 1000 == end:  # the pause ended it
            heard = self.early[1]
        else:
            heard = self._decode(self.start, end, self.final_beam)
        words = self.agreement.close(heard)
        self._reset()
        return [self._final_event(words, end)] if words else []

    def _cut(self) -> list[Event]:
        """An utterance too long: closed at its last confirmed word; the rest begins the next one."""
        words = self.agreement.confirmed
        if not words:  # nothing two hypotheses agreed on in MAX_UTTERANCE_S: close it whole
            return self._final(self.judged)
        cut = int(words[-1].end * RATE)
        self._reset()
        self.start, self.speech, self.next_partial = cut, WINDOW, self.judged + self.partial_step
        return [self._final_event(words, cut)]

    def _final_event(self, words: list[Heard], end: int) -> Final:
        """`end`: where the utterance's audio ends; decided once the VAD judged that far (and its silence after)."""
        return Final(at=max(self.judged, end) / RATE, speaker=self.speaker, role=self.role, start=words[0].start,
                     end=max(words[-1].end, words[0].start), text=" ".join(w.text for w in words),
                     words=[Word(text=w.text, start=w.start, end=w.end, probability=round(w.probability, 3))
                            for w in words])

    def _reset(self) -> None:
        self.start, self.speech, self.silence = None, 0, 0
        self.agreement = Agreement()
        self.last_partial = ""
        self.early = None

    def _trim(self) -> None:
        """Audio no utterance can still need: before the open utterance, or before the padding of the next."""
        keep_from = self.start if self.start is not None else self.judged - PAD_BEFORE_MS * RATE // 1000 - WINDOW
        drop = max(0, keep_from - self.offset)
        if drop:
            self.audio = self.audio[drop:]
            self.offset += drop


@dataclass
class CallMonitor:
    """Goals and alerts over a call's finals and its silences. `embedder` (the text embedding model; None: no
    emotion alert) reads each customer utterance's emotions from its words, as the batch analysis's text part does;
    `negative_utterances` in a row read as negative raise one alert, and another only after a calmer one."""

    spec: ProjectSpec
    roles: dict[str, str]
    embedder: Any | None = None
    negative_utterances: int = 2
    met: set[int] = field(default_factory=set)
    silence_alerted: bool = False
    hold_announced_at: float | None = None
    negative_run: int = 0

    def __post_init__(self) -> None:
        self.rules = rules_for(self.spec)
        self.phrase_goals = [g for g in self.spec.goals if g.phrases]
        # a live alert is matched as a phrase goal of anyone, any time (its speaker rule aside)
        self.alerts = [Goal(id=i + 1, name=a.name, description=a.name, phrases=a.phrases, speaker=a.speaker)
                       for i, a in enumerate(self.spec.live_alerts)]

    def heard(self, final: Final, segment: TranscriptSegment) -> list[Event]:
        events: list[Event] = []
        role: Role = final.role
        for goal in self.phrase_goals:
            if goal.id in self.met:
                continue
            found = next((f for f in phrase_findings(goal, [segment], self.roles) if f.rejected is None), None)
            if found is not None:
                self.met.add(goal.id)
                events.append(GoalMet(at=final.at, goal_id=goal.id, goal_name=goal.name, phrase=found.phrase or "",
                                      quote=found.evidence.quote, start=found.evidence.start_ms / 1000,
                                      speaker=final.speaker, role=role))
        for alert in self.alerts:
            found = next((f for f in phrase_findings(alert, [segment], self.roles) if f.rejected is None), None)
            if found is not None:
                events.append(Alert(at=final.at, kind="phrase", name=alert.name, phrase=found.phrase,
                                    quote=found.evidence.quote, start=found.evidence.start_ms / 1000,
                                    speaker=final.speaker, role=role))
        if role == "agent" and announces_hold(self.rules, final.text):
            self.hold_announced_at = final.end
        if role == "customer":
            events += self._feeling(final)
        return events

    def _feeling(self, final: Final) -> list[Event]:
        if self.embedder is None or self.negative_utterances < 1:
            return []
        [shares] = text_distributions([final.text], self.embedder)
        if sum(p for name, p in zip(EMOTIONS, shares, strict=True) if name in NEGATIVE) < NEGATIVE_SHARE:
            self.negative_run = 0
            return []
        self.negative_run += 1
        if self.negative_run != self.negative_utterances:  # once a run: the next only after a calmer utterance
            return []
        felt = max((p, name) for name, p in zip(EMOTIONS, shares, strict=True) if name in NEGATIVE)[1]
        return [Alert(at=final.at, kind="emotion", name="Customer upset", emotion=felt, quote=final.text,
                      start=final.start, speaker=final.speaker, role=final.role)]

    def silence(self, now: float, speaking: bool, last_speech_end: float | None) -> list[Event]:
        if speaking or last_speech_end is None or now <= last_speech_end:
            self.silence_alerted = False
            return []
        held = self.hold_announced_at is not None and self.hold_announced_at >= last_speech_end - 1.0
        threshold = (self.rules.max_hold_ms if held else self.rules.long_pause_threshold_ms) / 1000
        seconds = now - last_speech_end
        if seconds <= threshold or self.silence_alerted:
            return []
        self.silence_alerted = True
        return [Alert(at=now, kind="silence", name="Long hold" if held else "Long silence", start=last_speech_end,
                      seconds=round(seconds, 2), threshold=threshold)]


class LiveRecognition:
    """One call's recognition: its tracks (speaker, role) in order, and the monitor of its goals and alerts."""

    def __init__(self, models: LiveModels, spec: ProjectSpec, tracks: Sequence[tuple[str, Role]],
                 partial_step_s: float, final_beam: int, embedder: Any | None = None, negative_utterances: int = 0):
        self.tracks = [TrackRecogniser(models, speaker, role, spec.language, spec.transcription_hints, partial_step_s,
                                       final_beam, spec.transcription_model) for speaker, role in tracks]
        self.monitor = CallMonitor(spec, {speaker: role for speaker, role in tracks}, embedder, negative_utterances)
        self.segments = 0

    def warm_up(self) -> None:
        """Load the models now (the first call of the process waits for them before its audio is heard), the
        project's site model included where the call is heard with it."""
        track = self.tracks[0]
        track.models.load()
        track.models.transcriber(track.language, track.site_model)

    def feed(self, chunks: Sequence[np.ndarray]) -> list[Event]:
        """New 16 kHz samples of each track (empty arrays for a track without any); the events they decide. However
        much came (a turn that ran late brings more), it is judged in slices of SLICE_S, the silences between
        them too; then the open utterances are decoded, once. Not in a turn that closed an utterance: its final
        leaves without waiting for them (they come in the next turn); nor in a turn that came late (CATCH_UP_S): a
        recognition behind the call (more calls than the CPU keeps up with) catches up on finals alone."""
        events: list[Event] = []
        step = int(SLICE_S * RATE)
        longest = max(len(c) for c in chunks)
        for at in range(0, longest, step):
            for track, samples in zip(self.tracks, chunks, strict=True):
                if len(samples[at:at + step]):
                    events += self._with_goals(track.feed(samples[at:at + step], partial=False))
            heard = [t for t in self.tracks if t.judged]
            if not heard:  # not a whole VAD window yet
                continue
            ends = [t.last_speech_end for t in heard if t.last_speech_end is not None]
            events += self.monitor.silence(min(t.judged for t in heard) / RATE, any(t.speaking for t in heard),
                                           max(ends) / RATE if ends else None)
        if longest <= CATCH_UP_S * RATE and not any(isinstance(e, Final) for e in events):
            for track in self.tracks:
                events += track.partial()
        return events

    def finish(self) -> list[Event]:
        events: list[Event] = []
        for track in self.tracks:
            events += self._with_goals(track.finish())
        return events

    def _with_goals(self, events: list[Event]) -> list[Event]:
        out: list[Event] = []
        for event in events:
            out.append(event)
            if isinstance(event, Final):
                out += self.monitor.heard(event, self._segment(event))
        return out

    def _segment(self, final: Final) -> TranscriptSegment:
        """A final as the batch stages read a segment (their phrase matching runs on it)."""
        channel = next(i for i, t in enumerate(self.tracks) if t.speaker == final.speaker)
        self.segments += 1
        return TranscriptSegment(
            id=self.segments - 1, channel=channel, speaker=final.speaker, start_ms=round(final.start * 1000),
            end_ms=round(final.end * 1000), text=final.text,
            words=[TranscriptWord(start_ms=round(w.start * 1000), end_ms=round(w.end * 1000), text=w.text,
                                  probability=w.probability) for w in final.words])
