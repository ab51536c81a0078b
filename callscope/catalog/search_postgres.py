"""Search's words on PostgreSQL: the tsvector column of search_segments (migration 0010; its trigger makes it from
the folded words with the segment's text-search configuration, `english`, `spanish`, ..., `simple`) and its GIN
index per configuration. A query is a tsquery per configuration in use, built from quoted lexemes
(`'refund' <-> 'today'`, `!'subscription'`, `|`), each matched against that language's segments only. Ranked by
ts_rank.

The newest matches: a GIN index returns its matches in no order, so they are sought in windows of segment ids from
the newest down, each four times the width of the last, until enough are found: a common word fills the first window
(reading one window's rows, whatever the size of the table), a rare one reads the index a few more times."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import CompoundSelect, Select, cast, func, literal, literal_column, select, union_all
from sqlalchemy.dialects.postgresql import REGCONFIG
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnClause

from callscope.catalog.tables import SearchSegment
from callscope.search.syntax import Match, Query
from callscope.search.words import words

_TSV: ColumnClause[Any] = literal_column("search_segments.tsv")


def terms(config: str, text: str) -> str:
    """The indexed form of a segment's text: its folded words (the configuration stems them)."""
    return " ".join(words(text))


def _match(match: Match) -> str:
    # quoted lexemes: words are letters and digits only, so nothing in them can close the quote or be an operator
    return "(" + " <-> ".join(f"'{word}'" for word in match.words) + ")"


def _any(matches: Iterable[Match]) -> str:
    return "(" + " | ".join(_match(m) for m in matches) + ")"


def render(query: Query) -> str:
    """The to_tsquery text of `query` (the configuration it is read with stems its words)."""
    wanted = " & ".join(_any(group) for group in query.groups)
    return f"{wanted} & !{_any(query.excluded)}" if query.excluded else wanted


def ranked(query: Query, configs: list[str], narrow: Callable[[Select], Select]) -> Select | CompoundSelect:
    """(id, score) of the segments matching `query`, narrowed by `narrow` (the scope and the filters)."""
    text = render(query)
    branches = []
    for config in configs:
        tsquery = func.to_tsquery(cast(literal(config), REGCONFIG), literal(text))
        # the configuration as a literal (one of words.CONFIGURATIONS): the planner then uses its partial GIN index
        language = SearchSegment.config == literal_column(f"'{config}'")
        branches.append(narrow(select(SearchSegment.id.label("id"), func.ts_rank(_TSV, tsquery).label("score"))
                               .where(language, _TSV.op("@@")(tsquery))))
    return branches[0] if len(branches) == 1 else union_all(*branches)


FIRST_WINDOW = 16  # segment ids per match sought: a word in one segment of 16 fills the first window
GROWTH = 4  # each window this many times the width of the last: a rare word reads the index a few times only
CHECKED = 2000  # matches whose scope and filters one query checks


def newest(session: Session, query: Query, configs: list[str], narrow: Callable[[Select], Select], limit: int
           ) -> list[tuple[int, float]]:
    """(id, score) of the `limit` newest segments matching `query`, narrowed by `narrow`."""
    low, high = session.execute(select(func.min(SearchSegment.id), func.max(SearchSegment.id))).one()
    found: list[tuple[int, float]] = []
    width = limit * FIRST_WINDOW
    while high is not None and high >= low and len(found) < limit:
        start = high - width

        def window(statement: Select, start: int = start, end: int = high) -> Select:
            return statement.where(SearchSegment.id > start, SearchSegment.id <= end)

        # Every match of the window, then which of them the scope and filters allow, newest first, by their
        # primary keys. In one query, the planner hashed every recording of the account for each language and
        # window (50 ms at 100,000 calls), and with ORDER BY id and LIMIT it read a window by its primary key,
        # hoping for matches early: a rare word then cost a scan of the whole window.
        matched = dict(session.execute(ranked(query, configs, window)).all())
        ids = sorted(matched, reverse=True)
        for at in range(0, len(ids), CHECKED):
            batch = ids[at : at + CHECKED]
            allowed = set(session.scalars(narrow(select(SearchSegment.id).where(SearchSegment.id.in_(batch)))))
            found += [(segment_id, float(matched[segment_id])) for segment_id in batch if segment_id in allowed]
            if len(found) >= limit:
                break
        high, width = start, width * GROWTH
    return found[:limit]
