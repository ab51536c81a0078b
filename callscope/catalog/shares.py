"""Shares of a conversation (table ``shares``); every query takes the account."""

from __future__ import annotations

from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from callscope.catalog.recordings import Scope, in_scope
from callscope.catalog.tables import Recording, Share


def of_conversation(session: Session, account: str, conversation_id: str) -> list[Share]:
    return list(session.scalars(select(Share).where(Share.account == account, Share.conversation_id == conversation_id)
                                .order_by(Share.created_at, Share.id)))


def find(session: Session, account: str, conversation_id: str, target: str) -> Share | None:
    """The share of the conversation with `target` (a member's email, or the everyone marker)."""
    return session.scalars(select(Share).where(Share.account == account, Share.conversation_id == conversation_id,
                                               Share.member_email == target)).first()


def insert(session: Session, share: Share) -> Share:
    session.add(share)
    session.flush()
    return share


def delete(session: Session, account: str, conversation_id: str, share_id: int) -> bool:
    """Remove one share of the conversation; False when it has no such share."""
    share = session.scalars(select(Share).where(Share.id == share_id, Share.account == account,
                                                Share.conversation_id == conversation_id)).first()
    if share is None:
        return False
    session.delete(share)
    return True


def recordings_shared_with(session: Session, scope: Scope, email: str, limit: int) -> list[Recording]:
    """Recordings in the scope whose conversation is shared with `email` or with everyone, newest share first."""
    query = in_scope(select(Recording), scope).join(Share, and_(
        Share.account == Recording.account, Share.conversation_id == Recording.conversation_id))
    query = query.where(Share.member_email.in_([email, "*"])).order_by(Share.created_at.desc(), Recording.id.desc())
    return list(dict.fromkeys(session.scalars(query.limit(limit))))
