"""Settings → Processing → a project's goals, categories or fields as a form of rows, each of an item's fields
labelled: edit a row, add one (the blank row at the end), tick Remove on another. Saved through the service the REST
API's PATCH /projects/{id} uses (callscope/services/processing_settings.py); each item is checked by the Project
resource's own model, and each message is shown beside the field it is about (the first of them focused), the rows as
sent. What the rows do not show of an item (a goal's appliesWhen, a min_similarity) is kept; the JSON textareas of
the project's page stay for whoever prefers them. Admins only, as every Settings page."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import falcon
from pydantic import BaseModel, ValidationError

from callscope.api import schemas as s
from callscope.api.body import messages
from callscope.api.pages import web
from callscope.api.pages.settings_processing import PATH as PROCESSING
from callscope.errors import Conflict, NotFound, ValidationFailed
from callscope.resources.kinds import Category, ExtractedField, Goal
from callscope.services import processing_settings
from callscope.services.context import Context, Principal
from callscope.services.member_auth import SignedIn

PATH = f"{PROCESSING}/{{project_id:int(min=1, max={s.INT64_MAX})}}/{{kind}}"
MAX_ROWS = 200  # rows a form may send: every value of every row counts towards read_form_lists' bound
GENERAL = ""  # the errors about the whole list (two goals with one id)
Problems = dict[tuple[int, str], list[str]]  # messages by (row, field)


@dataclass(frozen=True)
class ListKind:
    """A list of a project the rows edit: its model, the fields a row shows, and those written one item a line."""

    title: str
    model: type[BaseModel]
    fields: tuple[str, ...]
    lines: tuple[str, ...]
    choices: dict[str, tuple[str, ...]]


KINDS = {
    "goals": ListKind("Goals", Goal, ("name", "description", "phrases", "speaker", "within_seconds"), ("phrases",),
                      {"speaker": ("any", "agent", "customer")}),
    "categories": ListKind("Categories", Category, ("name", "description", "keywords"), ("keywords",), {}),
    "fields": ListKind("Fields", ExtractedField, ("name", "description", "type", "values"), ("values",),
                       {"type": ("string", "number", "boolean", "date", "email", "phone", "enum")}),
}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _kind(name: str) -> ListKind:
    if name not in KINDS:
        raise NotFound()
    return KINDS[name]


def _shown(kind: ListKind, item: BaseModel) -> dict[str, str]:
    """An item as its row's text."""
    row = {}
    for name in kind.fields:
        value = getattr(item, name)
        row[name] = "\n".join(value) if name in kind.lines else "" if value is None else str(value)
    return row


@dataclass
class Row:
    key: str  # the item's place in the project's list when the page was drawn; "": a new one
    values: dict[str, str]
    remove: bool = False


def _rows(kind: ListKind, form: dict[str, list[str]]) -> list[Row]:
    """The rows as sent: `<n>.<field>`, `<n>.key` and `<n>.remove`, in the order of n."""
    rows: dict[int, Row] = {}
    for name, values in form.items():
        number, _, field = name.partition(".")
        if not number.isdigit() or len(number) > 4 or field not in (*kind.fields, "key", "remove"):
            continue
        row = rows.setdefault(int(number), Row("", {}))
        if field == "key":
            row.key = values[-1]
        elif field == "remove":
            row.remove = values[-1] == "on"
        else:
            row.values[field] = values[-1]
    return [rows[n] for n in sorted(rows)]


def _field_of(message: str) -> str:
    """The field a model's message begins with (`description is required`, `withinSeconds must be...`), snake_case."""
    first = re.split(r"[ :.]", message, maxsplit=1)[0]
    return _CAMEL.sub("_", first).lower()


def _items(kind: ListKind, current: list[BaseModel], rows: list[Row]) -> tuple[list[BaseModel], Problems]:
    """The list the rows make, and each problem by (row, field); a blank new row and a removed one make nothing."""
    items: list[BaseModel] = []
    errors: Problems = {}
    next_id = max((getattr(i, "id", 0) for i in current), default=0) + 1
    for number, row in enumerate(rows):
        base = current[int(row.key)] if row.key.isdigit() and int(row.key) < len(current) else None
        if row.remove or (base is None and not any(v.strip() for v in row.values.values())):
            continue
        values: dict[str, Any] = base.model_dump() if base is not None else {}
        for name, text in row.values.items():
            if name in kind.lines:
                values[name] = [line.strip() for line in text.splitlines() if line.strip()]
            elif text.strip():
                values[name] = text.strip()
            else:  # blank: not given (a required field says so, an optional one takes its default)
                values.pop(name, None)
        if kind.model is Goal and base is None:
            values["id"], next_id = next_id, next_id + 1
        try:
            items.append(kind.model.model_validate(values))
        except ValidationError as exc:
            for message in messages(exc):
                field = _field_of(message)
                errors.setdefault((number, field if field in kind.fields else GENERAL), []).append(message)
    return items, errors


class ProjectList:
    """/settings/processing/{project_id}/{goals,categories,fields}."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def _show(self, req, resp, person: SignedIn, account: str, principal: Principal, project_id: int, kind: str,
              rows: list[Row], *, status: int = 200, errors: Problems | None = None,
              general: list[str] | None = None) -> None:
        found = processing_settings.row(self.ctx, principal, project_id)
        web.render(req, resp, "settings_list.html", status=status, person=person, account=account, row=found,
                   kind=kind, list_kind=KINDS[kind], rows=rows, errors=errors or {}, general=general or [],
                   saved=req.get_param("saved") == "1")

    @web.page
    async def on_get(self, req, resp, project_id: int, kind: str):
        person, account = await web.require_admin(self.ctx, req)
        list_kind = _kind(kind)
        principal = person.admin_principal(account)
        current = getattr(processing_settings.row(self.ctx, principal, project_id).project.spec, kind)
        rows = [Row(str(i), _shown(list_kind, item)) for i, item in enumerate(current)]
        self._show(req, resp, person, account, principal, project_id, kind, [*rows, Row("", {})])

    @web.page
    async def on_post(self, req, resp, project_id: int, kind: str):
        person, account = await web.require_admin(self.ctx, req)
        list_kind = _kind(kind)
        form = await web.read_form_lists(req, max_fields=MAX_ROWS * (len(list_kind.fields) + 2) + 1)
        web.check_session_csrf(person, {"csrf": form.get("csrf", [""])[-1]})
        principal = person.admin_principal(account)
        current = getattr(processing_settings.row(self.ctx, principal, project_id).project.spec, kind)
        rows = _rows(list_kind, form)
        items, errors = _items(list_kind, current, rows)
        general: list[str] = []
        if not errors:
            try:
                await processing_settings.update(self.ctx, principal, project_id, {kind: items})
            except ValidationFailed as exc:
                general = exc.errors
            except Conflict as exc:  # applied by a GitOps tool: read-only here
                general = [exc.message]
            else:
                raise falcon.HTTPSeeOther(f"{PROCESSING}/{project_id}/{kind}?saved=1")
        self._show(req, resp, person, account, principal, project_id, kind, rows, status=422, errors=errors,
                   general=general)
