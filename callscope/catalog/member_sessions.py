"""One-time sign-in links and member sessions of the web pages (tables ``sign_in_links``, ``member_sessions``), and
when each person last signed in (``member_sign_ins``).

Rows are found by the SHA-256 of a token; the tokens themselves live only in the email and the browser's cookie.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from callscope.catalog.db import insert as upsert
from callscope.catalog.tables import MemberSession, MemberSignIn, SignInLink


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
    """A new session of a person who signed in, noted as their latest sign-in (their first, where it is)."""
    session.execute(delete(MemberSession).where(MemberSession.expires_at < row.created_at))
    session.add(row)
    signed_in = upsert(session, MemberSignIn).values(email=row.email, first_at=row.created_at, last_at=row.created_at)
    session.execute(signed_in.on_conflict_do_update(index_elements=[MemberSignIn.email],
                                                    set_={"last_at": row.created_at}))


def last_sign_ins(session: Session, emails: list[str]) -> dict[str, datetime]:
    """When each of these people last signed in; one who never has is left out."""
    return dict(session.execute(select(MemberSignIn.email, MemberSignIn.last_at)
                                .where(MemberSignIn.email.in_(emails))).all())


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
