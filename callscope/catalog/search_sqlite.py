"""Search's words on SQLite: an FTS5 table over search_segments.terms (migration 0010), where each word is stored
folded, stemmed by the call's language in Python (FTS5's own stemmer is English-only) and prefixed with that
language's stemmer (`english_refund`, `spanish_reembols`), so that one MATCH looks each word up in every language's
form and a word never matches another language's stem. Ranked by FTS5's bm25 (higher is better here); the newest
matches come from FTS5 itself, which reads its index in descending rowid order and stops at the limit."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import Select, column, func, literal_column, select, table
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnClause

from callscope.catalog.tables import SearchSegment
from callscope.search.syntax import Match, Query
from callscope.search.words import stem, words

_FTS = table("search_fts", column("rowid"))
_FTS_NAME: ColumnClause[Any] = literal_column("search_fts")


def _token(config: str, word: str) -> str:
    return f"{config}_{stem(config, word)}"


def terms(config: str, text: str) -> str:
    """The indexed form of a segment's text."""
    return " ".join(_token(config, word) for word in words(text))


def _match(config: str, match: Match) -> str:
    # a quoted FTS5 string: a phrase of its tokens (one token: the word). Tokens are letters, digits and `_` only,
    # so nothing in them can close the string.
    return '"' + " ".join(_token(config, word) for word in match.words) + '"'


def _any(config: str, matches: Iterable[Match]) -> str:
    return "(" + " OR ".join(_match(config, m) for m in matches) + ")"


def render(query: Query, configs: Iterable[str]) -> str:
    """The FTS5 MATCH expression of `query` in each language of `configs`."""
    branches = []
    for config in configs:
        wanted = " AND ".join(_any(config, group) for group in query.groups)
        branches.append(f"({wanted} NOT {_any(config, query.excluded)})" if query.excluded else f"({wanted})")
    return " OR ".join(branches)


def ranked(query: Query, configs: list[str], narrow: Callable[[Select], Select]) -> Select:
    """(id, score) of the segments matching `query`, narrowed by `narrow` (the scope and the filters)."""
    statement = (select(SearchSegment.id.label("id"), (-func.bm25(_FTS_NAME)).label("score"))
                 .select_from(_FTS).join(SearchSegment, SearchSegment.id == _FTS.c.rowid)
                 .where(_FTS_NAME.op("MATCH")(render(query, configs))))
    return narrow(statement)


def newest(session: Session, query: Query, configs: list[str], narrow: Callable[[Select], Select], limit: int
           ) -> list[tuple[int, float]]:
    """(id, score) of the `limit` newest segments matching `query`, narrowed by `narrow`: bm25 is computed for
    those only."""
    return [(int(segment_id), float(score)) for segment_id, score in
            session.execute(ranked(query, configs, narrow).order_by(_FTS.c.rowid.desc()).limit(limit))]
