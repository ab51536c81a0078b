"""Search's words on PostgreSQL: the tsvector column of search_segments (migration 0010; its trigger makes it from
the folded words with the segment's text-search configuration, `english`, `spanish`, ..., `simple`) and its GIN
index per configuration. A query is a tsquery per configuration in use, built from quoted lexemes
(`'refund' <-> 'today'`, `!'subscription'`, `|`), each matched against that language's segments only. Ranked by
ts_rank.

Phrases: the tsvector also holds each pair of adjacent stems as one lexeme without positions (`'broken blender'`,
migration 0016's search_pairs). A GIN index holds no positions, so a phrase matched as such reads every segment
holding its words to look for them side by side; a query with a phrase in every alternative of a group is matched
with the AND of the phrase's pairs too (search_tsquery), which the index reads exactly: only segments holding the
pairs are read. The pairs are left out of the query ranked, so ts_rank (which weighs the query's lexemes only) and
the hits' highlights (callscope/search/highlight.py, from the text) are the phrase's alone.

The newest matches: a GIN index returns its matches in no order, so they are sought in windows of the scope's calls
from the newest down (the recordings' index by account and date gives them in order), each sized by the density
seen so far, until enough are found: a common word fills the first window, reading its calls' segments whatever the
size of the table or the number of other accounts; a window of a sparser word may read the GIN index, and a rare
one is read from the GIN index in every older call at once."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import (
    BigInteger,
    CompoundSelect,
    Select,
    Text,
    and_,
    any_,
    case,
    func,
    literal,
    literal_column,
    or_,
    select,
    tuple_,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, REGCONFIG
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnClause

from callscope.catalog.search_narrowing import Narrowing
from callscope.catalog.tables import Recording, SearchSegment, UTCDateTime
from callscope.search.syntax import Match, Query
from callscope.search.words import CONFIGURATIONS, words

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


def phrase_groups(query: Query) -> list[str]:
    """The groups of `query` whose every alternative is a phrase, as search_tsquery reads them: each group's phrases
    one a line, a phrase its folded words (letters and digits) joined by spaces."""
    return ["\n".join(" ".join(m.words) for m in group) for group in query.groups
            if all(len(m.words) > 1 for m in group)]


def _languages(query: Query, configs: list[str]) -> list[tuple[Any, Any, Any]]:
    """(the segment is in this language, the query it is matched with, the query it is ranked by) for each
    configuration: the same, but with phrases, matched with their pairs too."""
    text, phrases = render(query), phrase_groups(query)
    languages = []
    for config in configs:
        # the configuration as a literal (one of words.CONFIGURATIONS): the planner then uses its partial GIN index,
        # and the regconfig is a constant, so that each query is made once (with the query's text, a parameter, in
        # a custom plan), not again for every row a filter or a recheck reads (3 µs a row, search_tsquery 150)
        if config not in CONFIGURATIONS:
            raise ValueError(f"not a text-search configuration of search's: {config!r}")
        regconfig = literal_column(f"'{config}'::regconfig", REGCONFIG)
        tsquery = func.to_tsquery(regconfig, literal(text))
        matched = func.search_tsquery(regconfig, literal(text), literal(phrases, ARRAY(Text))) if phrases else tsquery
        languages.append((SearchSegment.config == literal_column(f"'{config}'"), matched, tsquery))
    return languages


def ranked(query: Query, configs: list[str], narrow: Callable[[Select], Select], *more: Any, scored: bool = True
           ) -> Select | CompoundSelect:
    """(id, score, *more) of the segments matching `query`, narrowed by `narrow` (the scope and the filters), or
    (id, *more) not `scored`: a branch per language, each from its language's GIN index."""
    branches = [narrow(select(SearchSegment.id.label("id"),
                              *([func.ts_rank(_TSV, tsquery).label("score")] if scored else []), *more)
                       .where(language, _TSV.op("@@")(matched)))
                for language, matched, tsquery in _languages(query, configs)]
    return branches[0] if len(branches) == 1 else union_all(*branches)


def scanned(query: Query, configs: list[str], narrow: Callable[[Select], Select], *more: Any) -> Select:
    """:func:`ranked` in one pass over the segments `narrow` selects (a window's), whatever their languages."""
    languages = _languages(query, configs)
    score = case(*((language, func.ts_rank(_TSV, tsquery)) for language, _, tsquery in languages))
    return narrow(select(SearchSegment.id.label("id"), score.label("score"), *more)
                  .where(or_(*(and_(language, _TSV.op("@@")(matched)) for language, matched, _ in languages))))


FIRST_CALLS = 256  # the calls whose segments the first window reads: a word in one segment of 25 fills it
SCANNED_WINDOW = 2048  # calls: a window up to this wide is read by its calls' segments, a wider one may use the
# word's index. The index costs as much as the word's entries in the whole table: `refund today`'s 190,313 took
# 350 to 700 ms (100,000 calls, load 15), where a window of 600 calls' segments took 70
LARGEST_WINDOW = 16384  # calls: a sparser word is read from its index in every older call at once
MARGIN = 1.5  # a window sized for this many times the matches still wanted, at the density seen so far
SPARSE_WORK_MEM = "64MB"  # keeps the bitmap of a sparse word's matches exact: one heap page read per match


def _set(session: Session, settings: dict[str, str]) -> None:
    """SET LOCAL each of `settings`, in one statement (a round trip each cost 3 to 6 ms on a loaded machine)."""
    session.execute(select(*(func.set_config(literal(name), literal(value), literal(True))
                             for name, value in settings.items())))


def newest(session: Session, query: Query, configs: list[str], narrowing: Narrowing, limit: int
           ) -> list[tuple[int, float]]:
    """(id, score) of at most `limit` segments matching `query` in the newest calls `narrowing` allows, newest call
    first."""
    _set(session, {
        # A plan for the values of each query: psycopg prepares a statement run five times, and PostgreSQL's generic
        # plan of it guesses ten calls in a window and any word common, reading a large window's every segment.
        "plan_cache_mode": "force_custom_plan",
        # No JIT: a window read by the word's index passes jit_above_cost, and compiling its expressions took 31 ms
        # of a 640 ms statement (100,000 calls, load 18) whose plan has no long loop for compiled code to win back.
        "jit": "off",
        # A window is read by its calls' segments: the planner, which thinks a word's GIN entries cheap, would
        # AND the window with every match of a common word in the table (650,000 entries of `refund` at 100,000
        # calls: 55 ms, where the window's 25,600 segments take 8). A window wider than SCANNED_WINDOW, sized for
        # a sparser word, may.
        "enable_bitmapscan": "off"})
    newest_first = (narrowing.calls(select(Recording.id, Recording.created_at))
                    .order_by(Recording.created_at.desc(), Recording.id.desc()))
    found: list[tuple[int, float]] = []
    width, read, before = FIRST_CALLS, 0, None
    indexing, indexed = {"enable_bitmapscan": "on", "work_mem": SPARSE_WORK_MEM}, False  # the word's index may be read
    while True:
        page = newest_first if before is None else newest_first.where(before)
        window = session.execute(page.limit(width)).all()
        order = {row.id: at for at, row in enumerate(window)}
        calls = literal(list(order), ARRAY(BigInteger))

        def of_window(statement: Select, calls: Any = calls) -> Select:
            # the window's calls as one array: their segments read by recording_id, the word checked in each
            return narrowing.segments(statement.where(SearchSegment.recording_id == any_(calls)))

        matched = session.execute(scanned(query, configs, of_window, SearchSegment.recording_id)).all()
        found += [(sid, float(score)) for sid, score, _ in sorted(matched, key=lambda row: (order[row[2]], -row[0]))]
        read += len(window)
        if len(found) >= limit or len(window) < width:
            return found[:limit]
        before = (tuple_(Recording.created_at, Recording.id)
                  < tuple_(window[-1].created_at, window[-1].id, types=(UTCDateTime(), BigInteger())))
        if not found:
            break
        width = max(FIRST_CALLS, math.ceil((limit - len(found)) * read / len(found) * MARGIN))
        if width > LARGEST_WINDOW:
            break
        if width > SCANNED_WINDOW and not indexed:
            _set(session, indexing)
            indexed = True
    if not indexed:
        _set(session, indexing)

    def older(statement: Select) -> Select:
        return narrowing(statement).where(before)

    # every match of the older calls ordered, the newest ranked: ranking reads each match's words again
    matches = ranked(query, configs, older, Recording.created_at.label("created_at"), Recording.id.label("call"),
                     scored=False).subquery()
    newest_matches = list(session.scalars(select(matches.c.id).order_by(
        matches.c.created_at.desc(), matches.c.call.desc(), matches.c.id.desc()).limit(limit - len(found))))
    ids = literal(newest_matches, ARRAY(BigInteger))
    scores = dict(session.execute(scanned(query, configs, lambda statement: statement.where(
        SearchSegment.id == any_(ids)))).all())
    return found + [(sid, float(scores[sid])) for sid in newest_matches]
