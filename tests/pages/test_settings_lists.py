"""Settings → Processing: a project's goals, categories and fields as rows, and a new project made in the app, over
plain HTTP in process on SQLite and PostgreSQL: a row edited, one added, one removed, what the rows do not show kept;
each model error beside its field (the first focused), nothing saved; the service's rules (a repeated goal id) above
the rows; CSRF; members and another account's project get 404; a new project needs a name and a language."""

from __future__ import annotations

import html
import re

import httpx
import pytest

from callscope.resources import Project, ProjectSpec
from callscope.resources.kinds import Goal, GoalSituation
from callscope.services import accounts, projects
from callscope.services.objects import create_with_id
from tests.pages.conftest import MEMBER, csrf_of
from tests.pages.test_settings_rules import ADMIN, admin_principal, signed_in

PATH = "/settings/processing"
GREETING = Goal(id=1, name="Greeting", description="The agent greets the caller.", phrases=["good morning"],
                speaker="agent")
HOLD = Goal(id=2, name="Hold", description="The agent asks the caller to hold.", applies_when=GoalSituation(
    long_pause=True))


@pytest.fixture
async def admin(runtime, pages) -> httpx.AsyncClient:
    await accounts.add_member(runtime.ctx, "default", ADMIN, "Ada", "admin")
    return await signed_in(runtime, pages, ADMIN)


@pytest.fixture
async def project(runtime) -> Project:
    return await create_with_id(runtime.ctx, Project, "default", "support",
                                ProjectSpec(name="Support", language="en", goals=[GREETING, HOLD]))


def spec_of(runtime, project_id: int) -> ProjectSpec:
    return projects.get_project(runtime.ctx, admin_principal(runtime), project_id).spec


def errors_beside(page: httpx.Response, field_id: str) -> list[str]:
    found = re.search(rf'<ul class="field-errors" id="{field_id}-errors">(.*?)</ul>', page.text, re.S)
    return [html.unescape(e) for e in re.findall(r"<li>(.*?)</li>", found[1])] if found else []


async def test_goals_are_edited_added_and_removed_as_rows_keeping_what_rows_do_not_show(runtime, admin, project):
    url = f"{PATH}/{project.status.id}/goals"
    page = await admin.get(url)
    assert page.status_code == 200
    assert 'value="Greeting"' in page.text and "good morning</textarea>" in page.text and "New goal" in page.text
    resp = await admin.post(url, data={
        "csrf": csrf_of(page.text),
        "0.key": "0", "0.name": "Greeting", "0.description": "The agent greets the caller and gives their name.",
        "0.phrases": "good morning\nmy name is\n", "0.speaker": "agent", "0.within_seconds": "20",
        "1.key": "1", "1.name": "Hold", "1.description": "The agent asks the caller to hold, politely.",
        "1.phrases": "", "1.speaker": "any", "1.within_seconds": "",
        "2.key": "", "2.name": "Closing", "2.description": "The agent offers further help.", "2.phrases": "",
        "2.speaker": "agent", "2.within_seconds": ""})
    assert resp.status_code == 303 and resp.headers["location"] == f"{url}?saved=1"
    goals = spec_of(runtime, project.status.id).goals
    assert [(g.id, g.name, g.phrases, g.within_seconds) for g in goals] == [
        (1, "Greeting", ["good morning", "my name is"], 20), (2, "Hold", [], None), (3, "Closing", [], None)]
    assert goals[1].applies_when == HOLD.applies_when  # not on the rows: kept
    page = await admin.get(url)
    removed = await admin.post(url, data={"csrf": csrf_of(page.text), "0.key": "0", "0.name": "Greeting",
                                          "0.description": "Greets.", "1.key": "1", "1.remove": "on",
                                          "2.key": "2", "2.remove": "on"})
    assert removed.status_code == 303
    assert [g.name for g in spec_of(runtime, project.status.id).goals] == ["Greeting"]


async def test_each_error_is_beside_its_field_the_first_focused_and_nothing_saved(runtime, admin, project):
    url = f"{PATH}/{project.status.id}/goals"
    page = await admin.get(url)
    resp = await admin.post(url, data={"csrf": csrf_of(page.text), "0.key": "0", "0.name": "Greeting",
                                       "0.description": "", "0.within_seconds": "soon",
                                       "2.key": "", "2.name": "Closing", "2.description": "Offers help."})
    assert resp.status_code == 422
    assert errors_beside(resp, "r0-description") == ["description is required"]
    assert errors_beside(resp, "r0-within_seconds")
    assert re.search(r'id="r0-description" name="0.description"[^>]*aria-invalid="true"[^>]*autofocus', resp.text)
    assert resp.text.count("autofocus") == 1
    assert 'value="Closing"' in resp.text  # the rows as sent
    assert spec_of(runtime, project.status.id).goals == [GREETING, HOLD]
    page = await admin.get(url)
    twice = await admin.post(f"{PATH}/{project.status.id}/categories", data={
        "csrf": csrf_of(page.text), "0.name": "Billing", "1.name": "Billing"})
    assert twice.status_code == 422 and 'id="form-errors"' in twice.text and "Billing" in twice.text
    assert spec_of(runtime, project.status.id).categories == []


async def test_fields_rows_take_an_enum_with_its_values(runtime, admin, project):
    url = f"{PATH}/{project.status.id}/fields"
    page = await admin.get(url)
    resp = await admin.post(url, data={"csrf": csrf_of(page.text), "0.name": "Plan Name", "0.description": "The plan.",
                                       "0.type": "enum", "0.values": "basic\npro"})
    assert resp.status_code == 422 and errors_beside(resp, "r0-name")
    resp = await admin.post(url, data={"csrf": csrf_of(page.text), "0.name": "plan", "0.description": "The plan.",
                                       "0.type": "enum", "0.values": "basic\npro"})
    assert resp.status_code == 303
    [field] = spec_of(runtime, project.status.id).fields
    assert (field.name, field.type, field.values) == ("plan", "enum", ["basic", "pro"])


async def test_without_the_forms_token_or_as_a_member_or_for_another_account_nothing_is_saved(runtime, admin, project,
                                                                                          pages):
    url = f"{PATH}/{project.status.id}/goals"
    forged = await admin.post(url, data={"csrf": "forged", "0.key": "0", "0.remove": "on"})
    assert forged.status_code == 400
    theirs = await create_with_id(runtime.ctx, Project, "other", "theirs", ProjectSpec(name="Theirs", language="en"))
    assert (await admin.get(f"{PATH}/{theirs.status.id}/goals")).status_code == 404
    assert (await admin.get(f"{PATH}/{project.status.id}/tags")).status_code == 404
    await accounts.add_member(runtime.ctx, "default", MEMBER, "Ana")
    member = await signed_in(runtime, pages, MEMBER)
    assert (await member.get(url)).status_code == 404
    assert spec_of(runtime, project.status.id).goals == [GREETING, HOLD]


async def test_a_project_is_created_in_the_app_with_its_name_and_language(runtime, admin):
    page = await admin.get(PATH)
    assert 'id="new-project"' in page.text
    refused = await admin.post(PATH, data={"csrf": csrf_of(page.text), "name": "Sales", "language": "not a language"})
    assert refused.status_code == 422 and errors_beside(refused, "new-language")
    assert 'id="new-language"' in refused.text and "autofocus" in refused.text and 'value="Sales"' in refused.text
    made = await admin.post(PATH, data={"csrf": csrf_of(page.text), "name": "Sales", "language": "de"})
    assert made.status_code == 303 and made.headers["location"].endswith("?created=1")
    project_id = int(made.headers["location"].split("/")[-1].split("?")[0])
    assert (spec_of(runtime, project_id).name, spec_of(runtime, project_id).language) == ("Sales", "de")
    shown = await admin.get(made.headers["location"])
    assert 'id="created"' in shown.text and f'href="{PATH}/{project_id}/goals"' in shown.text


ODD = ["%00", "a%00b", "%1B", "%FF", "%C3%28", "%0D%0A", "x" * 5000, "99999999999999999999999", "-1", "1e3"]


@pytest.mark.parametrize("kind", ["goals", "categories", "fields"])
async def test_no_row_field_answers_5xx(admin, project, kind):
    url = f"{PATH}/{project.status.id}/{kind}"
    token = csrf_of((await admin.get(url)).text)
    names = {"goals": ["name", "description", "phrases", "speaker", "within_seconds"],
             "categories": ["name", "description", "keywords"], "fields": ["name", "description", "type", "values"]}
    for value in ODD:
        for field in [*names[kind], "key", "remove"]:
            for row in ("0", "9999", "99999"):
                body = f"csrf={token}&{row}.{field}={value}&{row}.name=Named&{row}.description=Described."
                resp = await admin.post(url, content=body.encode(),
                                        headers={"Content-Type": "application/x-www-form-urlencoded"})
                assert resp.status_code < 500 and ("<html" in resp.text or resp.status_code == 303), (field, row,
                                                                                                      value[:20])
