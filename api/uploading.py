"""The streaming upload of POST /recordings, shared by the API and the members' upload page: the multipart body is
read part by part, the audio streams into the blob store 1 MiB at a time under its format's limit, and
callscope/services/uploads.py probes it and writes the recording. Text fields sent before the file are checked
before the audio streams in."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import TypeAdapter, ValidationError

from callscope.api import schemas as s
from callscope.api.body import parse_fields
from callscope.catalog.recordings import Found
from callscope.errors import BadRequest, ValidationFailed
from callscope.services import uploads
from callscope.services.context import Context, Principal
from callscope.validation import FILENAME_MAX

CHUNK = 1 << 20  # read the upload 1 MiB at a time: memory stays flat whatever the file size
_LISTS = {"tag_ids[]", "tag_ids"}
_FILENAME = TypeAdapter(s.Filename)

Form = dict[str, list[str]]


def _fields(form: Form) -> uploads.UploadFields:
    """The form fields sent so far, checked (the last value of a repeated field counts)."""
    values: dict[str, str | list[str]] = {name: sent[-1] for name, sent in form.items() if name not in _LISTS}
    if tag_ids := form.get("tag_ids[]", []) + form.get("tag_ids", []):
        values["tag_ids[]"] = tag_ids
    parsed = parse_fields(s.UploadForm, values)
    return uploads.UploadFields(**{**parsed.model_dump(), "recording_source": parsed.recording_source or None})


def _filename(name: str | None) -> str | None:
    """The file part's name, kept as the recording's original file name (and its default name)."""
    try:
        return None if name is None else _FILENAME.validate_python(name)
    except ValidationError:
        raise ValidationFailed(f"file name must be at most {FILENAME_MAX} characters without control "
                               "characters") from None


async def receive(ctx: Context, principal: Principal, req,
                  guard: Callable[[Form], None] = lambda form: None) -> tuple[Found, bool]:
    """Read one upload's multipart body and store it: (recording, created). `guard` sees the text fields sent
    before the file (or, without a file, all of them) and may refuse the request before any audio is kept."""
    if not (req.content_type or "").lower().startswith("multipart/form-data"):
        raise BadRequest("Upload the audio as multipart/form-data in the field `file`")
    form: Form = {}
    upload = None
    try:
        async for part in await req.get_media():
            if part.name == "file" and upload is None:
                guard(form)
                # Refuse early, before the audio streams in: the fields sent so far, and their project.
                fields = _fields(form)
                if "project_id" in form:
                    uploads.check_project(ctx, principal, fields.project_id)
                upload = uploads.Upload(ctx, principal, _filename(part.filename))
                while chunk := await part.stream.read(CHUNK):
                    await upload.write(chunk)
            elif part.name != "file":
                form.setdefault(part.name, []).append(await part.get_text() or "")
        if upload is None:
            guard(form)
            raise ValidationFailed("file is required")
        return await uploads.finish(upload, _fields(form))
    except BaseException:
        if upload is not None:
            await upload.abort()
        raise
