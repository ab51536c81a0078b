"""The signed-in member's list: the chosen account's recordings, newest first, with the API's filters (project,
status, tag, operator, call and added date ranges, analysed, search), and the recordings shared with them. Above the
first page, the account's calls going on (of the project filtered on), marked live."""

from __future__ import annotations

from datetime import date
from typing import Literal
from urllib.parse import parse_qsl, urlencode

from pydantic import BaseModel, ValidationError

from callscope import validation as v
from callscope.api.body import parse_fields
from callscope.api.pages import web
from callscope.api.schemas import text_int
from callscope.catalog.recordings import Filters
from callscope.live.calls import LiveCalls
from callscope.resources import Project
from callscope.services import recordings, scope, shares
from callscope.services.context import Context
from callscope.statuses import RecordingStatus

PER_PAGE = 25


class ListQuery(BaseModel):
    view: Literal["all", "shared"] = "all"
    project_id: text_int(1) = None  # the API's ids: up to the catalog's BIGINT, 422 past it
    status: RecordingStatus | None = None
    tag_id: text_int(1) = None
    operator_id: text_int(1) = None  # type: ignore[valid-type]  # an Annotated type text_int builds at run time
    called_from: date | None = None
    called_to: date | None = None
    added_from: date | None = None  # when the recording was added (created_at): the trends' days
    added_to: date | None = None
    q: v.Line = None  # the API's search type: no control characters (a NUL fails PostgreSQL), bounded
    analysed: bool = False  # only the recordings the trends count: those with an analysis
    page: text_int(1, 10_000) = 1

    def filters(self) -> Filters:
        called_from, called_to = recordings.whole_days(self.called_from, self.called_to)
        created_from, created_to = recordings.whole_days(self.added_from, self.added_to)
        return Filters(project_id=self.project_id, status=self.status, operator_id=self.operator_id,
                       tag_ids=[self.tag_id] if self.tag_id else [], called_from=called_from, called_to=called_to,
                       created_from=created_from, created_to=created_to, q=self.q or None, analysed=self.analysed)


def filter_form(req) -> dict[str, str]:
    """A GET filter form's fields: one left blank is unset (a given None would fail its type); a repeated one is
    ignored."""
    return {k: v for k, v in req.params.items() if isinstance(v, str) and v}


def list_url(**fields) -> str:
    """The list page filtered by these ListQuery fields (a trend's point links to the calls behind it)."""
    given = {name: value for name, value in fields.items() if value is not None}  # as a form leaves a field blank
    return "/recordings?" + urlencode(ListQuery(**given).model_dump(mode="json", exclude_defaults=True))


def back_to_list(given: str | None) -> str:
    """The list as its reader left it (its links pass their filters and page on as `from`), or the list itself when
    `from` is missing or not a list's filters."""
    try:
        fields = ListQuery.model_validate(dict(parse_qsl(given or ""))).model_dump(exclude_defaults=True)
    except ValidationError:
        return "/recordings"
    return list_url(**fields) if fields else "/recordings"


class RecordingList:
    def __init__(self, ctx: Context, calls: LiveCalls):
        self.ctx, self.calls = ctx, calls

    @web.page
    async def on_get(self, req, resp):
        person, account = await web.require_account(self.ctx, req)
        query = parse_fields(ListQuery, filter_form(req))
        principal = person.principal(account)
        options = await recordings.filter_values(self.ctx, principal)
        live = []
        if query.view == "shared":
            rows, total = await shares.shared_with(self.ctx, principal, person.email), None
        else:
            # the calls going on have no recording yet: above the first page, unless filtered by more than project
            if query.model_dump(exclude_defaults=True).keys() <= {"project_id"}:
                live = self.calls.ongoing(principal, query.project_id)
            found, total = await recordings.list_recordings(self.ctx, principal, query.filters(),
                                                            (query.page - 1) * PER_PAGE, PER_PAGE)
            rows = [f.recording for f in found]
        projects = {p.status.id: p.spec.name for p in scope.all_of(self.ctx, Project, principal.account)}
        web.render(req, resp, "list.html", person=person, account=principal.account, query=query, rows=rows,
                   total=total, pages=-(-(total or 0) // PER_PAGE), options=options, projects=projects,
                   statuses=recordings.STATUSES, live=live, deleted=req.get_param("deleted") == "1",
                   came_from=urlencode({"from": urlencode(query.model_dump(mode="json", exclude_defaults=True))}))
