"""`callscope operators enroll|voiceprints|forget-voice` in process (click's CliRunner) on espeak-ng speech."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from callscope.cli import main
from callscope.cli.voice import operators_group
from tests.analysis.speech import ESPEAK, SKIP_REASON, speak, write
from tests.analysis.voices import AGENT

OPERATOR = """\
apiVersion: callscope.io/v1alpha1
kind: Operator
metadata:
  name: alice
spec:
  name: Alice Smith
"""


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CALLSCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CALLSCOPE_LOG_LEVEL", "WARNING")
    runner = CliRunner()

    def invoke(group, *args: str):
        return runner.invoke(group, list(args), catch_exceptions=True)

    return invoke


@pytest.mark.skipif(ESPEAK is None, reason=SKIP_REASON)
def test_enroll_list_and_forget(run, tmp_path, monkeypatch):
    manifest = tmp_path / "alice.yaml"
    manifest.write_text(OPERATOR)
    assert run(main, "apply", "-f", str(manifest)).exit_code == 0
    operator_id = json.loads(run(main, "get", "operators", "alice", "-o", "json").stdout)["status"]["id"]

    speech = np.concatenate([np.concatenate([speak(t, "en+f4"), np.zeros(4000, np.float32)]) for t in AGENT[:3]])
    long_file = write(tmp_path / "long.wav", [speech])
    short_file = write(tmp_path / "short.wav", [speech[: 4 * 16000]])

    result = run(operators_group, "enroll", str(operator_id), str(short_file))
    assert result.exit_code == 1 and "at least 10 s of speech" in result.stderr and "Traceback" not in result.output
    result = run(operators_group, "enroll", "999", str(long_file))
    assert result.exit_code == 1 and "no operator 999" in result.stderr
    result = run(operators_group, "enroll", str(operator_id), str(long_file))
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert f"enrolled operator {operator_id} (Alice Smith)" in result.stdout

    rows = json.loads(run(operators_group, "voiceprints", "-o", "json").stdout)
    assert [r["operator_id"] for r in rows] == [operator_id] and rows[0]["speech_ms"] >= 10_000
    assert rows[0]["model"].startswith("CAM++") and rows[0]["current_model"] is True
    monkeypatch.setenv("CALLSCOPE_VOICEPRINT_MODEL", "ge2e")  # another model: the voiceprint is marked stale
    assert json.loads(run(operators_group, "voiceprints", "-o", "json").stdout)[0]["current_model"] is False
    assert "not compared, re-enrol" in run(operators_group, "voiceprints").stdout
    monkeypatch.delenv("CALLSCOPE_VOICEPRINT_MODEL")
    assert run(operators_group, "voiceprints", "--account", "other", "-o", "json").stdout.strip() == "[]"
    assert run(operators_group, "forget-voice", str(operator_id)).exit_code == 0
    assert run(operators_group, "forget-voice", str(operator_id)).exit_code == 1
