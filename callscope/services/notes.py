"""Notes on a recording: several per call, each with its author and time, for everyone who can see the call.

Who may do what: whoever sees the recording reads its notes; any member of its account (the recording page) and any
key with the write permission (REST) adds one; a note is deleted by its author, by an admin of the account, or by a
key with the delete permission (what an admin is to the REST API). Another account's recording, or a note of another
recording, is not found."""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from callscope.catalog import notes as rows
from callscope.catalog.tables import RecordingNote
from callscope.errors import Forbidden, NotFound, ValidationFailed
from callscope.services import recordings
from callscope.services.context import Context, Principal
from callscope.services.member_auth import SignedIn

log = structlog.get_logger()

EMPTY = "text must not be empty"
NO_NOTE = "No note of that id on this recording"
NOT_YOURS = "Only its author or an admin of the account may delete a note"


@dataclass(frozen=True)
class Author:
    """Who writes or deletes a note: a member (`ref` their email) or an API key (`ref` its uid); `moderator`: may
    delete anyone's note of the account."""

    type: str  # "member" or "api_key"
    ref: str
    name: str
    moderator: bool

    def may_delete(self, note: RecordingNote) -> bool:
        return self.moderator or (note.author_type == self.type and note.author_ref == self.ref)


def key_author(principal: Principal) -> Author:
    return Author("api_key", principal.key_uid, principal.key_name, "delete" in principal.permissions)


def member_author(person: SignedIn, account: str) -> Author:
    member = next(m for m in person.members if m.namespace == account)
    return Author("member", person.email, member.spec.name, member.spec.role == "admin")


async def list_notes(ctx: Context, principal: Principal, ref: str) -> list[RecordingNote]:
    """The recording's notes, oldest first."""
    recording = (await recordings.get_recording(ctx, principal, ref)).recording
    return await ctx.catalog.read(rows.of_recording, recording.id)


async def add_note(ctx: Context, principal: Principal, ref: str, text: str, author: Author) -> RecordingNote:
    """`text`: checked at the edge (validation.Text: its length, no control characters); blank is refused here, in
    the same words for the page and the API."""
    if not text.strip():
        raise ValidationFailed(EMPTY)
    recording = (await recordings.get_recording(ctx, principal, ref)).recording
    note = RecordingNote(recording_id=recording.id, author_type=author.type, author_ref=author.ref,
                         author_name=author.name, text=text.strip(), created_at=ctx.clock())
    try:
        added = await ctx.catalog.write(rows.insert, note)
    except IntegrityError:  # the recording was deleted meanwhile
        raise NotFound() from None
    log.info("note_added", account=principal.account, recording_id=recording.id, note_id=added.id)
    return added


def _delete(session: Session, recording_id: int, note_id: int, author: Author) -> None:
    note = rows.find(session, recording_id, note_id)
    if note is None:
        raise NotFound(NO_NOTE)
    if not author.may_delete(note):
        raise Forbidden(NOT_YOURS)
    rows.remove(session, note.id)


async def delete_note(ctx: Context, principal: Principal, ref: str, note_id: int, author: Author) -> None:
    recording = (await recordings.get_recording(ctx, principal, ref)).recording
    await ctx.catalog.write(_delete, recording.id, note_id, author)
    log.info("note_deleted", account=principal.account, recording_id=recording.id, note_id=note_id)
