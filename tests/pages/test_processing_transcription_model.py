"""Settings → Processing's transcription model over plain HTTP, in process, on SQLite and PostgreSQL: a select of the
site's models (CALLSCOPE_WHISPER_MODELS) and the default; the choice written as `PATCH /projects/{id}` writes
`transcription`; a name the site does not have refused beside the field with the API's message, nothing saved; a
model the site has dropped since shown as such and kept while the rest of the form is saved."""

from __future__ import annotations

import re

import pytest

from callscope.resources import Project, ProjectSpec
from callscope.resources.kinds import TranscriptionSpec
from callscope.services.objects import create_with_id
from tests.pages.test_processing_rules import PATH, admin, project, save, spec_of  # noqa: F401 - fixtures

SITE = {"small": "/models/small", "large": "/models/large-v3"}


@pytest.fixture
def settings_overrides() -> dict:
    return {"whisper_models": SITE}


def options(page: str) -> list[tuple[str, bool]]:
    """The select's options: (value, selected)."""
    select = re.search(r'<select id="transcription" name="transcription"[^>]*>(.*?)</select>', page, re.S)
    assert select, page
    return [(value, bool(chosen)) for value, chosen in
            re.findall(r'<option value="([^"]*)"( selected)?>', select.group(1))]


async def test_the_site_s_models_and_the_default_are_offered_and_the_choice_is_saved(runtime, admin, project):
    form = await admin.get(f"{PATH}/{project.status.id}")
    assert options(form.text) == [("", True), ("large", False), ("small", False)]
    resp = await save(admin, project, transcription="large")
    assert resp.status_code == 303, resp.text
    assert spec_of(runtime, project).transcription_model == "large"
    assert options((await admin.get(resp.headers["location"])).text) == [("", False), ("large", True),
                                                                        ("small", False)]
    resp = await save(admin, project, transcription="")  # the default again
    assert resp.status_code == 303 and spec_of(runtime, project).transcription is None


@pytest.mark.parametrize(("value", "message"), [
    ("huge", "transcription.model 'huge' is not a transcription model of this site: it has large, small "
             "(CALLSCOPE_WHISPER_MODELS)"),  # the API's 422, word for word
    ("not a name!", "transcription.model has an invalid format"),
])
async def test_a_name_the_site_does_not_have_is_refused_beside_the_field(runtime, admin, project, value, message):
    resp = await save(admin, project, transcription=value, retention_days="7")
    assert resp.status_code == 422, resp.text
    beside = re.search(r'<ul class="field-errors" id="transcription-errors">(.*?)</ul>', resp.text, re.S)
    assert beside and message in beside.group(1).replace("&#39;", "'"), resp.text
    assert re.search(r'<select id="transcription" name="transcription"[^>]*aria-invalid="true"', resp.text)
    spec = spec_of(runtime, project)
    assert spec.transcription is None and spec.retention_days is None  # nothing saved


async def test_a_model_the_site_dropped_is_shown_and_kept_until_another_is_chosen(runtime, admin):
    dropped = await create_with_id(runtime.ctx, Project, "default", "dropped", ProjectSpec(
        name="Dropped", language="en", transcription=TranscriptionSpec(model="retired")))
    form = await admin.get(f"{PATH}/{dropped.status.id}")
    assert options(form.text)[-1] == ("retired", True) and "retired (not a model of this site)" in form.text
    resp = await save(admin, dropped, transcription="retired")  # the form as shown: the rest is saved
    assert resp.status_code == 303, resp.text
    spec = spec_of(runtime, dropped)
    assert spec.transcription_model == "retired" and spec.retention_days == 30
    resp = await save(admin, dropped, transcription="small")
    assert resp.status_code == 303 and spec_of(runtime, dropped).transcription_model == "small"
