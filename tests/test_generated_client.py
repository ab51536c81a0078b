"""Clients generated from the served OpenAPI document (issue 29): openapi-python-client generates one without a
warning, and examples/client/analyse_call.py, which uses it, uploads a spoken call to a live `callscope serve`,
polls for its analysis and prints the transcript; a TypeScript generator (openapi-typescript, pinned, from npm into
~/.cache/callscope/npm) reads the same document without a warning, where npx and the registry are at hand."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.analysis.speech import ESPEAK, SKIP_REASON, make_call, write
from tests.live import start_server

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "client"
BIN = Path(sys.executable).parent
OPENAPI_TYPESCRIPT = "openapi-typescript@7.13.0"
NPM_CACHE = Path(os.environ.get("CALLSCOPE_NPM_CACHE", Path.home() / ".cache" / "callscope" / "npm"))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A live server that analyses inline (no language model), and its document saved as openapi.json."""
    root = tmp_path_factory.mktemp("generated-client")
    (root / "data").mkdir()
    server = start_server(root / "data", analysis_executor="inline", llm_enabled="false")
    try:
        document = root / "openapi.json"
        document.write_bytes(httpx.get(f"{server.url}/api/v1/public/openapi.json").content)
        yield server, document
    finally:
        server.stop()


def generate_python_client(document: Path, out: Path) -> subprocess.CompletedProcess:
    # ruff on PATH: the generator formats what it writes with it (else it warns that it is not there)
    return subprocess.run([str(BIN / "openapi-python-client"), "generate", "--path", str(document), "--config",
                           str(EXAMPLE / "openapi-python-client.yaml"), "--output-path", str(out)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"})


@pytest.mark.skipif(ESPEAK is None, reason=SKIP_REASON)
def test_the_example_program_analyses_a_call_through_the_generated_python_client(served, tmp_path):
    server, document = served
    generated = generate_python_client(document, tmp_path / "client")
    output = generated.stdout + generated.stderr
    assert generated.returncode == 0, output
    assert "warning" not in output.lower() and "unable to" not in output.lower(), output

    key = server.new_key("example")
    project = httpx.post(f"{server.url}/api/v1/public/projects", json={"name": "Support", "language": "en"},
                         headers={"Authorization": f"Bearer {key}"}).json()["data"]
    call = make_call([0.3, "Hello, thank you for calling. How can I help you today?", 0.5, "Goodbye."])
    audio = write(tmp_path / "call.wav", [call.samples])
    run = subprocess.run([sys.executable, "-P", str(EXAMPLE / "analyse_call.py"), str(audio),
                          "--project-id", str(project["id"]), "--timeout", "120"],
                         capture_output=True, text=True, timeout=180, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(tmp_path / "client"), "CALLSCOPE_URL": server.url,
                              "CALLSCOPE_KEY": key})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Uploaded " in run.stdout and "Summary: (none" in run.stdout, run.stdout
    transcript = run.stdout.split("Transcript:", 1)[1].lower()
    assert "thank you for calling" in transcript and "speaker-1" in transcript, run.stdout


def test_a_typescript_client_generates_without_a_warning(served, tmp_path):
    _, document = served
    if shutil.which("npx") is None:
        pytest.skip("npx (Node.js) is not installed")
    NPM_CACHE.mkdir(parents=True, exist_ok=True)
    out = tmp_path / "api.ts"
    try:
        run = subprocess.run(["npx", "--yes", "--cache", str(NPM_CACHE), OPENAPI_TYPESCRIPT, str(document),
                              "-o", str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.skip(f"npx {OPENAPI_TYPESCRIPT} did not finish in 300 s (no registry?)")
    output = run.stdout + run.stderr
    if run.returncode != 0 and not out.exists() and any(
            word in output for word in ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "E404", "network")):
        pytest.skip(f"{OPENAPI_TYPESCRIPT} could not be installed: {output[-500:]}")
    assert run.returncode == 0, output
    assert "warn" not in output.lower() and "error" not in output.lower(), output
    types = out.read_text()
    for name in ("listRecordings", "createProject", "getRecordingTranscription", "addOperatorToNumber"):
        assert f"    {name}: {{" in types, name
    assert "ProjectList: {" in types and "RecordingTranscription: {" in types
