"""The query syntax of search, as people type it into a search box, parsed into a small tree that each engine
renders in its own syntax (catalog/search_sqlite.py, catalog/search_postgres.py): nothing a person types ever
reaches an engine as typed.

* words: each must appear (`refund today`); a word of several parts (`e-mail`, `don't`) is a phrase of them;
* `"refund today"`: the words next to each other, in this order (an unclosed quote runs to the end);
* `-subscription`, `-"direct debit"`: no segment with it;
* `refund OR credit` (OR in capitals): either; it binds the words on its two sides only.

Anything else (`&|!:*()<>\\` and the like) separates words and is otherwise ignored."""

from __future__ import annotations

import re
from dataclasses import dataclass

from callscope.errors import ValidationFailed
from callscope.search.words import words

MAX_CHARS = 500  # a search box's query, with room to spare
MAX_WORDS = 32  # every word is a lookup in every language's index (and a term of each engine's query)

_ITEM = re.compile(r'(-?)"([^"]*)"?|(\S+)')
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_OR = object()  # the OR between two items


@dataclass(frozen=True)
class Match:
    """Words that must appear next to each other, in this order: one word, or a phrase. Folded, not stemmed: each
    call's language stems them (words.stem)."""

    words: tuple[str, ...]
    typed: str  # as the person typed it: what meaning search reads


@dataclass(frozen=True)
class Query:
    """Every group must match (any one Match of it); no excluded Match may."""

    groups: tuple[tuple[Match, ...], ...]
    excluded: tuple[Match, ...]

    @property
    def text(self) -> str:
        """The words sought, as typed: the sentence meaning search embeds."""
        return " ".join(match.typed for group in self.groups for match in group)

    @property
    def sought(self) -> frozenset[str]:
        """Every folded word sought (the words a hit marks)."""
        return frozenset(word for group in self.groups for match in group for word in match.words)


def _items(q: str) -> list:
    items: list = []
    for found in _ITEM.finditer(q):
        negated, quoted, bare = found.group(1) == "-", found.group(2), found.group(3)
        if bare == "OR":
            items.append(_OR)
            continue
        if bare is not None:
            negated, quoted = bare.startswith("-"), bare.removeprefix("-")
        folded = tuple(words(quoted))
        if folded:  # punctuation alone matches nothing
            items.append((negated, Match(folded, quoted.strip())))
    return items


def parse(q: str) -> Query:
    """The tree of `q`; ValidationFailed (422) naming what is wrong with it."""
    if _CONTROL.search(q):
        raise ValidationFailed("q must not contain control characters")
    if len(q) > MAX_CHARS:
        raise ValidationFailed(f"q is too long (maximum is {MAX_CHARS} characters)")
    if not q.strip():
        raise ValidationFailed("q must not be blank")
    groups: list[list[Match]] = []
    excluded: list[Match] = []
    joins = after_wanted = False
    for item in _items(q):
        if item is _OR:
            joins = after_wanted
            continue
        negated, match = item
        if negated:
            excluded.append(match)
        elif joins:
            groups[-1].append(match)
        else:
            groups.append([match])
        joins, after_wanted = False, not negated
    if not groups:
        raise ValidationFailed("q must name a word to find, not only words to leave out" if excluded
                               else "q has no word to search for (letters or digits)")
    query = Query(tuple(map(tuple, groups)), tuple(excluded))
    if sum(len(m.words) for m in (*query.excluded, *(m for g in query.groups for m in g))) > MAX_WORDS:
        raise ValidationFailed(f"q has too many words (maximum is {MAX_WORDS})")
    return query
