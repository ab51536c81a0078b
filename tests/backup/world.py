"""A service with analysed calls and their webhooks, through a real `callscope serve` (inline analysis, the
English tiny Whisper, no language model): what the backup, restore and upgrade tests write and then read back
through the real API. Shared by tests/backup and tests/upgrade."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import httpx
import pytest
from botocore.config import Config
from sqlalchemy.engine import make_url

from tests.analysis import speech
from tests.live import CLI, LiveServer, WebhookReceiver

API = "/api/v1/public"
ANALYSIS = {"analysis_executor": "inline", "whisper_model": "tiny.en", "llm_enabled": "false",
            "dispatcher_poll_seconds": "0.2", "webhook_allow_http": "true", "webhook_allow_private_addresses": "true"}
DEFAULT_TEST_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def spoken_call(path: Path) -> Path:
    """A two-channel call of two short sentences (agent, customer)."""
    agent = speech.make_call([0.3, speech.SENTENCES[0], 1.6])
    customer = speech.make_call([1.8, speech.SENTENCES[1], 0.3])
    n = max(len(agent.samples), len(customer.samples))
    return speech.write(path, [speech.pad_to(agent.samples, n), speech.pad_to(customer.samples, n)])


@dataclass
class Target:
    """Where a service keeps its data: the settings (CALLSCOPE_*) of its data directory, catalog and objects."""

    data_dir: Path
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "CALLSCOPE_DATA_DIR": str(self.data_dir), "CALLSCOPE_LOG_LEVEL": "WARNING",
                **{f"CALLSCOPE_{k.upper()}": v for k, v in self.settings.items()}}

    def cli(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        done = subprocess.run([CLI, *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"callscope {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
        return done


class Databases:
    """Empty PostgreSQL databases on the test server, dropped at the end."""

    def __init__(self) -> None:
        self.server = make_url(os.environ.get("CALLSCOPE_TEST_POSTGRES_URL", DEFAULT_TEST_POSTGRES_URL))
        self.names: list[str] = []

    def _admin(self):
        import psycopg

        url = self.server
        return psycopg.connect(host=url.host or "127.0.0.1", port=url.port or 5432, user=url.username,
                               password=url.password, dbname=url.database or "postgres", autocommit=True,
                               connect_timeout=3)

    def new(self) -> str:
        name = f"callscope_backup_{uuid.uuid4().hex[:10]}"
        with self._admin() as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        self.names.append(name)
        return self.server.set(database=name).render_as_string(hide_password=False)

    def drop_all(self) -> None:
        with self._admin() as admin:
            for name in self.names:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def databases() -> Iterator[Databases]:
    found = Databases()
    try:
        found._admin().close()
    except Exception as exc:  # noqa: BLE001 - any failure to connect means "no PostgreSQL here"
        pytest.skip(f"PostgreSQL unreachable: {exc}")
    yield found
    found.drop_all()


def new_bucket(endpoint: str) -> str:
    s3 = boto3.session.Session().client(
        "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
        aws_secret_access_key="testing", config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
    name = f"backup-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def s3_settings(endpoint: str, bucket: str) -> dict[str, str]:
    return {"blob_store": "s3", "s3_bucket": bucket, "s3_endpoint_url": endpoint, "s3_region": "us-east-1",
            "s3_access_key_id": "testing", "s3_secret_access_key": "testing", "s3_addressing_style": "path"}


class Client:
    """The public API of a served Callscope with one key."""

    def __init__(self, server: LiveServer, key: str):
        self.url = server.url
        self.headers = {"Authorization": f"Bearer {key}"}

    def get(self, path: str, **params) -> dict:
        resp = httpx.get(f"{self.url}{API}{path}", headers=self.headers, params=params, timeout=30)
        assert resp.status_code == 200, (path, resp.status_code, resp.text)
        return resp.json()

    def upload(self, audio: Path, project_id: int) -> dict:
        resp = httpx.post(f"{self.url}{API}/recordings", headers=self.headers, data={"project_id": str(project_id)},
                          files={"file": ("call.wav", audio.read_bytes(), "audio/wav")}, timeout=60)
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]

    def recordings(self) -> list[dict]:
        return self.get("/recordings", per_page=100)["data"]

    def wait_completed(self, public_ids: list[str], timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = {r["public_id"]: r["status"] for r in self.recordings()}
            if all(states.get(p) in ("completed", "failed") for p in public_ids):
                assert all(states[p] == "completed" for p in public_ids), states
                return
            time.sleep(0.3)
        raise AssertionError(f"not analysed in {timeout} s: {states}")

    def project_id(self, name: str, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # the embedded operator numbers the project
            found = next((p["id"] for p in self.get("/projects")["data"] if p["name"] == name), None)
            if found is not None:
                return found
            time.sleep(0.2)
        raise AssertionError(f"project {name} got no id")


def set_up(server: LiveServer, receiver: WebhookReceiver, folder: Path) -> tuple[Client, int]:
    """An API key and a project whose calls' analyses are sent to `receiver`, signed with an embedded secret."""
    key = server.new_key("ops")
    server.cli("webhooks", "new-secret", "--name", "hooks")
    project = folder / "project.yaml"
    project.write_text(json.dumps({
        "apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "support"},
        "spec": {"name": "Support", "language": "en", "webhook": {
            "url": receiver.url, "sections": ["metadata", "transcription"], "signingSecretRef": {"name": "hooks"}}}}))
    server.cli("apply", "-f", str(project))
    client = Client(server, key)
    return client, client.project_id("Support")


Cli = Callable[..., subprocess.CompletedProcess]


def wait_delivered(cli: Cli, count: int, timeout: float = 30) -> list[dict]:
    """`cli`: the `callscope` command of the release that wrote them (a newer one would migrate the catalog)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = json.loads(cli("webhooks", "list", "-o", "json", "--limit", "1000").stdout)
        if sum(e["state"] == "delivered" for e in events) >= count:
            return events
        time.sleep(0.3)
    raise AssertionError(f"fewer than {count} webhooks delivered: {events}")


class Uploads:
    """`workers` threads uploading the same call again and again through the API until stopped: the load."""

    def __init__(self, client: Client, audio: Path, project_id: int, workers: int = 2):
        self.client, self.audio, self.project_id = client, audio, project_id
        self.done: list[tuple[float, float, str]] = []  # (started, answered, public_id) of each upload
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(workers)]

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            public_id = self.client.upload(self.audio, self.project_id)["public_id"]
            self.done.append((started, time.monotonic(), public_id))
            self._stop.wait(0.2)

    def __enter__(self) -> Uploads:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)

    def during(self, start: float, end: float) -> list[str]:
        """The uploads answered between `start` and `end` (monotonic)."""
        return [p for s, a, p in self.done if start <= a <= end]


def check_served(client: Client, cli: Cli, completed_before: list[str]) -> dict[str, int]:
    """Through the real API and CLI of a restored (or upgraded) service: every recording analysed before the backup
    is there and completed, and every completed recording has its audio, transcript, results and webhook event."""
    listed = client.recordings()
    by_id = {r["public_id"]: r for r in listed}
    assert set(completed_before) <= set(by_id), set(completed_before) - set(by_id)
    assert all(by_id[p]["status"] == "completed" for p in completed_before)
    events = {}  # public id: its event (the integer id an event names is one the API's paths take too)
    for event in json.loads(cli("webhooks", "list", "-o", "json", "--limit", "1000").stdout):
        events[client.get(f"/recordings/{event['recording_id']}")["data"]["public_id"]] = event
    completed = [r for r in listed if r["status"] == "completed"]
    for recording in completed:
        public_id = recording["public_id"]
        transcript = client.get(f"/recordings/{public_id}/transcription")["data"]
        assert transcript["segments"], public_id
        assert client.get(f"/recordings/{public_id}/results")["data"]["status"] == "completed"
        url = client.get(f"/recordings/{public_id}/audio_url")["data"]["url"]
        audio = httpx.get(url, timeout=30)
        assert audio.status_code == 200 and len(audio.content) == recording["size_bytes"], public_id
        event = events[public_id]
        assert event["type"] == "recording.analyzed", event
    for public_id in completed_before:  # delivered before the backup: their history came back with them
        event = events[public_id]
        history = json.loads(cli("webhooks", "attempts", str(event["id"]), "-o", "json").stdout)
        assert history["payload"]["data"]["public_id"] == public_id
        assert event["state"] == "delivered" and [a["status_code"] for a in history["attempts"]][-1:] == [200]
    return {"recordings": len(listed), "completed": len(completed)}
