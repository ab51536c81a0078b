"""The recording page's downloads, for any member who may open the recording (the page's rule): its transcript as
plain text, SubRip or WebVTT with the speakers named as the page names them, and its results as the API's JSON.
The audio is the player's own signed URL."""

from __future__ import annotations

import falcon

from callscope.analysis import transcript_files
from callscope.api import presenters
from callscope.api.pages import web
from callscope.api.pages.views import speaker_views
from callscope.blobs import content_disposition
from callscope.errors import Conflict, NotFound
from callscope.services import member_auth
from callscope.services.audio_urls import file_stem
from callscope.services.context import Context
from callscope.statuses import RecordingStatus

TRANSCRIPTS = {"txt": ("text/plain; charset=utf-8", transcript_files.as_text),
               "srt": ("application/x-subrip; charset=utf-8", transcript_files.as_srt),
               "vtt": ("text/vtt; charset=utf-8", transcript_files.as_webvtt)}
FILES = frozenset({*(f"transcript.{ext}" for ext in TRANSCRIPTS), "results.json"})


class RecordingFile:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @web.page
    async def on_get(self, req, resp, id: str, file: str):
        person = await web.require_person(self.ctx, req)
        _, found = await member_auth.open_recording(self.ctx, person, id)
        if file not in FILES:
            raise NotFound("No such file")
        r = found.recording
        analysed = await presenters.current_analysis(self.ctx, r) if r.status == RecordingStatus.COMPLETED else None
        if analysed is None or analysed.result is None:
            raise Conflict("The call is not analysed yet: its files are ready once it is completed.")
        kind, ext = file.split(".")
        if kind == "results":
            resp.content_type, body = falcon.MEDIA_JSON, presenters.results_out(r, analysed).model_dump_json(indent=2)
        else:
            transcription = presenters.transcription_out(r, analysed)
            names = {label: v.title for label, v in speaker_views(transcription.speakers, []).items()}
            resp.content_type, write = TRANSCRIPTS[ext]
            body = write(transcription.segments, names)
        resp.data = body.encode()
        resp.set_header("Content-Disposition", content_disposition(f"{file_stem(r.name)} {kind}.{ext}"))
        resp.set_header("Cache-Control", "no-store")
        resp.set_header("X-Content-Type-Options", "nosniff")
