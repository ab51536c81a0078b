"""Settings → Processing over plain HTTP, in process, on SQLite and PostgreSQL: admins only (404 to members, on the
pages and the form); the account's settings as `GET /app/settings` has them; the project form writes what
`PATCH /projects/{id}` writes (and the goals, categories and fields of the Project resource); each validation error
beside its field, one by one, nothing saved; CSRF; another account's project not found; a GitOps-owned project
read-only."""

from __future__ import annotations

import html
import re

import httpx
import pytest

from callscope.resources import Project, ProjectSpec
from callscope.resources.kinds import Goal
from callscope.services import accounts, projects
from callscope.services.objects import create_with_id
from tests.pages.conftest import csrf_of
from tests.pages.test_settings_rules import ADMIN, admin_principal, signed_in

PATH = "/settings/processing"
GOAL = {"id": 1, "name": "Greeting", "description": "The agent greets the caller.", "phrases": ["good morning"],
        "speaker": "agent"}
VALID = {"language": "de", "goal_language": "", "summary_language": "en", "long_pause_threshold_seconds": "4",
         "retention_days": "30", "transcription_hints": "Acme, router",
         "goals": '[{"id": 1, "name": "Greeting", "description": "The agent greets the caller.", '
                  '"phrases": ["good morning"], "speaker": "agent", "withinSeconds": 20}]',
         "categories": '[{"name": "Billing", "keywords": ["invoice"]}]',
         "fields": '[{"name": "plan", "description": "The plan asked about.", "type": "enum", '
                   '"values": ["basic", "pro"]}]'}


@pytest.fixture
async def admin(runtime, pages) -> httpx.AsyncClient:
    await accounts.add_member(runtime.ctx, "default", ADMIN, "Ada", "admin")
    return await signed_in(runtime, pages, ADMIN)


@pytest.fixture
async def project(runtime) -> Project:
    return await create_with_id(runtime.ctx, Project, "default", "support",
                                ProjectSpec(name="Support", language="en", goals=[Goal(**GOAL)]))


def spec_of(runtime, project: Project) -> ProjectSpec:
    return projects.get_project(runtime.ctx, admin_principal(runtime), project.status.id).spec


async def save(client: httpx.AsyncClient, project: Project, **changes) -> httpx.Response:
    path = f"{PATH}/{project.status.id}"
    return await client.post(path, data={"csrf": csrf_of((await client.get(path)).text), **VALID, **changes})


async def test_a_member_gets_not_found_on_the_pages_and_the_form(runtime, member, project):
    token = csrf_of((await member.get("/recordings")).text)
    for path in (PATH, f"{PATH}/{project.status.id}"):
        assert (await member.get(path)).status_code == 404, path
    resp = await member.post(f"{PATH}/{project.status.id}", data={"csrf": token, **VALID})
    assert resp.status_code == 404
    assert spec_of(runtime, project).language == "en"


async def test_a_signed_out_visitor_is_sent_to_sign_in(runtime, pages, project):
    for path in (PATH, f"{PATH}/{project.status.id}"):
        resp = await pages.get(path)
        assert resp.status_code == 303 and resp.headers["location"].startswith("/sign-in?next="), path


async def test_the_account_settings_are_those_of_app_settings_with_the_accounts_projects(runtime, admin, project):
    theirs = await projects.create_project(runtime.ctx, admin_principal(runtime, "other"),
                                           {"name": "Theirs", "language": "en"})
    page = await admin.get(PATH)
    assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
    limits = runtime.ctx.settings.upload_limits_mb
    assert f"WAV {limits['wav']} MB" in page.text and "happy, neutral, calm" in page.text
    assert f'href="{PATH}/{project.status.id}">Support</a>' in page.text and "Theirs" not in page.text
    assert f"{PATH}/{theirs.status.id}" not in page.text
    assert 'aria-current="page">Processing</a>' in page.text


async def test_the_form_shows_the_settings_and_writes_them_as_the_api_does(runtime, admin, project):
    form = await admin.get(f"{PATH}/{project.status.id}")
    assert '"phrases": [\n      "good morning"\n    ]' in html.unescape(form.text)  # the goals in the YAML's shape
    resp = await save(admin, project)
    assert resp.status_code == 303 and resp.headers["location"] == f"{PATH}/{project.status.id}?saved=1"
    spec = spec_of(runtime, project)
    assert (spec.language, spec.goal_language, spec.summary_language) == ("de", None, "en")
    assert (spec.long_pause_threshold_seconds, spec.retention_days) == (4, 30)
    assert spec.transcription_hints == "Acme, router" and spec.name == "Support"
    assert spec.goals[0].within_seconds == 20 and spec.categories[0].keywords == ["invoice"]
    assert spec.fields[0].values == ["basic", "pro"]
    assert "Saved." in (await admin.get(resp.headers["location"])).text
    # Blank clears: no retention, the default pause threshold, no goals.
    resp = await save(admin, project, retention_days="", long_pause_threshold_seconds="", goals="")
    spec = spec_of(runtime, project)
    assert resp.status_code == 303 and (spec.retention_days, spec.long_pause_threshold_seconds, spec.goals) == (
        None, None, [])


async def test_the_form_turns_live_calls_on_with_their_alerts_and_off(runtime, admin, project):
    alerts = '[{"name": "Cancellation", "phrases": ["cancel my subscription"], "speaker": "customer"}]'
    resp = await save(admin, project, live="on", live_alerts=alerts)
    assert resp.status_code == 303, resp.text
    spec = spec_of(runtime, project)
    assert spec.live and [(a.name, a.phrases, a.speaker) for a in spec.live_alerts] == [
        ("Cancellation", ["cancel my subscription"], "customer")]
    form = html.unescape((await admin.get(f"{PATH}/{project.status.id}")).text)
    assert re.search(r'<input type="checkbox" id="live" name="live" checked', form)
    assert '"phrases": [\n      "cancel my subscription"\n    ]' in form and "Live alerts" in form
    resp = await save(admin, project)  # unticked, the alerts left blank
    spec = spec_of(runtime, project)
    assert resp.status_code == 303 and (spec.live, spec.live_alerts) == (False, [])


@pytest.mark.parametrize(("field", "value", "message"), [
    ("language", "", "language"),
    ("language", "not a tag!", "language"),
    ("long_pause_threshold_seconds", "0", "long_pause_threshold_seconds must be greater than or equal to 1"),
    ("long_pause_threshold_seconds", "soon", "long_pause_threshold_seconds"),
    ("retention_days", "40000", "retention_days must be less than or equal to 36500"),
    ("summary_language", "x" * 40, "summary_language"),
    ("goals", "[{", "goals: not valid JSON"),
    ("goals", '{"id": 1}', "goals: must be a JSON list"),
    ("goals", '[{"id": 1, "name": "Greeting"}]', "goals: item 1: description is required"),
    ("goals", '[{"id": 1, "name": "A", "description": "a"}, {"id": 1, "name": "B", "description": "b"}]',
     "goals: goal ids must be unique within the project"),
    ("goals", '[{"id": 1, "name": "A", "description": "a", "speaker": "boss"}]', "goals: item 1: speaker must be"),
    ("categories", "[1]", "categories: item 1 must be an object"),
    ("categories", '[{"name": "Billing", "colour": "red"}]', "categories: item 1: colour"),
    ("fields", '[{"name": "Plan", "description": "x"}]', "fields: item 1: name"),
    ("fields", '[{"name": "plan", "description": "x", "type": "enum"}]', "fields: item 1: an enum field needs values"),
    ("live_alerts", '[{"name": "Cancellation"}]', "live_alerts: item 1: phrases"),
])
async def test_each_error_is_shown_beside_its_field_and_nothing_is_saved(runtime, admin, project, field, value,
                                                                         message):
    resp = await save(admin, project, **{field: value})
    assert resp.status_code == 422, resp.text
    beside = re.search(rf'<ul class="field-errors" id="{field}-errors">(.*?)</ul>', resp.text, re.S)
    assert beside and message in beside.group(1), resp.text
    assert re.search(rf'id="{field}" name="{field}"[^>]*aria-invalid="true"', resp.text)
    assert resp.text.count('class="field-errors"') == 1  # the other fields are fine
    assert spec_of(runtime, project).language == "en"  # nothing saved


@pytest.mark.parametrize("extra", [{"name": "Renamed"}, {"retention": "30"}, {"redaction": "{}"}])
async def test_a_field_the_form_does_not_have_is_refused_and_nothing_is_saved(runtime, admin, project, extra):
    """As the key and webhook forms refuse theirs: a misspelt or unsupported field was dropped without a word."""
    resp = await save(admin, project, **extra)
    assert resp.status_code == 422, resp.text
    field = next(iter(extra))
    assert f"{field}: Extra inputs are not permitted" in resp.text and 'role="alert"' in resp.text
    assert spec_of(runtime, project).language == "en" and spec_of(runtime, project).name == "Support"


@pytest.mark.parametrize("token", [None, "", "wrong"])
async def test_a_missing_or_wrong_csrf_token_is_refused(runtime, admin, project, token):
    data = VALID | ({"csrf": token} if token is not None else {})
    resp = await admin.post(f"{PATH}/{project.status.id}", data=data)
    assert resp.status_code == 400 and "This form has expired" in resp.text
    assert spec_of(runtime, project).language == "en"


async def test_another_accounts_project_is_not_found(runtime, admin, project):
    theirs = await projects.create_project(runtime.ctx, admin_principal(runtime, "other"),
                                           {"name": "Theirs", "language": "en"})
    assert (await admin.get(f"{PATH}/{theirs.status.id}")).status_code == 404
    token = csrf_of((await admin.get(PATH)).text)
    resp = await admin.post(f"{PATH}/{theirs.status.id}", data={"csrf": token, **VALID})
    assert resp.status_code == 404
    assert projects.get_project(runtime.ctx, admin_principal(runtime, "other"), theirs.status.id).spec.language == "en"
    assert (await admin.get(f"{PATH}/99999999999999999999")).status_code == 404  # past the catalog's ids


async def test_a_project_managed_by_gitops_is_read_only(runtime, admin):
    synced = await create_with_id(runtime.ctx, Project, "default", "synced", ProjectSpec(name="Synced", language="en"),
                                  labels={"app.kubernetes.io/managed-by": "argocd"})
    assert 'read-only</span>' in (await admin.get(PATH)).text
    page = await admin.get(f"{PATH}/{synced.status.id}")
    assert "Read-only here" in page.text and "argocd" in page.text and "<fieldset disabled>" in page.text
    resp = await save(admin, synced)
    assert resp.status_code == 409 and "argocd" in resp.text
    assert spec_of(runtime, synced).language == "en"
