"""Analysis throughput: a batch of calls through the real dispatcher and Ray of `callscope serve`.

What it measures
----------------
It starts `callscope serve` (api_load.Server: a free port, a fresh temporary data directory) with the Ray executor,
creates an API key and a project, waits until the dispatcher's Ray is up and its Whisper actor loaded (one warm-up
call analysed first, not counted), then uploads ``--calls`` calls through ``POST /recordings`` at once and polls the
list until every one is ``completed`` (or ``failed``, which is an error). The calls are synthetic two-sentence
conversations of espeak-ng speech (tests/analysis/speech.py), ``--call-seconds`` long each (sentences repeated with
pauses), mono 16 kHz WAV.

It prints recordings per minute and audio-seconds per wall-second, from the first upload to the last completion,
and the machine. On a machine where CTranslate2 sees a CUDA GPU (``ctranslate2.get_cuda_device_count()``) the
server runs Whisper on it: CALLSCOPE_WHISPER_DEVICE=cuda, float16, one GPU per transcription actor and batched
inference (CALLSCOPE_WHISPER_BATCH_SIZE, ``--batch-size``); else on the CPU with int8.

How to run (repository root; needs espeak-ng)::

    .venv/bin/python benchmarks/throughput.py                 # 12 calls of 30 s
    .venv/bin/python benchmarks/throughput.py --calls 40 --slots 4 --whisper-model /models/large-v3

The server inherits the environment except the settings this script sets.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # tests.analysis.speech and the sibling api_load

import api_load  # noqa: E402

from tests.analysis import speech  # noqa: E402

API = api_load.API
BenchmarkError = api_load.BenchmarkError


def say(line: str = "") -> None:
    print(line, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=12, help="calls in the measured batch")
    parser.add_argument("--call-seconds", type=float, default=30.0, help="length of each call")
    parser.add_argument("--slots", type=int, default=2, help="CALLSCOPE_DISPATCHER_SLOTS")
    parser.add_argument("--asr-actors", type=int, default=1, help="CALLSCOPE_RAY_ASR_ACTORS")
    parser.add_argument("--batch-size", type=int, default=8, help="CALLSCOPE_WHISPER_BATCH_SIZE on a GPU")
    parser.add_argument("--whisper-model", default=None, help="CALLSCOPE_WHISPER_MODEL (default: the embedded base)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for the batch")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    return parser.parse_args(argv)


def gpus() -> int:
    try:
        import ctranslate2

        return ctranslate2.get_cuda_device_count()
    except Exception:  # noqa: BLE001 - no CUDA runtime at all: the CPU it is
        return 0


def make_call(path: Path, seconds: float, seed: int) -> float:
    """A mono WAV of about `seconds` of two speakers' sentences and pauses; its real length in seconds."""
    rng = np.random.default_rng(seed)
    parts: list[str | float] = [0.3]
    while sum(len(speech.speak(p)) if isinstance(p, str) else p * speech.RATE for p in parts) < seconds * speech.RATE:
        parts += [speech.SENTENCES[int(rng.integers(len(speech.SENTENCES)))], float(rng.uniform(0.4, 1.5))]
    call = speech.make_call(parts)
    speech.write(path, [call.samples])
    return len(call.samples) / speech.RATE


def server_settings(args: argparse.Namespace, cuda: bool) -> dict[str, str]:
    env = {"CALLSCOPE_ANALYSIS_EXECUTOR": "ray", "CALLSCOPE_DISPATCHER_SLOTS": str(args.slots),
           "CALLSCOPE_DISPATCHER_POLL_SECONDS": "0.2", "CALLSCOPE_RAY_ASR_ACTORS": str(args.asr_actors),
           "CALLSCOPE_RAY_OBJECT_STORE_MB": "512"}
    if args.whisper_model:
        env["CALLSCOPE_WHISPER_MODEL"] = args.whisper_model
    if cuda:
        env.update({"CALLSCOPE_WHISPER_DEVICE": "cuda", "CALLSCOPE_WHISPER_COMPUTE_TYPE": "float16",
                    "CALLSCOPE_RAY_ASR_NUM_GPUS": "1", "CALLSCOPE_WHISPER_BATCH_SIZE": str(args.batch_size)})
    else:
        env.update({"CALLSCOPE_WHISPER_DEVICE": "cpu", "CALLSCOPE_WHISPER_COMPUTE_TYPE": "int8"})
    return env


def upload(client: httpx.Client, project_id: int, path: Path, external_id: str) -> str:
    with path.open("rb") as fh:
        resp = client.post("/recordings", data={"project_id": str(project_id), "external_id": external_id},
                           files={"file": (path.name, fh, "audio/wav")})
    if resp.status_code not in (200, 201):
        raise BenchmarkError(f"upload {external_id}: {resp.status_code} {resp.text[:300]}")
    return resp.json()["data"]["public_id"]


def wait_all(client: httpx.Client, server, ids: set[str], timeout: float) -> float:
    """Poll until every recording is completed; the monotonic time the last one was seen completed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server.check_alive()
        items = client.get("/recordings", params={"per_page": 100}).json()["data"]
        status = {r["public_id"]: r for r in items if r["public_id"] in ids}
        failed = [r for r in status.values() if r["status"] == "failed"]
        if failed:
            raise BenchmarkError(f"recording failed: {failed[0].get('status_reason')}")
        if len(status) == len(ids) and all(r["status"] == "completed" for r in status.values()):
            return time.monotonic()
        time.sleep(0.25)
    raise BenchmarkError(f"the batch did not complete in {timeout:.0f} s")


def run(args: argparse.Namespace, server, workdir: Path) -> None:
    cuda = gpus() > 0
    say(f"command: {shlex.join(sys.orig_argv)}")
    say(f"machine: {platform.node()}, {os.cpu_count()} CPUs, {api_load.cpu_model()}; "
        f"{'CUDA GPUs: ' + str(gpus()) if cuda else 'no CUDA GPU: Whisper on the CPU'}")
    server.env.update(server_settings(args, cuda))
    say("settings: " + " ".join(f"{k}={v}" for k, v in sorted(server_settings(args, cuda).items())))
    started = time.perf_counter()
    files, audio_s = [], []
    for i in range(min(args.calls, 4)):  # a few distinct calls, reused round robin
        path = workdir / f"call-{i}.wav"
        audio_s.append(make_call(path, args.call_seconds, seed=i))
        files.append(path)
    say(f"made {len(files)} distinct calls of {', '.join(f'{s:.1f}' for s in audio_s)} s "
        f"in {time.perf_counter() - started:.1f} s")
    server.start()
    import asyncio

    asyncio.run(server.wait_ready())
    key = server.create_key()
    with httpx.Client(base_url=server.base_url + API, headers={"Authorization": f"Bearer {key}"},
                      timeout=120) as client:
        project = client.post("/projects", json={"name": "Throughput", "language": "en"})
        project_id = project.json()["data"]["id"]
        started = time.monotonic()
        warm = upload(client, project_id, files[0], "warm-up")
        wait_all(client, server, {warm}, args.timeout)
        say(f"warm-up (Ray start, model load, first call): {time.monotonic() - started:.1f} s")

        first = time.monotonic()
        ids = {upload(client, project_id, files[i % len(files)], f"call-{i}") for i in range(args.calls)}
        uploaded = time.monotonic()
        last = wait_all(client, server, ids, args.timeout)
    wall = last - first
    total_audio = sum(audio_s[i % len(files)] for i in range(args.calls))
    say(f"batch: {args.calls} calls, {total_audio:.0f} s of audio; uploads took {uploaded - first:.1f} s; "
        f"all completed {wall:.1f} s after the first upload")
    say(f"throughput: {args.calls / wall * 60:.1f} recordings per minute, "
        f"{total_audio / wall:.2f} audio-seconds per wall-second")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if speech.ESPEAK is None:
        print(speech.SKIP_REASON, file=sys.stderr)
        return 1
    workdir = Path(tempfile.mkdtemp(prefix="callscope-bench-tp-"))
    server = api_load.Server(workdir / "data", workdir / "server.log")
    return api_load.run_against(server, lambda: run(args, server, workdir),
                                lambda: api_load.keep_or_remove(workdir, args.keep))


if __name__ == "__main__":
    sys.exit(main())
