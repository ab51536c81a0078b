"""Traces (callscope/tracing.py) from a real `callscope serve` to an OTLP/HTTP receiver on loopback: an upload's spans
form one tree, from the upload request (whose `traceparent` they continue) through the job queue, the analysis and
each of its stages and the catalog writes of its results, to the webhook delivery, whose request carries the
delivery span's `traceparent` to the customer's endpoint; a live call is one span, its recording's analysis in its
trace; the log lines written inside carry the trace's id. With
no endpoint configured nothing is sent, no header goes out and no exporter thread starts. The Ray path (the
embedded Ray: the analysis in a Ray worker process) is checked in a slow test of the Ray chain."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.audio_samples import make_audio
from tests.live import LiveServer, WebhookReceiver, start_server
from tests.monitoring.otlp import API, Call, OtlpReceiver, check_one_tree, eventually


def analyse_one_call(server: LiveServer, hooks: WebhookReceiver, tmp_path: Path, within: float = 120) -> Call:
    """A project whose webhook goes to ``hooks``, one upload with a traceparent of the client's, its analysis
    completed and its webhook delivered."""
    headers = {"Authorization": f"Bearer {server.new_key('traces')}"}
    project = tmp_path / "project.yaml"
    project.write_text(json.dumps({
        "apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "support"},
        "spec": {"name": "Support", "language": "en", "webhook": {"url": hooks.url}}}))
    server.cli("apply", "-f", str(project))
    project_id = eventually(lambda: next((p["id"] for p in httpx.get(f"{server.url}{API}/projects", headers=headers)
                                          .json()["data"] if p["name"] == "Support"), None), 30, "project")
    trace_id, client_span_id = secrets.token_hex(16), secrets.token_hex(8)
    traceparent = f"00-{trace_id}-{client_span_id}-01"
    audio = make_audio(tmp_path / "call.wav", "wav", seconds=3.0, channels=2)
    resp = httpx.post(f"{server.url}{API}/recordings", headers={**headers, "traceparent": traceparent},
                      data={"project_id": str(project_id)},
                      files={"file": ("call.wav", audio.read_bytes(), "audio/wav")}, timeout=30)
    assert resp.status_code == 201, resp.text
    public_id = resp.json()["data"]["public_id"]

    def finished() -> dict | None:
        recording = httpx.get(f"{server.url}{API}/recordings/{public_id}", headers=headers).json()["data"]
        return recording if recording["status"] in ("completed", "failed") else None

    assert eventually(finished, within, "analysis")["status"] == "completed"
    eventually(lambda: hooks.deliveries, 30, "webhook delivery")
    return Call(public_id, traceparent, trace_id, client_span_id)


def received_traceparent(hooks: WebhookReceiver) -> str | None:
    [(headers, _)] = hooks.deliveries
    return headers.get("traceparent")


def log_lines(server: LiveServer) -> list[dict]:
    port = server.url.rsplit(":", 1)[1]
    text = (Path(server.env["CALLSCOPE_DATA_DIR"]).parent / f"server-{port}.log").read_text()
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.fixture
def otlp() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver()
    yield receiver
    receiver.stop()


@pytest.fixture
def hooks() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()
    yield receiver
    receiver.stop()


SERVER = {"analysis_executor": "inline", "llm_enabled": "false", "dispatcher_poll_seconds": "0.3",
          "webhook_poll_seconds": "0.3", "webhook_allow_http": "true", "webhook_allow_private_addresses": "true",
          "log_level": "INFO"}


@pytest.mark.timeout(240)
def test_an_uploads_spans_form_one_tree_to_its_webhook(tmp_path: Path, otlp: OtlpReceiver, hooks: WebhookReceiver,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "callscope-test")  # the standard variables are honoured
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")  # milliseconds between exports (5 s by default)
    server = start_server(tmp_path / "data", traces_endpoint=otlp.url, **SERVER)
    try:
        call = analyse_one_call(server, hooks, tmp_path)
        named = check_one_tree(otlp, call)
        [deliver] = named["webhook.deliver"]
        assert received_traceparent(hooks) == f"00-{call.trace_id}-{deliver.span_id}-01"
        assert {s.resource["service.name"] for spans in named.values() for s in spans} == {"callscope-test"}
        [analysis] = named["analysis"]
        [job] = named["job.run"]
        assert analysis.attributes["callscope.job.id"] == job.attributes["callscope.job.id"]

        # the logs written inside the trace's spans name it
        lines = log_lines(server)
        [started] = [line for line in lines if line["event"] == "job_started"]
        assert (started["trace_id"], started["span_id"]) == (call.trace_id, job.span_id)
        [upload] = [line for line in lines if line["event"] == "request" and line["method"] == "POST"
                    and line["route"] == f"{API}/recordings"]
        assert upload["trace_id"] == call.trace_id
        assert not any(s.attributes.get("url.path") in ("/healthz", "/metrics") for s in otlp.spans)  # not traced
    finally:
        server.stop()


@pytest.mark.timeout(240)
def test_a_live_call_is_one_span_and_its_recording_continues_the_trace(tmp_path: Path, otlp: OtlpReceiver,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A live call's socket is a server span continuing the upgrade request's `traceparent` for as long as the call
    lasts; the recording it stores queues its analysis inside it, so the call's analysis is in the same trace."""
    websocket = pytest.importorskip("websocket", reason="websocket-client is not installed")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")
    server = start_server(tmp_path / "data", traces_endpoint=otlp.url, **SERVER)
    try:
        key = server.new_key("live")
        project = tmp_path / "project.yaml"
        project.write_text(json.dumps({"apiVersion": "callscope.io/v1alpha1", "kind": "Project",
                                       "metadata": {"name": "live"}, "spec": {"name": "Live", "language": "en"}}))
        server.cli("apply", "-f", str(project))
        project_id = eventually(lambda: next((p["id"] for p in httpx.get(
            f"{server.url}{API}/projects", headers={"Authorization": f"Bearer {key}"}).json()["data"]), None), 30,
            "project")
        trace_id, client_span_id = secrets.token_hex(16), secrets.token_hex(8)
        ws = websocket.create_connection(f"ws{server.url.removeprefix('http')}{API}/live", timeout=60, header=[
            f"Authorization: Bearer {key}", f"traceparent: 00-{trace_id}-{client_span_id}-01"])
        ws.send(json.dumps({"type": "start", "project_id": project_id, "encoding": "pcm16", "sample_rate": 16000,
                            "channels": 2}))
        started = json.loads(ws.recv())
        ws.send_binary(bytes(16000 * 2 * 2))  # a second of silence on both tracks
        ws.send(json.dumps({"type": "stop"}))
        while (message := ws.recv()) and json.loads(message)["type"] != "end":
            pass
        ws.close()

        spans = eventually(lambda: (found := otlp.of_trace(trace_id)) and any(s.name == "job.run" for s in found)
                           and found, 60, "the live call's spans")
        [live] = [s for s in spans if s.name == f"GET {API}/live"]
        assert live.parent_id == client_span_id and live.kind == 2  # SERVER, continuing the client's span
        assert live.attributes["http.response.status_code"] == 101
        assert live.attributes["callscope.live.public_id"] == started["recording"]["public_id"]
        assert live.attributes["callscope.live.end"] == "stop" and live.attributes["callscope.live.seconds"] == 1.0
        [enqueue] = [s for s in spans if s.name == "job.enqueue"]
        assert enqueue.parent_id == live.span_id
    finally:
        server.stop()


@pytest.mark.timeout(240)
def test_without_an_endpoint_nothing_is_traced(tmp_path: Path, otlp: OtlpReceiver, hooks: WebhookReceiver,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "CALLSCOPE_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")
    server = start_server(tmp_path / "data", **SERVER)
    try:
        analyse_one_call(server, hooks, tmp_path)
        lines = log_lines(server)
    finally:
        server.stop()
    assert received_traceparent(hooks) is None
    assert not any("trace_id" in line for line in lines)
    assert otlp.posts == 0 and otlp.spans == []


# The service's start-up path (`callscope serve` and `controller` configure tracing in load_settings), then every
# hook of tracing.py as the service calls them: what it imported and which threads run.
STARTUP = """
import asyncio, json, sys, threading
from callscope import tracing
from callscope.cli.support import load_settings

load_settings(service=True, data=False)
with tracing.span("job.enqueue", "producer"):
    parent = tracing.traceparent()
    carried = tracing.carrier()
with tracing.resumed(carried, "analysis"):
    tracing.stage("decode", True, "", 0.1)
tracing.annotate({"a": 1})
asyncio.run(tracing.traced(asyncio.sleep(0), "job.run"))
print(json.dumps({"enabled": tracing.enabled(), "parent": parent,
                  "sdk": sorted(m for m in sys.modules if m.startswith("opentelemetry.sdk")),
                  "threads": sorted(t.name for t in threading.enumerate())}))
"""


def _start_up(env: dict[str, str]) -> dict[str, Any]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("OTEL_") and k != "CALLSCOPE_TRACES_ENDPOINT"}
    run = subprocess.run([sys.executable, "-c", STARTUP], env={**clean, **env}, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def test_without_an_endpoint_no_sdk_is_loaded_and_no_exporter_thread_starts(otlp: OtlpReceiver) -> None:
    off = _start_up({"OTEL_SERVICE_NAME": "callscope-test"})  # a name alone turns nothing on
    assert off == {"enabled": False, "parent": None, "sdk": [], "threads": ["MainThread"]}
    assert otlp.posts == 0
    # the same path with an endpoint: the SDK and its exporter thread, and the spans sent at exit
    on = _start_up({"CALLSCOPE_TRACES_ENDPOINT": otlp.url})
    assert on["enabled"] and on["parent"] and on["sdk"]
    assert any(name.startswith("OtelBatchSpan") for name in on["threads"]), on["threads"]
    assert {s.name for s in otlp.spans} == {"job.enqueue", "analysis", "stage decode", "job.run"}
    disabled = _start_up({"CALLSCOPE_TRACES_ENDPOINT": otlp.url, "OTEL_SDK_DISABLED": "true"})
    assert not disabled["enabled"] and disabled["threads"] == ["MainThread"]


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
@pytest.mark.timeout(300)
def test_on_ray_the_stages_are_spans_of_the_ray_worker_in_the_same_tree(
        tmp_path: Path, otlp: OtlpReceiver, hooks: WebhookReceiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")
    settings = {**SERVER, "analysis_executor": "ray", "ray_num_cpus": "2", "ray_object_store_mb": "128"}
    server = start_server(tmp_path / "data", traces_endpoint=otlp.url, **settings)
    try:
        call = analyse_one_call(server, hooks, tmp_path, within=240)
        named = check_one_tree(otlp, call)
    finally:
        server.stop()
    [root], [analysis] = named[f"POST {API}/recordings"], named["analysis"]
    service = root.resource["process.pid"]
    assert service == server.process.pid
    # the analysis and its stages ran in a Ray worker process, which set up its tracing from the work it was given
    assert analysis.resource["process.pid"] != service and analysis.attributes["callscope.ray.node_id"]
    stages = [s for name, found in named.items() if name.startswith("stage ") for s in found]
    assert {s.resource["process.pid"] for s in stages} == {analysis.resource["process.pid"]}
    [deliver] = named["webhook.deliver"]
    assert received_traceparent(hooks) == f"00-{call.trace_id}-{deliver.span_id}-01"


@pytest.mark.timeout(240)
def test_the_trace_goes_through_the_queue_to_another_process(tmp_path: Path, otlp: OtlpReceiver,
                                                             hooks: WebhookReceiver,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """An API replica that only queues, and a process beside it that dispatches and delivers (a cluster's API and
    controller): the job and the webhook event carry the trace's context in their rows."""
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")
    settings = {**SERVER, "traces_endpoint": otlp.url}
    api = start_server(tmp_path / "data", dispatcher_enabled="false", webhook_delivery_enabled="false", **settings)
    try:
        worker = start_server(tmp_path / "data", **settings)
        try:
            call = analyse_one_call(api, hooks, tmp_path)
            named = check_one_tree(otlp, call)
        finally:
            worker.stop()
    finally:
        api.stop()
    [root], [job], [deliver] = named[f"POST {API}/recordings"], named["job.run"], named["webhook.deliver"]
    assert root.resource["process.pid"] == api.process.pid
    assert job.resource["process.pid"] == deliver.resource["process.pid"] == worker.process.pid
    assert received_traceparent(hooks) == f"00-{call.trace_id}-{deliver.span_id}-01"
