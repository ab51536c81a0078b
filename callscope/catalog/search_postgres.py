"""Search's words on PostgreSQL: the tsvector column of search_segments (migration 0010; its trigger makes it from
the folded words with the segment's text-search configuration, `english`, `spanish`, ..., `simple`) and its GIN
index per configuration. A query is a tsquery per configuration in use, built from quoted lexemes
(`'refund' <-> 'today'`, `!'subscription'`, `|`), each matched against that language's segments only. Ranked by
ts_rank."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import CompoundSelect, Select, cast, func, literal, literal_column, select, union_all
from sqlalchemy.dialects.postgresql import REGCONFIG
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
