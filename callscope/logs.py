"""Structured logs: JSON lines (or readable console lines) on stderr, through structlog; bearer secrets redacted in
every line, structlog's and the standard library's (callscope/log_scrubbing.py); where tracing is on, each line written
inside a span carries its trace_id and span_id (callscope/tracing.py)."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

import structlog

from callscope import tracing
from callscope.log_scrubbing import RedactingFilter, Redactor

if TYPE_CHECKING:
    from callscope.config import Settings


def configure(settings: Settings) -> None:
    """CALLSCOPE_LOG_LEVEL and CALLSCOPE_LOG_FORMAT; API keys are known by CALLSCOPE_API_KEY_PREFIX."""
    level = settings.log_level
    redactor = Redactor(settings.api_key_prefix)
    renderer = (structlog.processors.JSONRenderer() if settings.log_format == "json"
                else structlog.dev.ConsoleRenderer())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            tracing.add_ids,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redactor,  # after the exception became text, before anything is written
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=level.upper(), stream=sys.stderr, format="%(message)s")
    # On the handlers, not the root logger: a logger's filters never see the records of its children (uvicorn.error,
    # httpx, kopf.objects, ...), a handler's see every record it writes.
    for handler in logging.getLogger().handlers:
        for old in [f for f in handler.filters if isinstance(f, RedactingFilter)]:
            handler.removeFilter(old)
        handler.addFilter(RedactingFilter(redactor))
