"""/recordings/{id}/notes and /recordings/{id}/notes/{note_id}: notes on a recording (callscope/services/notes.py)."""

from __future__ import annotations

from callscope.api import schemas as s
from callscope.api.body import parse_json
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import operation
from callscope.catalog.tables import RecordingNote
from callscope.services import notes


def note_out(note: RecordingNote) -> s.NoteDetail:
    return s.NoteDetail(id=note.id, text=note.text, author=s.NoteAuthor(type=note.author_type, name=note.author_name),
                        created_at=note.created_at)


class NoteCollection(Resource):
    @operation("The recording's notes, oldest first", "read", response=s.NoteList, errors=(401, 403, 404),
               name="listRecordingNotes",
               description="Notes members (on the recording page) and API keys wrote on the call, with who and when.",
               error_notes={404: "No recording of that id the key can see."})
    async def on_get(self, req, resp, id: str):
        resp.media = data([note_out(n) for n in await notes.list_notes(self.ctx, principal_of(req), id)])

    @operation("Write a note on the recording", "write", body=s.NoteCreate, response=s.Note, status=201,
               errors=(400, 401, 403, 404, 422),
               name="createRecordingNote",
               description="The note is the key's: its author is the key, by name.",
               error_notes={404: "No recording of that id the key can see.",
                            422: "text is missing, blank (`text must not be empty`), too long, or holds control "
                                 "characters other than tab and line breaks."})
    async def on_post(self, req, resp, id: str):
        principal = principal_of(req)
        body = await parse_json(req, s.NoteCreate, self.body_limit)
        note = await notes.add_note(self.ctx, principal, id, body.text, notes.key_author(principal))
        resp.status = 201
        resp.media = data(note_out(note))


class NoteItem(Resource):
    @operation("Delete a note", "write", status=204, errors=(401, 403, 404),
               name="deleteRecordingNote",
               description="A key deletes the notes it wrote; one with the delete permission, any note of the call.",
               error_notes={403: "The note is another's and the key lacks the delete permission.",
                            404: "No recording of that id the key can see, or no note of that id on it."})
    async def on_delete(self, req, resp, id: str, note_id: int):
        principal = principal_of(req)
        await notes.delete_note(self.ctx, principal, id, note_id, notes.key_author(principal))
        resp.status = 204
