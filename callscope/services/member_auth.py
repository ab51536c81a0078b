"""Sign-in of account members to the web pages: one-time links by email, server-side sessions, and who a
signed-in person is on each request.

* A person is an email address; they are a member of every account holding an unlocked Member with it. Every
  request re-reads that from the object cache, so a locked or removed member loses access on their next request
  (with no account left, their sessions are deleted: thrown out).
* Asking for a link answers the same whatever the address: the link row is written for any address (so known and
  unknown ones take the same time), and only a member's gets an email. Both the address and the client are
  rate-limited per hour.
* Links and sessions are random tokens, kept in the catalog as SHA-256 only: a link works once (one conditional
  UPDATE) until it expires; a session lives ``session_ttl_seconds`` and ends at sign-out on every replica at once.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING
from urllib.parse import quote

import structlog

from callscope.catalog import member_sessions as rows
from callscope.catalog.recordings import Found
from callscope.catalog.tables import MemberSession, SignInLink
from callscope.errors import Forbidden, NotFound, RateLimited, ServiceUnavailable, Unauthorized
from callscope.mail import invitation_email, sign_in_email
from callscope.ratelimit import RateLimiter
from callscope.resources import Member
from callscope.services.context import Context, Principal
from callscope.services.recordings import get_recording

if TYPE_CHECKING:
    from callscope.live.calls import LiveCall, LiveCalls

log = structlog.get_logger()

SIGN_IN_PATH = "/sign-in"
HOME_PATH = "/recordings"
NO_RECORDING = "There is no recording here, or it is not in one of your accounts."
LINK_REFUSED = "This sign-in link is invalid, was already used, or has expired. Ask for a new one."
_HOUR = 3600
_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what secrets.token_urlsafe makes (links, sessions, nonces)
NEXT_MAX = SignInLink.next_path.type.length
# What a URL's path and query keep as they are; anything else (non-ASCII above all) is percent-encoded, so the path
# fits a Location header. `%` stays: the path usually arrives encoded already (a page's own URL).
_URL_SAFE = "/?#[]@!$&'()*+,;=:%~"


def is_token(value: str) -> bool:
    """Whether `value` may be one of the random tokens handed out here; nothing else is hashed or looked up."""
    return _TOKEN.fullmatch(value) is not None


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def normalize_email(email: str) -> str:
    return email.strip().lower()


def safe_next(path: str | None) -> str:
    """A page of this site to land on after sign-in: a local absolute path, never another site, percent-encoded
    (a Location header and the catalog's column take it as it is)."""
    if not path or not path.startswith("/") or path.startswith(("//", "/\\")) \
            or any(ord(c) < 33 or 127 <= ord(c) < 160 for c in path):
        return HOME_PATH
    encoded = quote(path, safe=_URL_SAFE)
    return encoded if len(encoded) <= NEXT_MAX else HOME_PATH


def memberships(ctx: Context, email: str) -> list[Member]:
    """The person's unlocked Member objects, one per account, by account name."""
    if not ctx.store.ready:  # not loaded yet: never mistake that for "no membership" (it would end sessions)
        raise ServiceUnavailable("Callscope is starting; try again in a moment.")
    wanted = normalize_email(email)
    return sorted((m for m in ctx.store.cached_list(Member) if m.spec.email.lower() == wanted and not m.spec.locked),
                  key=lambda m: m.namespace)


@dataclass(frozen=True)
class SignedIn:
    """The person behind a session on this request."""

    session_hash: str
    email: str
    members: tuple[Member, ...]  # unlocked memberships, by account
    account: str | None  # the account the pages show: the chosen one, or the only one
    csrf_token: str

    @property
    def accounts(self) -> list[str]:
        return [m.namespace for m in self.members]

    @property
    def name(self) -> str:
        return self.members[0].spec.name

    @property
    def is_admin(self) -> bool:
        """Whether the person administers the account the pages show (its Settings pages)."""
        return any(m.namespace == self.account and m.spec.role == "admin" for m in self.members)

    def principal(self, account: str) -> Principal:
        """The person as a caller of the recording services: read-only, the whole of one of their accounts."""
        member = next(m for m in self.members if m.namespace == account)
        return Principal(account=account, key_name=f"member:{self.email}", key_uid=f"member:{member.metadata.uid}",
                         permissions=frozenset({"read"}))

    def admin_principal(self, account: str) -> Principal:
        """An admin as the caller of the services their Settings and upload pages use: reading and writing the
        whole account, as an account-wide write key (which an admin may make for themselves anyway) would."""
        if not any(m.namespace == account and m.spec.role == "admin" for m in self.members):
            raise Forbidden("Only the account's admins may do this")
        return replace(self.principal(account), permissions=frozenset({"read", "write"}))


async def _limit(limiter: RateLimiter, kind: str, value: str, limit: int) -> None:
    # The value's hash names the bucket: an address (or what a trusted proxy forwarded) is any text, the column not.
    decision = await limiter.hit(f"sign-in:{kind}:{hashlib.sha256(value.encode()).hexdigest()}", limit, _HOUR)
    if not decision.allowed:
        raise RateLimited(decision.retry_after, decision.limit, decision.reset_at)


async def request_link(ctx: Context, limiter: RateLimiter, email: str, next_path: str | None, client: str) -> None:
    """Email a one-time sign-in link to ``email`` if it is an unlocked member's; the same outcome otherwise."""
    email = normalize_email(email)[:320]
    settings = ctx.settings
    await _limit(limiter, "client", client, settings.sign_in_per_client_per_hour)
    await _limit(limiter, "email", email, settings.sign_in_per_email_per_hour)
    token = await _store_link(ctx, email, next_path)
    if memberships(ctx, email):
        _send_link(ctx, email, token)


async def invite(ctx: Context, member: Member, inviter_name: str, account_name: str) -> None:
    """Email a member an admin just added who invited them where, with a first sign-in link."""
    email = normalize_email(member.spec.email)
    token = await _store_link(ctx, email, HOME_PATH)
    settings = ctx.settings
    ctx.mail.submit(invitation_email(member.spec.name, email, inviter_name, account_name, member.spec.role,
                                     f"{settings.base_url}{SIGN_IN_PATH}/link?token={token}",
                                     settings.sign_in_link_ttl_seconds // 60, f"{settings.base_url}{SIGN_IN_PATH}"))
    log.info("invitation_sent", email=email)


async def _store_link(ctx: Context, email: str, next_path: str | None) -> str:
    token = secrets.token_urlsafe(32)
    now = ctx.clock()
    await ctx.catalog.write(rows.insert_link, SignInLink(
        token_hash=_hash(token), email=email, next_path=safe_next(next_path), created_at=now,
        expires_at=now + timedelta(seconds=ctx.settings.sign_in_link_ttl_seconds)))
    return token


def _send_link(ctx: Context, email: str, token: str) -> None:
    settings = ctx.settings
    ctx.mail.submit(sign_in_email(email, f"{settings.base_url}{SIGN_IN_PATH}/link?token={token}",
                                  settings.sign_in_link_ttl_seconds // 60))
    log.info("sign_in_link_sent", email=email)


async def redeem_link(ctx: Context, token: str) -> tuple[str, str]:
    """A new session for the link's person, and the page to land on; Unauthorized when the link is unknown,
    used, expired, or its person is no member any more."""
    now = ctx.clock()
    link = await ctx.catalog.write(rows.redeem_link, _hash(token), now) if is_token(token) else None
    members = memberships(ctx, link.email) if link is not None else []
    if not members:
        raise Unauthorized(LINK_REFUSED)
    session_token = secrets.token_urlsafe(32)
    await ctx.catalog.write(rows.insert_session, MemberSession(
        token_hash=_hash(session_token), email=link.email,
        account=members[0].namespace if len(members) == 1 else None, csrf_token=secrets.token_urlsafe(32),
        created_at=now, expires_at=now + timedelta(seconds=ctx.settings.session_ttl_seconds)))
    log.info("member_signed_in", email=link.email, accounts=[m.namespace for m in members])
    return session_token, link.next_path


async def signed_in(ctx: Context, session_token: str | None) -> SignedIn | None:
    """Who the session cookie belongs to now; None when there is no live session, or its person is no longer an
    unlocked member of any account (then every session of theirs is deleted)."""
    if not session_token or not is_token(session_token):
        return None
    session_hash = _hash(session_token)
    row = await ctx.catalog.read(rows.get_session, session_hash, ctx.clock())
    if row is None:
        return None
    members = memberships(ctx, row.email)
    if not members:
        ended = await ctx.catalog.write(rows.delete_sessions_of, row.email)
        log.info("member_sessions_ended", email=row.email, sessions=ended, reason="no active membership")
        return None
    accounts = [m.namespace for m in members]
    account = row.account if row.account in accounts else (accounts[0] if len(accounts) == 1 else None)
    return SignedIn(session_hash, row.email, tuple(members), account, row.csrf_token)


async def choose_account(ctx: Context, person: SignedIn, account: str) -> None:
    if account not in person.accounts:
        raise NotFound("Not one of your accounts")
    await ctx.catalog.write(rows.choose_account, person.session_hash, account)


async def sign_out(ctx: Context, person: SignedIn) -> None:
    await ctx.catalog.write(rows.delete_session, person.session_hash)
    log.info("member_signed_out", email=person.email)


async def open_recording(ctx: Context, person: SignedIn, ref: str) -> tuple[Principal, Found]:
    """A recording of one of the person's accounts (any active member of its account may open it), with the
    person as the caller of that account; NotFound for any other, as for one that does not exist."""
    for account in person.accounts:
        principal = person.principal(account)
        try:
            return principal, await get_recording(ctx, principal, ref)
        except NotFound:
            continue
    raise NotFound(NO_RECORDING)


def open_live_call(calls: LiveCalls, person: SignedIn, ref: str) -> tuple[Principal, LiveCall]:
    """A live call of one of the person's accounts (open_recording's rule, for a call whose recording is not stored
    yet), with the person as the caller of that account; NotFound for any other."""
    for account in person.accounts:
        principal = person.principal(account)
        try:
            return principal, calls.call(principal, ref)
        except NotFound:
            continue
    raise NotFound(NO_RECORDING)
