"""The search results page (`/search`) in process, on SQLite and on PostgreSQL: a member finds the moments of their
account's calls with REST's query parameters and service (the page shows what `GET /search` answers), each hit's
words marked and its text escaped, linked to its recording page at the moment; the form keeps the filters; bad input
is the message on the page, never a 500; another account's member finds nothing; the empty, no-result and
past-the-end states; pagination; the list's search box; and the links Trends' trackers make (`search_url`).

The calls are analysed with hand-written results through the worker's own completion (tests/search/calls.py), words
only (no text embedder: meaning search is tests/api/test_search.py's)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from html import unescape
from urllib.parse import urlencode

import pytest

from callscope.api.pages.search import marked, search_url
from callscope.services import accounts, projects
from tests.pages.conftest import admin, browser_of

OTTO = "otto@example.com"
LINES = [
    ("agent", "Thank you for calling, how can I help?", "calm"),
    ("customer", "I want a <b>refund</b> & my money back", "angry"),
    ("agent", "Refunds are processed within five days", "neutral"),
    ("customer", "Then cancel my subscription", "angry"),
]


@pytest.fixture(autouse=True)
def words_only(runtime):
    runtime.ctx.embedder = None  # calls indexed by their words, hybrid matches words (no model loaded)


def hits(html: str) -> list[tuple[str, str, str, str]]:
    """(href, name, moment, text with <mark>s kept) of each hit shown."""
    found = re.findall(r'<a class="hit-link" href="([^"]+)"><span class="hit-name">([^<]*)</span> '
                       r'<span class="hit-at">at ([^<]+)</span></a>.*?<p class="hit-text">(.*?)</p>', html, re.S)
    return [(unescape(href), unescape(name), at, text) for href, name, at, text in found]


def shown(html: str) -> list[str]:
    """The hits' texts as a reader sees them."""
    return [unescape(re.sub(r"</?mark>", "", text)) for *_, text in hits(html)]


async def test_a_hit_shows_its_call_speaker_moment_and_marked_words_escaped(member, call, support):
    public_id = await call(LINES, support, name="Refund <call> & co")
    resp = await member.get("/search", params={"q": "refunds", "mode": "keyword"})
    assert resp.status_code == 200
    found = hits(resp.text)
    assert {h[0] for h in found} == {f"/recordings/{public_id}#t=5", f"/recordings/{public_id}#t=10"}
    [customer] = [h for h in found if h[0].endswith("#t=5")]
    assert customer[1:3] == ("Refund <call> & co", "0:05")
    # the words sought marked, everything else escaped: the text's own tags are text, never markup
    assert customer[3] == "I want a &lt;b&gt;<mark>refund</mark>&lt;/b&gt; &amp; my money back"
    assert "<b>refund" not in resp.text and "Refund <call>" not in resp.text
    assert re.search(r'<span class="who">Customer</span> · <span class="muted">angry</span>', resp.text)
    assert "2 moments found" in resp.text


async def test_the_page_shows_what_rest_answers_for_the_same_parameters(member, call, support, api):
    await call(LINES, support)
    await call([("customer", "A refund for the second call"), ("agent", "Your refund is on its way")], support,
               name="Billing", categories=("billing",))
    headers = call.keys["default"]
    for params in ({"q": "refund"}, {"q": "refund", "speaker": "agent"}, {"q": "refund OR cancel", "mode": "keyword"},
                   {"q": "refund", "category": "billing"}, {"q": "refund", "project_id": str(support)},
                   {"q": "refund", "per_page": "1", "page": "2"}, {"q": "refund", "emotion": "angry"}):
        rest = (await api.get("/search", params=params, headers=headers)).json()["data"]
        html = (await member.get("/search", params=params)).text
        assert [(h[0], h[1]) for h in hits(html)] == [(f"/recordings/{r['recording']['public_id']}#t={r['start']:g}",
                                                       r["recording"]["name"]) for r in rest], params
        assert shown(html) == [r["text"] for r in rest]
        assert rest, params  # each case finds something


async def test_the_form_keeps_the_filters(member, call, support):
    await call(LINES, support)
    html = (await member.get("/search", params={"q": '"money back"', "mode": "keyword", "speaker": "customer",
                                                "project_id": support, "goal_id": 1, "goal_met": "false",
                                                "created_from": "2020-01-01"})).text
    assert 'value="&#34;money back&#34;"' in html or 'value="&quot;money back&quot;"' in html
    for field, value in (("mode", "keyword"), ("speaker", "customer"), ("project_id", support), ("goal_id", 1),
                         ("goal_met", "false")):
        assert re.search(rf'name="{field}">(?:(?!</select>).)*<option value="{value}" selected>', html, re.S), field
    assert 'name="created_from" type="date" value="2020-01-01"' in html
    for label in ("s-q", "s-mode", "s-speaker", "s-project", "s-operator", "s-tag", "s-category", "s-goal",
                  "s-goal-met", "s-emotion", "s-status", "s-from", "s-to"):
        assert f'<label for="{label}">' in html and f'id="{label}"' in html


@pytest.mark.parametrize("params, message", [
    ({"q": "'&|!:*()<>\"\\"}, "no word to search for"),
    ({"q": "refund\x00"}, "control characters"),
    ({"q": "refund " * 100}, "too long"),
    ({"q": "-refund"}, "not only words to leave out"),
    ({"q": "refund", "mode": "fuzzy"}, "mode must be one of"),
    ({"q": "refund", "goal_met": "true"}, "goal_met needs goal_id"),
    ({"q": "refund", "project_id": "99999999999999999999"}, "project_id is out of range"),
    ({"q": "refund", "created_from": "yesterday"}, "created_from"),
    ({"q": "refund", "created_to": "2031-02-30"}, "created_to"),
    ({"q": "refund", "speaker": "robot"}, "speaker must be one of"),
    ({"q": "refund", "page": "0"}, "page"),
])
async def test_bad_input_is_a_message_on_the_page_never_a_500(member, call, support, params, message):
    await call(LINES, support)
    resp = await member.get("/search", params=params)
    assert resp.status_code == 422, resp.text
    alert = re.search(r'<div class="state failed" id="s-errors" role="alert">(.*?)</div>', resp.text, re.S)
    assert alert and message in unescape(alert.group(1))
    assert '<form class="filters search-form"' in resp.text and 'aria-invalid="true"' in resp.text


async def test_hostile_queries_that_hold_words_search_for_them(member, call, support):
    await call(LINES, support)
    for q in ("refund')) OR 1=1 --", "refund:* & !money", "<b>refund</b>", "refund\\", 'refund" OR "'):
        resp = await member.get("/search", params={"q": q, "mode": "keyword"})
        assert resp.status_code == 200, (q, resp.text)
        assert "I want a <b>refund</b> & my money back" in shown(resp.text), q
    echoed = await member.get("/search", params={"q": "<script>alert(1)</script>"})
    assert echoed.status_code == 200 and "<script>" not in echoed.text and "&lt;script&gt;alert(1)" in echoed.text


async def test_meaning_without_the_model_says_so_on_the_page(member, call, support):
    await call(LINES, support)
    resp = await member.get("/search", params={"q": "money back", "mode": "meaning"})
    assert resp.status_code == 503 and "text embedding model" in resp.text and 'role="alert"' in resp.text
    words = await member.get("/search", params={"q": "money back"})  # hybrid: by the words alone
    assert words.status_code == 200 and shown(words.text) == ["I want a <b>refund</b> & my money back"]


async def test_a_member_of_another_account_finds_only_their_own(runtime, member, call, support):
    await call(LINES, support)
    theirs = await projects.create_project(runtime.ctx, admin("other"), {"name": "Support", "language": "en"})
    await call([("customer", "My refund is late")], theirs.status.id, name="Otto's call", account="other")
    await accounts.add_member(runtime.ctx, "other", OTTO, "Otto")
    otto = await browser_of(runtime, OTTO)
    try:
        resp = await otto.get("/search", params={"q": "refund"})
        assert resp.status_code == 200 and [h[1] for h in hits(resp.text)] == ["Otto's call"]
        assert "money back" not in resp.text
        by_id = await otto.get("/search", params={"q": "refund", "project_id": support})  # Ana's project's id
        assert by_id.status_code == 200 and "money back" not in by_id.text
        assert {h[1] for h in hits(by_id.text)} <= {"Otto's call"}
    finally:
        await otto.aclose()
    assert [h[1] for h in hits((await member.get("/search", params={"q": "refund"})).text)] == ["Refund call"] * 2


async def test_the_empty_and_no_result_states(member, call, support):
    await call(LINES, support)
    empty = await member.get("/search")
    assert empty.status_code == 200 and "Find any moment of any call" in empty.text and "autofocus" in empty.text
    assert "moments found" not in empty.text
    blank = await member.get("/search", params={"q": "   ", "speaker": "agent"})
    assert blank.status_code == 200 and "Find any moment of any call" in blank.text
    none = await member.get("/search", params={"q": "zebra", "mode": "keyword"})
    assert none.status_code == 200 and "0 moments found" in none.text and "No moment of any call matches" in none.text
    past = await member.get("/search", params={"q": "refund", "page": "9"})
    assert past.status_code == 200 and "past the last one" in past.text and not hits(past.text)


async def test_pages_of_hits(member, call, support):
    await call([("customer", f"Refund number {n}") for n in range(25)], support)
    first = await member.get("/search", params={"q": "refund", "mode": "keyword", "per_page": "10"})
    assert len(hits(first.text)) == 10 and "25 moments found · page 1 of 3" in first.text
    next_page = unescape(re.search(r'<a rel="next" href="([^"]+)"', first.text).group(1))
    second = await member.get("/search" + next_page)
    assert len(hits(second.text)) == 10 and "page 2 of 3" in second.text and 'rel="prev"' in second.text
    third = await member.get("/search" + unescape(re.search(r'<a rel="next" href="([^"]+)"', second.text).group(1)))
    assert len(hits(third.text)) == 5 and 'rel="next"' not in third.text
    seen = [h[0] for page in (first, second, third) for h in hits(page.text)]
    assert len(set(seen)) == 25


async def test_a_trackers_link_finds_exactly_the_calls_of_its_days(member, call, support):
    """Trends' tracker bars link to search_url(q, mode, project_id, created_from, created_to): whole UTC days."""
    days = {"Early": datetime(2031, 6, 1, 23, 59, tzinfo=UTC), "First day": datetime(2031, 6, 2, 0, 0, tzinfo=UTC),
            "Last day": datetime(2031, 6, 8, 23, 59, 59, tzinfo=UTC), "Late": datetime(2031, 6, 9, 0, 0, tzinfo=UTC)}
    for name, added in days.items():
        await call([("customer", "Please cancel my plan")], support, name=name, added=added)
    link = search_url("cancel", mode="keyword", project_id=support, created_from=date(2031, 6, 2),
                      created_to=date(2031, 6, 8))
    assert link == "/search?" + urlencode({"q": "cancel", "mode": "keyword", "project_id": support,
                                           "created_from": "2031-06-02", "created_to": "2031-06-08"})
    resp = await member.get(link)
    assert resp.status_code == 200 and sorted(h[1] for h in hits(resp.text)) == ["First day", "Last day"]
    # REST's instants work as well, exactly
    exact = await member.get("/search", params={"q": "cancel", "mode": "keyword", "project_id": support,
                                                "created_from": "2031-06-02T00:00:00Z",
                                                "created_to": "2031-06-08T23:59:58Z"})
    assert [h[1] for h in hits(exact.text)] == ["First day"]
    assert 'name="created_to" type="text" value="2031-06-08T23:59:58Z"' in exact.text  # kept as sent
    elsewhere = search_url("cancel", mode="keyword", project_id=support + 1000, created_from=date(2031, 6, 2),
                           created_to=date(2031, 6, 8))
    assert not hits((await member.get(elsewhere)).text)
    with pytest.raises(TypeError):
        search_url("cancel", colour="red")


async def test_the_list_has_a_search_box_that_opens_the_results(member, call, support):
    await call(LINES, support)
    html = (await member.get("/recordings")).text
    box = re.search(r'<form class="search-box" method="get" action="/search" role="search"[^>]*>(.*?)</form>', html,
                    re.S)
    assert box and '<label for="s-q">' in box.group(1) and 'name="q"' in box.group(1)
    assert 'type="submit"' in box.group(1)
    resp = await member.get("/search", params={"q": "cancel"})  # what the box sends
    assert shown(resp.text) == ["Then cancel my subscription"]


async def test_the_page_keeps_the_members_pages_standards(pages, member, support):
    resp = await member.get("/search", params={"q": "refund"})
    assert resp.status_code == 200
    assert "default-src 'none'" in resp.headers["content-security-policy"]
    assert "<script" not in resp.text and "style=" not in resp.text and "<style" not in resp.text
    assert '<form class="filters search-form" method="get" action="/search" role="search"' in resp.text
    pages.cookies.clear()
    signed_out = await pages.get("/search", params={"q": "refund"})
    assert signed_out.status_code == 303 and signed_out.headers["location"].startswith("/sign-in?next=/search")


def test_marked_cuts_the_text_at_its_highlights() -> None:
    assert marked("refund today", [(0, 6)]) == [("refund", True), (" today", False)]
    assert marked("a refund", [(2, 8), (0, 1)]) == [("a", True), (" ", False), ("refund", True)]
    assert marked("abc", [(0, 2), (1, 3), (5, 9)]) == [("ab", True), ("c", True)]  # overlapping, past the end
    assert marked("", []) == [] and marked("abc", []) == [("abc", False)]


SEARCH_FIELDS = ["q", "mode", "project_id", "operator_id", "speaker", "tag", "category", "goal_id", "goal_met",
                 "emotion", "created_from", "created_to", "status", "page", "per_page"]


async def test_no_search_field_answers_5xx(member, call, support):
    """test_page_fuzz.py's values in each of the page's fields (beside a query that finds something)."""
    from tests.pages.test_page_fuzz import VALUES, _problem  # its table of inputs and its rule on answers

    await call(LINES, support)
    failures = []
    for value in VALUES:
        for field in SEARCH_FIELDS:
            url = f"/search?q=refund&{field}={value}" if field != "q" else f"/search?q={value}"
            if problem := _problem(await member.get(url), "html"):
                failures.append(f"{url[:120]}: {problem}")
    assert failures == []
