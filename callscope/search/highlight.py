"""The words of a hit that the query sought, as character ranges of its text: every word whose stem, in the call's
language, is the stem of a word sought (a phrase's words each)."""

from __future__ import annotations

from callscope.search.syntax import Query
from callscope.search.words import spans, stem


def highlights(text: str, config: str, query: Query) -> list[tuple[int, int]]:
    """(start, end) of each word of `text` the query sought, in order; `config`: the call's stemmer."""
    sought = {stem(config, word) for word in query.sought}
    return [(start, end) for start, end, word in spans(text) if stem(config, word) in sought]
