"""An upgrade in place, the way docs/operations.md ("Upgrades") says to roll one: the previous release
(tests/upgrade/PREVIOUS_RELEASE, run from its own code: previous.py) writes a catalog and an object store (calls
uploaded, analysed inline, their webhooks delivered), then, while its replica still serves, this release's
`callscope migrate` upgrades the catalog; the old replica keeps serving and analysing on the upgraded schema, and a
replica of this release beside it serves every stored result, the old replica's last one included. On SQLite +
filesystem and on PostgreSQL + S3 (moto)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from alembic.script import ScriptDirectory

from tests.analysis import speech
from tests.backup.world import (
    ANALYSIS,
    Client,
    Target,
    check_served,
    new_bucket,
    s3_settings,
    set_up,
    spoken_call,
    wait_delivered,
)
from tests.live import LiveServer, WebhookReceiver, free_port, start_server
from tests.upgrade.previous import prepare, release

# the timeout only stops a hang: PostgreSQL took 38 s, SQLite (with the restore of the backup taken before) 114 s, on
# this project's 2-core machine shared with other suites (load 8 to 20)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)]

OLD_MAIN = "import sys; from callscope.cli import main; sys.argv[0] = 'callscope'; main()"


class Previous:
    """The previous release's `callscope`, run from its own code with this venv's libraries."""

    def __init__(self, site: Path):
        self.site = site

    @property
    def revision(self) -> str:
        """The newest migration of the previous release: the schema it writes."""
        return ScriptDirectory(str(self.site / "callscope" / "catalog" / "migrations")).get_current_head() or ""

    def env(self, target: Target) -> dict[str, str]:
        return {**target.env, "PYTHONPATH": str(self.site)}

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-P", "-c", OLD_MAIN, *args]

    def serve(self, target: Target, **settings: str) -> OldServer:
        port = free_port()
        env = {**self.env(target), **{f"CALLSCOPE_{k.upper()}": v for k, v in settings.items()}}
        log = open(target.data_dir.parent / f"previous-{port}.log", "w")  # noqa: SIM115 - the server's life
        process = subprocess.Popen(self.command("serve", "--host", "127.0.0.1", "--port", str(port)), env=env,
                                   stdout=log, stderr=subprocess.STDOUT)
        server = OldServer(f"http://127.0.0.1:{port}", env, process)
        server.previous = self
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the previous release's serve exited with {process.returncode}; see {log.name}")
            try:
                if httpx.get(f"{server.url}/healthz", timeout=1).status_code == 200:
                    return server
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        process.kill()
        raise RuntimeError("the previous release's serve did not become healthy in 60 s")


class OldServer(LiveServer):
    previous: Previous

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(self.previous.command(*args), env=self.env, capture_output=True, text=True,
                              check=check, timeout=60)


@pytest.fixture(scope="module")
def previous() -> Previous:
    try:
        return Previous(prepare())
    except RuntimeError as exc:
        pytest.fail(f"the previous release {release()} is not at hand: {exc}")


@pytest.fixture(scope="module")
def audio(tmp_path_factory) -> Path:
    return spoken_call(tmp_path_factory.mktemp("audio") / "call.wav")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request, tmp_path) -> Target:
    if request.param == "sqlite":
        return Target(tmp_path / "data")
    endpoint = request.getfixturevalue("s3_endpoint")
    databases = request.getfixturevalue("databases")
    return Target(tmp_path / "data", {"database_url": databases.new(), **s3_settings(endpoint, new_bucket(endpoint))})


def test_the_previous_release_s_data_upgrades_in_place_while_its_replica_serves(previous, target, audio, tmp_path):
    receiver = WebhookReceiver()
    old = previous.serve(target, **ANALYSIS)
    new = None
    try:
        client, project = set_up(old, receiver, tmp_path)
        first = [client.upload(audio, project)["public_id"]]
        client.wait_completed(first)
        wait_delivered(old.cli, 1)

        before = tmp_path / "before.tar"  # this release's backup of the old schema, which it does not migrate
        assert f"catalog at {previous.revision}," in target.cli("backup", str(before)).stdout

        migrated = target.cli("migrate")  # this release, while the old replica serves
        assert "is up to date" in migrated.stdout

        # the old replica still serves what it stored, and stores and delivers a new analysis on the new schema
        # (read with this release's command: the previous release's own refuses to start on a schema it does not
        # know, as an old replica restarted now would; docs/operations.md, "Upgrades")
        check_served(client, target.cli, first)
        later = client.upload(audio, project)["public_id"]
        client.wait_completed([later])
        wait_delivered(target.cli, 2)

        # a replica of this release beside it serves every stored result, the old replica's last one too
        new = start_server(target.data_dir, dispatcher_enabled="false", webhook_delivery_enabled="false",
                           **target.settings)
        counts = check_served(Client(new, client.headers["Authorization"].removeprefix("Bearer ")), target.cli,
                              [*first, later])
        assert counts == {"recordings": 2, "completed": 2}
        new.stop()

        if not target.settings:  # the backup taken before the upgrade comes back upgraded
            restored = Target(tmp_path / "restored")
            output = restored.cli("restore", str(before)).stdout
            assert f"migrated from {previous.revision} to" in output, output
            new = start_server(restored.data_dir, dispatcher_enabled="false", webhook_delivery_enabled="false")
            check_served(Client(new, client.headers["Authorization"].removeprefix("Bearer ")), restored.cli, first)
    finally:
        for server in (new, old):
            if server is not None:
                server.stop()
        receiver.stop()
