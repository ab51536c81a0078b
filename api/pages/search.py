"""The results page of search across calls (`/search`): REST's `GET /search` for a signed-in member, in their
account, with the same query parameters and the same service (callscope/services/search.py). Each hit links to its
recording's page at the segment's moment (`#t=`), where the script plays from there and marks the segment."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlencode, urlsplit

from pydantic import BeforeValidator

from callscope.analysis.result import EMOTIONS
from callscope.api import presenters
from callscope.api import schemas as s
from callscope.api.body import parse_fields
from callscope.api.pages import web
from callscope.api.pages.listing import filter_form
from callscope.api.pagination import paging
from callscope.errors import ServiceUnavailable, ValidationFailed
from callscope.resources import Operator
from callscope.services import recordings, scope, search
from callscope.services.context import Context, Principal
from callscope.services.search import Hit

PATH = "/search"
MODES = {"hybrid": "Words and meaning", "keyword": "Words", "meaning": "Meaning"}
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _whole_day(last: bool) -> BeforeValidator:
    """A bare day (what the form's date fields send) is the whole UTC day: from its first instant, or to its last
    (recordings.whole_days, as the list's date filters); a timestamp stays REST's exact instant."""
    def read(value: Any) -> Any:
        if isinstance(value, str) and _DAY.fullmatch(value.strip()):
            try:
                day = date.fromisoformat(value.strip())
            except ValueError:
                return value  # 2031-02-30: TextTime says what is wrong with it
            return recordings.whole_days(None, day)[1] if last else recordings.whole_days(day, None)[0]
        return value
    return BeforeValidator(read)


if TYPE_CHECKING:  # to mypy a parameter left out is None
    _From = datetime | None
    _To = datetime | None
else:
    _From, _To = Annotated[s.TextTime, _whole_day(False)], Annotated[s.TextTime, _whole_day(True)]


class SearchPageQuery(s.SearchQuery):
    """REST's query (schemas.SearchQuery: the same names, types and bounds), whose dates may also be days."""

    created_from: _From = None
    created_to: _To = None


def search_url(q: str, mode: str | None = None, **filters: int | str | bool | date | datetime | None) -> str:
    """The results page of `q` (in `mode`) with these filters, by REST's names (a date: the whole UTC day; blank
    ones left out): the link of a chart that opens the moments a saved search found."""
    unknown = set(filters) - set(SearchPageQuery.model_fields)
    if unknown:
        raise TypeError(f"not a search filter: {', '.join(sorted(unknown))}")
    given = {"q": q, "mode": mode, **filters}
    fields: dict[str, str | list[str]] = {
        name: value.isoformat() if isinstance(value, date) else str(value).lower() if isinstance(value, bool)
        else str(value) for name, value in given.items() if value is not None}
    parse_fields(SearchPageQuery, fields)  # a link that would show an error is a bug of its maker
    return f"{PATH}?{urlencode(fields)}"


def marked(text: str, spans: list[tuple[int, int]]) -> list[tuple[str, bool]]:
    """`text` cut into runs, each marked (a word the query sought) or not; spans out of order, overlapping or past
    the text are tolerated."""
    parts: list[tuple[str, bool]] = []
    at = 0
    for start, end in sorted(spans):
        start, end = max(start, at), min(end, len(text))
        if start >= end:
            continue
        if start > at:
            parts.append((text[at:start], False))
        parts.append((text[start:end], True))
        at = end
    if at < len(text):
        parts.append((text[at:], False))
    return parts


@dataclass(frozen=True)
class HitView:
    name: str  # the recording's
    href: str  # its page, the player at the segment: hit.url's path and #t=, so the link stays on this site's origin
    start_ms: int
    who: str  # Agent, Customer, or the speaker's label where the role is unknown
    operator: str | None
    emotion: str | None
    parts: list[tuple[str, bool]]  # the segment's text, the words sought marked


def _view(ctx: Context, principal: Principal, hit: Hit) -> HitView:
    row, url = hit.row, urlsplit(hit.url)
    operator = scope.by_id(ctx, Operator, principal.account, hit.operator_id) if hit.operator_id else None
    return HitView(row.name, f"{url.path}#{url.fragment}", row.start_ms,
                   row.role.capitalize() if row.role in ("agent", "customer") else row.speaker,
                   operator.spec.name if operator else None, row.emotion, marked(row.text, hit.highlights))


async def _options(ctx: Context, principal: Principal) -> dict[str, Any]:
    """What the form's lists offer: the list's projects, operators and tags, and the goals and categories of those
    projects."""
    options = await recordings.filter_values(ctx, principal)
    projects = options["projects"]
    return {**options,
            "goals": [(p.spec.name, p.spec.goals) for p in projects if p.spec.goals],
            "categories": sorted({c.name for p in projects for c in p.spec.categories}, key=str.casefold),
            "emotions": EMOTIONS, "statuses": recordings.STATUSES}


class SearchPage:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @web.page
    async def on_get(self, req, resp):
        person, account = await web.require_account(self.ctx, req)
        principal = person.principal(account)
        form = filter_form(req)
        values = {"hits": [], "total": 0, "pages": 0, "page": 1, "errors": [], "status": 200}
        if form.get("q", "").strip():  # an empty box shows the form and how to write a query
            try:
                values.update(await self._search(principal, form))
            except ValidationFailed as exc:  # shown beside the form that can fix it
                values.update(errors=exc.errors, status=exc.status)
            except ServiceUnavailable as exc:
                if exc.message != search.NO_MODEL:  # the catalog out of reach: the error page, with Retry-After
                    raise
                values.update(errors=[exc.message], status=exc.status)  # meaning without the text embedding model
        web.render(req, resp, "search.html", status=values.pop("status"), person=person, account=principal.account,
                   form=form, searched=bool(form.get("q", "").strip()), modes=MODES,
                   days={name: _DAY.fullmatch(form.get(name, "")) is not None or not form.get(name)
                         for name in ("created_from", "created_to")},
                   options=await _options(self.ctx, principal), **values)

    async def _search(self, principal: Principal, form: dict[str, str]) -> dict[str, Any]:
        fields: dict[str, str | list[str]] = {**form}
        query = parse_fields(SearchPageQuery, fields)
        page = paging(query)
        hits, total = await search.search(self.ctx, principal, query.q, query.mode, presenters.search_filters(query),
                                          page.offset, page.limit)
        return {"hits": [_view(self.ctx, principal, hit) for hit in hits], "total": total,
                "pages": page.meta(total).total_pages, "page": page.page}
