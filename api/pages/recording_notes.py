"""The recording page's notes: every member of the recording's account reads them and writes one (several per call,
each with its author and time), and deletes their own; an admin of the account deletes anyone's. The actions go
through the service the REST API's /recordings/{id}/notes uses (callscope/services/notes.py) and answer as the page's
other actions do (recording_actions.RecordingAction): the page saying what was done, or the page again with why beside
the form; someone else's note forged anyway is refused (403)."""

from __future__ import annotations

from dataclasses import dataclass

import falcon

from callscope import validation as v
from callscope.api.body import parse_fields
from callscope.api.pages.recording_actions import ActionForm, RecordingAction, page_after
from callscope.api.schemas import TextInt
from callscope.catalog.recordings import Found
from callscope.catalog.tables import RecordingNote
from callscope.services import notes
from callscope.services.context import Context, Principal
from callscope.services.member_auth import SignedIn

NOTICES = {"noted": "Note added.", "note-deleted": "The note was deleted."}


@dataclass(frozen=True)
class NotesView:
    """The call's notes, oldest first, each with whether the person may delete it, and what the last action did."""

    notes: list[tuple[RecordingNote, bool]]
    notice: str | None


async def notes_view(ctx: Context, person: SignedIn, principal: Principal, found: Found, req) -> NotesView:
    author = notes.member_author(person, principal.account)
    listed = await notes.list_notes(ctx, principal, found.recording.public_id)
    return NotesView([(n, author.may_delete(n)) for n in listed], NOTICES.get(req.get_param("done") or ""))


class NoteForm(ActionForm):
    text: v.Text = ""  # blank: the service's own words


class DeleteNoteForm(ActionForm):
    note_id: TextInt


class NoteAction(RecordingAction):
    name = "note"

    async def act(self, req, resp, person, principal, found, form) -> None:
        note = parse_fields(NoteForm, form)
        public_id = found.recording.public_id
        await notes.add_note(self.ctx, principal, public_id, note.text, notes.member_author(person, principal.account))
        raise falcon.HTTPSeeOther(page_after(public_id, note.back, done="noted") + "#notes")


class DeleteNoteAction(RecordingAction):
    """A note's deletion: its author's or an admin's (Forbidden, 403, to anyone else)."""

    name = "delete-note"

    async def act(self, req, resp, person, principal, found, form) -> None:
        chosen = parse_fields(DeleteNoteForm, form)
        public_id = found.recording.public_id
        await notes.delete_note(self.ctx, principal, public_id, chosen.note_id,
                                notes.member_author(person, principal.account))
        raise falcon.HTTPSeeOther(page_after(public_id, chosen.back, done="note-deleted") + "#notes")


NOTE_ACTIONS = (NoteAction, DeleteNoteAction)
