"""OpenTelemetry traces: one trace per call, from its upload request through the job queue, the analysis and each of
its stages (on whichever process or Ray node runs them) and the catalog writes of its results, to each attempt at
its webhook. Sent over OTLP/HTTP (protobuf) to a collector; off, and free, unless an endpoint is configured.

Off (no CALLSCOPE_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT, or
OTEL_SDK_DISABLED=true) every function here returns at once: the SDK is never imported, no span is made, no thread
started, no header read or sent. On, ``configure`` builds a tracer provider of this process's own (the standard
OTEL_* variables honoured: OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER and its argument,
OTEL_EXPORTER_OTLP_HEADERS, ...) with a batching exporter.

How a trace crosses what is not a function call:

* the API: a request's ``traceparent`` (W3C, or whatever OTEL_PROPAGATORS names) is the parent of its server span;
* the job queue and the webhook outbox: the row keeps the ``traceparent`` of the span that wrote it (``jobs`` and
  ``webhook_events``' ``trace_parent``), and the dispatcher's job span and the delivery's client span, in whichever
  process takes the row, are its children;
* the analysis: the dispatcher hands the context, and how to set up tracing, to the work itself (``carrier``), which
  runs in a thread of the dispatcher (the inline executor) or in a Ray task on any node (``resumed``: the worker
  process sets up its tracer provider from it, once);
* the webhook: each delivery attempt is a client span whose context goes out in the request's ``traceparent``.

Logs carry the current ``trace_id`` and ``span_id`` (``add_ids``, a structlog processor). The spans and their
attributes: docs/operations.md#traces.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager, nullcontext
from functools import cache
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeVar

from callscope import __version__
from callscope.log_scrubbing import redact_path

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

    from callscope.config import Settings

T = TypeVar("T")

TRACER = "callscope"
SKIPPED_PATHS = frozenset({"/healthz", "/metrics"})  # probes and scrapes: no trace of their own
DETAIL_CHARS = 300  # a stage's detail, as an attribute

_lock = threading.Lock()
_provider: TracerProvider | None = None
_tracer: Tracer | None = None
_setup: dict[str, Any] | None = None  # how this process set up tracing, for the processes its work goes to
_set_up_by_work = False  # this process set up tracing from the work it was given (a Ray worker): flush after each


# ----- set-up -------------------------------------------------------------------------------------------------------

def _disabled_by_env() -> bool:
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def endpoint(settings: Settings) -> str | None:
    """The URL spans are POSTed to, None when tracing is off: CALLSCOPE_TRACES_ENDPOINT (a base URL, like
    OTEL_EXPORTER_OTLP_ENDPOINT), else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the whole URL), else
    OTEL_EXPORTER_OTLP_ENDPOINT; each base URL gets the OTLP path /v1/traces."""
    if _disabled_by_env():
        return None
    if settings.traces_endpoint:
        return settings.traces_endpoint.rstrip("/") + "/v1/traces"
    if url := os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip():
        return url
    if url := os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip():
        return url.rstrip("/") + "/v1/traces"
    return None


def configure(settings: Settings) -> bool:
    """Set up tracing in this process when an endpoint is configured (once; later calls keep the first set-up).
    Returns whether tracing is on."""
    url = endpoint(settings)
    if url is None:
        return _tracer is not None
    otel = {k: v for k, v in os.environ.items() if k.startswith("OTEL_")}
    return _install({"endpoint": url, "env": otel})


def _install(setup: Mapping[str, Any]) -> bool:
    """Build this process's tracer provider from ``setup`` (its endpoint, and the OTEL_* variables of the process
    that configured it: a Ray worker on another node gets them from there, its own environment winning)."""
    global _provider, _tracer, _setup
    with _lock:
        if _tracer is not None:
            return True
        for key, value in setup.get("env", {}).items():
            os.environ.setdefault(key, value)
        # the SDK and the exporter load only where tracing is on (no cost, no thread where it is off)
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        attributes: dict[str, Any] = {"service.version": __version__, "host.name": socket.gethostname(),
                                      "process.pid": os.getpid()}
        if not os.environ.get("OTEL_SERVICE_NAME") and "service.name=" not in os.environ.get(
                "OTEL_RESOURCE_ATTRIBUTES", ""):
            attributes["service.name"] = "callscope"
        provider = TracerProvider(resource=Resource.create(attributes))  # the sampler: OTEL_TRACES_SAMPLER
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=setup["endpoint"])))
        _provider, _tracer, _setup = provider, provider.get_tracer(TRACER, __version__), dict(setup)
        return True


def enabled() -> bool:
    return _tracer is not None


def flush(timeout_seconds: float = 10.0) -> None:
    """Send the spans ended so far (a Ray worker, after each analysis: the process may be ended without notice; a
    service's are sent at its exit)."""
    if _provider is not None:
        _provider.force_flush(int(timeout_seconds * 1000))


# ----- spans --------------------------------------------------------------------------------------------------------

@cache
def _otel() -> SimpleNamespace:
    """OpenTelemetry's API, imported the first time tracing is on and used."""
    # not at the top: importing it reads every installed package's entry points (about 0.1 s), which a process that
    # does not trace never pays
    from opentelemetry import context, propagate, trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return SimpleNamespace(context=context, propagate=propagate, trace=trace, w3c=TraceContextTextMapPropagator())


def _kind(kind: str) -> Any:
    return _otel().trace.SpanKind[kind.upper()]


def _context(traceparent: str | None) -> Any:
    """The OpenTelemetry context whose parent is the span ``traceparent`` names (None: none, a new trace)."""
    return _otel().w3c.extract({"traceparent": traceparent}) if traceparent else None


def span(name: str, kind: str = "internal", attributes: Mapping[str, Any] | None = None,
         parent: str | None = None) -> Any:
    """A context manager: a span ``name`` around the block, the current one inside it, child of ``parent`` (a
    traceparent; None: the current span). Yields the span (None when tracing is off); an exception is recorded."""
    if _tracer is None:
        return nullcontext()
    return _tracer.start_as_current_span(name, context=_context(parent), kind=_kind(kind),
                                         attributes=_clean(attributes))


def traced(coroutine: Coroutine[Any, Any, T], name: str, kind: str = "internal",
           attributes: Mapping[str, Any] | None = None, parent: str | None = None) -> Coroutine[Any, Any, T]:
    """``coroutine`` run inside a span (for a task: ``asyncio.create_task(traced(...))``); itself when off."""
    if _tracer is None:
        return coroutine

    async def run() -> T:
        with span(name, kind, attributes, parent):
            return await coroutine
    return run()


def annotate(attributes: Mapping[str, Any], error: str | None = None) -> None:
    """Set attributes on the current span (and its status to an error, with ``error``'s text)."""
    if _tracer is None:
        return
    trace = _otel().trace
    current = trace.get_current_span()
    current.set_attributes(_clean(attributes))
    if error is not None:
        current.set_status(trace.Status(trace.StatusCode.ERROR, error[:DETAIL_CHARS]))


def stage(name: str, ran: bool, detail: str, seconds: float | None) -> None:
    """A span for an analysis stage that just ended after ``seconds`` (as its metric measured them: the pipeline
    times its stages back to back), child of the current span."""
    if _tracer is None or seconds is None:
        return
    end = time.time_ns()
    started = _tracer.start_span(f"stage {name}", start_time=end - int(seconds * 1e9), attributes={
        "callscope.stage": name, "callscope.stage.ran": ran, "callscope.stage.detail": detail[:DETAIL_CHARS]})
    started.end(end_time=end)


def _clean(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    """Attributes without their None values (OpenTelemetry takes none)."""
    return {k: v for k, v in (attributes or {}).items() if v is not None}


# ----- context across the queue, processes and HTTP -----------------------------------------------------------------

def traceparent() -> str | None:
    """The current span as a W3C ``traceparent`` value; None when off or outside any span."""
    if _tracer is None:
        return None
    carrier: dict[str, str] = {}
    _otel().w3c.inject(carrier)
    return carrier.get("traceparent")


def carrier() -> dict[str, Any] | None:
    """What work sent to a thread or another process needs to continue the current trace: the context, and this
    process's set-up (where a Ray worker has none of its own). None when off."""
    if _tracer is None or _setup is None:
        return None
    return {"traceparent": traceparent(), "setup": _setup}


@contextmanager
def resumed(carried: Mapping[str, Any] | None, name: str,
            attributes: Mapping[str, Any] | None = None) -> Iterator[Span | None]:
    """A span ``name`` continuing the trace ``carried`` (``carrier()``) wherever the work runs: a thread of this
    process, or a Ray worker, which sets up tracing from it the first time and flushes after each span."""
    global _set_up_by_work
    if not carried:
        yield None
        return
    if _tracer is None and not _disabled_by_env():
        _set_up_by_work = _install(carried["setup"])
    if _tracer is None:
        yield None
        return
    try:
        with span(name, "internal", {**_where(), **(attributes or {})}, carried.get("traceparent")) as current:
            yield current
    finally:
        if _set_up_by_work:  # a Ray worker: its process may be reaped while idle, its batch unsent
            flush()


def _where() -> dict[str, Any]:
    """Where the work runs: the host and process (its resource says so too), and its Ray node."""
    where: dict[str, Any] = {"host.name": socket.gethostname(), "process.pid": os.getpid()}
    ray = sys.modules.get("ray")  # not imported here: where the work is not on Ray, there is no node to name
    if ray is not None and ray.is_initialized():
        try:
            where["callscope.ray.node_id"] = ray.get_runtime_context().get_node_id()
        except Exception:  # noqa: BLE001 - a driver not connected yet: no node to name
            pass
    return where


# ----- HTTP ---------------------------------------------------------------------------------------------------------

def start_request(req: Any) -> Any:
    """The server span of an API request (a Falcon request: its method, path and headers), current from here on;
    its parent: the request's ``traceparent``. None when off, and for a probe or a scrape. ``end_request`` ends it."""
    if _tracer is None or req.path in SKIPPED_PATHS:
        return None
    otel = _otel()
    parent = otel.propagate.extract({name.lower(): value for name, value in req.headers.items()})
    current = _tracer.start_span(req.method, context=parent, kind=_kind("server"), attributes={
        "http.request.method": req.method, "url.path": redact_path(req.path)})
    token = otel.context.attach(otel.trace.set_span_in_context(current, parent))
    return current, token


def end_request(handle: Any, method: str, route: str | None, status: int, attributes: Mapping[str, Any]) -> None:
    if handle is None:
        return
    otel, (current, token) = _otel(), handle
    if route:
        current.update_name(f"{method} {route}")
    current.set_attributes(_clean({"http.route": route, "http.response.status_code": status, **attributes}))
    if status >= 500:
        current.set_status(otel.trace.Status(otel.trace.StatusCode.ERROR))
    current.end()
    otel.context.detach(token)


def inject(headers: MutableMapping[str, str]) -> None:
    """Put the current span's context into outgoing ``headers`` (``traceparent``; OTEL_PROPAGATORS' formats)."""
    if _tracer is None:
        return
    _otel().propagate.inject(headers)


async def inject_httpx(request: Any) -> None:
    """An httpx request hook: the current span's context in the request's headers."""
    inject(request.headers)


# ----- logs ---------------------------------------------------------------------------------------------------------

def add_ids(logger: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: the current span's ``trace_id`` and ``span_id`` (hex, as the collector shows them)."""
    if _tracer is None:
        return event
    context = _otel().trace.get_current_span().get_span_context()
    if context.is_valid:
        event.setdefault("trace_id", format(context.trace_id, "032x"))
        event.setdefault("span_id", format(context.span_id, "016x"))
    return event
