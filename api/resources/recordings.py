"""/recordings: upload (streamed multipart), list with filters, filter values, get, change, delete,
audio URL, and the analysis read-outs (transcription, results, summary)."""

from __future__ import annotations

from callscope.api import presenters, scorecard_reviews
from callscope.api import schemas as s
from callscope.api.body import parse_json, parse_query
from callscope.api.pagination import paging
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import operation
from callscope.api.uploading import receive
from callscope.live import transcript as live_transcript
from callscope.services import recordings, trackers
from callscope.services.audio_urls import audio_url


class RecordingCollection(Resource):
    @operation("Upload a recording (multipart/form-data; idempotent on project_id + external_id)", "write",
               body=s.RecordingUpload, body_content_type="multipart/form-data", response=s.Recording,
               status=201, extra_statuses={200: s.Recording}, errors=(400, 401, 403, 404, 413, 422),
               name="uploadRecording",
               description=("Uploads a call as `multipart/form-data`: the audio in `file` (MP3, WAV, FLAC, M4A, OGG "
                            "or WebM, checked by decoding it) and the text fields. The recording starts `pending` and "
                            "is analysed in the background: poll `getRecording` until `status` is `completed` (or "
                            "`failed`), then read its transcription, results and summary. A repeat of `project_id` + "
                            "`external_id` returns the first upload's recording with 200 and stores nothing."),
               scope="Uploads into its own project only: it may leave out project_id, and another project's id is 404.",
               error_notes={400: "The body is not multipart/form-data, or is malformed.",
                            404: "project_id names no project the key can see.",
                            413: "The file is larger than its format's upload limit (`GET /app/settings`: "
                                 "upload_limits_bytes).",
                            422: "A field is invalid or missing (project_id for an account-wide key), or the file is "
                                 "empty, truncated or not audio of an accepted format."})
    async def on_post(self, req, resp):
        found, created = await receive(self.ctx, principal_of(req), req)
        resp.status = 201 if created else 200
        resp.media = data(presenters.recording_out(self.ctx, principal_of(req), found))

    @operation("List recordings, newest first", "read", response=s.RecordingList,
               query=s.RecordingListQuery, errors=(401, 403, 422),
               name="listRecordings",
               description=("The recordings, newest first, filtered by any of the query parameters (`GET "
                            "/recordings/filters` lists the values present)."),
               scope="Sees only its own project's recordings; project_id of another project answers an empty page.",
               error_notes={422: "A query parameter is invalid (an unknown status, a page past the last possible "
                                 "one, an empty number or time)."})
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
               response=s.RecordingFilters, errors=(401, 403),
               name="getRecordingFilters",
               scope="Sees only the values of its own project's recordings.")
    async def on_get(self, req, resp):
        values = await recordings.filter_values(self.ctx, principal_of(req))
        resp.media = data(presenters.filter_options(self.ctx, values))


class RecordingItem(Resource):
    @operation("Get a recording by public_id or legacy id", "read", response=s.Recording,
               errors=(401, 403, 404),
               name="getRecording",
               description=("The recording, by its public_id (a UUID) or its legacy integer id. Poll it after an "
                            "upload: `status` goes pending, processing, then completed or failed (`status_reason` says "
                            "why), with `stage` and `progress` meanwhile."),
               error_notes={404: "No recording of that id the key can see."})
    async def on_get(self, req, resp, id: str):
        principal = principal_of(req)
        found = await recordings.get_recording(self.ctx, principal, id)
        resp.media = data(presenters.recording_out(self.ctx, principal, found))

    @operation("Change a recording", "write", body=s.RecordingUpdate, response=s.Recording,
               errors=(400, 401, 403, 404, 422),
               name="updateRecording",
               description=("Changes the supplied fields only: name, project (account-wide keys; a move drops the old "
                            "project's tags), operator, call time, tags (replaces the set) and the GDPR processing "
                            "restriction."),
               scope="Changes only its own project's recordings and cannot move one to another project (422).",
               error_notes={404: "No recording of that id the key can see.",
                            422: "A field is invalid, or names an operator, project or tag the key cannot use."})
    async def on_patch(self, req, resp, id: str):
        body = await parse_json(req, s.RecordingUpdate, self.body_limit)
        found = await recordings.update_recording(self.ctx, principal_of(req), id, body.model_dump(exclude_unset=True))
        resp.media = data(presenters.recording_out(self.ctx, principal_of(req), found))

    @operation("Delete a recording permanently (audio, transcript, results, shares, metadata)", "delete",
               status=204, errors=(401, 403, 404),
               name="deleteRecording",
               error_notes={404: "No recording of that id the key can see."})
    async def on_delete(self, req, resp, id: str):
        await recordings.delete_recording(self.ctx, principal_of(req), id)
        resp.status = 204

    @operation("A time-limited URL of the original audio", "read", response=s.RecordingAudioUrl,
               errors=(401, 403, 404),
               name="getRecordingAudioUrl",
               description=("A URL of the recording's audio that works without the API key until `expires_at` (Range "
                            "requests supported): a presigned S3 URL, or one signed by the service itself."),
               error_notes={404: "No recording of that id the key can see, or its audio is not available (deleted by "
                                 "retention, or waiting for its redacted copy)."})
    async def on_get_audio_url(self, req, resp, id: str):
        found = await recordings.get_recording(self.ctx, principal_of(req), id)
        url, expires_at = await audio_url(self.ctx, found.recording)
        resp.media = data(s.AudioUrl(url=url, expires_at=expires_at))

    @operation("The transcript with speakers, word timings and emotions (empty until the analysis has completed)",
               "read", response=s.RecordingTranscription, errors=(401, 403, 404),
               name="getRecordingTranscription",
               description=("The transcript: speakers and segments, each with its words, times (milliseconds) and "
                            "emotions. Before the analysis has completed `segments` is empty and `status` says where "
                            "the recording is, so it can be polled."),
               error_notes={404: "No recording of that id the key can see."})
    async def on_get_transcription(self, req, resp, id: str):
        r = (await recordings.get_recording(self.ctx, principal_of(req), id)).recording
        resp.media = data(presenters.transcription_out(r, await presenters.current_analysis(self.ctx, r)))

    @operation("Analysis results: goals, pauses, categories, extracted data, speakers, call characteristics "
               "(empty until the analysis has completed)", "read", response=s.RecordingResults, errors=(401, 403, 404),
               name="getRecordingResults",
               description=("The analysis results: goals, pauses, categories, extracted data, speakers and call "
                            "characteristics, with the models used, the project's trackers the call matched (where), "
                            "its scorecards (the project's QA forms, with reviewers' overrides) "
                            "and, for a live call, what live recognition heard (`live`). Empty lists until the "
                            "analysis has completed (`status` says where it is)."),
               error_notes={404: "No recording of that id the key can see."})
    async def on_get_results(self, req, resp, id: str):
        r = (await recordings.get_recording(self.ctx, principal_of(req), id)).recording
        analysed = await presenters.current_analysis(self.ctx, r, transcript=False)
        scorecards = await scorecard_reviews.of_recording(self.ctx, r, analysed.result.scorecards
                                                          if analysed.result is not None else [])
        resp.media = data(presenters.results_out(r, analysed, await trackers.matched(self.ctx, r.id),
                                                 await live_transcript.of_recording(self.ctx, r.id), scorecards))

    @operation("The AI summary in the project's summary language (null until the analysis has completed)", "read",
               response=s.RecordingSummary, errors=(401, 403, 404),
               name="getRecordingSummary",
               description=("The AI summary in the project's summary language: null until the analysis has completed, "
                            "and null where the service runs without a language model."),
               error_notes={404: "No recording of that id the key can see."})
    async def on_get_summary(self, req, resp, id: str):
        r = (await recordings.get_recording(self.ctx, principal_of(req), id)).recording
        analysed = await presenters.current_analysis(self.ctx, r, transcript=False)
        resp.media = data(presenters.summary_out(r, analysed))
