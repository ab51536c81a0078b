"""Shares: read-only access to a recording's conversation for one active member or for everyone.

Shares belong to the conversation, so both recordings of an internal call list the same shares. A
share with a member who is later locked or removed stops counting (it is hidden, not deleted, so an
unlocked member gets their access back).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError

from callscope.catalog import shares as share_rows
from callscope.catalog.tables import Recording, Share
from callscope.errors import NotFound, ValidationFailed
from callscope.mail import share_email
from callscope.resources import ApiKey, Member
from callscope.services.accounts import account_display_name, find_member
from callscope.services.context import Context, Principal
from callscope.services.recordings import get_recording

EVERYONE = "*"
MAX_MESSAGE = 1000


@dataclass(frozen=True)
class Sharer:
    """A person sharing (the recording page), rather than an API key: named as the share's shared_by (type
    member) and in the email."""

    name: str
    ref: str  # the Member's uid


@dataclass
class ShareView:
    share: Share
    member: Member | None
    shared_by_type: str | None
    recording_public_id: str  # the recording asked about: the share's url opens its page


def _active_member(ctx: Context, account: str, email: str) -> Member | None:
    member = find_member(ctx, account, email)
    return member if member is not None and not member.spec.locked else None


def _view(ctx: Context, account: str, share: Share, public_id: str) -> ShareView | None:
    """The share as readers see it, or None when it no longer counts (member locked or removed)."""
    member = None
    if not share.everyone:
        member = _active_member(ctx, account, share.member_email)
        if member is None:
            return None
    by_type = share.shared_by_type
    if by_type == "api_key" and not any(k.metadata.uid == share.shared_by_ref
                                        for k in ctx.store.cached_list(ApiKey, account)):
        by_type = None  # the spec: type becomes null once that API key is deleted
    return ShareView(share, member, by_type, public_id)


async def list_shares(ctx: Context, principal: Principal, ref: str) -> list[ShareView]:
    found = await get_recording(ctx, principal, ref)
    rows = await ctx.catalog.read(share_rows.of_conversation, principal.account, found.recording.conversation_id)
    public_id = found.recording.public_id
    return [v for s in rows if (v := _view(ctx, principal.account, s, public_id)) is not None]


async def create_share(ctx: Context, principal: Principal, ref: str, email: str | None, everyone: bool | None,
                       message: str | None, notify: bool, by: Sharer | None = None) -> tuple[ShareView, bool]:
    """The share and whether it is new (False: the person already had access; 200, no email); `by`: the person
    sharing, where it is not the caller's API key."""
    found = await get_recording(ctx, principal, ref)
    recording = found.recording
    if message is not None and len(message) > MAX_MESSAGE:
        raise ValidationFailed(f"message is longer than {MAX_MESSAGE} characters")
    if recording.processing_restricted:
        raise ValidationFailed("Recording is processing-restricted")
    member = None
    if everyone:
        target = EVERYONE
    else:
        member = _active_member(ctx, principal.account, email or "")
        if member is None:
            raise ValidationFailed("Not a member of this account")
        target = member.spec.email
    existing = await ctx.catalog.read(share_rows.find, principal.account, recording.conversation_id, target)
    if existing is not None:
        return _view(ctx, principal.account, existing, recording.public_id), False
    share = Share(account=principal.account, conversation_id=recording.conversation_id, everyone=bool(everyone),
                  member_email=target, shared_by_type="member" if by else "api_key",
                  shared_by_name=by.name if by else account_display_name(ctx, principal.account),
                  shared_by_ref=by.ref if by else principal.key_uid, created_at=ctx.clock())
    try:
        share = await ctx.catalog.write(share_rows.insert, share)
    except IntegrityError:  # the same share made concurrently: that one wins
        existing = await ctx.catalog.read(share_rows.find, principal.account, recording.conversation_id, target)
        return _view(ctx, principal.account, existing, recording.public_id), False
    if member is not None and notify:
        # an API key shares for an integration of the account, not for a person of that name
        sharer = by.name if by else f"Someone at {share.shared_by_name}"
        ctx.mail.submit(share_email(member.spec.name, member.spec.email, sharer,
                                    recording.name, recording_page_url(ctx, recording.public_id), message))
    return ShareView(share, member, share.shared_by_type, recording.public_id), True


async def delete_share(ctx: Context, principal: Principal, ref: str, share_id: int) -> None:
    found = await get_recording(ctx, principal, ref)
    if not await ctx.catalog.write(share_rows.delete, principal.account, found.recording.conversation_id,
                                 share_id):
        raise NotFound("Share not found")


async def shared_with(ctx: Context, principal: Principal, email: str, limit: int = 100) -> list[Recording]:
    """The recordings of the caller's scope shared with the person `email` (or with everyone): their
    "shared with me" list. Shares of a locked member stop counting: the caller's own membership is checked by
    whoever asks (callscope/services/member_auth.py)."""
    return await ctx.catalog.read(share_rows.recordings_shared_with, principal.scope, email.strip().lower(), limit)


def recording_page_url(ctx: Context, public_id: str) -> str:
    return f"{ctx.settings.base_url}/recordings/{public_id}"
