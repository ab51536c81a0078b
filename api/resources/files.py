"""/files/{token}: the audio behind a URL signed by this service (filesystem blob store), with Range and HEAD."""

from __future__ import annotations

import re

from callscope.api.routing import operation
from callscope.audio.probe import CONTENT_TYPES
from callscope.blobs import content_disposition
from callscope.catalog.tables import Recording
from callscope.services.audio_urls import download_name, resolve_signed
from callscope.services.context import Context

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class SignedFile:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @operation("Audio behind a signed URL", None)
    async def on_get(self, req, resp, token: str):
        served = await self._headers(req, resp, token)
        if served is not None:
            recording, span = served
            resp.stream = await self.ctx.blobs.open(recording.blob_key, span)

    @operation("Headers of the audio behind a signed URL", None)
    async def on_head(self, req, resp, token: str):
        await self._headers(req, resp, token)  # no body: the blob is never opened

    async def _headers(self, req, resp, token: str) -> tuple[Recording, tuple[int, int]] | None:
        """Set the status and headers GET and HEAD share; the recording and the byte span to send, or None
        when there is nothing to send (416)."""
        recording = await resolve_signed(self.ctx, token)
        size = await self.ctx.blobs.size(recording.blob_key)
        start, end = 0, size - 1
        match = _RANGE.match(req.get_header("Range") or "")
        if match and (match.group(1) or match.group(2)) and size:
            if match.group(1):
                start, end = int(match.group(1)), min(int(match.group(2) or end), end)
            else:  # the last N bytes
                start = max(size - int(match.group(2)), 0)
            if start > end:
                resp.status = 416
                resp.set_header("Content-Range", f"bytes */{size}")
                return None
            resp.status = 206
            resp.set_header("Content-Range", f"bytes {start}-{end}/{size}")
        resp.content_type = CONTENT_TYPES[recording.audio_format]
        resp.set_header("Accept-Ranges", "bytes")
        # The name is the user's (any script): header values must stay ASCII, RFC 6266 carries the rest.
        resp.set_header("Content-Disposition", content_disposition(download_name(recording)))
        resp.set_header("Cache-Control", "private, no-store")
        resp.content_length = end - start + 1
        return recording, (start, end)
