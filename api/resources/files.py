"""/files/{token}: the audio behind a URL signed by this service (filesystem blob store), with Range."""

from __future__ import annotations

import re

from callscope.api.routing import operation

from callscope.audio.probe import CONTENT_TYPES
from callscope.services.audio_urls import download_name, resolve_signed
from callscope.services.context import Context

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class SignedFile:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @operation("Audio behind a signed URL", None)
    async def on_get(self, req, resp, token: str):
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
                return
            resp.status = 206
            resp.set_header("Content-Range", f"bytes {start}-{end}/{size}")
        resp.content_type = CONTENT_TYPES[recording.audio_format]
        resp.set_header("Accept-Ranges", "bytes")
        resp.set_header("Content-Disposition", f'attachment; filename="{download_name(recording)}"')
        resp.set_header("Cache-Control", "private, no-store")
        resp.content_length = end - start + 1
        resp.stream = await self.ctx.blobs.open(recording.blob_key, (start, end))
