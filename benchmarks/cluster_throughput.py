"""Throughput of the cluster shape against the embedded one: the same batch of real-speech calls through the API.

What it measures
----------------
For each shape it brings up scripts/cluster.py's pieces (one PostgreSQL catalog, moto's S3, Redis limits) and:

* ``embedded``: one `callscope serve` whose dispatcher starts its own local Ray (the shape of `callscope serve`);
* ``cluster-N``: a Ray head and N worker nodes (``--cpus`` each) and one API replica joining them as a Ray client
  (CALLSCOPE_RAY_ADDRESS=ray://…), the shape of the Kubernetes manifests.

It analyses one warm-up call (Ray start, model load: not counted), then uploads ``--calls`` calls at once and
samples the catalog's job queue every ``--sample`` seconds until every recording is completed: queued jobs (the
depth), running (leased) jobs, and the attempts used. It prints per shape the wall time from the first upload to the
last completion, audio-seconds per wall-second and per core (this machine's CPUs), and the queue over time.

The calls are the English real-speech clips of scripts/fetch_real_speech.py (mono, cut to ``--call-seconds``),
used round robin; without that cache, synthetic espeak-ng calls (and it says so). On this 2-core machine every
shape shares the same two cores, so the ratio cluster/embedded is the overhead of the cluster shape (a Ray client,
a head, more processes); the gain of more worker nodes needs more cores than that.

How to run (repository root; PostgreSQL and Redis running)::

    .venv/bin/python -P benchmarks/cluster_throughput.py                       # embedded, cluster-1, cluster-2
    .venv/bin/python -P benchmarks/cluster_throughput.py --shapes cluster-2 --calls 12 --cpus 4
    .venv/bin/python -P benchmarks/cluster_throughput.py --shapes cluster-1 --calls 4 --metrics 3   # and /metrics
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "scripts")]

import api_load  # noqa: E402
from cluster import LocalCluster, Ports  # noqa: E402
from throughput import make_call, upload  # noqa: E402

from tests.analysis import speech  # noqa: E402
from tests.live import CLI, free_port  # noqa: E402

API = "/api/v1/public"
SETTINGS = {"dispatcher_poll_seconds": "0.2", "llm_enabled": "false", "log_level": "WARNING"}


def real_calls(folder: Path, seconds: float) -> list[tuple[Path, float]]:
    """The English mono real-speech clips, each cut to `seconds`; [] without the cache."""
    import av  # with the project (PyAV)

    cache = Path(os.environ.get("CALLSCOPE_REAL_SPEECH_DIR") or Path.home() / ".cache/callscope/real-speech")
    manifest = cache / "manifest.json"
    if not manifest.exists():
        return []
    calls = []
    for clip in json.loads(manifest.read_text())["clips"]:
        if clip["rendering"] != "mono" or clip["language"] != "en":  # the project's language
            continue
        with av.open(str(cache / clip["path"])) as container:
            resampler = av.AudioResampler(format="s16", layout="mono", rate=speech.RATE)
            samples = np.concatenate([f.to_ndarray().reshape(-1) for frame in container.decode(audio=0)
                                      for f in resampler.resample(frame)]).astype(np.float32) / 32768
        samples = samples[: int(seconds * speech.RATE)]
        calls.append((speech.write(folder / f"{clip['id']}.wav", [samples]), len(samples) / speech.RATE))
    return calls


def queue(cluster: LocalCluster) -> tuple[int, int, int]:
    """(queued, running, attempts used) of the catalog's analysis jobs."""
    from sqlalchemy import create_engine, text

    engine = create_engine(cluster.catalog_url)
    try:
        with engine.connect() as connection:
            rows = dict(connection.execute(text("SELECT state, count(*) FROM jobs GROUP BY state")).all())
            attempts = connection.execute(text("SELECT coalesce(sum(attempts), 0) FROM jobs")).scalar()
    finally:
        engine.dispose()
    return rows.get("queued", 0), rows.get("running", 0), int(attempts)


def measure(shape: str, args: argparse.Namespace, calls: list[tuple[Path, float]], root: Path) -> dict:
    workers = 0 if shape == "embedded" else int(shape.split("-")[1])
    cluster = LocalCluster(root=root, ports=Ports(gcs=free_port(), client=free_port(), s3=free_port(), api=0),
                           cpus_per_worker=args.cpus, database="callscope_bench", ray=workers > 0,
                           settings={**SETTINGS, "dispatcher_slots": str(args.slots)})
    try:
        (root / "logs").mkdir(parents=True, exist_ok=True)
        (root / "data").mkdir(mode=0o700, exist_ok=True)
        cluster.fresh_database()
        cluster.start_s3()
        if workers:
            cluster.start_head()
            for i in range(1, workers + 1):
                cluster.add_worker(i)
        cluster.start_replica(0)
        created = subprocess.run([CLI, "keys", "create", "--name", "bench", "--permissions", "read,write"],
                                 env={**os.environ, **cluster.env()}, capture_output=True, text=True)
        if created.returncode != 0:
            raise api_load.BenchmarkError(f"callscope keys create: {created.stderr[-1000:]}")
        with httpx.Client(base_url=cluster.api_url(0) + API, timeout=120,
                          headers={"Authorization": f"Bearer {created.stdout.split()[-1]}"}) as client:
            project = client.post("/projects", json={"name": "Bench", "language": "en"}).json()["data"]["id"]
            started = time.monotonic()
            finish(client, {upload(client, project, calls[0][0], "warm-up")}, args.timeout)
            warm = time.monotonic() - started
            first = time.monotonic()
            ids = {upload(client, project, calls[i % len(calls)][0], f"call-{i}") for i in range(args.calls)}
            timeline = finish(client, ids, args.timeout, lambda: queue(cluster), args.sample)
            exposed = metrics_sample(cluster.api_url(0), args.metrics) if args.metrics else []
        wall = timeline[-1][0] - first if timeline else time.monotonic() - first
        audio = sum(calls[i % len(calls)][1] for i in range(args.calls))
        return {"shape": shape, "warm_s": warm, "wall_s": wall, "audio_s": audio, "metrics": exposed,
                "timeline": [(round(t - first, 1), *q) for t, *q in timeline]}
    finally:
        cluster.down()
        shutil.rmtree(root, ignore_errors=True)


def metrics_sample(replica: str, lines: int) -> list[str]:
    """The replica's /metrics as the batch ends (its server still serving): the first `lines` samples of each
    callscope family, as Prometheus would scrape them."""
    shown: dict[str, list[str]] = {}
    for line in httpx.get(f"{replica}/metrics", timeout=30).text.splitlines():
        if line.startswith("callscope_"):
            family = line.split("{")[0].split(" ")[0].removesuffix("_total").removesuffix("_bucket")
            family = family.removesuffix("_count").removesuffix("_sum").removesuffix("_created")
            if len(shown.setdefault(family, [])) < lines and "_created" not in line.split("{")[0]:
                shown[family].append(line)
    return [line for family in sorted(shown) for line in shown[family]]


def finish(client: httpx.Client, ids: set[str], timeout: float, sample=None, every: float = 2.0) -> list[tuple]:
    """Poll until every recording is completed; the queue sampled every `every` seconds, with the time."""
    timeline: list[tuple] = []
    deadline, next_sample = time.monotonic() + timeout, 0.0
    while time.monotonic() < deadline:
        items = {r["public_id"]: r for r in client.get("/recordings", params={"per_page": 100}).json()["data"]}
        if failed := [items[i] for i in ids if items.get(i, {}).get("status") == "failed"]:
            raise api_load.BenchmarkError(f"recording failed: {failed[0].get('status_reason')}")
        done = all(items.get(i, {}).get("status") == "completed" for i in ids)
        if sample is not None and (done or time.monotonic() >= next_sample):
            timeline.append((time.monotonic(), *sample()))
            next_sample = time.monotonic() + every
        if done:
            return timeline
        time.sleep(0.25)
    raise api_load.BenchmarkError(f"the batch did not complete in {timeout:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", default=["embedded", "cluster-1", "cluster-2"])
    parser.add_argument("--calls", type=int, default=8, help="calls in the measured batch")
    parser.add_argument("--call-seconds", type=float, default=60.0, help="length of each call")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of each Ray worker node")
    parser.add_argument("--slots", type=int, default=2, help="CALLSCOPE_DISPATCHER_SLOTS of the replica")
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between samples of the queue")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--metrics", type=int, default=0, metavar="N",
                        help="print the replica's /metrics as the batch ends, N samples of each callscope family")
    args = parser.parse_args()
    print(f"command: {shlex.join(sys.orig_argv)}")
    print(f"machine: {os.cpu_count()} CPUs, {api_load.cpu_model()}")
    folder = Path(tempfile.mkdtemp(prefix="cs-bench-"))
    calls = real_calls(folder, args.call_seconds)
    source = "real speech (scripts/fetch_real_speech.py, mono clips)"
    if not calls:
        calls = [(folder / f"call-{i}.wav", make_call(folder / f"call-{i}.wav", args.call_seconds, i))
                 for i in range(4)]
        source = "synthetic espeak-ng speech (no real-speech cache)"
    print(f"calls: {len(calls)} distinct, {source}, {min(s for _, s in calls):.0f}-{max(s for _, s in calls):.0f} s")
    results = [measure(shape, args, calls, Path(f"/tmp/cs-bench-{os.getpid()}-{shape}")) for shape in args.shapes]
    cores = os.cpu_count() or 1
    base = next((r for r in results if r["shape"] == "embedded"), None)
    print("\n| shape | warm-up s | batch wall s | audio s | audio-s per wall-s | per core | vs embedded |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        rate = r["audio_s"] / r["wall_s"]
        ratio = f"{rate / (base['audio_s'] / base['wall_s']):.2f}x" if base else "-"
        print(f"| {r['shape']} | {r['warm_s']:.1f} | {r['wall_s']:.1f} | {r['audio_s']:.0f} | {rate:.2f} | "
              f"{rate / cores:.2f} | {ratio} |")
    for r in results:
        print(f"\nqueue of {r['shape']} (s after the first upload: queued / running / attempts used):")
        print("  " + ", ".join(f"{t:.0f}s {q}/{run}/{a}" for t, q, run, a in r["timeline"]))
        if r["metrics"]:
            print(f"\n/metrics of {r['shape']}'s replica as its batch ended:")
            print("\n".join(f"  {line}" for line in r["metrics"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
