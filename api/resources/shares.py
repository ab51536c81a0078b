"""/recordings/{recording_id}/shares and /recordings/{recording_id}/shares/{id}."""

from __future__ import annotations

import json

from callscope.api import presenters
from callscope.api import schemas as s
from callscope.api.body import read_raw
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import operation
from callscope.errors import BadRequest
from callscope.services import shares

SEND_ONE = "Send either email or everyone"


def _parse(raw: bytes) -> dict:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise BadRequest("Malformed JSON in request body") from None
    if not isinstance(body, dict):
        raise BadRequest("Request body must be a JSON object")
    return body


class ShareCollection(Resource):
    @operation("Share the recording's conversation with a member or with everyone", "write", body=s.ShareCreate,
               response=s.Share, status=201, extra_statuses={200: s.Share},
               errors=(400, 401, 403, 404, 422),
               name="createRecordingShare",
               description=("Shares the recording's conversation (both legs of an internal call) with one active "
                            "member, who gets an email with the link unless notify is false, or with every member of "
                            "the account. Sharing again with the same person returns the existing share with 200 and "
                            "sends no email."),
               error_notes={400: "Malformed JSON, or not exactly one of email and everyone (`Send either email or "
                                 "everyone`).",
                            404: "No recording of that id the key can see.",
                            422: "The email is not an active member of the account, the message is too long, or the "
                                 "recording is processing-restricted."})
    async def on_post(self, req, resp, id: str):
        body = _parse(await read_raw(req, self.body_limit))
        email, everyone, message, notify = (body.get(k) for k in ("email", "everyone", "message", "notify"))
        if (email is None) == (everyone in (None, False)):  # neither or both
            raise BadRequest(SEND_ONE)
        if email is not None and not isinstance(email, str):
            raise BadRequest("email must be a string")
        if everyone is not None and not isinstance(everyone, bool):
            raise BadRequest("everyone must be a boolean")
        if message is not None and not isinstance(message, str):
            raise BadRequest("message must be a string")
        if notify is not None and not isinstance(notify, bool):
            raise BadRequest("notify must be a boolean")
        view, created = await shares.create_share(self.ctx, principal_of(req), id, email, everyone,
                                                  message, notify is not False)
        resp.status = 201 if created else 200
        resp.media = data(presenters.share_out(self.ctx, view))

    @operation("Shares of the recording's conversation, oldest first", "read", response=s.ShareList,
               errors=(401, 403, 404),
               name="listRecordingShares",
               error_notes={404: "No recording of that id the key can see."})
    async def on_get(self, req, resp, id: str):
        views = await shares.list_shares(self.ctx, principal_of(req), id)
        resp.media = data([presenters.share_out(self.ctx, v) for v in views])


class ShareItem(Resource):
    @operation("Remove a share (access ends on the person's next request)", "write", status=204,
               errors=(401, 403, 404),
               name="deleteRecordingShare",
               error_notes={404: "No recording of that id the key can see, or no share of that id on it."})
    async def on_delete(self, req, resp, id: str, share_id: int):
        await shares.delete_share(self.ctx, principal_of(req), id, share_id)
        resp.status = 204
