"""Losing nothing: 20 real recordings go through `callscope serve` processes while the test SIGKILLs, at random
moments, a Ray worker (the task analysing a recording, or the actor holding the Whisper model), the dispatcher
process (with the local Ray it started) and the API process, restarting each. Every recording must end `completed`
exactly once (one analysis, version 1; one finished job) with exactly one distinct webhook delivered for it.

Processes, sharing one data directory (SQLite catalog, configuration store, blobs):
* API: `callscope serve` with the dispatcher off; it takes the uploads and delivers the webhooks.
* dispatcher: `callscope serve` with the dispatcher on (Ray executor, a local Ray of its own).
The uploader retries an upload whose connection broke with the same external_id: the first one that was stored
wins (the unique (project_id, external_id)), so a retry never makes a second recording.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from callscope.catalog.db import Catalog
from callscope.catalog.tables import Analysis, Job, Recording
from tests.analysis import speech
from tests.live import LiveServer, WebhookReceiver, start_server

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray"), pytest.mark.timeout(600),
              pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)]

API = "/api/v1/public"
RECORDINGS = 20
KILLS_PER_KIND = 2
SETTINGS = {
    "job_lease_seconds": "6", "job_retry_base_seconds": "1", "job_retry_max_seconds": "4",
    "job_max_attempts": "20", "dispatcher_poll_seconds": "0.3", "dispatcher_slots": "2", "ray_num_cpus": "2",
    "ray_object_store_mb": "128", "webhook_allow_private_addresses": "true",
    "webhook_allow_http": "true", "llm_enabled": "false",  # durability is under test, not the language model
}


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                children = [int(c) for c in (task / "children").read_text().split()]
                out += children
                todo += children
        except OSError:
            pass
    return out


def ray_workers(pid: int) -> list[int]:
    """Ray worker processes under `pid` that run our code (the analysis task or the model actor)."""
    found = []
    for child in descendants(pid):
        try:
            title = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if title.startswith("ray::") and ("analyze_recording" in title or "ModelActor" in title):
            found.append(child)
    return found


class Cluster:
    def __init__(self, data: Path) -> None:
        self.data = data
        self.api = start_server(data, dispatcher_enabled="false", **SETTINGS)
        self.dispatcher = start_server(data, **SETTINGS)
        self.lock = threading.Lock()
        self.kills = {"ray-worker": 0, "dispatcher": 0, "api": 0}

    def restart(self, which: str) -> None:
        server: LiveServer = getattr(self, which)
        server.process.wait()
        settings = {"dispatcher_enabled": "false"} if which == "api" else {}
        setattr(self, which, start_server(self.data, **settings, **SETTINGS))

    def kill(self, kind: str) -> bool:
        if kind == "ray-worker":
            workers = ray_workers(self.dispatcher.process.pid)
            if not workers:
                return False
            os.kill(random.choice(workers), signal.SIGKILL)
        else:
            server = self.api if kind == "api" else self.dispatcher
            server.process.send_signal(signal.SIGKILL)
            with self.lock:
                self.restart(kind)
        self.kills[kind] += 1
        return True

    def stop(self) -> None:
        self.api.stop()
        self.dispatcher.stop()


def upload_all(cluster: Cluster, key: str, project_id: int, files: list[Path], done: list[str]) -> None:
    for i in range(RECORDINGS):
        path = files[i % len(files)]
        while True:
            try:
                resp = httpx.post(f"{cluster.api.url}{API}/recordings", headers={"Authorization": f"Bearer {key}"},
                                  data={"project_id": str(project_id), "external_id": f"call-{i}"},
                                  files={"file": (path.name, path.read_bytes(), "audio/wav")}, timeout=30)
                if resp.status_code in (200, 201):
                    done.append(resp.json()["data"]["public_id"])
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)  # the API is down: it is being restarted


def test_every_recording_completes_exactly_once_whatever_is_killed(tmp_path: Path) -> None:
    random.seed(int(os.environ.get("CALLSCOPE_FAULT_SEED", "5")))
    files = []
    for n, sentence in enumerate(speech.SENTENCES[:3]):
        call = speech.make_call([0.3, sentence, 0.5, speech.SENTENCES[(n + 3) % 6], 0.3])
        files.append(speech.write(tmp_path / f"call-{n}.wav", [call.samples]))
    receiver = WebhookReceiver()
    cluster = Cluster(tmp_path / "data")
    try:
        key = cluster.api.new_key("chaos")
        project = tmp_path / "project.yaml"
        project.write_text(json.dumps({"apiVersion": "callscope.io/v1alpha1", "kind": "Project",
                                       "metadata": {"name": "chaos"},
                                       "spec": {"name": "Chaos", "language": "en",
                                                "webhook": {"url": receiver.url, "sections": ["metadata"]}}}))
        applied = cluster.api.cli("apply", "-f", str(project), check=False)
        assert applied.returncode == 0, applied.stderr[-2000:]
        project_id = None
        while project_id is None:  # the embedded operator numbers the project
            listed = httpx.get(f"{cluster.api.url}{API}/projects", headers={"Authorization": f"Bearer {key}"}).json()
            project_id = next((p["id"] for p in listed["data"] if p["name"] == "Chaos"), None)
            time.sleep(0.2)

        uploaded: list[str] = []
        uploader = threading.Thread(target=upload_all, args=(cluster, key, project_id, files, uploaded),
                                    daemon=True)
        uploader.start()
        plan = ["ray-worker", "api", "dispatcher"] * KILLS_PER_KIND
        catalog = Catalog(f"sqlite:///{(tmp_path / 'data' / 'catalog.db').resolve()}")
        deadline = time.monotonic() + 420
        while time.monotonic() < deadline:
            time.sleep(random.uniform(2, 6))
            if plan and cluster.kill(plan[0]):
                plan.pop(0)
            with catalog.session() as session:
                statuses = dict(session.execute(
                    select(Recording.status, func.count()).group_by(Recording.status)).all())
            if not plan and not uploader.is_alive() and statuses.get("completed", 0) == RECORDINGS:
                break
        uploader.join(60)
        print(f"\nkills survived: {cluster.kills} ({sum(cluster.kills.values())} in all)")

        with catalog.session() as session:
            rows = session.execute(select(Recording.public_id, Recording.status, Recording.status_reason)).all()
            versions = dict(session.execute(select(Analysis.recording_id, Analysis.version)).all())
            job_states = session.execute(select(Job.recording_id, Job.state)).all()
        catalog.dispose()
        assert len(rows) == RECORDINGS and sorted(set(uploaded)) == sorted(r[0] for r in rows)  # none lost, no dups
        assert [r for r in rows if r[1] != "completed"] == []
        assert sorted(versions.values()) == [1] * RECORDINGS  # completed exactly once: a second write bumps it
        assert sorted(state for _, state in job_states) == ["done"] * RECORDINGS
        assert sum(cluster.kills.values()) == 3 * KILLS_PER_KIND

        def delivered() -> dict[str, set[str]]:
            by_recording: dict[str, set[str]] = {}
            for headers, raw in list(receiver.deliveries):
                webhook_id, data = headers.get("webhook-id", ""), json.loads(raw)["data"]
                ref = str(data.get("public_id") or data.get("recording_id") or data.get("id"))
                by_recording.setdefault(ref, set()).add(webhook_id)
            return by_recording
        until = time.monotonic() + 60
        while len(delivered()) < RECORDINGS and time.monotonic() < until:
            time.sleep(0.5)
        by_recording = delivered()
        assert len(by_recording) == RECORDINGS
        assert all(len(ids) == 1 for ids in by_recording.values())  # one distinct event per recording
    finally:
        cluster.stop()
        receiver.stop()
