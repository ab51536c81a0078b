"""/recordings: upload (streamed multipart), list with filters, filter values, get, change, delete,
audio URL, and the analysis read-outs (transcription, results, summary)."""

from __future__ import annotations

from pydantic import TypeAdapter, ValidationError

from callscope.api import presenters
from callscope.api import schemas as s
from callscope.api.body import parse_fields, parse_json, parse_query
from callscope.api.pagination import paging
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import operation
from callscope.errors import BadRequest, ValidationFailed
from callscope.services import recordings, uploads
from callscope.services.audio_urls import audio_url
from callscope.validation import FILENAME_MAX

CHUNK = 1 << 20  # read the upload 1 MiB at a time: memory stays flat whatever the file size
_LISTS = {"tag_ids[]", "tag_ids"}
_FILENAME = TypeAdapter(s.Filename)


def _fields(form: dict[str, list[str]]) -> uploads.UploadFields:
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


class RecordingCollection(Resource):
    @operation("Upload a recording (multipart/form-data; idempotent on project_id + external_id)", "write",
               body=s.RecordingUpload, body_content_type="multipart/form-data", response=s.Data[s.RecordingOut],
               status=201, extra_statuses={200: s.Data[s.RecordingOut]}, errors=(400, 401, 403, 404, 413, 422))
    async def on_post(self, req, resp):
        if not (req.content_type or "").lower().startswith("multipart/form-data"):
            raise BadRequest("Upload the audio as multipart/form-data in the field `file`")
        principal = principal_of(req)
        form: dict[str, list[str]] = {}
        upload = None
        try:
            async for part in await req.get_media():
                if part.name == "file" and upload is None:
                    # Refuse early, before the audio streams in: the fields sent so far, and their project.
                    fields = _fields(form)
                    if "project_id" in form:
                        uploads.check_project(self.ctx, principal, fields.project_id)
                    upload = uploads.Upload(self.ctx, principal, _filename(part.filename))
                    while chunk := await part.stream.read(CHUNK):
                        await upload.write(chunk)
                elif part.name != "file":
                    form.setdefault(part.name, []).append(await part.get_text() or "")
            if upload is None:
                raise ValidationFailed("file is required")
            found, created = await uploads.finish(upload, _fields(form))
        except BaseException:
            if upload is not None:
                await upload.abort()
            raise
        resp.status = 201 if created else 200
        resp.media = data(presenters.recording_out(self.ctx, principal_of(req), found))

    @operation("List recordings, newest first", "read", response=s.Page[s.RecordingOut],
               query=s.RecordingListQuery, errors=(401, 403, 422))
    async def on_get(self, req, resp):
        query = parse_query(req, s.RecordingListQuery)
        page = paging(query)
        filters = recordings.Filters(**query.model_dump(exclude={"page", "per_page"}))
        principal = principal_of(req)
        found, total = await recordings.list_recordings(self.ctx, principal, filters, page.offset, page.limit)
        resp.media = {"data": [presenters.recording_out(self.ctx, principal, f).model_dump(mode="json") for f in found],
                      "meta": page.meta(total).model_dump()}


class RecordingFilters(Resource):
    @operation("Values the recordings list can be filtered on", "read",
               response=s.Data[s.RecordingFilterOptions], errors=(401, 403))
    async def on_get(self, req, resp):
        values = await recordings.filter_values(self.ctx, principal_of(req))
        resp.media = data(presenters.filter_options(self.ctx, values))


class RecordingItem(Resource):
    @operation("Get a recording by public_id or legacy id", "read", response=s.Data[s.RecordingOut],
               errors=(401, 403, 404))
    async def on_get(self, req, resp, id: str):
        principal = principal_of(req)
        found = await recordings.get_recording(self.ctx, principal, id)
        resp.media = data(presenters.recording_out(self.ctx, principal, found))

    @operation("Change a recording", "write", body=s.RecordingUpdate, response=s.Data[s.RecordingOut],
               errors=(400, 401, 403, 404, 422))
    async def on_patch(self, req, resp, id: str):
        body = await parse_json(req, s.RecordingUpdate, self.body_limit)
        found = await recordings.update_recording(self.ctx, principal_of(req), id, body.model_dump(exclude_unset=True))
        resp.media = data(presenters.recording_out(self.ctx, principal_of(req), found))

    @operation("Delete a recording permanently (audio, transcript, results, shares, metadata)", "delete",
               status=204, errors=(401, 403, 404))
    async def on_delete(self, req, resp, id: str):
        await recordings.delete_recording(self.ctx, principal_of(req), id)
        resp.status = 204

    @operation("A time-limited URL of the original audio", "read", response=s.Data[s.AudioUrl],
               errors=(401, 403, 404))
    async def on_get_audio_url(self, req, resp, id: str):
        found = await recordings.get_recording(self.ctx, principal_of(req), id)
        url, expires_at = await audio_url(self.ctx, found.recording)
        resp.media = data(s.AudioUrl(url=url, expires_at=expires_at))

    @operation("The transcript with speakers, word timings and emotions (empty until the analysis has completed)",
               "read", response=s.Data[s.Transcription], errors=(401, 403, 404))
    async def on_get_transcription(self, req, resp, id: str):
        r = (await recordings.get_recording(self.ctx, principal_of(req), id)).recording
        resp.media = data(presenters.transcription_out(r, await presenters.current_analysis(self.ctx, r)))

    @operation("Analysis results: goals, pauses, categories, extracted data, speakers, call characteristics "
               "(empty until the analysis has completed)", "read", response=s.Data[s.Results], errors=(401, 403, 404))
    async def on_get_results(self, req, resp, id: str):
        r = (await recordings.get_recording(self.ctx, principal_of(req), id)).recording
        analysed = await presenters.current_analysis(self.ctx, r, transcript=False)
        resp.media = data(presenters.results_out(r, analysed))

    @operation("The AI summary in the project's summary language (null until the analysis has completed)", "read",
               response=s.Data[s.Summary], errors=(401, 403, 404))
    async def on_get_summary(self, req, resp, id: str):
        r = (await recordings.get_recording(self.ctx, principal_of(req), id)).recording
        analysed = await presenters.current_analysis(self.ctx, r, transcript=False)
        resp.media = data(presenters.summary_out(r, analysed))
