"""The API's fixtures (tests/api/conftest.py: an embedded runtime, an HTTP client on its app, keys, projects,
uploads) for the scorecard tests, with a project that has goals, categories and fields a form can name, and calls
analysed through the worker's own completion (workers/outcomes.py), so they are scored where production scores them.
"""

from __future__ import annotations

import pytest
from kube.fixtures import kube_api, kube_api_server  # noqa: F401 - the kubernetes store's API server
from sqlalchemy import select

from callscope.catalog.tables import Recording
from callscope.resources import Project
from callscope.resources.kinds import Category, Goal
from callscope.services import scope
from callscope.services.objects import change_spec
from tests.api.conftest import (  # noqa: F401 - fixtures
    admin,
    catalog_on_both,
    catalog_settings,
    client,
    create_project,
    make_key,
    settings,
    settings_overrides,
    upload,
    wav,
)
from tests.search.calls import analyse, result

GOALS = [{"id": 1, "name": "greeting", "description": "The agent greets the caller and says their name."},
         {"id": 2, "name": "resolution", "description": "The problem is solved."}]
CATEGORIES = [{"name": "billing", "description": "Invoices and payments."}]
LINES = [("agent", "Thank you for calling, my name is Ana.", "calm"),
         ("customer", "I was charged twice on my invoice.", "angry"),
         ("agent", "I am sorry, I will refund the second charge today.", "neutral"),
         ("customer", "Thank you, that is all.", "calm")]


def section(name: str, weight: int, *questions: dict) -> dict:
    return {"name": name, "weight": weight, "questions": list(questions)}


def question(qid: str, weight: int, answer: dict, **fields) -> dict:
    return {"id": qid, "text": f"Question {qid}?", "type": "yes_no", "weight": weight, "answer": answer, **fields}


FORM = [
    section("Opening", 40, question("greeting", 100, {"source": "goal", "goal_id": 1})),
    section("Handling", 60,
            question("billing", 50, {"source": "category", "name": "billing"}),
            question("resolved", 50, {"source": "goal", "goal_id": 2}, auto_fail="section")),
]


@pytest.fixture
def store_settings() -> dict:
    return {"store": "sqlite"}  # forms live in the store; its Kubernetes back end: test_scorecards_resource.py


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def both_catalogs(request) -> dict:
    return catalog_on_both(request)


@pytest.fixture
def analysed_project(create_project, runtime):
    """A project made through the API with goals and categories (which the Project resource and the Settings pages
    set: REST has no field for them); its REST shape."""
    async def make(name: str = "Support", goals=GOALS, categories=CATEGORIES) -> dict:
        made = await create_project(name)
        project = scope.by_id(runtime.ctx, Project, "default", made["id"])

        def add(draft: Project) -> None:
            draft.spec.goals = [Goal(**g) for g in goals]
            draft.spec.categories = [Category(**c) for c in categories]

        await change_spec(runtime.ctx, project, add)
        await runtime.store.sync()
        return made
    return make


@pytest.fixture
async def project(analysed_project) -> dict:
    return await analysed_project()


@pytest.fixture
def call(upload, wav, runtime):
    """A call uploaded through the API and analysed with `lines`, the goals met as `goals` says; its public id."""
    async def make(project_id: int, goals: dict[int, bool], headers=None, lines=LINES, categories=("billing",)) -> str:
        resp = await upload(wav, headers=headers, project_id=project_id)
        assert resp.status_code == 201, resp.text
        public_id = resp.json()["data"]["public_id"]
        await analyse(runtime, public_id, result(lines, goals=goals, categories=categories))
        return public_id
    return make


@pytest.fixture
def reanalyse(runtime):
    async def again(public_id: str, goals: dict[int, bool], lines=LINES, categories=("billing",)) -> None:
        await analyse(runtime, public_id, result(lines, goals=goals, categories=categories), again=True)
    return again


def recording_id(runtime, public_id: str) -> int:
    with runtime.catalog.session() as session:
        return session.scalar(select(Recording.id).where(Recording.public_id == public_id))
