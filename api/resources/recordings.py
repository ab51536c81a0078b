"""/recordings: upload (streamed multipart), list with filters, filter values, get, change, delete,
audio URL, and the analysis read-outs (transcription, results, summary)."""

from __future__ import annotations

from callscope.api import presenters
from callscope.api import schemas as s
from callscope.api.body import parse_datetime, parse_int, parse_json, query_datetime, query_int, query_int_list
from callscope.api.pagination import page_request
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import QueryParam, operation

from callscope.errors import BadRequest, ValidationFailed
from callscope.services import analyses, recordings, uploads
from callscope.services.audio_urls import audio_url

CHUNK = 1 << 20  # read the upload 1 MiB at a time: memory stays flat whatever the file size
_INT = {"type": "integer"}
_TIME = {"type": "string", "format": "date-time"}
LIST_QUERY = (
    QueryParam("page", {"type": "integer", "minimum": 1, "default": 1}),
    QueryParam("per_page", {"type": "integer", "minimum": 1, "default": 20}, "At most 100 (larger values are capped)."),
    QueryParam("tag_ids[]", {"type": "array", "items": _INT}, "Recordings carrying any of these tags."),
    QueryParam("project_id", _INT), QueryParam("status", {"type": "string", "enum": list(recordings.STATUSES)}),
    QueryParam("operator_id", _INT), QueryParam("language", {"type": "string"}),
    QueryParam("external_id", {"type": "string"}),
    QueryParam("called_from", _TIME), QueryParam("called_to", _TIME),
    QueryParam("created_from", _TIME), QueryParam("created_to", _TIME),
    QueryParam("min_duration_ms", _INT), QueryParam("max_duration_ms", _INT),
    QueryParam("q", {"type": "string"}, "Case-insensitive search in the name."),
)


def _fields(form: dict[str, list[str]]) -> uploads.UploadFields:
    def one(name: str) -> str | None:
        values = form.get(name)
        return values[-1].strip() if values else None

    tag_values = form.get("tag_ids[]", []) + form.get("tag_ids", [])
    return uploads.UploadFields(
        project_id=parse_int("project_id", one("project_id")), name=one("name"), external_id=one("external_id") or None,
        operator_id=parse_int("operator_id", one("operator_id")),
        called_at=parse_datetime("called_at", one("called_at")), language=one("language") or None,
        recording_source=one("recording_source") or None,
        tag_ids=[v for t in tag_values if (v := parse_int("tag_ids[]", t)) is not None],
        conversation_id=one("conversation_id") or None,
    )


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
                    if "project_id" in form:  # refuse early, before the audio streams in
                        uploads.check_project(self.ctx, principal, _fields(form).project_id)
                    upload = uploads.Upload(self.ctx, principal, part.filename)
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
        resp.media = data(presenters.recording_out(found))

    @operation("List recordings, newest first", "read", response=s.Page[s.RecordingOut], query=LIST_QUERY,
               errors=(401, 403, 422))
    async def on_get(self, req, resp):
        page = page_request(req)
        filters = recordings.Filters(
            project_id=query_int(req, "project_id"), status=req.get_param("status"),
            operator_id=query_int(req, "operator_id"), language=req.get_param("language"),
            external_id=req.get_param("external_id"), tag_ids=query_int_list(req, "tag_ids"),
            called_from=query_datetime(req, "called_from"), called_to=query_datetime(req, "called_to"),
            created_from=query_datetime(req, "created_from"), created_to=query_datetime(req, "created_to"),
            min_duration_ms=query_int(req, "min_duration_ms"), max_duration_ms=query_int(req, "max_duration_ms"),
            q=req.get_param("q"),
        )
        found, total = await recordings.list_recordings(self.ctx, principal_of(req), filters, page.offset, page.limit)
        resp.media = {"data": [presenters.recording_out(f).model_dump(mode="json") for f in found],
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
        resp.media = data(presenters.recording_out(await recordings.get_recording(self.ctx, principal_of(req), id)))

    @operation("Change a recording", "write", body=s.RecordingUpdate, response=s.Data[s.RecordingOut],
               errors=(400, 401, 403, 404, 422))
    async def on_patch(self, req, resp, id: str):
        body = await parse_json(req, s.RecordingUpdate, self.body_limit)
        found = await recordings.update_recording(self.ctx, principal_of(req), id, body.model_dump(exclude_unset=True))
        resp.media = data(presenters.recording_out(found))

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
        _, transcript = await analyses.load_analysis(self.ctx, r)
        resp.media = data(presenters.transcription_out(r, transcript))

    @operation("Analysis results: goals, pauses, categories, extracted data, speakers, call characteristics "
               "(empty until the analysis has completed)", "read", response=s.Data[s.Results], errors=(401, 403, 404))
    async def on_get_results(self, req, resp, id: str):
        r = (await recordings.get_recording(self.ctx, principal_of(req), id)).recording
        analysis, _ = await analyses.load_analysis(self.ctx, r, transcript=False)
        resp.media = data(presenters.results_out(r, analysis))

    @operation("The AI summary in the project's summary language (null until the analysis has completed)", "read",
               response=s.Data[s.Summary], errors=(401, 403, 404))
    async def on_get_summary(self, req, resp, id: str):
        r = (await recordings.get_recording(self.ctx, principal_of(req), id)).recording
        analysis, _ = await analyses.load_analysis(self.ctx, r, transcript=False)
        resp.media = data(presenters.summary_out(r, analysis))
