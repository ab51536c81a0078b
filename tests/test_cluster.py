"""The cluster shape on one machine (scripts/cluster.py), against its real processes: a Ray head and two Ray worker
nodes (each a `ray start` process group), two `callscope serve` replicas whose dispatchers join through
`ray://…` as the manifests' CALLSCOPE_RAY_ADDRESS does, one PostgreSQL catalog, moto's S3 and Redis rate limits.

Faults: an API replica killed mid-upload (the client retries on the other with the same external_id), a worker
node's raylet killed while it analyses (a lost Kubernetes pod), and the Ray head killed. After each, every recording
sent must be completed exactly once (analysis version 1, one finished job) with one webhook;
each test prints sent / completed / duplicated / lost and the time from the fault to the last completion.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.engine import make_url

from callscope.catalog.db import Catalog
from callscope.catalog.tables import Analysis, Job, Recording
from tests.analysis import speech
from tests.live import CLI, WebhookReceiver, free_port
from tests.monitoring.otlp import Call, OtlpReceiver, check_one_tree

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from cluster import LocalCluster, Ports

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray"), pytest.mark.timeout(900), pytest.mark.postgres,
              pytest.mark.redis,
              pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)]

API = "/api/v1/public"
WORKERS = 2
# the retries scaled down from the defaults (10 s doubling, 3 attempts) but not below the few seconds Ray takes to
# restart a lost node's model actors elsewhere
SETTINGS = {"job_lease_seconds": "6", "job_retry_base_seconds": "3", "job_retry_max_seconds": "10",
            "job_max_attempts": "4", "dispatcher_poll_seconds": "0.3", "llm_enabled": "false",
            "webhook_allow_private_addresses": "true", "webhook_allow_http": "true", "log_level": "WARNING"}
# read from the GCS's actor table by a plain driver: no Ray client server to spawn and no call into an actor, which
# a loaded machine or a model still busy would hold past the timeout
WHERE_ACTORS_RUN = """
import json, ray
from ray._private import state
ray.init(address=gcs_address, namespace="callscope", log_to_driver=False)
head = next(n["NodeID"] for n in ray.nodes() if n["Alive"] and "node:__internal_head__" in n["Resources"])
actors = {a["Name"]: a["Address"]["NodeID"] for a in state.actors(actor_state_name="ALIVE").values() if a["Name"]}
print(json.dumps({"head": head, "actors": actors}))
"""


class Site:
    """The running cluster with a key, a project whose webhook reaches `receiver`, and a call to upload."""

    def __init__(self, cluster: LocalCluster, receiver: WebhookReceiver, call: Path, otlp: OtlpReceiver) -> None:
        self.cluster, self.receiver, self.call, self.otlp = cluster, receiver, call, otlp
        env = {**os.environ, **cluster.env()}
        created = subprocess.run([CLI, "keys", "create", "--name", "cluster", "--permissions", "read,write"],
                                 env=env, capture_output=True, text=True, check=True, timeout=60)
        self.headers = {"Authorization": f"Bearer {created.stdout.split()[-1]}"}
        project = cluster.root / "project.yaml"
        project.write_text(json.dumps({"apiVersion": "callscope.io/v1alpha1", "kind": "Project",
                                       "metadata": {"name": "cluster"},
                                       "spec": {"name": "Cluster", "language": "en",
                                                "webhook": {"url": receiver.url, "sections": ["metadata"]}}}))
        subprocess.run([CLI, "apply", "-f", str(project)], env=env, check=True, capture_output=True, timeout=60)
        self.project_id = None
        while self.project_id is None:  # the replicas' reconcilers number the project
            listed = self.get("/projects", replica=1)["data"]
            self.project_id = next((p["id"] for p in listed if p["name"] == "Cluster"), None)
            time.sleep(0.2)
        self.catalog = Catalog(cluster.catalog_url)
        self.sent: list[str] = []

    def get(self, path: str, replica: int = 0) -> dict:
        return httpx.get(self.cluster.api_url(replica) + API + path, headers=self.headers, timeout=30).json()

    def upload(self, n: int, **headers: str) -> list[str]:
        """`n` calls, alternately through each replica."""
        ids = []
        for _ in range(n):
            resp = httpx.post(self.cluster.api_url(len(self.sent) % 2) + API + "/recordings",
                              headers={**self.headers, **headers},
                              data={"project_id": str(self.project_id), "external_id": f"call-{len(self.sent)}"},
                              files={"file": ("call.wav", self.call.read_bytes(), "audio/wav")}, timeout=60)
            assert resp.status_code == 201, resp.text
            ids.append(resp.json()["data"]["public_id"])
            self.sent.append(ids[-1])
        return ids

    def wait_running(self, ids: list[str], within: float = 120) -> None:
        """Until one of `ids` is analysed on Ray (past the queue)."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            with self.catalog.session() as session:
                stages = session.execute(select(Recording.stage).where(Recording.public_id.in_(ids))).scalars().all()
            if any(stage not in (None, "queued") for stage in stages):
                return
            time.sleep(0.2)
        raise AssertionError("no recording started its analysis")

    def wait_finished(self, ids: list[str], within: float = 480) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            with self.catalog.session() as session:
                statuses = session.execute(select(Recording.status).where(Recording.public_id.in_(ids))).scalars()
                if all(status in ("completed", "failed") for status in statuses):
                    return
            time.sleep(0.5)

    def account_for(self, ids: list[str], fault: str, started: float) -> None:
        """Every one of `ids` completed exactly once, with one webhook; prints the fault's figures."""
        self.wait_finished(ids)
        recovered = time.monotonic() - started
        with self.catalog.session() as session:
            rows = session.execute(select(Recording.id, Recording.public_id, Recording.status, Recording.status_reason)
                                   .where(Recording.public_id.in_(ids))).all()
            inner = [r[0] for r in rows]
            versions = session.execute(select(Analysis.version).where(Analysis.recording_id.in_(inner))).scalars().all()
            jobs = session.execute(select(Job.state).where(Job.recording_id.in_(inner))).scalars().all()
        until = time.monotonic() + 60
        while time.monotonic() < until and len(self.delivered(ids)) < len(ids):
            time.sleep(0.5)
        deliveries = self.delivered(ids)
        completed = [r for r in rows if r[2] == "completed"]
        duplicated = sum(v > 1 for v in versions) + sum(len(d) > 1 for d in deliveries.values())
        print(f"\n{fault}: sent {len(ids)}, completed {len(completed)}, duplicated {duplicated}, "
              f"lost {len(ids) - len(rows)}, recovered in {recovered:.1f} s (fault to last completion)")
        assert [(r[1], r[2], r[3]) for r in rows if r[2] != "completed"] == []
        assert len(rows) == len(ids) and sorted(versions) == [1] * len(ids), versions
        assert sorted(jobs) == ["done"] * len(ids), jobs
        assert len(deliveries) == len(ids) and all(len(d) == 1 for d in deliveries.values()), (ids, deliveries)

    def delivered(self, ids: list[str]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for headers, raw in list(self.receiver.deliveries):
            data = json.loads(raw)["data"]
            ref = str(data.get("public_id") or data.get("recording_id") or data.get("id"))
            if ref in ids:
                found.setdefault(ref, set()).add(headers.get("webhook-id", ""))
        return found


@pytest.fixture(scope="module")
def site(postgres_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("cluster")
    call = speech.make_call([0.3, speech.SENTENCES[0], 0.5, speech.SENTENCES[3], 0.3])
    wav = speech.write(folder / "call.wav", [call.samples])
    server = make_url(postgres_url)
    cluster = LocalCluster(root=Path(f"/tmp/cs-test-cluster-{os.getpid()}"),  # short: Ray's socket paths
                           ports=Ports(gcs=free_port(), client=free_port(), s3=free_port(), api=0),
                           postgres=postgres_url.rsplit("/", 1)[0],
                           redis=redis_url, database=f"{server.database}_cluster", settings=SETTINGS)
    receiver, otlp = WebhookReceiver(), OtlpReceiver()
    cluster.settings["traces_endpoint"] = otlp.url
    try:
        cluster.up(WORKERS, replicas=2)
        yield Site(cluster, receiver, wav, otlp)
    finally:
        cluster.down()
        receiver.stop()
        otlp.stop()
        subprocess.run(["rm", "-rf", str(cluster.root)], check=False)


def where_actors_run(cluster: LocalCluster) -> dict:
    script = f"gcs_address = '127.0.0.1:{cluster.ports.gcs}'\n{WHERE_ACTORS_RUN}"
    out = subprocess.run([sys.executable, "-P", "-c", script], env={**os.environ, **cluster.ray_env()},
                         capture_output=True, text=True, timeout=120, cwd=cluster.root)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_both_replicas_analyse_through_the_cluster_and_the_models_live_on_workers(site: Site) -> None:
    ids = site.upload(2)  # one through each replica
    started = time.monotonic()
    site.account_for(ids, "no fault", started)
    placed = where_actors_run(site.cluster)
    assert {"transcriber-0", "speakers-0", "embedder-0"} <= set(placed["actors"])
    assert placed["head"] not in placed["actors"].values()  # the head schedules; workers hold the models


def test_one_calls_trace_runs_from_a_replica_through_a_worker_node_to_its_webhook(site: Site) -> None:
    """Traces on the cluster's shape: the upload's span on an API replica, the analysis and its stages on a Ray
    worker node (not the head), the results and the webhook back on a replica: one tree (tests/monitoring/otlp.py)."""
    trace_id, client_span_id = secrets.token_hex(16), secrets.token_hex(8)
    traceparent = f"00-{trace_id}-{client_span_id}-01"
    ids = site.upload(1, traceparent=traceparent)
    site.account_for(ids, "traced", time.monotonic())
    named = check_one_tree(site.otlp, Call(ids[0], traceparent, trace_id, client_span_id))
    replicas = {piece.pid for name, piece in site.cluster.pieces.items() if name.startswith("api-")}
    [root], [analysis] = named[f"POST {API}/recordings"], named["analysis"]
    assert root.resource["process.pid"] in replicas
    assert analysis.resource["process.pid"] not in replicas
    assert analysis.attributes["callscope.ray.node_id"] not in ("", where_actors_run(site.cluster)["head"])


DASHBOARD = Path(__file__).resolve().parent.parent / "manifests" / "monitoring" / "dashboard.json"
# what the cluster's work must show on the dashboard once a call went through it (the rest may be empty: no failure,
# no retry, no overdue call here)
SHOWN = ("callscope_jobs_completed_total", "callscope_stage_duration_seconds_bucket",
         "callscope_recording_upload_to_completed_seconds_bucket", "callscope_audio_analyzed_seconds_total",
         "callscope_ray_nodes_alive", "callscope_catalog_up", "callscope_http_requests_total",
         "callscope_webhook_deliveries_total", "callscope:http_errors:ratio_rate1h")


class Prometheus:
    """A real Prometheus server (Debian's package) on the cluster's prometheus.yml, scraping every second."""

    def __init__(self, cluster: LocalCluster, folder: Path) -> None:
        self.url = f"http://127.0.0.1:{free_port()}"
        config = cluster.write_prometheus_config(interval="1s")
        self.log = folder / "prometheus.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={folder / 'tsdb'}",
                 f"--web.listen-address={self.url.removeprefix('http://')}"], stdout=out, stderr=subprocess.STDOUT)
        self.wait(lambda: httpx.get(f"{self.url}/-/ready", timeout=2).status_code == 200, "ready")

    def wait(self, check, what: str, within: float = 60) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            try:
                if check():
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"Prometheus not {what} in {within:.0f} s:\n{self.log.read_text()[-3000:]}")

    def api(self, path: str, **params) -> dict | list:
        answer = httpx.get(f"{self.url}/api/v1/{path}", params=params, timeout=30).json()
        assert answer["status"] == "success", (path, params, answer)
        return answer["data"]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="no prometheus (apt-get install prometheus)")
def test_a_real_prometheus_scrapes_every_replica_and_the_dashboard_shows_the_work(site: Site, tmp_path: Path) -> None:
    """The manifests' monitoring, end to end on the one-machine cluster: Prometheus scrapes both replicas, evaluates
    the PrometheusRule's rules without error and fires no alert on a healthy cluster, and every dashboard query
    answers; the ones that show the work a call went through (SHOWN) are not empty."""
    prometheus = Prometheus(site.cluster, tmp_path)
    try:
        targets = lambda: prometheus.api("targets")["activeTargets"]  # noqa: E731
        prometheus.wait(lambda: len(targets()) == 2 and all(t["health"] == "up" for t in targets()), "scraping")
        ids = site.upload(2)  # while it watches: the rates have their samples
        site.account_for(ids, "scraped", time.monotonic())
        time.sleep(5)  # a few scrapes and rule evaluations after the last delivery
        panels = json.loads(DASHBOARD.read_text())["panels"]
        queries = [t["expr"].replace("$__rate_interval", "2m") for panel in panels for t in panel.get("targets", [])]
        answers = {query: prometheus.api("query", query=query)["result"] for query in queries}
        empty = {q for q, result in answers.items() if not result}
        print(f"\ndashboard: {len(answers)} queries answered, {len(answers) - len(empty)} with data; empty (nothing "
              f"failed or waited): {sorted(empty)}")
        assert not [q for q in empty if any(name in q for name in SHOWN)], sorted(empty)
        completed = next(r for q, r in answers.items() if "callscope_jobs_completed_total" in q)
        assert sum(float(series["value"][1]) for series in completed) >= 2
        rules = [rule for group in prometheus.api("rules")["groups"] for rule in group["rules"]]
        assert len(rules) >= 10 and [r["name"] for r in rules if r["health"] != "ok"] == []
        firing = [a["labels"]["alertname"] for a in prometheus.api("alerts")["alerts"] if a["state"] == "firing"]
        assert firing == []
    finally:
        prometheus.stop()


def test_a_replica_killed_mid_upload_the_retry_on_the_other_lands_once(site: Site) -> None:
    cluster, body = site.cluster, site.call.read_bytes()
    form = {"project_id": str(site.project_id), "external_id": "killed-mid-upload"}

    class Slowly(io.BytesIO):  # the upload is on its way when the replica dies
        def read(self, size: int | None = -1) -> bytes:
            time.sleep(0.1)
            return super().read(8192)  # 2 s for the 5-second call
    files = {"file": ("call.wav", Slowly(body), "audio/wav")}
    killer = threading.Timer(0.8, lambda: cluster.pieces["api-0"].signal(signal.SIGKILL))
    killer.start()
    try:
        cut = httpx.post(cluster.api_url(0) + API + "/recordings", headers=site.headers, data=form, files=files,
                         timeout=60)
        pytest.fail(f"the upload outlived its replica: {cut.status_code} {cut.text[:300]}")
    except httpx.HTTPError:
        pass
    started = time.monotonic()
    retried = httpx.post(cluster.api_url(1) + API + "/recordings", headers=site.headers, data=form,
                         files={"file": ("call.wav", body, "audio/wav")}, timeout=60)
    assert retried.status_code == 201, retried.text  # the killed upload stored nothing
    cluster.pieces.pop("api-0").stop()
    cluster.start_replica(0)
    again = httpx.post(cluster.api_url(0) + API + "/recordings", headers=site.headers, data=form,
                       files={"file": ("call.wav", body, "audio/wav")}, timeout=60)
    assert again.status_code == 200 and again.json()["data"]["public_id"] == retried.json()["data"]["public_id"]
    site.sent.append(retried.json()["data"]["public_id"])
    site.account_for([retried.json()["data"]["public_id"]], "API replica killed mid-upload", started)


def test_a_worker_node_lost_mid_analysis_loses_and_duplicates_nothing(site: Site) -> None:
    ids = site.upload(4)
    site.wait_running(ids)
    started = time.monotonic()
    os.kill(site.cluster.raylet_pid(1), signal.SIGKILL)  # the node's work and actors die with its raylet
    site.cluster.pieces.pop("ray-worker-1").stop()
    time.sleep(3)
    site.cluster.add_worker(1)  # as KubeRay replaces the pod
    site.account_for(ids, "worker node lost", started)


def test_the_ray_head_lost_mid_analysis_the_dispatchers_join_again(site: Site) -> None:
    ids = site.upload(3)
    site.wait_running(ids)
    started = time.monotonic()
    site.cluster.pieces["ray-head"].signal(signal.SIGKILL)
    time.sleep(5)
    site.cluster.restart_ray(WORKERS)
    site.account_for(ids, "Ray head lost", started)
    later = site.upload(1)  # and the cluster takes new work
    site.account_for(later, "after the head came back", time.monotonic())
