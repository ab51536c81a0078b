"""Sign-in links and member sessions on SQLite and PostgreSQL: a link is redeemed once and never after its expiry,
even by two redeemers at the same moment; sessions expire, move between accounts and end."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from callscope.catalog import member_sessions as rows
from callscope.catalog.db import Catalog
from callscope.catalog.tables import MemberSession, SignInLink

T0 = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def link(token_hash: str, ttl_minutes: int = 15, created: datetime = T0) -> SignInLink:
    return SignInLink(token_hash=token_hash, email="ana@example.com", next_path="/recordings/x", created_at=created,
                      expires_at=created + timedelta(minutes=ttl_minutes))


def test_a_link_is_redeemed_once_before_it_expires(catalog: Catalog) -> None:
    with catalog.session(write=True) as s:
        rows.insert_link(s, link("a" * 64))
        rows.insert_link(s, link("b" * 64))
    with catalog.session(write=True) as s:
        redeemed = rows.redeem_link(s, "a" * 64, T0 + timedelta(minutes=1))
        assert (redeemed.email, redeemed.next_path) == ("ana@example.com", "/recordings/x")
    with catalog.session(write=True) as s:
        assert rows.redeem_link(s, "a" * 64, T0 + timedelta(minutes=2)) is None  # used
        assert rows.redeem_link(s, "b" * 64, T0 + timedelta(minutes=15)) is None  # expired
        assert rows.redeem_link(s, "c" * 64, T0) is None  # unknown


def test_two_redeemers_racing_get_one_session_between_them(catalog: Catalog) -> None:
    with catalog.session(write=True) as s:
        rows.insert_link(s, link("r" * 64))

    def redeem(_):
        with catalog.session(write=True) as s:
            return rows.redeem_link(s, "r" * 64, T0) is not None

    with ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(redeem, range(8))) == 1


def test_expired_links_are_cleared_when_new_ones_are_written(catalog: Catalog) -> None:
    with catalog.session(write=True) as s:
        rows.insert_link(s, link("o" * 64))
    with catalog.session(write=True) as s:
        rows.insert_link(s, link("n" * 64, created=T0 + timedelta(hours=1)))
    with catalog.session() as s:
        assert s.get(SignInLink, "o" * 64) is None and s.get(SignInLink, "n" * 64) is not None


def test_sessions_expire_choose_an_account_and_end(catalog: Catalog) -> None:
    def session(token_hash: str, email: str) -> MemberSession:
        return MemberSession(token_hash=token_hash, email=email, account=None, csrf_token="c" * 43, created_at=T0,
                             expires_at=T0 + timedelta(hours=12))

    with catalog.session(write=True) as s:
        rows.insert_session(s, session("s" * 64, "max@example.com"))
        rows.insert_session(s, session("t" * 64, "max@example.com"))
        rows.insert_session(s, session("u" * 64, "ana@example.com"))
    with catalog.session(write=True) as s:
        rows.choose_account(s, "s" * 64, "other")
    with catalog.session() as s:
        assert rows.get_session(s, "s" * 64, T0).account == "other"
        assert rows.get_session(s, "s" * 64, T0 + timedelta(hours=12)) is None  # expired
    with catalog.session(write=True) as s:
        rows.delete_session(s, "u" * 64)
        assert rows.delete_sessions_of(s, "max@example.com") == 2
    with catalog.session() as s:
        assert all(rows.get_session(s, h * 64, T0) is None for h in "stu")
