"""When live recognition decodes (analysis/runtime/live.py), on a stand-in for Silero and Whisper that counts the
decodes: the first partial soon after an utterance opens, then one per partial step while the speaker goes on; in a
pause that may end the utterance, its final decoded ahead (sent once the pause did end it; a pause that did not
leaves it unused), and nothing in a turn that came late (a recognition behind the call catches up on finals alone)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from callscope.analysis.runtime import live
from callscope.analysis.runtime.live import RATE, WINDOW, LiveRecognition, TrackRecogniser
from callscope.live.events import Final, Partial
from callscope.resources.kinds import ProjectSpec


class Decodes:
    """Speech wherever the audio is not silent; Whisper hears a word every half second. `log`: (the audio fed so
    far in seconds, the decoded audio's seconds, the beam) of each decode."""

    multilingual = False

    def __init__(self) -> None:
        self.log: list[tuple[float, float, int]] = []
        self.fed = 0.0
        self.model = self

    @staticmethod
    def speech_probabilities(context: np.ndarray, windows: np.ndarray) -> np.ndarray:
        return (np.abs(windows.reshape(-1, WINDOW)).max(axis=1) > 0).astype(np.float32)

    def transcriber(self, language: str | None = None, site_model: str | None = None) -> Decodes:
        return self

    def transcribe(self, samples: np.ndarray, **options) -> tuple[list, None]:
        self.log.append((self.fed, len(samples) / RATE, options["beam_size"]))
        words = [SimpleNamespace(word=f" w{i}", start=i * 0.5, end=i * 0.5 + 0.4, probability=0.9)
                 for i in range(int(len(samples) / RATE / 0.5))]
        return [SimpleNamespace(no_speech_prob=0.0, avg_logprob=0.0, words=words)], None


def utterance(speech_s: float, silence_s: float) -> np.ndarray:
    return np.concatenate([np.full(int(speech_s * RATE), 0.1, np.float32), np.zeros(int(silence_s * RATE), np.float32)])


def feed_frames(models: Decodes, track: TrackRecogniser, audio: np.ndarray) -> list[tuple[float, object]]:
    """`audio` in 20 ms frames, each its own turn: (the audio fed so far, the event) of each event."""
    events = []
    for at in range(0, len(audio), RATE // 50):
        models.fed = (at + RATE // 50) / RATE
        events += [(models.fed, e) for e in track.feed(audio[at:at + RATE // 50])]
    return events


def test_partials_come_soon_then_each_step_and_the_final_is_decoded_in_the_pause_once() -> None:
    models = Decodes()
    track = TrackRecogniser(models, "channel-0", "agent", "en", None, partial_step_s=1.0, final_beam=5)  # type: ignore[arg-type]
    events = feed_frames(models, track, utterance(3.0, 1.5))
    partials = [fed for fed, _, beam in models.log if beam == 1]
    assert [round(f, 1) for f in partials] == [0.6, 1.6, 2.6]  # 0.5 s after the first speech window, then 1 s steps
    # the final's decode starts when the pause may end the utterance, not after it did: it leaves as soon as it did
    [(fed, seconds, _)] = [d for d in models.log if d[1] and d[2] == 5]
    assert 3.0 + live.EARLY_FINAL_MS / 1000 <= fed < 3.0 + live.EARLY_FINAL_MS / 1000 + 0.1 and seconds > 3.0
    [(sent, final)] = [(fed, e) for fed, e in events if isinstance(e, Final)]
    assert 3.0 + live.END_SILENCE_MS / 1000 <= sent < 3.0 + live.END_SILENCE_MS / 1000 + 0.1
    assert final.text == " ".join(f"w{i}" for i in range(int(seconds / 0.5)))
    assert all(isinstance(e, Partial | Final) for _, e in events)


def test_a_pause_that_does_not_end_the_utterance_leaves_its_early_decode_unused() -> None:
    models = Decodes()
    track = TrackRecogniser(models, "channel-0", "agent", "en", None, partial_step_s=1.0, final_beam=5)  # type: ignore[arg-type]
    events = feed_frames(models, track, np.concatenate([utterance(2.0, 0.45), utterance(2.0, 1.0)]))
    finals = [d for d in models.log if d[2] == 5]
    assert len(finals) == 2 and finals[1][1] > 4.0  # the second decode hears the whole utterance
    [(_, final)] = [(fed, e) for fed, e in events if isinstance(e, Final)]
    assert len(final.words) == len(final.text.split()) and final.end > 4.0


def test_a_turn_that_came_late_decodes_no_partial_only_the_final() -> None:
    models = Decodes()
    recognition = LiveRecognition(models, ProjectSpec(name="Support", language="en"),  # type: ignore[arg-type]
                                  [("channel-0", "agent"), ("channel-1", "customer")], 1.0, 5)
    late = utterance(2.0, 0.1)
    recognition.feed([late, np.zeros_like(late)])  # 2.1 s at once: behind the call
    assert models.log == []
    rest = utterance(0.0, 1.0)
    events = recognition.feed([rest, np.zeros_like(rest)])  # 1 s: caught up
    assert [beam for _, _, beam in models.log] == [5] and [e.type for e in events] == ["final"]


def test_a_turn_that_closes_an_utterance_decodes_no_partial_so_its_final_leaves_at_once() -> None:
    models = Decodes()
    recognition = LiveRecognition(models, ProjectSpec(name="Support", language="en"),  # type: ignore[arg-type]
                                  [("channel-0", "agent"), ("channel-1", "customer")], 1.0, 5)
    agent = utterance(2.0, 2.0)
    customer = np.concatenate([np.zeros(RATE, np.float32), utterance(3.0, 0.0)])  # speaking when the agent stops
    finals = 0
    for at in range(0, len(agent), RATE // 10):  # 100 ms turns
        before = len(models.log)
        turn = recognition.feed([agent[at:at + RATE // 10], customer[at:at + RATE // 10]])
        if any(isinstance(e, Final) for e in turn):
            finals += 1
            assert models.log[before:] == []  # decoded ahead, in the pause
    assert finals == 1 and [beam for _, _, beam in models.log].count(1) >= 4  # both tracks' partials otherwise
    assert [beam for _, _, beam in models.log].count(5) == 1
