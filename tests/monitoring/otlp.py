"""What an OpenTelemetry collector would receive, on loopback: an OTLP/HTTP receiver keeping each span, and the
shape one analysed call's spans must have (tests/monitoring/test_traces.py on one process, tests/test_cluster.py on
the one-machine cluster)."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

API = "/api/v1/public"
# The stages every analysis goes through, run or skipped (analysis/runtime/pipeline.py)
STAGES = {"decode", "vad", "asr", "diarization", "speakers", "redaction", "emotions", "pauses", "characteristics",
          "goals", "categories", "fields", "summary"}


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: int
    attributes: dict[str, Any]
    resource: dict[str, Any]


def _attributes(values: Any) -> dict[str, Any]:
    found = {}
    for item in values:
        which = item.value.WhichOneof("value")
        found[item.key] = getattr(item.value, which) if which else None
    return found


@dataclass
class OtlpReceiver:
    """An OpenTelemetry collector's OTLP/HTTP receiver on loopback: each POST to /v1/traces is an
    ExportTraceServiceRequest (protobuf), kept as its spans."""

    spans: list[Span] = field(default_factory=list)
    posts: int = 0

    def __post_init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest.FromString(body)
                for resource_spans in request.resource_spans:
                    resource = _attributes(resource_spans.resource.attributes)
                    for scope_spans in resource_spans.scope_spans:
                        outer.spans.extend(
                            Span(s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex() or None, s.name, s.kind,
                                 _attributes(s.attributes), resource) for s in scope_spans.spans)
                outer.posts += 1
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200 if self.path == "/v1/traces" else 404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of_trace(self, trace_id: str) -> list[Span]:
        return [s for s in list(self.spans) if s.trace_id == trace_id]

    def stop(self) -> None:
        self.server.shutdown()


def eventually(check: Callable[[], Any], within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    while not (found := check()):
        assert time.monotonic() < deadline, f"no {what} within {within} s"
        time.sleep(0.2)
    return found


@dataclass
class Call:
    public_id: str
    traceparent: str  # what the client sent with the upload
    trace_id: str
    client_span_id: str


def check_one_tree(receiver: OtlpReceiver, call: Call) -> dict[str, list[Span]]:
    """The call's spans, by name, once the webhook's is in: one trace whose root continues the client's span, every
    other span's parent in the trace, and the chain request -> enqueue -> job -> analysis -> stages, job -> results
    -> webhook delivery."""
    def whole() -> bool:  # each process exports on its own schedule: a Ray worker's spans may come last
        spans = receiver.of_trace(call.trace_id)
        ids = {s.span_id for s in spans}
        return ({"analysis", "webhook.deliver"} <= {s.name for s in spans}
                and sum(s.parent_id not in ids for s in spans) == 1)

    eventually(whole, 30, "whole tree of the call's spans, to its webhook delivery")
    spans = receiver.of_trace(call.trace_id)
    ids = {s.span_id: s for s in spans}
    assert len(ids) == len(spans)
    [root] = [s for s in spans if s.parent_id not in ids]
    assert root.parent_id == call.client_span_id  # the upload continued the client's trace
    assert root.name == f"POST {API}/recordings" and root.kind == 2  # SERVER
    assert root.attributes["http.response.status_code"] == 201
    named: dict[str, list[Span]] = {}
    for s in spans:
        named.setdefault(s.name, []).append(s)

    def parent(span: Span) -> Span:
        return ids[span.parent_id or ""]

    [enqueue] = named["job.enqueue"]
    assert parent(enqueue) is root and enqueue.kind == 4  # PRODUCER
    [job] = named["job.run"]
    assert parent(job) is enqueue and job.kind == 5  # CONSUMER
    assert job.attributes["callscope.job.attempt"] == 1
    [analysis] = named["analysis"]
    assert parent(analysis) is job
    [fetch] = named["audio.fetch"]
    assert parent(fetch) is analysis
    stages = {s.attributes["callscope.stage"]: s for name, found in named.items() if name.startswith("stage ")
              for s in found}
    assert set(stages) == STAGES, sorted(stages)
    assert all(parent(s) is analysis for s in stages.values())
    assert stages["asr"].attributes["callscope.stage.ran"] and not stages["summary"].attributes["callscope.stage.ran"]
    [store] = named["results.store"]
    assert parent(store) is job
    [deliver] = named["webhook.deliver"]
    assert parent(deliver) is store and deliver.kind == 3  # CLIENT
    assert deliver.attributes["callscope.webhook.outcome"] == "delivered"
    assert deliver.attributes["http.response.status_code"] == 200
    return named
