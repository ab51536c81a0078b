"""One-time sign-in links and member sessions of the web pages (tables ``sign_in_links``, ``member_sessions``).

Rows are found by the SHA-256 of a token; the tokens themselves live only in the email and the browser's cookie.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from callscope.catalog.tables import MemberSession, SignInLink


def insert_link(session: Session, link: SignInLink) -> None:
    session.execute(delete(SignInLink).where(SignInLink.expires_at < link.created_at))  # expired ones go on the way
    session.add(link)


def redeem_link(session: Session, token_hash: str, now: datetime) -> SignInLink | None:
    """Mark the link used and return it, once: None when unknown, expired or already used. One conditional
    UPDATE, so two clicks racing each other cannot both win."""
    used = session.execute(update(SignInLink)
                           .where(SignInLink.token_hash == token_hash, SignInLink.used_at.is_(None),
                                  SignInLink.expires_at > now)
                           .values(used_at=now)).rowcount
    return session.get(SignInLink, token_hash) if used else None


def insert_session(session: Session, row: MemberSession) -> None:
    session.execute(delete(MemberSession).where(MemberSession.expires_at < row.created_at))
    session.add(row)


def get_session(session: Session, token_hash: str, now: datetime) -> MemberSession | None:
    return session.scalars(select(MemberSession).where(MemberSession.token_hash == token_hash,
                                                       MemberSession.expires_at > now)).first()


def choose_account(session: Session, token_hash: str, account: str | None) -> None:
    session.execute(update(MemberSession).where(MemberSession.token_hash == token_hash).values(account=account))


def delete_session(session: Session, token_hash: str) -> None:
    session.execute(delete(MemberSession).where(MemberSession.token_hash == token_hash))


def delete_sessions_of(session: Session, email: str) -> int:
    """End every session of a person (no account lets them in any more)."""
    return session.execute(delete(MemberSession).where(MemberSession.email == email)).rowcount
