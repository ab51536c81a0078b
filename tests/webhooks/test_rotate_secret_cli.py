"""`callscope webhooks rotate-secret`: the rotation of Settings → Webhooks (callscope/services/webhook_settings.py),
from the command line: the new secret printed once, alone on the last line, the old one signing beside it for the
overlap window."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

from click.testing import CliRunner

from callscope import signing_secrets
from callscope.cli import main
from callscope.resources.kinds import SecretKeyRef
from callscope.secret_store import FileSecretStore

PROJECT = {"apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "support"},
           "spec": {"name": "Support", "language": "en",
                    "webhook": {"url": "https://hooks.example.com/x", "signingSecretRef": {"name": "hooks"}}}}


def test_rotate_secret_prints_the_new_secret_and_keeps_the_old_one_for_the_overlap(tmp_path, monkeypatch):
    data_dir = tmp_path / "data"
    for name, value in {"CALLSCOPE_DATA_DIR": str(data_dir), "CALLSCOPE_LOG_LEVEL": "WARNING"}.items():
        monkeypatch.setenv(name, value)
    runner = CliRunner()
    (tmp_path / "project.yaml").write_text(json.dumps(PROJECT))

    def run(*args: str) -> str:
        result = runner.invoke(main, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout.strip().splitlines()[-1]
    run("apply", "-f", str(tmp_path / "project.yaml"))
    old = run("webhooks", "new-secret", "--name", "hooks")
    [project] = json.loads(runner.invoke(main, ["get", "projects", "-o", "json"]).stdout)["items"]
    new = run("webhooks", "rotate-secret", "--project", str(project["status"]["id"]), "--overlap-hours", "2")

    assert new.startswith("whsec_") and new != old
    store, now = FileSecretStore(data_dir / "secrets"), datetime.now(UTC)
    signing = asyncio.run(signing_secrets.signing(store, "default", SecretKeyRef(name="hooks"), now))
    assert signing == [new, old]
    later = asyncio.run(signing_secrets.signing(store, "default", SecretKeyRef(name="hooks"),
                                                now + timedelta(hours=2, minutes=1)))
    assert later == [new]

