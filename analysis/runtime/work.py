"""One unit of analysis work, the same inline and on Ray: fetch the recording's audio from the blob store into a
temp file on the machine that analyses it (never through the dispatcher), run the pipeline, store the redacted copy
of the audio where the project redacts audio (from the same file, on the same machine), drop the file. Where tracing
is on, the work is the ``analysis`` span of its job's trace, on the machine that analyses it (callscope/tracing.py)."""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from callscope import tracing
from callscope.analysis.result import AnalysisResult
from callscope.analysis.runtime.pipeline import AnalysisError, Pipeline, Progress, Transcribed
from callscope.analysis.scorecards import Form
from callscope.analysis.stages import dtmf
from callscope.analysis.stages.audio_redaction import blanked_spans, merged, redact_audio_file
from callscope.analysis.stages.decode import decode
from callscope.analysis.stages.scorecard import score_call
from callscope.blobs.factory import build_blob_store
from callscope.errors import NotFound


class WorkerLost(Exception):
    """The analysis could not run through no fault of the recording (a model's worker is being restarted after its
    node was lost): the queue tries again without counting the attempt."""


class NotPlaced(WorkerLost):
    """Ray did not start the analysis in time: no node offers what its task asks for (the worker nodes are gone,
    or all busy). The queue tries again, uncounted, until capacity returns."""


@dataclass(frozen=True)
class Work:
    job_id: int
    blob_key: str | None
    project: Any  # ProjectSpec (with the recording's language) or None
    voices: tuple = ()  # the account's enrolled operator voiceprints (KnownVoice), for speaker identification
    called_on: date | None = None  # anchors relative dates in extracted fields
    agent_channel: int | None = None  # the channel the source knows the agent on (a phone call); None: the setting
    redacted_audio_key: str | None = None  # where the project redacts audio: the blob to store the redacted copy in
    # where the audio read is an earlier analysis's redacted copy (the unredacted audio was deleted): that analysis's
    # spans redacted per entity type, which the copy no longer says and this analysis cannot find again
    redacted_before: dict[str, int] | None = None
    tones_before: int = 0  # and the keypad tones it took out
    trace: dict[str, Any] | None = None  # tracing.carrier() of the job's span: the analysis continues its trace
    # the QA forms of the call's project: scored where the language model is, which answers their llm questions
    scorecards: tuple[Form, ...] = ()


async def _copy(settings, key: str, dest: Path) -> None:
    store = build_blob_store(settings)
    try:
        stream = await store.open(key)
    except NotFound:
        raise AnalysisError("the recording's audio is no longer stored") from None
    async with stream:
        with dest.open("wb") as out:
            async for chunk in stream:
                out.write(chunk)


async def _upload(settings, source: Path, key: str) -> None:
    store = build_blob_store(settings)
    async with store.writer(key) as writer:
        with source.open("rb") as data:
            while chunk := data.read(1 << 20):
                await writer.write(chunk)
        await writer.commit()


def fetch_audio(settings, key: str | None, dest: Path) -> Path:
    """Copy the blob ``key`` to ``dest``; AnalysisError when the recording has no audio any more."""
    if not key:
        raise AnalysisError("the recording's audio is no longer stored")
    asyncio.run(_copy(settings, key, dest))
    return dest


def analyze(pipeline: Pipeline, settings, work: Work, progress: Progress | None = None,
            transcribed: Transcribed | None = None) -> AnalysisResult:
    with tracing.resumed(work.trace, "analysis", {"callscope.job.id": work.job_id}):
        return _analyze(pipeline, settings, work, progress, transcribed)


def _analyze(pipeline: Pipeline, settings, work: Work, progress: Progress | None = None,
             transcribed: Transcribed | None = None) -> AnalysisResult:
    with tempfile.TemporaryDirectory(prefix="callscope-analysis-") as tmp:
        with tracing.span("audio.fetch"):
            path = fetch_audio(settings, work.blob_key, Path(tmp) / "audio")
        result = pipeline.run(path, work.project, progress, list(work.voices), work.called_on, work.agent_channel,
                              redacted_before=work.redacted_before, transcribed=transcribed)
        if work.scorecards:
            with tracing.span("scorecards"):
                result = result.model_copy(update={"scorecards": [
                    score_call(f.form, result, scorecard_id=f.scorecard_id, name=f.name, version=f.version,
                               llm=pipeline.llm, embedder=pipeline.embedder) for f in work.scorecards]})
        if work.redacted_audio_key is not None:
            if progress is not None:
                progress("audio_redaction", 0.99)
            redacted = Path(tmp) / "redacted.flac"
            # keypad tones go too: a DTMF decoder reads a typed card number back from the served file
            tones = dtmf.detect(decode(path))
            unheard = result.redaction.unheard if result.redaction is not None else []
            spans = merged([*blanked_spans(result.segments, unheard, settings.redaction_audio_margin_ms),
                            *((t.start_ms, t.end_ms) for t in tones)])
            if result.redaction is not None:
                result = result.model_copy(update={"redaction": result.redaction.model_copy(
                    update={"tones": len(tones) + work.tones_before})})
            redact_audio_file(path, redacted, spans, settings.redaction_audio_fill)
            with tracing.span("audio.store_redacted"):
                asyncio.run(_upload(settings, redacted, work.redacted_audio_key))
        return result
