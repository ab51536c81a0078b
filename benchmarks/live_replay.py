r"""Live calls replayed in real time through a real `callscope serve`: how soon the words, goals and alerts come,
how right the live transcript is beside the batch one, and whether the recognition keeps up over a long call.

What it measures
----------------
The call: real recorded English speech, two parties on two tracks. Allison Smith's Asterisk prompts
(scripts/fetch_real_speech.py's Debian package, with the package's transcript of each prompt) are the turns, the
agent's and the customer's in alternation with 0.4-0.9 s between them, after 2 s of ringing silence, to
`--minutes` long (the 159 prompts last about 8 minutes: a longer call says them again, reshuffled). The project
has a phrase goal (three words of the agent's second turn) and a `liveAlerts` phrase (three words of the
customer's second turn, said again every tenth customer turn).

Each call is sent as the carrier would, 20 ms frames of both tracks in real time, by a real WebSocket client:

* `twilio`: a call rung on the project's virtual number (the signed voice webhook), then its Media Stream (signed
  upgrade, `connected`, `start`, `media` of both tracks: μ-law 8 kHz, 160 bytes each, `stop`); its events are read
  as Server-Sent Events (`/recordings/{id}/live`, the id found on the members' list of live calls);
* `generic`: `/api/v1/public/live` with an API key, `start` (pcm16, 16 kHz, 2 channels), stereo frames, `stop`;
  the events come back on the same socket.

`--concurrent 1 2 3` runs that many calls at once (the same audio), each count after the other. Figures, over the
turns of every call (p50/p95 of seconds, wall clock: the audio at second τ of the call is sent at t0 + τ):

* first partial: from a turn's first sound (its reference start) to the first words of it on the client (the first
  `partial`, or the `final` where the utterance closed before any partial);
* final: from a turn's last sound (its reference end) to the `final` that closes it;
* goal / alert: from the end of the words that met it (their times in the final) to the `goal` or `alert` event,
  and from that final's arrival to it ("after final"); hits are events over phrases said;
* WER: the finals of every call against the reference transcript, each track's words in order (the two tracks'
  utterances interleave), beside the batch transcript (the analysis's Whisper with its beam, VAD and windows,
  `analysis/stages/asr.py`) of the stored recording of the same call;
* lag: the audio sent when an event arrives minus the audio second it was decided at (`at`), the recognition's
  delay behind the call; per minute of the call, its median and largest, at the minutes of `--lag-at` (a lag that
  grows over a long call means the recognition falls behind for good).

`--executor ray` (the default, as the server's) recognises each call in its own Ray actor on the server's local
Ray, which loads the models when the call starts (the first turn's words wait for them); `--executor inline` in
the server's threads, the models loaded once.

`--save FILE` writes the figures as JSON; `--baseline FILE` prints each figure beside the saved one ("before >
now"). The server runs with the batch analysis off (`CALLSCOPE_DISPATCHER_ENABLED=false`): the replay competes
only with itself; timings on a shared machine are noisy, so `uptime`'s load is printed beside them.

How to run (repository root; after `scripts/fetch_real_speech.py`)::

    .venv/bin/python -P benchmarks/live_replay.py --save /tmp/live-before.json     # 2-minute call, both paths
    .venv/bin/python -P benchmarks/live_replay.py --baseline /tmp/live-before.json
    .venv/bin/python -P benchmarks/live_replay.py --paths generic --concurrent 1 2 3 --minutes 2
    .venv/bin/python -P benchmarks/live_replay.py --paths generic --minutes 30 --lag-at 5 10 20 30

On a GPU machine (benchmarks/gpu.py's docstring carries the wheels, Whisper base and the clips there; this
script needs the project installed with its server dependencies, the real-speech cache's `downloads/debian`
folder for the prompts, and websocket-client): `--gpu` runs Whisper on CUDA (float16) for the live and the batch
transcript::

    python3 -P benchmarks/live_replay.py --gpu --whisper-model /root/gpu/whisper-base --concurrent 1 4 8 16
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import websocket

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]  # benchmarks.*, scripts.*, tests.*

from benchmarks.real_speech import error_rate, tokens  # noqa: E402
from callscope.analysis.stages.asr import transcriber_from_settings  # noqa: E402
from callscope.analysis.stages.decode import decode  # noqa: E402
from callscope.analysis.stages.vad import detect_speech  # noqa: E402
from callscope.config import Settings  # noqa: E402
from callscope.telephony.twilio_voice import SIGNATURE_HEADER, signature  # noqa: E402
from scripts.fetch_real_speech import SOUNDS, TRANSCRIPTS, VOICES, cache_dir, deb_root, load, sentences, transcripts  # noqa: E402
from tests.live import LiveServer, start_server  # noqa: E402
from tests.live_calls.sound import TwoParty, mulaw_encode  # noqa: E402
from tests.pages.site import Site, sign_in  # noqa: E402

RATE = 16_000
FRAME_S = 0.02
LEAD_S = 2.0  # ringing before the first word: the Twilio reader finds the call meanwhile
API = "/api/v1/public"
SID, TOKEN = "AC" + "cd" * 16, "twilio-auth-token-of-the-live-benchmark"
NUMBER, OPERATOR_PHONE = "+14155550130", "+14155550131"
MEMBER = "supervisor@example.com"
SPEAKERS = ("channel-0", "channel-1")  # agent, customer
ALERT_EVERY = 10  # customer turns between two sayings of the alert phrase
TARGETS = {"first_partial": 3.0, "final": 2.0, "alert_after_final": 1.0}


@dataclass
class Turn:
    track: int  # 0 agent, 1 customer
    start: float
    end: float
    text: str


@dataclass
class Call:
    agent: np.ndarray  # 16 kHz float32, both the same length
    customer: np.ndarray
    turns: list[Turn]
    goal: str
    alert: str

    @property
    def seconds(self) -> float:
        return len(self.agent) / RATE


def phrase_of(text: str) -> str:
    words = re.findall(r"[a-z']+", text.lower())
    return " ".join(words[1:4] if len(words) >= 5 else words[:3])


def build_call(minutes: float, seed: int = 0) -> Call:
    """The agent's and the customer's prompts in turn to `minutes` (module docstring)."""
    downloads = cache_dir() / "downloads"
    voice = VOICES["allison"]
    sounds, texts = deb_root(downloads, voice.deb), deb_root(downloads, TRANSCRIPTS["en"])
    if sounds is None or texts is None:
        sys.exit("the English prompts are missing: run scripts/fetch_real_speech.py first")
    pool = sentences(transcripts(texts[0], "en"), sounds[0] / SOUNDS / voice.deb.voice_dir, voice.deb.extension)
    rng = random.Random(seed)
    order: list[tuple[str, str]] = []
    lead = np.zeros(int(LEAD_S * RATE), np.float32)
    parts: dict[int, list[np.ndarray]] = {0: [lead], 1: [lead]}
    turns: list[Turn] = []
    at, alert_prompt = int(LEAD_S * RATE), None
    goal = alert = ""
    while at < minutes * 60 * RATE:
        if not order:
            order = list(pool)
            rng.shuffle(order)
        track = len(turns) % 2
        path, text = order.pop()
        customer_turn = len(turns) // 2
        if track == 1 and alert_prompt is not None and customer_turn % ALERT_EVERY == 1:
            path, text = alert_prompt
        samples = load(path)
        if len(turns) == 2:
            goal = phrase_of(text)
        if len(turns) == 3:
            alert, alert_prompt = phrase_of(text), (path, text)
        gap = np.zeros(int(rng.uniform(0.4, 0.9) * RATE), np.float32)
        for t in (0, 1):
            parts[t] += [samples if t == track else np.zeros_like(samples), gap]
        turns.append(Turn(track, at / RATE, (at + len(samples)) / RATE, text))
        at += len(samples) + len(gap)
    tail = np.zeros(RATE, np.float32)
    return Call(np.concatenate(parts[0] + [tail]), np.concatenate(parts[1] + [tail]), turns, goal, alert)


def project_objects(call: Call) -> str:
    docs = [
        {"kind": "Project", "metadata": {"name": "support"}, "spec": {
            "name": "Support", "language": "en", "live": True,
            "goals": [{"id": 1, "name": "goal", "description": "The agent says the goal's words.",
                       "phrases": [call.goal], "speaker": "agent"}],
            "liveAlerts": [{"name": "Forbidden", "phrases": [call.alert], "speaker": "customer"}]}},
        {"kind": "Operator", "metadata": {"name": "anna"},
         "spec": {"name": "Anna", "phoneNumber": OPERATOR_PHONE, "projects": ["support"]}},
        {"kind": "VirtualNumber", "metadata": {"name": "support-line"},
         "spec": {"phoneNumber": NUMBER, "countryCode": "US", "project": "support", "operators": ["anna"]}},
    ]
    return "\n---\n".join(json.dumps({"apiVersion": "callscope.io/v1alpha1", **d}) for d in docs)


# ----- the replay -------------------------------------------------------------------------------

@dataclass
class Received:
    """One call's events as the client got them: (arrival on time.monotonic(), event)."""

    t0: float = 0.0  # when the call's audio second 0 was sent
    events: list[tuple[float, dict]] = field(default_factory=list)
    public_id: str = ""
    done: threading.Event = field(default_factory=threading.Event)


class World:
    def __init__(self, server: LiveServer, data_dir: Path, call: Call):
        self.server, self.call = server, call
        self.ws_url = server.url.replace("http://", "ws://")
        self.key = server.new_key("live-replay")
        self.headers = {"Authorization": f"Bearer {self.key}"}
        deadline = time.monotonic() + 30
        while not (found := [p["id"] for p in httpx.get(f"{server.url}{API}/projects", headers=self.headers)
                             .json()["data"] if p["name"] == "Support"]):
            assert time.monotonic() < deadline, "the project got no id"
            time.sleep(0.2)
        self.project_id = found[0]
        server.cli("members", "add", "--account", "default", "--email", MEMBER, "--name", "Supervisor")
        self.pages, _ = sign_in(Site(server, data_dir, self.key, self.project_id), MEMBER)
        agent, customer = TwoParty(call.agent, call.customer).pcm16(RATE)
        self.stereo = np.stack([agent, customer], axis=1).astype("<i2")  # the generic path's frames
        self.phone = [mulaw_encode(t) for t in TwoParty(call.agent, call.customer).pcm16(8000)]  # agent, customer

    def generic(self, got: Received, seconds: float | None = None) -> None:
        step = int(FRAME_S * RATE)
        frames = [self.stereo[i:i + step].tobytes() for i in range(0, self._samples(seconds, RATE), step)]
        ws = websocket.create_connection(f"{self.ws_url}{API}/live", header=[f"Authorization: Bearer {self.key}"],
                                         timeout=600)
        ws.send(json.dumps({"type": "start", "project_id": self.project_id, "encoding": "pcm16", "sample_rate": RATE,
                            "channels": 2, "name": "Live replay"}))
        started = json.loads(ws.recv())
        got.public_id = started["recording"]["public_id"]
        threading.Thread(target=self._read_socket, args=(ws, got), daemon=True).start()
        self._paced(frames, got, lambda frame: ws.send_binary(frame))
        ws.send(json.dumps({"type": "stop"}))
        got.done.wait(600)  # the server closes the socket after `end`

    def twilio(self, got: Received, n: int, seconds: float | None = None) -> None:
        call_sid, stream, caller = f"CA{n:032x}", f"MZ{n:032x}", f"+1510555{n % 10000:04d}"
        frames = [[json.dumps({"event": "media", "streamSid": stream, "media": {
            "track": track, "chunk": str(i + 1), "timestamp": str(at // 8),
            "payload": base64.b64encode(self.phone[k][at:at + 160]).decode()}})
            for track, k in (("inbound", 1), ("outbound", 0))]
            for i, at in enumerate(range(0, self._samples(seconds, 8000), 160))]
        url = f"{self.server.url}/telephony/twilio/voice"
        params = {"AccountSid": SID, "CallSid": call_sid, "From": caller, "To": NUMBER, "CallStatus": "ringing",
                  "Direction": "inbound"}
        twiml = httpx.post(url, data=params, headers={SIGNATURE_HEADER: signature(TOKEN, url, list(params.items()))})
        stream_url = re.search(r'<Stream[^>]* url="([^"]+)"', twiml.text).group(1)
        ws = websocket.create_connection(stream_url, header=[f"{SIGNATURE_HEADER}: {signature(TOKEN, stream_url, [])}"],
                                         timeout=600)
        ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
        ws.send(json.dumps({"event": "start", "sequenceNumber": "1", "streamSid": stream, "start": {
            "accountSid": SID, "callSid": call_sid, "streamSid": stream, "tracks": ["inbound", "outbound"],
            "customParameters": {}, "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}}))
        threading.Thread(target=self._read_sse, args=(got, caller), daemon=True).start()
        threading.Thread(target=self._read_socket, args=(ws, None), daemon=True).start()  # as Twilio, answers pings
        self._paced(frames, got, lambda pair: [ws.send(m) for m in pair])
        ws.send(json.dumps({"event": "stop", "sequenceNumber": "9", "streamSid": stream,
                            "stop": {"accountSid": SID, "callSid": call_sid}}))
        got.done.wait(600)
        ws.close()

    def _samples(self, seconds: float | None, rate: int) -> int:
        return int((seconds or self.call.seconds) * rate)

    @staticmethod
    def _paced(frames: list, got: Received, send) -> None:
        """Each frame once its 20 ms have happened: frame i at t0 + (i + 1) × 20 ms."""
        got.t0 = time.monotonic()
        for i, frame in enumerate(frames):
            time.sleep(max(0.0, got.t0 + (i + 1) * FRAME_S - time.monotonic()))
            send(frame)

    @staticmethod
    def _read_socket(ws: websocket.WebSocket, got: Received | None) -> None:
        """Every message until the server closes the socket (reading also answers the server's pings)."""
        try:
            while True:
                message = ws.recv()
                if got is not None and message:
                    got.events.append((time.monotonic(), json.loads(message)))
        except (websocket.WebSocketException, OSError):
            pass
        if got is not None:
            got.done.set()

    def _read_sse(self, got: Received, caller: str) -> None:
        """Finds the call on the members' list of live calls (by its caller's number in its name), then reads its
        events as Server-Sent Events."""
        while not got.public_id:
            listed = re.findall(r'href="/recordings/([0-9a-f-]{36})">([^<]*)</a>', self.pages.get("/recordings").text)
            got.public_id = next((public_id for public_id, name in listed if name.endswith(caller)), "")
            time.sleep(0.1)
        with httpx.stream("GET", f"{self.server.url}{API}/recordings/{got.public_id}/live", headers=self.headers,
                          timeout=600) as resp:
            for line in resp.iter_lines():
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    got.events.append((time.monotonic(), event))
                    if event["type"] == "end":
                        break
        got.done.set()


def replay(world: World, path: str, count: int, base: int, seconds: float | None = None) -> list[Received]:
    """`count` calls at once through `path`; what each client received."""
    got = [Received() for _ in range(count)]
    threads = [threading.Thread(target=world.generic, args=(g, seconds)) if path == "generic" else
               threading.Thread(target=world.twilio, args=(g, base + i, seconds)) for i, g in enumerate(got)]
    for thread in threads:
        thread.start()
        time.sleep(0.25)  # calls do not begin in the same instant
    for thread in threads:
        thread.join()
    return got


# ----- the figures ------------------------------------------------------------------------------

def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def of_turn(event: dict, turn: Turn) -> bool:
    """Whether an utterance's event belongs to the turn: its speaker, begun within it (its start is padded)."""
    return event.get("speaker") == SPEAKERS[turn.track] and turn.start - 1.0 <= event["start"] <= turn.end


def phrase_end(finals: list[tuple[float, dict]], event: dict, phrase: str) -> tuple[float, float] | None:
    """(the end of the words that met `event`'s phrase, the arrival of their final)."""
    count = len(phrase.split())
    for arrived, final in finals:
        if final["speaker"] == event["speaker"] and final["seq"] < event["seq"] and \
                final["start"] - 0.01 <= event["start"] <= final["end"] + 0.01:
            words = [w for w in final["words"] if w["start"] >= event["start"] - 0.01]
            if len(words) >= count:
                return words[count - 1]["end"], arrived
    return None


def figures(call: Call, got: list[Received], lag_at: list[float]) -> dict:
    first, final, goal, goal_after, alert, alert_after, lags = [], [], [], [], [], [], []
    goals = alerts = 0
    texts, ends = [], []
    for g in got:
        ends += [f"{e['reason']} at {e['duration']:.0f} s" + (f" ({e['error']})" if e.get("error") else "")
                 for _, e in g.events if e.get("type") == "end"]
        events = [(a, e) for a, e in g.events if e.get("type") not in (None, "started", "error")]
        finals = [(a, e) for a, e in events if e["type"] == "final"]
        for turn in call.turns:
            shown = [a for a, e in events if e["type"] in ("partial", "final") and of_turn(e, turn)]
            closed = [a for a, e in finals if of_turn(e, turn)]
            if shown:
                first.append(min(shown) - (g.t0 + turn.start))
            if closed:
                final.append(max(closed) - (g.t0 + turn.end))
        for arrived, e in events:
            if e["type"] in ("partial", "final"):
                lags.append((e["at"], arrived - g.t0 - e["at"]))
            if e["type"] == "goal" or (e["type"] == "alert" and e["kind"] == "phrase"):
                found = phrase_end(finals, e, call.goal if e["type"] == "goal" else call.alert)
                if found is None:
                    continue
                said, final_arrived = found
                (goal if e["type"] == "goal" else alert).append(arrived - (g.t0 + said))
                (goal_after if e["type"] == "goal" else alert_after).append(arrived - final_arrived)
        goals += sum(e["type"] == "goal" for _, e in events)
        alerts += sum(e["type"] == "alert" and e["kind"] == "phrase" for _, e in events)
        texts.append([" ".join(e["text"] for _, e in sorted(finals, key=lambda f: f[1]["start"])
                               if e["speaker"] == speaker) for speaker in SPEAKERS])
    alert_said = sum(1 for t in call.turns if t.track == 1 and call.alert in " ".join(tokens(t.text, "en")))
    per_minute: dict[int, list[float]] = {}
    for at, lag in lags:
        per_minute.setdefault(int(at // 60), []).append(lag)
    marks = {f"{m:g}": ({"p50": statistics.median(per_minute[int(m) - 1]), "max": max(per_minute[int(m) - 1])}
                        if per_minute.get(int(m) - 1) else None) for m in lag_at}
    return {
        "calls": len(got), "turns": len(call.turns) * len(got), "ends": sorted(set(ends)),
        "first_partial": {"p50": pct(first, 0.5), "p95": pct(first, 0.95), "n": len(first)},
        "final": {"p50": pct(final, 0.5), "p95": pct(final, 0.95), "n": len(final)},
        "goal": {"p50": pct(goal, 0.5), "max": pct(goal, 1.0), "after_final": pct(goal_after, 1.0),
                 "hits": f"{goals}/{len(got)}"},
        "alert": {"p50": pct(alert, 0.5), "p95": pct(alert, 0.95), "after_final": pct(alert_after, 1.0),
                  "hits": f"{alerts}/{alert_said * len(got)}"},
        "wer": statistics.mean(wer(call, t) for t in texts),
        "lag": {"p50": pct([v for _, v in lags], 0.5), "max": pct([v for _, v in lags], 1.0), "minutes": marks},
    }


def wer(call: Call, heard: list[str]) -> float:
    """Word errors over the reference's words, each track's words in order (the tracks' utterances interleave)."""
    errors = words = 0
    for track, text in enumerate(heard):
        reference = tokens(" ".join(t.text for t in call.turns if t.track == track), "en")
        errors += round(error_rate(reference, tokens(text, "en")) * len(reference))
        words += len(reference)
    return errors / max(words, 1)


def batch_wer(world: World, public_id: str, call: Call, settings: dict[str, str]) -> float:
    """The batch transcript's WER of the stored recording of the call (the analysis's transcription)."""
    headers = world.headers
    deadline = time.monotonic() + 60
    while (resp := httpx.get(f"{world.server.url}{API}/recordings/{public_id}/audio_url", headers=headers)
           ).status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.5)
    audio_bytes = httpx.get(resp.json()["data"]["url"], timeout=120).content
    with tempfile.NamedTemporaryFile(suffix=".wav") as file:
        file.write(audio_bytes)
        file.flush()
        audio = decode(Path(file.name))
    transcriber = transcriber_from_settings(Settings(**{k: v for k, v in settings.items()
                                                        if k in ("whisper_model", "whisper_device",
                                                                 "whisper_compute_type", "analysis_threads")}))
    return wer(call, [" ".join(s.text for s in transcriber.transcribe(audio, channel, "en", None,
                                                                       detect_speech(audio, channel)))
                      for channel in range(len(audio.channels))])


# ----- the table --------------------------------------------------------------------------------

def load_average() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip().split("load average:")[-1].strip()


def show(value: float | str | None, fmt: str) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else format(value, fmt)


def row(label: str, now: dict, before: dict | None, keys: list[tuple[str, str, str]]) -> None:
    cells = []
    for name, key, fmt in keys:
        a = now.get(name, {}).get(key) if isinstance(now.get(name), dict) else now.get(name)
        if before is not None:
            b = before.get(name, {}).get(key) if isinstance(before.get(name), dict) else before.get(name)
            cells.append(f"{show(b, fmt)} > {show(a, fmt)}")
        else:
            cells.append(show(a, fmt))
    width = 16 if before is not None else 8
    print(f"{label:<22}" + " ".join(c.rjust(width) for c in cells))


COLUMNS = [("first_partial", "p50", ".2f"), ("first_partial", "p95", ".2f"), ("final", "p50", ".2f"),
           ("final", "p95", ".2f"), ("goal", "max", ".2f"), ("alert", "p95", ".2f"), ("alert", "after_final", ".2f"),
           ("wer", "", ".1%"), ("batch_wer", "", ".1%"), ("lag", "p50", ".2f"), ("lag", "max", ".2f")]


def report(results: dict, saved: dict | None) -> None:
    width = 16 if saved is not None else 8
    heads = ["part p50", "part p95", "final p50", "final p95", "goal", "alert p95", "al-final", "WER", "batch WER",
             "lag p50", "lag max"]
    print(f"\n{'path, calls at once':<22}" + " ".join(h.rjust(width) for h in heads))
    for name, now in results.items():
        row(name, now, (saved or {}).get(name), COLUMNS)
    print(f"targets, one call: first partial p95 <= {TARGETS['first_partial']} s, final <= {TARGETS['final']} s "
          f"after the speaker stops, alert <= {TARGETS['alert_after_final']} s after its final, live WER within 5 "
          "points of batch, lag not growing")
    for name, now in results.items():
        hits = f"goal {now['goal']['hits']}, alerts {now['alert']['hits']}, ended {', '.join(now['ends'])}"
        marks = ", ".join(f"{m} min: {show(v and v['p50'], '.2f')}/{show(v and v['max'], '.2f')}"
                          for m, v in now["lag"]["minutes"].items())
        print(f"{name}: {hits}; lag p50/max in the minute before {marks}; load {now['load']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", nargs="+", choices=["twilio", "generic"], default=["twilio", "generic"])
    parser.add_argument("--concurrent", type=int, nargs="+", default=[1], help="calls at once (default 1)")
    parser.add_argument("--minutes", type=float, default=2.0, help="length of the call (default 2)")
    parser.add_argument("--lag-at", type=float, nargs="+", help="minutes to print the lag at (default: the last)")
    parser.add_argument("--whisper-model", help="CALLSCOPE_WHISPER_MODEL of the server and the batch transcript")
    parser.add_argument("--live-whisper-model", help="CALLSCOPE_LIVE_WHISPER_MODEL (default: the Whisper model)")
    parser.add_argument("--gpu", action="store_true", help="Whisper on CUDA (float16), live and batch")
    parser.add_argument("--executor", choices=["ray", "inline"], default="ray",
                        help="CALLSCOPE_LIVE_EXECUTOR: each call its own Ray actor (the default), or the server's "
                        "threads")
    parser.add_argument("--no-batch", action="store_true", help="skip the batch transcript's WER")
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--baseline", type=Path, help="a JSON file written by --save: print it beside")
    args = parser.parse_args()
    lag_at = args.lag_at or [max(1.0, float(int(args.minutes)))]
    call = build_call(args.minutes)
    print(f"call: {call.seconds:.0f} s, {len(call.turns)} turns; goal phrase {call.goal!r}, alert phrase "
          f"{call.alert!r}; load {load_average()}", flush=True)
    settings = {"live_executor": args.executor, "whisper_model": args.whisper_model,
                "live_whisper_model": args.live_whisper_model,
                "whisper_device": "cuda" if args.gpu else None, "whisper_compute_type": "float16" if args.gpu else None}
    settings = {k: v for k, v in settings.items() if v}
    saved = json.loads(args.baseline.read_text())["results"] if args.baseline else None
    results: dict[str, dict] = {}
    batch: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        server = start_server(data_dir, number_provider="twilio", twilio_account_sid=SID, twilio_auth_token=TOKEN,
                              twilio_base_url="http://127.0.0.1:9", llm_enabled="false", dispatcher_enabled="false",
                              live_idle_timeout_seconds="60", **settings)
        try:
            (Path(tmp) / "objects.yaml").write_text(project_objects(call))
            server.cli("apply", "-f", str(Path(tmp) / "objects.yaml"))
            world = World(server, data_dir, call)
            replay(world, "generic", 1, 0, seconds=4.0)  # the first live call starts Ray, or loads the models
            n = 1
            for path in args.paths:
                for count in args.concurrent:
                    print(f"{path}: {count} call(s) at once, {call.seconds:.0f} s each ...", flush=True)
                    load_before = load_average()
                    got = replay(world, path, count, n)
                    n += count
                    results[f"{path}, {count}"] = now = figures(call, got, lag_at)
                    now["load"] = f"{load_before} > {load_average()}"
                    if not args.no_batch and path not in batch:
                        batch[path] = batch_wer(world, got[0].public_id, call, settings)
                    now["batch_wer"] = batch.get(path)
                    print(f"  first partial p95 {show(now['first_partial']['p95'], '.2f')} s, final p95 "
                          f"{show(now['final']['p95'], '.2f')} s, WER {now['wer']:.1%}, lag max "
                          f"{show(now['lag']['max'], '.2f')} s", flush=True)
        finally:
            server.stop()
    report(results, saved)
    if args.save:
        args.save.write_text(json.dumps({"minutes": args.minutes, "results": results}, indent=1))
        print(f"saved {args.save}")


if __name__ == "__main__":
    main()
