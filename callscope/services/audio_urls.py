"""Time-limited audio URLs: a presigned URL with S3, else a URL signed by this service and served by
its /files route. Both stop working at expiry, and after the recording is deleted. Audio waiting for its
redaction (a project that redacts audio) gets none: only the redacted copy is ever served."""

from __future__ import annotations

from datetime import datetime, timedelta

from callscope.audio.probe import CONTENT_TYPES
from callscope.blobs.signing import sign, verify
from callscope.catalog import recordings as recording_rows
from callscope.catalog.tables import Recording
from callscope.errors import NotFound
from callscope.services.context import Context
from callscope.statuses import AudioRedaction

FILES_PATH = "/files/"


def file_stem(name: str) -> str:
    """A recording's name as the start of a file name a browser saves: letters, digits, space, . _ - kept."""
    return "".join(c if c.isalnum() or c in " ._-" else "_" for c in name).strip() or "recording"


def download_name(recording: Recording) -> str:
    stem = file_stem(recording.name)
    suffix = f".{recording.audio_format}"
    return stem if stem.lower().endswith(suffix) else stem + suffix


UNREDACTED = "Audio is not available until its redacted copy is stored"


async def audio_url(ctx: Context, recording: Recording) -> tuple[str, datetime]:
    if recording.blob_key is None:
        raise NotFound("Audio is not available")
    if recording.audio_redaction == AudioRedaction.PENDING:
        raise NotFound(UNREDACTED)
    ttl = ctx.settings.audio_url_ttl_seconds
    expires_at = (ctx.clock() + timedelta(seconds=ttl)).replace(microsecond=0)
    url = await ctx.blobs.presigned_url(recording.blob_key, ttl, download_name(recording),
                                        CONTENT_TYPES[recording.audio_format])
    if url is None:
        token = sign(ctx.url_secret, recording.blob_key, int(expires_at.timestamp()))
        url = f"{ctx.settings.base_url}{FILES_PATH}{token}"
    return url, expires_at


async def resolve_signed(ctx: Context, token: str) -> Recording:
    """The recording a signed URL points at; the typed signing error for a bad or expired token,
    NotFound when the recording (or its audio) is gone."""
    key = verify(ctx.url_secret, token, int(ctx.clock().timestamp()))
    recording = await ctx.catalog.read(recording_rows.by_blob, key)
    if recording is None or recording.audio_redaction == AudioRedaction.PENDING or await ctx.blobs.size(key) is None:
        raise NotFound()
    return recording
