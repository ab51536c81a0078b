"""Transcription with faster-whisper (CTranslate2; int8 on CPU), words timed.

`Transcriber` owns one `faster_whisper.WhisperModel`, loaded once from a local directory (nothing is fetched); a
Ray actor keeps it loaded (analysis/runtime/actors.py). `transcribe` takes one channel, the recording's language
(a regional tag is cut to its language; none: `detect_language` identifies it) and the project's hints, and returns
segments with timed words; a long channel is decoded in windows cut in silences, so memory stays bounded, and
speech Whisper wrote nothing for is decoded again. An English-only model (`*.en`) cannot transcribe another
language: the pipeline checks `supports(language)` first. Details: docs/analysis.md; figures: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import inspect
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from itertools import pairwise
from pathlib import Path

import ctranslate2
import faster_whisper
import numpy as np
import structlog

from callscope.analysis.models.files import EMBEDDED_WHISPER, embedded_name, whisper_model_dir
from callscope.analysis.result import ModelUsed, TranscriptSegment, TranscriptWord
from callscope.analysis.stages.vad import detect_speech
from callscope.analysis.types import SAMPLE_RATE, Audio, SpeechRegion, language_code
from callscope.config import Settings

log = structlog.get_logger()

BEAM_SIZE = 5
SEED = 0  # of the temperature fallback's sampling (transcribe)
WINDOW_S = 300.0
_CUT_SILENCE_MS = 500  # silences at least this long are where long audio is cut
MISSED_MIN_MS = 400  # uncovered speech shorter than this is a breath, a click or a word's tail
# A region whose segments cover more than this share of it was heard: Whisper ends a segment before the VAD does
# (a synthetic "Goodbye." covered 36 % of its region, and decoded again it came back as "bye")
MISSED_COVERED = 0.1
_MISSED_GAP_S = 1.0  # the silence put between missed regions decoded together: each stays its own utterance
_MISSED_PAD_MS = 150  # kept around a missed region: the VAD cuts close to a word's first and last sounds
# Whisper's own "this is no speech" rule (faster-whisper's defaults), applied to what is decoded again
_NO_SPEECH_PROB = 0.6
_LOG_PROB = -1.0
_COMPRESSION_RATIO = 2.4


def model_info(model_dir: Path, compute_type: str) -> ModelUsed:
    """Which Whisper model a Transcriber uses: the embedded model and its package, or the directory; and runtime."""
    runtime = f"faster-whisper {faster_whisper.__version__}, {compute_type}"
    embedded = EMBEDDED_WHISPER.get(embedded_name(model_dir) or "")
    if embedded is not None:
        return ModelUsed(stage="asr", name=f"whisper {embedded.name} ({embedded.distribution})",
                         version=f"{embedded.version}; {runtime}")
    return ModelUsed(stage="asr", name=f"whisper {Path(model_dir).name} ({model_dir})", version=runtime)


def model_name(model_dir: Path) -> str:
    """The Whisper model's short name: "base", "tiny.en" for the embedded ones, else the directory's name."""
    return embedded_name(model_dir) or Path(model_dir).name


def _windows(audio: Audio, channel: int, window_s: float) -> list[tuple[int, int]]:
    """[start, end) sample ranges covering the channel, each at most window_s long, cut in silences."""
    n = len(audio.channels[channel])
    limit = int(window_s * SAMPLE_RATE)
    if n <= limit:
        return [(0, n)]
    regions = detect_speech(audio, channel, min_silence_ms=_CUT_SILENCE_MS)
    cuts = [
        (a.end_ms + b.start_ms) // 2 * SAMPLE_RATE // 1000
        for a, b in pairwise(regions)
        if b.start_ms - a.end_ms >= _CUT_SILENCE_MS
    ]
    windows, start = [], 0
    while n - start > limit:
        inside = [c for c in cuts if start < c <= start + limit]
        end = inside[-1] if inside else start + limit
        windows.append((start, end))
        start = end
    windows.append((start, n))
    return windows


class Transcriber:
    """Whisper, loaded once from `model_dir`; `transcribe` one channel at a time."""

    def __init__(
        self,
        model_dir: Path,
        compute_type: str = "int8",
        threads: int = 2,
        *,
        device: str = "cpu",
        window_s: float = WINDOW_S,
        batch_size: int = 0,
        beam_size: int = BEAM_SIZE,
    ):
        self.model_dir = Path(model_dir)
        self.window_s = window_s
        self.beam_size = beam_size
        self.device = device  # "cpu" or "cuda": the pipeline finds a mono call's turns beside a GPU's transcription
        self.model = faster_whisper.WhisperModel(
            str(self.model_dir),
            device=device,
            compute_type=compute_type,
            cpu_threads=threads,
            num_workers=1,
            local_files_only=True,
        )
        # Batched inference (GPUs): the 30 s chunks of a window are decoded together, batch_size at a time.
        self.batch_size = batch_size
        self._batched = faster_whisper.BatchedInferencePipeline(self.model) if batch_size > 0 else None
        self.multilingual = bool(self.model.model.is_multilingual)
        self._has_hotwords = "hotwords" in inspect.signature(self.model.transcribe).parameters
        self.info = model_info(self.model_dir, compute_type)
        self.name = model_name(self.model_dir)  # "tiny.en", "large-v3": for messages

    def supports(self, language: str | None) -> bool:
        """Whether this model can transcribe `language` (a BCP 47 tag; None: unknown, assumed possible)."""
        code = language_code(language)
        return self.multilingual or code in (None, "en")

    def detect_language(self, audio: Audio) -> str:
        """The language spoken in `audio` (ISO 639-1, "en"...): Whisper's language identification on the first
        30 s of speech of each channel, the most probable wins; an English-only model answers "en"."""
        if not self.multilingual:
            return "en"
        best: tuple[float, str] | None = None
        for channel in range(len(audio.channels)):
            samples = np.asarray(audio.channels[channel], dtype=np.float32)
            if len(samples) == 0:
                continue
            try:
                code, probability, _ = self.model.detect_language(samples, vad_filter=True)
            except (ValueError, IndexError):  # no speech in the channel
                continue
            if best is None or probability > best[0]:
                best = (float(probability), code)
        return best[1] if best else "en"

    def _language(self, language: str | None) -> str | None:
        language = language_code(language)
        if not self.multilingual:
            if language and language != "en":
                log.warning("asr_english_only_model", model=str(self.model_dir), language=language, transcribed_as="en",
                            hint="set CALLSCOPE_WHISPER_MODEL to a multilingual model")
            return "en"
        return language or None

    def transcribe(self, audio: Audio, channel: int, language: str | None, hints: str | None,
                   speech: Sequence[SpeechRegion] = ()) -> list[TranscriptSegment]:
        """Segments of one channel in time order, ids from 0 (the caller renumbers), speaker "channel-<n>";
        `speech`: the channel's speech regions, whose missed parts are decoded again (module docstring)."""
        if audio.sample_rate != SAMPLE_RATE:
            raise ValueError(f"Whisper needs {SAMPLE_RATE} Hz audio, got {audio.sample_rate}")
        samples = np.asarray(audio.channels[channel], dtype=np.float32)
        if len(samples) == 0:
            return []
        lang = self._language(language)
        extra = {"hotwords": hints} if hints and self._has_hotwords else {}
        if self._batched is not None:
            extra["batch_size"] = self.batch_size
        segments: list[TranscriptSegment] = []
        for start, end in _windows(audio, channel, self.window_s):
            offset_ms = start * 1000 // SAMPLE_RATE
            results = self._decode(self._batched or self.model, samples[start:end], lang, hints, vad_filter=True,
                                   **extra)
            for result in results:
                segment = self._segment(result, len(segments), channel, offset_ms)
                if segment is not None:
                    segments.append(segment)
        missed = missed_speech(speech, segments)
        if missed:
            segments += self._transcribe_missed(samples, missed, channel, lang, hints, segments)
            segments.sort(key=lambda s: s.start_ms)
            segments = [s.model_copy(update={"id": i}) for i, s in enumerate(segments)]
        return segments

    def _decode(self, model, samples: np.ndarray, language: str | None, hints: str | None, **options):
        """Whisper's segments of `samples` with the options every decode shares. Seeded first: the temperature
        fallback samples, and one seed per decode gives the same audio the same transcript, whatever the process
        transcribed before (it had made benchmark figures depend on the order of the clips)."""
        ctranslate2.set_random_seed(SEED)
        results, _ = model.transcribe(samples, language=language, initial_prompt=hints or None,
                                      beam_size=self.beam_size,
                                      word_timestamps=True, condition_on_previous_text=False, **options)
        return results

    def _transcribe_missed(self, samples: np.ndarray, missed: Sequence[SpeechRegion], channel: int,
                           language: str | None, hints: str | None,
                           written: Sequence[TranscriptSegment] = ()) -> list[TranscriptSegment]:
        """The missed regions decoded together, a second of silence apart, their times moved back to the call's;
        a word mostly inside a word already `written` is that word again ("Bye" of a "Goodbye." whose last
        syllable ran past its segment) and is left out."""
        written_words = _Spans((w.start_ms, w.end_ms) for s in written for w in s.words)
        pieces, places = [], []  # places: (start in the joined audio, start in the call, length), in samples
        gap = np.zeros(int(_MISSED_GAP_S * SAMPLE_RATE), dtype=np.float32)
        pad, at = _MISSED_PAD_MS * SAMPLE_RATE // 1000, 0
        for region in missed:
            start = max(0, region.start_ms * SAMPLE_RATE // 1000 - pad)
            end = min(len(samples), region.end_ms * SAMPLE_RATE // 1000 + pad)
            pieces += [samples[start:end], gap]
            places.append((at, start, end - start))
            at += end - start + len(gap)
        # temperature 0 only: Whisper's fallback re-decodes what fails its rules at five higher temperatures, and
        # what fails them here is left out anyway (fr-dialogue-mono: 11 s of missed speech cost 64 s, none kept)
        results = self._decode(self.model, np.concatenate(pieces), language, hints, vad_filter=False,
                               temperature=0.0)

        def piece(seconds: float) -> int:
            """The missed region nearest to a time of the joined audio (Whisper times a region's first word into the
            silence before it)."""
            sample = int(seconds * SAMPLE_RATE)

            def distance(place: tuple[int, int, int]) -> int:
                joined_at, _, length = place
                return max(joined_at - sample, sample - (joined_at + length), 0)

            return min(range(len(places)), key=lambda i: distance(places[i]))

        def in_call(seconds: float, index: int) -> int:
            """A time of the joined audio as milliseconds of the call, kept inside its region."""
            joined_at, call_at, length = places[index]
            return (call_at + min(max(int(seconds * SAMPLE_RATE) - joined_at, 0), length)) * 1000 // SAMPLE_RATE

        words: dict[int, list[TranscriptWord]] = {}  # region index -> its words: one segment per region
        texts: dict[int, str] = {}  # region index -> its words as Whisper spells them (" l", "'île")
        for result in results:
            if (result.no_speech_prob > _NO_SPEECH_PROB or result.avg_logprob < _LOG_PROB
                    or result.compression_ratio > _COMPRESSION_RATIO):
                continue  # Whisper's own verdict: not speech, words it is not sure of, or a loop of repeats
            for w in result.words or []:
                if w.word.strip():
                    index = piece((w.start + w.end) / 2)
                    start = in_call(w.start, index)
                    end = max(start, in_call(w.end, index))
                    if 2 * written_words.overlap_ms(start, end) > end - start:
                        continue  # mostly inside a word already written: that word again
                    texts[index] = texts.get(index, "") + w.word
                    words.setdefault(index, []).append(TranscriptWord(
                        start_ms=start, end_ms=end, text=w.word.strip(), probability=float(w.probability)))
        found = [TranscriptSegment(id=0, channel=channel, speaker=f"channel-{channel}", start_ms=ws[0].start_ms,
                                   end_ms=ws[-1].end_ms, text=texts[i].strip(), words=ws)
                 for i, ws in sorted(words.items())]
        log.info("asr_missed_speech_decoded", channel=channel, regions=len(missed), segments_kept=len(found))
        return found

    @staticmethod
    def _segment(result, index: int, channel: int, offset_ms: int) -> TranscriptSegment | None:
        text = result.text.strip()
        if not text:
            return None
        seg_start = offset_ms + round(result.start * 1000)
        seg_end = max(seg_start, offset_ms + round(result.end * 1000))
        words: list[TranscriptWord] = []
        floor = seg_start  # words stay inside the segment and in time order
        for w in result.words or []:
            word = w.word.strip()
            if not word:
                continue
            w_start = min(max(offset_ms + round(w.start * 1000), floor), seg_end)
            w_end = min(max(offset_ms + round(w.end * 1000), w_start), seg_end)
            words.append(TranscriptWord(start_ms=w_start, end_ms=w_end, text=word, probability=float(w.probability)))
            floor = w_end
        return TranscriptSegment(
            id=index,
            channel=channel,
            speaker=f"channel-{channel}",
            start_ms=seg_start,
            end_ms=seg_end,
            text=text,
            words=words,
        )


def missed_speech(speech: Sequence[SpeechRegion], segments: Sequence[TranscriptSegment]) -> list[SpeechRegion]:
    """The speech regions of at least MISSED_MIN_MS that the segments cover at most MISSED_COVERED of (segments,
    not words: Whisper times a digit read out as a word of 0.1 s in a second of speech)."""
    said = _Spans((s.start_ms, s.end_ms) for s in segments)
    return [r for r in speech if r.end_ms - r.start_ms >= MISSED_MIN_MS
            and said.overlap_ms(r.start_ms, r.end_ms) <= MISSED_COVERED * (r.end_ms - r.start_ms)]


class _Spans:
    """Time spans (ms), sorted by start, for how much of another span they cover: only the spans that can reach
    it are looked at (an hour's call has thousands of segments and regions)."""

    def __init__(self, spans: Iterable[tuple[int, int]]) -> None:
        self._spans = sorted(spans)
        self._starts = [start for start, _ in self._spans]
        self._longest = max((end - start for start, end in self._spans), default=0)

    def overlap_ms(self, start: int, end: int) -> int:
        first = bisect_left(self._starts, start - self._longest)  # spans starting earlier end before `start`
        return sum(max(0, min(end, b) - max(start, a))
                   for a, b in self._spans[first:bisect_left(self._starts, end)])


def whisper_device(setting: str) -> str:
    """``cuda`` or ``cpu`` for a CALLSCOPE_WHISPER_DEVICE value; ``auto`` asks CTranslate2 whether it sees a GPU."""
    if setting != "auto":
        return setting
    return "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"


def site_model_settings(settings: Settings, name: str) -> Settings:
    """The settings whose Whisper model is the site's model `name` (CALLSCOPE_WHISPER_MODELS), for a project that
    names it: its transcriber is built as the default one is. FileNotFoundError where the site has no such model."""
    if name not in settings.whisper_models:
        known = ", ".join(sorted(settings.whisper_models)) or "none"
        raise FileNotFoundError(f"the project's transcription model {name!r} is not one of this site's "
                                f"(CALLSCOPE_WHISPER_MODELS: {known})")
    return settings.model_copy(update={"whisper_model": settings.whisper_models[name]})


def transcriber_from_settings(settings: Settings) -> Transcriber:
    """The Transcriber the settings describe: model directory, compute type, threads, device, batch and beam size."""
    return Transcriber(
        whisper_model_dir(settings),
        compute_type=settings.whisper_compute_type,
        threads=settings.analysis_threads,
        device=whisper_device(settings.whisper_device),
        batch_size=settings.whisper_batch_size,
        beam_size=settings.whisper_beam_size,
    )
