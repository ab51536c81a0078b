"""Settings → Processing: what `GET /app/settings` returns for the account, and each project's analysis settings
(language, pause threshold, retention, transcription hints, transcription model, live calls, goals, categories,
fields, live alerts) edited with each error shown beside its field (admins only;
callscope/services/processing_settings.py).

The scalar fields and the live checkbox are checked by the API's own request model of `PATCH /projects/{id}`
(api/schemas.py ProjectUpdate); goals, categories, fields and live alerts, which the API sets only through the Project
resource, are JSON lists in a textarea each (the YAML's shape, camelCase), every item checked by the resource's own
model and its errors numbered (settings_lists.py edits the first three as rows). A new project is made here with its
name and language, through the service and the request model of `POST /projects`."""

from __future__ import annotations

import json
from typing import Any

import falcon
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from callscope.api import schemas as s
from callscope.api.body import messages
from callscope.api.pages import web
from callscope.api.pagination import DEFAULT_PER_PAGE, MAX_PER_PAGE
from callscope.errors import ValidationFailed
from callscope.resources import Project
from callscope.resources.kinds import Category, ExtractedField, Goal, LiveAlert
from callscope.services import processing_settings, projects
from callscope.services.app_settings import processing_settings as account_settings
from callscope.services.context import Context
from callscope.services.member_auth import SignedIn

PATH = "/settings/processing"
PROJECT = f"{PATH}/{{project_id:int(min=1, max={s.INT64_MAX})}}"  # past the catalog's BIGINT nothing exists (404)
SCALARS = ("language", "goal_language", "summary_language", "long_pause_threshold_seconds", "retention_days",
           "transcription_hints")
LISTS: dict[str, type[BaseModel]] = {"goals": Goal, "categories": Category, "fields": ExtractedField,
                                     "live_alerts": LiveAlert}
LIVE = "live"  # a checkbox: a browser sends `on` when it is ticked, nothing when not
# A select of the site's models (CALLSCOPE_WHISPER_MODELS) by name, blank for the default: PATCH's
# `transcription: {"model": name}` (a site model may be called "default").
TRANSCRIPTION = "transcription"
GENERAL = ""  # the errors that name no field of the form
# The fields the form sends, as text; any other is refused (422, the form again with the reason), as the key and
# webhook forms refuse theirs: a field that is not there would otherwise be dropped without a word.
_FORM_FIELDS: dict[str, Any] = {"csrf": (str, ...),
                                **{name: (str, "") for name in (*SCALARS, TRANSCRIPTION, LIVE, *LISTS)}}
FORM: type[BaseModel] = create_model("ProcessingForm", __config__=ConfigDict(extra="forbid"), **_FORM_FIELDS)


def _items(name: str, model: type[BaseModel], text: str) -> tuple[list[BaseModel], list[str]]:
    """One list's textarea read into the resource's models, with a message per problem naming the item."""
    if not text.strip():
        return [], []
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], [f"{name}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"]
    except ValueError:  # valid JSON Python will not read: a number of more than 4,300 digits
        return [], [f"{name}: a number in it is too long"]
    if not isinstance(raw, list):
        return [], [f"{name}: must be a JSON list, [ {{…}}, {{…}} ]"]
    items: list[BaseModel] = []
    errors: list[str] = []
    for number, item in enumerate(raw, 1):
        if not isinstance(item, dict):
            errors.append(f"{name}: item {number} must be an object, {{…}}")
            continue
        try:
            items.append(model.model_validate(item))
        except ValidationError as exc:
            # A rule of the whole item (an enum without values) has no field to name: the API says "body".
            errors += [f"{name}: item {number}: {m.removeprefix('body: Value error, ')}" for m in messages(exc)]
    return items, errors


def _changes(form: dict[str, str], stored: str | None) -> dict[str, Any]:
    """The form as the service takes it: the PATCH body's fields (blank: cleared) and the three lists. The
    transcription model only where it is not the project's `stored` one: one the site has dropped since stays until
    another is chosen (as on the API), and the rest of the form is saved meanwhile."""
    body: dict[str, Any] = {k: form.get(k, "").strip() or None for k in SCALARS}
    body["language"] = form.get("language", "")  # blank is an error, not "unchanged"
    body[LIVE] = form.get(LIVE) == "on"
    if (chosen := form.get(TRANSCRIPTION, "").strip() or None) != stored:
        body[TRANSCRIPTION] = {"model": chosen} if chosen else None
    errors: list[str] = []
    try:
        FORM.model_validate(form)
    except ValidationError as exc:
        errors += messages(exc)
    changes: dict[str, Any] = {}
    try:
        changes = s.ProjectUpdate.model_validate(body).model_dump(exclude_unset=True)
    except ValidationError as exc:
        errors += messages(exc)
    for name, model in LISTS.items():
        items, item_errors = _items(name, model, form.get(name, ""))
        changes[name], errors = items, errors + item_errors
    if errors:
        raise ValidationFailed(errors)
    return changes


def _by_field(errors: list[str],
              fields: tuple[str, ...] = (*SCALARS, TRANSCRIPTION, LIVE, *LISTS)) -> dict[str, list[str]]:
    """Each message beside the field it begins with (`retention_days must be…`, `goals: item 2: …`,
    `transcription.model 'huge' is not…`)."""
    out: dict[str, list[str]] = {}
    for error in errors:
        first = error.split(":", 1)[0].split(" ", 1)[0].split(".", 1)[0].lower()
        out.setdefault(first if first in fields else GENERAL, []).append(error)
    return out


def _values(project: Project) -> dict[str, str]:
    """The project's settings as the form's text."""
    spec = project.spec
    values = {k: "" if getattr(spec, k) is None else str(getattr(spec, k)) for k in SCALARS}
    values[TRANSCRIPTION] = spec.transcription_model or ""
    values[LIVE] = "on" if spec.live else ""
    for name in LISTS:
        items = [item.model_dump(by_alias=True, exclude_none=True) for item in getattr(spec, name)]
        values[name] = json.dumps(items, indent=2, ensure_ascii=False) if items else ""
    return values


NEW_PROJECT = ("name", "language")  # what the form of a new project asks; the rest is set on its own page
_NEW_PROJECT_FIELDS: dict[str, Any] = {"csrf": (str, ...), **{k: (str, "") for k in NEW_PROJECT}}
NEW_PROJECT_FORM: type[BaseModel] = create_model("NewProjectForm", __config__=ConfigDict(extra="forbid"),
                                                 **_NEW_PROJECT_FIELDS)


def _new_project(form: dict[str, str]) -> dict[str, Any]:
    """The form as POST /projects's body, checked by its request model (a field beside name and language refused)."""
    try:
        NEW_PROJECT_FORM.model_validate(form)
        body = s.ProjectCreate.model_validate({k: form.get(k, "") for k in NEW_PROJECT})
    except ValidationError as exc:
        raise ValidationFailed(messages(exc)) from None
    return body.model_dump(exclude_unset=True)


class ProcessingHome:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def _show(self, req, resp, person: SignedIn, account: str, *, status: int = 200,
              new: dict[str, str] | None = None, errors: list[str] | None = None) -> None:
        web.render(req, resp, "settings_processing.html", status=status, person=person, account=account,
                   shown=account_settings(self.ctx, account),
                   pagination={"default_per_page": DEFAULT_PER_PAGE, "max_per_page": MAX_PER_PAGE},
                   rows=processing_settings.rows(self.ctx, person.admin_principal(account)), new=new or {},
                   new_errors=_by_field(errors or [], NEW_PROJECT), general=GENERAL)

    @web.page
    async def on_get(self, req, resp):
        person, account = await web.require_admin(self.ctx, req)
        self._show(req, resp, person, account)

    @web.page
    async def on_post(self, req, resp):
        """A new project: its name and language (each error beside its field); then its own page, to set the rest."""
        person, account = await web.require_admin(self.ctx, req)
        form = await web.read_form(req)
        web.check_session_csrf(person, form)
        try:
            project = await projects.create_project(self.ctx, person.admin_principal(account), _new_project(form))
        except ValidationFailed as exc:
            self._show(req, resp, person, account, status=422, new={k: form.get(k, "") for k in NEW_PROJECT},
                       errors=exc.errors)
            return
        raise falcon.HTTPSeeOther(f"{PATH}/{project.status.id}?created=1")


class ProcessingProject:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def _show(self, req, resp, person: SignedIn, account: str, row: processing_settings.ProjectRow, *,
              values: dict[str, str], status: int = 200, errors: list[str] | None = None, saved: bool = False,
              created: bool = False) -> None:
        web.render(req, resp, "settings_processing_project.html", status=status, person=person, account=account,
                   row=row, values=values, errors=_by_field(errors or []), saved=saved, lists=LISTS,
                   general=GENERAL, created=created, site_models=sorted(self.ctx.settings.whisper_models))

    @web.page
    async def on_get(self, req, resp, project_id: int):
        person, account = await web.require_admin(self.ctx, req)
        row = processing_settings.row(self.ctx, person.admin_principal(account), project_id)
        self._show(req, resp, person, account, row, values=_values(row.project), saved=req.get_param("saved") == "1",
                   created=req.get_param("created") == "1")

    @web.page
    async def on_post(self, req, resp, project_id: int):
        person, account = await web.require_admin(self.ctx, req)
        form = await web.read_form(req)
        web.check_session_csrf(person, form)
        principal = person.admin_principal(account)
        stored = processing_settings.row(self.ctx, principal, project_id).project.spec.transcription_model
        try:
            await processing_settings.update(self.ctx, principal, project_id, _changes(form, stored))
        except ValidationFailed as exc:  # the form again, as sent, each error beside its field
            row = processing_settings.row(self.ctx, principal, project_id)
            self._show(req, resp, person, account, row, values=form, status=422, errors=exc.errors)
            return
        raise falcon.HTTPSeeOther(f"{PATH}/{project_id}?saved=1")
