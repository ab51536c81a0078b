"""Recording upload: the audio streams into the blob store as it arrives (memory stays flat), is probed
with FFmpeg, and only then are the recording (`pending`) and its analysis job written, in one
transaction. A failed, oversize or interrupted upload leaves no recording and no blob."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime

import structlog
from sqlalchemy.exc import IntegrityError

from callscope.audio.probe import AudioInfo, format_from_filename, probe
from callscope.catalog import recordings as recording_rows
from callscope.catalog.recordings import Found
from callscope.catalog.tables import Recording
from callscope.errors import PayloadTooLarge, ValidationFailed
from callscope.identifiers import uuid7
from callscope.resources import Project
from callscope.services import scope
from callscope.services.context import Context, Principal
from callscope.services.recordings import audio_key, check_operator, check_tags
from callscope.statuses import AudioRedaction, RecordingStatus

log = structlog.get_logger()


@dataclass
class UploadFields:
    """The form fields of POST /recordings, already typed by the API layer."""

    project_id: int | None = None
    name: str | None = None
    external_id: str | None = None
    operator_id: int | None = None
    called_at: datetime | None = None
    language: str | None = None
    recording_source: str | None = None
    tag_ids: list[int] = field(default_factory=list)
    conversation_id: str | None = None  # public_id of the other leg of an internal call
    agent_channel: int | None = None  # known by the source (a phone call's operator leg); not a form field


class Upload:
    """One audio upload in progress: write chunks, then finish (or abort)."""

    def __init__(self, ctx: Context, principal: Principal, filename: str | None, public_id: str | None = None):
        """`public_id`: one the recording was promised before its audio came (a live call's); default a new one."""
        self.ctx, self.principal, self.filename = ctx, principal, filename
        self.public_id = public_id or str(uuid7())
        self.key = audio_key(principal.account, self.public_id)
        limits = ctx.settings.upload_limits_mb
        # While streaming only the name hints at the format; the probe's verdict is checked again at the end.
        claimed_mb = limits.get(format_from_filename(filename) or "")
        self.limit = (claimed_mb or max(limits.values())) * 1_000_000
        self.writer = ctx.blobs.writer(self.key)

    async def write(self, chunk: bytes) -> None:
        if self.writer.size + len(chunk) > self.limit:
            raise PayloadTooLarge(f"File is larger than the {self.limit // 1_000_000} MB allowed for this format")
        await self.writer.write(chunk)

    async def abort(self) -> None:
        await self.writer.abort()


def check_project(ctx: Context, principal: Principal, project_id: int | None) -> Project:
    """Upload rule 1 of the spec: 422 without project_id for account-wide keys, 403 on a scoped key's
    mismatch, 404 for a project not in the account."""
    if project_id is None and not principal.scoped:
        raise ValidationFailed(scope.PROJECT_REQUIRED)
    return scope.project_for_request(ctx, principal, project_id)


async def finish(upload: Upload, fields: UploadFields) -> tuple[Found, bool]:
    """Probe, validate, commit the blob and write the recording and its job: (recording, created).

    A repeat of (project_id, external_id) returns the first recording (created False), also when two
    uploads race: the unique constraint decides and the loser discards its blob.
    """
    ctx, principal = upload.ctx, upload.principal
    try:
        if upload.writer.size == 0:
            raise ValidationFailed("File is empty")
        project = check_project(ctx, principal, fields.project_id)
        tag_ids = check_tags(ctx, principal.account, project, fields.tag_ids)
        operator_id = check_operator(ctx, principal, fields.operator_id)
        if fields.external_id and (found := await ctx.catalog.read(
                recording_rows.find_by_external_id, principal.scope, project.status.id, fields.external_id)):
            await upload.abort()
            return found, False
        info: AudioInfo = await asyncio.to_thread(probe, upload.writer.local_path)
        limit = ctx.settings.upload_limits_mb[info.format] * 1_000_000
        if upload.writer.size > limit:
            raise PayloadTooLarge(f"{info.format.upper()} files may be at most {limit // 1_000_000} MB")
        conversation = upload.public_id
        if fields.conversation_id:
            conversation = await ctx.catalog.read(recording_rows.conversation_of, principal.scope,
                                                  fields.conversation_id)
            if conversation is None:
                raise ValidationFailed("conversation_id is not a recording this API key can see")
        await upload.writer.commit()
    except BaseException:
        await upload.abort()
        raise
    now = ctx.clock()
    row = Recording(
        public_id=upload.public_id, account=principal.account, project_id=project.status.id,
        name=_name(fields.name, upload.filename), external_id=fields.external_id or None, operator_id=operator_id,
        called_at=fields.called_at, language=fields.language or project.spec.language,
        recording_source=fields.recording_source, agent_channel=fields.agent_channel,
        status=RecordingStatus.PENDING, progress=0,
        duration_ms=info.duration_ms, audio_format=info.format, size_bytes=upload.writer.size,
        original_filename=upload.filename, blob_key=upload.key,
        audio_redaction=AudioRedaction.PENDING if project.spec.redacts_audio else None,
        dialogues_count=0, goals_evaluated=False, pauses_detected=0,
        processing_restricted=False, conversation_id=conversation, created_at=now, updated_at=now,
    )
    # Shielded: a client that goes away now cannot split the row from its blob; the insert finishes.
    insert = asyncio.ensure_future(ctx.catalog.write(recording_rows.insert, row, tag_ids, now))
    try:
        found = await asyncio.shield(insert)
    except asyncio.CancelledError:
        raise
    except IntegrityError:
        await ctx.blobs.delete(upload.key)
        existing = await ctx.catalog.read(recording_rows.find_by_external_id, principal.scope, project.status.id,
                                          fields.external_id or "")
        if existing is None:
            raise
        return existing, False
    except Exception:
        await ctx.blobs.delete(upload.key)  # no recording row: the blob must not outlive the request
        raise
    log.info("recording_uploaded", account=principal.account, public_id=upload.public_id, bytes=row.size_bytes,
             format=info.format, duration_ms=info.duration_ms)
    return found, True


def _name(name: str | None, filename: str | None) -> str:
    name = (name or "").strip() or (filename or "").rsplit("/", 1)[-1].strip() or "Recording"
    return name[:255]

