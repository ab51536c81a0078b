"""Words as search reads them: tokens of a text with their places, folded (case and accents) and stemmed by the
call's language. Index and query go through the same functions, so that what a person types finds what was said."""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterator
from functools import lru_cache

import snowballstemmer

# A word is a run of letters and digits: punctuation, the engines' operators and `_` (the SQLite index's language
# separator, catalog/search_sqlite.py) never are part of one.
_WORD = re.compile(r"[^\W_]+")

# BCP 47 primary language -> the stemmer, named as both Snowball and PostgreSQL's text-search configurations name it
# (the configurations PostgreSQL 13 and later ship). Any other language is `simple`: folded, not stemmed.
STEMMERS = {
    "ar": "arabic", "da": "danish", "nl": "dutch", "en": "english", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian",
    "ne": "nepali", "no": "norwegian", "nb": "norwegian", "nn": "norwegian", "pt": "portuguese", "ro": "romanian",
    "ru": "russian", "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish",
}
SIMPLE = "simple"
CONFIGURATIONS = (SIMPLE, *sorted(set(STEMMERS.values())))


def configuration(language: str | None) -> str:
    """The stemmer of a call's language (`en-US`: english); `simple` for an unknown one."""
    return STEMMERS.get((language or "").split("-")[0].lower(), SIMPLE)


def fold(word: str) -> str:
    """Lower case without accents: `Réembolsó` -> `reembolso`."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def spans(text: str) -> Iterator[tuple[int, int, str]]:
    """Each word of `text` as (start, end, folded word); start and end index `text` itself."""
    for match in _WORD.finditer(text):
        # a folded word may split (ß is ss, a ligature two letters): keep its letters and digits only
        folded = "".join(_WORD.findall(fold(match.group())))
        if folded:
            yield match.start(), match.end(), folded


def words(text: str) -> list[str]:
    """The folded words of `text`, in order."""
    return [word for _, _, word in spans(text)]


_local = threading.local()  # a Snowball stemmer keeps state while it stems: one per thread


@lru_cache(maxsize=1 << 16)  # a language's words repeat, and Snowball in pure Python takes some 50 µs a word
def stem(config: str, word: str) -> str:
    """A folded word's stem in the configuration's language (itself for `simple`)."""
    if config == SIMPLE:
        return word
    stemmers = _local.__dict__.setdefault("stemmers", {})
    if config not in stemmers:
        stemmers[config] = snowballstemmer.stemmer(config)
    return stemmers[config].stemWord(word)
