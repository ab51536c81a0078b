"""The query syntax parsed into its tree, each engine's rendering of it (nothing typed reaches an engine as typed),
the words folded and stemmed by language, and the words of a hit marked."""

from __future__ import annotations

import pytest

from callscope.catalog import search_postgres, search_sqlite
from callscope.errors import ValidationFailed
from callscope.search.highlight import highlights
from callscope.search.syntax import MAX_CHARS, Match, Query, parse
from callscope.search.words import configuration, fold, stem, words


def m(*words: str) -> Match:
    return Match(tuple(words), " ".join(words))


@pytest.mark.parametrize(("q", "groups", "excluded"), [
    ("refund today", [["refund"], ["today"]], []),
    ('"refund today" please', [["refund today"], ["please"]], []),
    ("cancel -subscription", [["cancel"]], ["subscription"]),
    ('cancel -"direct debit"', [["cancel"]], ["direct debit"]),
    ("refund OR credit voucher", [["refund", "credit"], ["voucher"]], []),
    ("refund or credit", [["refund"], ["or"], ["credit"]], []),  # OR in capitals only
    ("a OR OR b", [["a", "b"]], []),
    ("-x OR y", [["y"]], ["x"]),  # OR binds words sought only
    ("OR refund OR", [["refund"]], []),
    ("don't e-mail", [["don t"], ["e mail"]], []),  # a word of parts is a phrase of them
    ('"unclosed quote', [["unclosed quote"]], []),
    ("Réembolsó ÇA", [["reembolso"], ["ca"]], []),
    ("refund & (credit | !voucher)*", [["refund"], ["credit"], ["voucher"]], []),
])
def test_the_tree_of_a_query(q: str, groups: list[list[str]], excluded: list[str]) -> None:
    query = parse(q)
    assert [[" ".join(match.words) for match in group] for group in query.groups] == groups
    assert [" ".join(match.words) for match in query.excluded] == excluded


@pytest.mark.parametrize(("q", "message"), [
    ("", "q must not be blank"),
    ("  \t ", "q must not contain control characters"),
    ("refund\x00", "q must not contain control characters"),
    ("x" * (MAX_CHARS + 1), f"q is too long (maximum is {MAX_CHARS} characters)"),
    ("'&|!:*()<>\"\\", "q has no word to search for (letters or digits)"),
    ("-refund -credit", "q must name a word to find, not only words to leave out"),
    (" ".join(["w"] * 33), "q has too many words (maximum is 32)"),
])
def test_a_query_that_cannot_be_searched_is_refused_naming_why(q: str, message: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        parse(q)
    assert refused.value.errors == [message]


def test_the_text_meaning_search_reads_is_the_words_sought_as_typed() -> None:
    assert parse('Refund "today please" -never OR x').text == "Refund today please x"


def test_words_are_folded_and_stemmed_by_the_calls_language() -> None:
    assert words("Réembolsó, l'été! ÇA_va 42") == ["reembolso", "l", "ete", "ca", "va", "42"]
    assert fold("Straße") == "strasse"
    assert (configuration("en-US"), configuration("es"), configuration("xx"), configuration(None)) == (
        "english", "spanish", "simple", "simple")
    assert stem("english", "refunds") == stem("english", "refund") == "refund"
    assert stem("spanish", "compraremos") == stem("spanish", "comprar") != stem("english", "compraremos")
    assert stem("simple", "refunds") == "refunds"


def test_sqlite_renders_quoted_tokens_of_each_language() -> None:
    query = Query(((m("refund", "today"), m("credit")), (m("now"),)), (m("never"),))
    assert search_sqlite.render(query, ["english", "spanish"]) == (
        '(("english_refund english_today" OR "english_credit") AND ("english_now") NOT ("english_never")) OR '
        '(("spanish_refund spanish_today" OR "spanish_credit") AND ("spanish_now") NOT ("spanish_nev"))')
    assert search_sqlite.terms("english", "Refunds, today!") == "english_refund english_today"


def test_postgres_renders_quoted_lexemes() -> None:
    query = Query(((m("refund", "today"), m("credit")), (m("now"),)), (m("never"),))
    assert search_postgres.render(query) == "(('refund' <-> 'today') | ('credit')) & (('now')) & !(('never'))"
    assert search_postgres.terms("english", "Réfunds, today!") == "refunds today"


@pytest.mark.parametrize("q", ["'", "refund' OR 1=1 --", "a:*", "x <-> y", "NEAR(a b)", '"a" "b', "\\'", "ü&ß|!"])
def test_no_character_of_either_engines_syntax_survives_into_a_word(q: str) -> None:
    try:
        query = parse(q)
    except ValidationFailed:
        return
    for group in (*query.groups, query.excluded):
        for match in group:
            assert all(word.isalnum() for word in match.words), match


def test_a_hit_marks_every_word_sought_by_its_stem() -> None:
    text = "Refunds: I want a REFUND today, not a refunding credit."
    marked = [text[a:b] for a, b in highlights(text, "english", parse('"refund today" -credit'))]
    assert marked == ["Refunds", "REFUND", "today", "refunding"]
    assert highlights("Compraremos mañana", "spanish", parse("comprar MANANA")) == [(0, 11), (12, 18)]
