"""Schemathesis (`st run`) over the OpenAPI document against a real `callscope serve`, on a SQLite and on a
PostgreSQL catalog: positive and negative data from the examples, coverage and fuzzing phases.

No 500s; no response (status, content type, headers, body) the document does not describe; every request the
document calls invalid is refused; every request it calls valid is accepted, unless the refusal names a fact
no schema can state (tests/schemathesis_hooks.py). The command the test runs is printed on failure, to
reproduce it by hand against a server of your own."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.audio_samples import make_audio
from tests.live import start_server

ST = str(Path(sys.executable).parent / "st")
HOOKS = Path(__file__).parent / "schemathesis_hooks.py"
MAX_EXAMPLES = 25  # fuzzing cases per operation and mode: each catalog runs in well under a minute
CHECKS = ("not_a_server_error", "status_code_conformance", "content_type_conformance", "response_schema_conformance",
          "response_headers_conformance", "negative_data_rejection", "positive_data_acceptance_of_the_shape")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def live(request, tmp_path):
    settings = {"virtual_number_purchase_paused": "false"}
    if request.param == "postgres":
        settings["database_url"] = request.getfixturevalue("emptied_postgres_url")
    (tmp_path / "data").mkdir()
    server = start_server(tmp_path / "data", **settings)
    try:
        yield server, seed(server)
    finally:
        server.stop()


def seed(server) -> dict[str, str]:
    """Objects with id 1 of every kind and one recording, so that generated ids hit real objects as well as
    missing ones; returns the key's headers and the recording's two ids."""
    headers = {"Authorization": f"Bearer {server.new_key('fuzz')}"}
    base = f"{server.url}/api/v1/public"
    with httpx.Client(base_url=base, headers=headers) as http:
        project = http.post("/projects", json={"name": "Fuzz", "language": "en"}).json()["data"]
        http.post("/operators", json={"name": "Fuzz Op", "project_id": project["id"]}).raise_for_status()
        http.post("/tags", json={"name": "fuzz", "project_id": project["id"]}).raise_for_status()
        candidate = http.get("/virtual_numbers/available").json()["data"][0]
        http.post("/virtual_numbers/purchase", json={"phone_number": candidate["phone_number"]}).raise_for_status()
        # the recording lives in a second project: coverage tries id 1 on DELETE /projects/{id} early on
        keep = http.post("/projects", json={"name": "Keep", "language": "en"}).json()["data"]
        audio = make_audio(Path(server.env["CALLSCOPE_DATA_DIR"]).parent / "call.wav", "wav", seconds=1.0)
        recording = http.post("/recordings", data={"project_id": str(keep["id"])},
                              files={"file": ("call.wav", audio.read_bytes())}).json()["data"]
        legacy_id = http.get(f"/recordings/{recording['public_id']}/results").json()["data"]["recording_id"]
    return {**headers, "recordings": [recording["public_id"], str(legacy_id)]}


# Two runs: once coverage has seen an operation answer 404 throughout, schemathesis fuzzes it no more in the
# same run, and the recordings' paths would never reach the seeded recording.
@pytest.mark.parametrize("phases", ["examples,coverage", "fuzzing"])
def test_every_operation_conforms_to_the_document(live, tmp_path, phases):
    server, seeded = live
    config = tmp_path / "schemathesis.toml"
    config.write_text('[generation]\ndatabase = "none"\n')
    command = [ST, "--config-file", str(config), "run", f"{server.url}/api/v1/public/openapi.json",
               "--checks", ",".join(CHECKS), "--mode", "all", "--phases", phases,
               "--max-examples", str(MAX_EXAMPLES), "--workers", "2", "--suppress-health-check", "filter_too_much",
               "--header", f"Authorization: {seeded['Authorization']}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path,
                            env={**server.env, "SCHEMATHESIS_HOOKS": str(HOOKS),
                                 "CALLSCOPE_FUZZ_RECORDINGS": " ".join(seeded["recordings"])})
    summary = result.stdout[result.stdout.rfind("SUMMARY"):]
    assert result.returncode == 0, f"{' '.join(command)}\n\n{result.stdout[-30_000:]}{result.stderr[-5000:]}"
    assert "generated" in summary and " failed" not in summary, summary
    tested = re.search(r"Selected: (\d+)/(\d+)\s+Tested: (\d+)", summary)
    assert tested and len(set(tested.groups())) == 1 and int(tested[1]) >= 30, summary  # every operation
    print(result.stdout[result.stdout.rfind("WARNINGS"):])  # the counts and warnings, with -s
