"""Every Prometheus metric the processes keep in memory, defined in one place (base units, ``_total`` counters,
``_seconds`` durations, bounded label sets). The figures read from the catalog at scrape time are
callscope/metrics_catalog.py's, Ray's cluster figures analysis/runtime/ray_figures.py's. The list with each
metric's meaning: docs/operations.md#health-and-metrics; the alerts on them: manifests/monitoring/."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from prometheus_client import Counter, Histogram

# --- HTTP ------------------------------------------------------------------------------------------

REQUESTS = Counter("callscope_http_requests_total", "HTTP requests", ["method", "route", "status"])
LATENCY = Histogram("callscope_http_request_duration_seconds", "HTTP request latency", ["method", "route"])

# --- the analysis job queue ------------------------------------------------------------------------

KINDS = ("analyze", "reanalyze")  # callscope/catalog/jobs.py's job kinds
# Why a job failed, as a class (the reason itself is the recording's status_reason): the input cannot be analysed
# (corrupt audio, a language the model cannot transcribe), the analysis raised on its last attempt, or its worker
# stopped responding on every attempt (the lease expired each time).
FAILURE_REASONS = ("input", "error", "unresponsive")
# Why a job went back to the queue: the analysis raised (an attempt used), or its worker or cluster was lost (the
# attempt given back).
RETRY_REASONS = ("error", "worker_lost", "unplaced")

JOBS_STARTED = Counter("callscope_jobs_started_total", "Analysis job attempts started (claimed by a dispatcher)",
                       ["kind"])
JOBS_COMPLETED = Counter("callscope_jobs_completed_total", "Analysis jobs completed (results stored)", ["kind"])
JOBS_FAILED = Counter("callscope_jobs_failed_total", "Analysis jobs failed, by reason class", ["kind", "reason"])
JOBS_RETRIED = Counter("callscope_jobs_retried_total", "Analysis jobs queued again for another attempt",
                       ["reason"])
JOB_ATTEMPTS = Histogram("callscope_job_attempts", "Attempts a finished (completed or failed) job took",
                         buckets=(1, 2, 3, 4, 5, 10))
LEASE_LOSSES = Counter("callscope_job_lease_losses_total",
                       "Jobs whose lease this dispatcher lost (its work discarded; another dispatcher has the job)")
UPLOAD_TO_COMPLETED = Histogram(
    "callscope_recording_upload_to_completed_seconds", "Seconds from a recording's upload to its analysis stored",
    buckets=(5, 10, 20, 30, 60, 120, 180, 300, 600, 1200, 1800, 3600, 7200))

# --- the pipeline's stages and models ---------------------------------------------------------------

# Observed by the dispatcher from each result's stages (StageRun.seconds), wherever the stages ran (inline or on a
# Ray worker): the real-time factor of a stage is rate(..._seconds_sum) / rate(callscope_stage_audio_seconds_total).
STAGE_SECONDS = Histogram("callscope_stage_duration_seconds", "Wall seconds per analysis stage", ["stage"],
                          buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600))
STAGE_AUDIO = Counter("callscope_stage_audio_seconds_total", "Seconds of audio each analysis stage processed",
                      ["stage"])
MODEL_LOAD_SECONDS = Histogram("callscope_model_load_duration_seconds",
                               "Seconds to load a model (inline) or start its Ray actor", ["model"],
                               buckets=(0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600))
MODEL_LOAD_FAILURES = Counter("callscope_model_load_failures_total", "Models that failed to load", ["model"])

# --- the catalog and the object store ----------------------------------------------------------------

CATALOG_OUTAGES = Counter("callscope_catalog_outages_total",
                          "Periods this process could not reach the catalog database (counted as each began)")
CATALOG_OUTAGE_SECONDS = Counter("callscope_catalog_outage_seconds_total",
                                 "Seconds this process could not reach the catalog (counted as each outage ended)")
OBJECT_STORAGE_OPERATIONS = ("open", "size", "delete", "delete_prefix", "list_keys", "presigned_url",
                             "sweep_orphans", "write", "commit")
OBJECT_STORAGE_ERRORS = Counter("callscope_object_storage_errors_total",
                                "Object store operations that failed, by operation", ["operation"])

# --- webhooks, redaction, usage ---------------------------------------------------------------------

OUTCOMES = ("delivered", "pending", "failed", "disabled")  # callscope/catalog/outbox.py's Outcome.state
DELIVERIES = Counter("callscope_webhook_deliveries_total", "Webhook delivery attempts by outcome", ["outcome"])
DELIVERY_SECONDS = Histogram("callscope_webhook_attempt_duration_seconds",
                             "Seconds a webhook delivery attempt took (the endpoint's answer, or the error)",
                             buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
REDACTIONS = Counter("callscope_redacted_spans_total", "Spans redacted from analysed transcripts, by entity type",
                     ["entity"])
RECORDINGS_ANALYZED = Counter("callscope_recordings_analyzed_total", "Analyses stored, per account", ["account"])
AUDIO_ANALYZED = Counter("callscope_audio_analyzed_seconds_total", "Seconds of audio analysed, per account",
                         ["account"])

# Accounts are namespaces of a self-hosted install (a handful), but nothing bounds them: past this many in one
# process, the rest are counted together under OTHER.
MAX_ACCOUNTS = 100
OTHER = "_other"
_accounts: set[str] = set()
_accounts_lock = threading.Lock()

# Every series exists from the start, at 0: a rate over it is defined before the first event, and the first event
# is an increase (a series born at 1 is not one to increase()).
for _kind in KINDS:
    JOBS_STARTED.labels(_kind)
    JOBS_COMPLETED.labels(_kind)
    for _reason in FAILURE_REASONS:
        JOBS_FAILED.labels(_kind, _reason)
for _reason in RETRY_REASONS:
    JOBS_RETRIED.labels(_reason)
for _outcome in OUTCOMES:
    DELIVERIES.labels(_outcome)
for _operation in OBJECT_STORAGE_OPERATIONS:
    OBJECT_STORAGE_ERRORS.labels(_operation)


def account_label(account: str) -> str:
    """The ``account`` label's value: the account, or OTHER once MAX_ACCOUNTS others have theirs."""
    with _accounts_lock:
        if account in _accounts or len(_accounts) < MAX_ACCOUNTS:
            _accounts.add(account)
            return account
    return OTHER


@dataclass
class ModelLoad:
    timed: bool  # False: nothing was loaded (the model was up already, or is not installed or configured)


@contextmanager
def model_load(model: str, timed: bool = True) -> Iterator[ModelLoad]:
    """Count a failure of the block as the model's load failure; observe its seconds unless the block sets
    ``timed`` False."""
    load, started = ModelLoad(timed), time.perf_counter()
    try:
        yield load
    except Exception:
        MODEL_LOAD_FAILURES.labels(model).inc()
        raise
    if load.timed:
        MODEL_LOAD_SECONDS.labels(model).observe(time.perf_counter() - started)
