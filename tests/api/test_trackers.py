"""A project's trackers (saved searches) on SQLite and PostgreSQL: set through POST/PATCH /projects and `callscope
apply`, validated one rule at a time with the spec's 422 (the query by search's own parser); each analysed call
records where it matched them, exactly the segments `GET /search` finds for the same query, shown in its results;
replaced by a re-analysis, gone with the recording; a tracker added, changed or removed after the calls applies to
them through the tracker pass (never inside the request); and nothing crosses accounts."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from callscope.catalog.tables import RecordingTracker, TrendTrackerDay
from callscope.errors import ValidationFailed
from callscope.operator.handlers import reconcile
from callscope.resources import Project
from callscope.services import trackers
from callscope.services.apply import apply_documents
from tests.api.conftest import catalog_on_both, count_rows
from tests.search.calls import analyse, result, text_embedder, use_embedder  # noqa: F401 - a fixture

LINES = [
    ("agent", "Thank you for calling, how can I help?", "calm"),
    ("customer", "I would like a refund today please", "angry"),
    ("agent", "Refunds are processed within five days", "neutral"),
    ("customer", "Then cancel my subscription", "angry"),
    ("agent", "Please cancel the order instead", "neutral"),
    ("customer", "Can you return what I paid for the order?", "sad"),
    ("agent", "The weather is lovely today", "happy"),
]
REFUND = {"name": "Refund", "query": "refund", "mode": "keyword"}
CANCEL = {"name": "Cancel", "query": "cancel -subscription", "mode": "keyword"}
MONEY_BACK = {"name": "Money back", "query": "money back", "mode": "meaning"}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_settings(request) -> dict:
    return catalog_on_both(request)


@pytest.fixture
def store_settings() -> dict:
    return {"store": "sqlite"}  # trackers live in the Project's spec; the store's back ends are tested elsewhere


@pytest.fixture(autouse=True)
def embedder(runtime, text_embedder):
    use_embedder(runtime, text_embedder)


@pytest.fixture
def call(upload, wav, runtime):
    async def make(lines, headers=None, **fields) -> str:
        resp = await upload(wav, headers=headers, **fields)
        assert resp.status_code == 201, resp.text
        public_id = resp.json()["data"]["public_id"]
        await analyse(runtime, public_id, result(lines))
        return public_id
    return make


@pytest.fixture
def matched(client, admin):
    """The trackers a recording's results say it matched: name -> start seconds of each moment."""
    async def get(public_id: str, headers=None) -> dict[str, list[float]]:
        resp = await client.get(f"/recordings/{public_id}/results", headers=headers or admin)
        assert resp.status_code == 200, resp.text
        return {t["name"]: [m["start_ms"] / 1000 for m in t["moments"]] for t in resp.json()["data"]["trackers"]}
    return get


def tracker_calls(runtime) -> int:
    """The calls the trends' tracker sums count, every tracker and slice together."""
    with runtime.catalog.session() as session:
        return session.scalar(select(func.coalesce(func.sum(TrendTrackerDay.calls), 0)))


# ----- the project's body ---------------------------------------------------------------------------------------

async def test_trackers_are_set_on_create_replaced_by_patch_and_cleared_with_null(client, admin, create_project):
    made = await create_project("Support", trackers=[REFUND, MONEY_BACK])
    assert made["trackers"] == [REFUND, MONEY_BACK]
    assert (await create_project("Plain"))["trackers"] == []
    url = f"/projects/{made['id']}"
    assert (await client.get(url, headers=admin)).json()["data"]["trackers"] == [REFUND, MONEY_BACK]
    resp = await client.patch(url, json={"trackers": [{"name": "Cancel", "query": "cancel -subscription"}]},
                              headers=admin)
    assert resp.status_code == 200 and resp.json()["data"]["trackers"] == [CANCEL]  # mode: keyword by default
    assert (await client.patch(url, json={"name": "Renamed"}, headers=admin)).json()["data"]["trackers"] == [CANCEL]
    resp = await client.patch(url, json={"trackers": None}, headers=admin)
    assert resp.status_code == 200 and resp.json()["data"]["trackers"] == []


@pytest.mark.parametrize(("trackers", "message"), [
    ([{"name": "", "query": "refund"}], "trackers.0.name must not be blank"),
    ([{"name": "x" * 101, "query": "refund"}], "trackers.0.name is too long (maximum is 100 characters)"),
    ([{"name": "A\u202eB", "query": "refund"}], "trackers.0.name must not be blank or contain control characters"),
    ([{"query": "refund"}], "trackers.0.name is required"),
    ([{"name": "Refund"}], "trackers.0.query is required"),
    ([{"name": "Refund", "query": "  "}], "trackers.0.query must not be blank or contain control characters"),
    ([{"name": "Refund", "query": "refund\x00"}], "trackers.0.query must not be blank or contain control characters"),
    ([{"name": "Refund", "query": "x" * 501}], "trackers.0.query is too long (maximum is 500 characters)"),
    ([{"name": "Refund", "query": "'&|!:*()<>\"\\"}], "trackers.0.query has no word to search for (letters or digits)"),
    ([{"name": "Refund", "query": "-refund"}], "trackers.0.query must name a word to find, not only words to leave"),
    ([{"name": "Refund", "query": " ".join(["refund"] * 33)}], "trackers.0.query has too many words (maximum is 32)"),
    ([{"name": "Refund", "query": "refund", "mode": "hybrid"}], "trackers.0.mode must be one of: keyword, meaning"),
    ([REFUND, {**CANCEL, "name": "Refund"}], "trackers must not repeat a name (Refund)"),
    ([{"name": f"T{n}", "query": "refund"} for n in range(51)], "trackers must have at most 50 items"),
    ("refund", "trackers must be an array"),
    (["refund"], "trackers.0 must be an object"),
])
async def test_bad_trackers_are_422_naming_the_rule_on_create_and_patch(client, admin, create_project, trackers,
                                                                        message):
    resp = await client.post("/projects", json={"name": "X", "language": "en", "trackers": trackers}, headers=admin)
    assert resp.status_code == 422 and len(resp.json()["errors"]) == 1, resp.text
    assert resp.json()["errors"][0].startswith(message)
    made = await create_project("Y")
    resp = await client.patch(f"/projects/{made['id']}", json={"trackers": trackers}, headers=admin)
    assert resp.status_code == 422 and resp.json()["errors"][0].startswith(message)


def project_yaml(trackers) -> dict:
    return {"apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "support"},
            "spec": {"name": "Support", "language": "en", "trackers": trackers}}


@pytest.mark.parametrize(("trackers", "message"), [
    ([{"name": "Refund", "query": "-refund"}],
     "Project support: spec.trackers.0.query: must name a word to find, not only words to leave out"),
    ([{"name": "Refund", "query": "&&"}], "Project support: spec.trackers.0.query: has no word to search for"),
    ([{"name": "Refund", "query": "x" * 501}], "Project support: spec.trackers.0.query: String should have at most"),
    ([{"name": "Refund", "query": "refund", "mode": "hybrid"}], "Project support: spec.trackers.0.mode: Input"),
    ([{"name": "x" * 101, "query": "refund"}], "Project support: spec.trackers.0.name: String should have at most"),
    ([{"name": "Refund", "query": "a"}, {"name": "Refund", "query": "b"}],
     "Project support: spec.trackers: must not repeat a name (Refund)"),
])
async def test_callscope_apply_refuses_the_same_trackers(runtime, trackers, message):
    with pytest.raises(ValidationFailed) as refused:
        await apply_documents(runtime.ctx, [project_yaml(trackers)], "default")
    assert len(refused.value.errors) == 1 and refused.value.errors[0].startswith(message), refused.value.errors


async def test_callscope_apply_sets_trackers_the_api_then_shows(runtime, client, admin):
    [(applied, _)] = await apply_documents(runtime.ctx, [project_yaml([REFUND, MONEY_BACK])], "default")
    await runtime.store.sync()
    project = await reconcile(runtime.ctx, runtime.store.cached_get(Project, "default", applied.name))  # its id
    await runtime.store.sync()
    got = (await client.get(f"/projects/{project.status.id}", headers=admin)).json()["data"]
    assert got["trackers"] == [REFUND, MONEY_BACK]


# ----- matching ---------------------------------------------------------------------------------------------------

async def test_a_call_records_where_it_matched_each_tracker_as_search_finds_it(client, admin, create_project, call,
                                                                              matched):
    project = await create_project("Support", trackers=[REFUND, CANCEL, MONEY_BACK,
                                                        {"name": "Lawyer", "query": "lawyer"}])
    public_id = await call(LINES, project_id=project["id"])
    found = await matched(public_id)
    assert found["Refund"] == [5.0, 10.0]  # refund, refunds: stemmed
    assert found["Cancel"] == [20.0]  # not the segment with the subscription
    assert "Lawyer" not in found  # never said: not listed
    for tracker in (REFUND, CANCEL, MONEY_BACK):  # exactly the moments search finds for the same query
        hits = (await client.get("/search", params={"q": tracker["query"], "mode": tracker["mode"], "per_page": 100,
                                                    "project_id": project["id"]}, headers=admin)).json()["data"]
        assert sorted(hit["start"] for hit in hits) == found[tracker["name"]], tracker
    assert 25.0 in found["Money back"]  # "return what I paid": no word in common
    assert 30.0 not in found["Money back"]  # the weather


async def test_reanalysis_replaces_the_moments_and_deletion_takes_them_away(runtime, client, admin, create_project,
                                                                           call, matched):
    project = await create_project("Support", trackers=[REFUND, CANCEL])
    first = await call(LINES, project_id=project["id"])
    second = await call([("customer", "A refund please")], project_id=project["id"])
    assert tracker_calls(runtime) == 3  # a call counted once per tracker it matched (no operator: one slice)
    await analyse(runtime, first, result([("customer", "Cancel it, no money back")]), again=True)
    assert await matched(first) == {"Cancel": [0.0]}
    assert await matched(second) == {"Refund": [0.0]}
    assert (await client.delete(f"/recordings/{first}", headers=admin)).status_code == 204
    assert (await client.delete(f"/projects/{project['id']}", headers=admin)).status_code == 204
    assert count_rows(runtime, RecordingTracker) == 0 and tracker_calls(runtime) == 0


async def test_a_tracker_added_changed_or_removed_applies_to_the_calls_analysed_before(runtime, client, admin,
                                                                                      create_project, call, matched):
    project = await create_project("Support")
    public_id = await call(LINES, project_id=project["id"])
    assert await matched(public_id) == {}
    url = f"/projects/{project['id']}"
    assert (await client.patch(url, json={"trackers": [REFUND]}, headers=admin)).status_code == 200
    assert await matched(public_id) == {}  # the request does not match the calls: the tracker pass does
    assert await trackers.match_projects(runtime.ctx) == 1
    assert await matched(public_id) == {"Refund": [5.0, 10.0]}
    assert await trackers.match_projects(runtime.ctx) == 0  # nothing left to do
    await client.patch(url, json={"trackers": [{**REFUND, "query": '"refund today"'}, CANCEL]}, headers=admin)
    assert await trackers.match_projects(runtime.ctx) == 1
    assert await matched(public_id) == {"Refund": [5.0], "Cancel": [20.0]}
    await client.patch(url, json={"trackers": None}, headers=admin)
    assert await trackers.match_projects(runtime.ctx) == 1
    assert await matched(public_id) == {} and count_rows(runtime, RecordingTracker) == 0
    assert tracker_calls(runtime) == 0


async def test_a_pass_over_many_calls_matches_each_once_a_batch_at_a_time(runtime, client, admin, create_project,
                                                                          call, matched, monkeypatch):
    project = await create_project("Support")
    calls = [await call([("customer", f"Refund number {n}")], project_id=project["id"]) for n in range(5)]
    await client.patch(f"/projects/{project['id']}", json={"trackers": [REFUND]}, headers=admin)
    monkeypatch.setattr(trackers, "BATCH", 2)
    assert await trackers.match_projects(runtime.ctx) == 5
    assert [await matched(public_id) for public_id in calls] == [{"Refund": [0.0]}] * 5
    assert tracker_calls(runtime) == 5


async def test_a_call_moved_to_another_project_is_matched_against_its_trackers(runtime, client, admin,
                                                                              create_project, call, matched):
    a = await create_project("A", trackers=[REFUND])
    b = await create_project("B", trackers=[CANCEL])
    public_id = await call(LINES, project_id=a["id"])
    assert await matched(public_id) == {"Refund": [5.0, 10.0]}
    resp = await client.patch(f"/recordings/{public_id}", json={"project_id": b["id"]}, headers=admin)
    assert resp.status_code == 200, resp.text
    assert await matched(public_id) == {}  # not A's any more
    assert await trackers.match_projects(runtime.ctx) == 1
    assert await matched(public_id) == {"Cancel": [20.0]}


async def test_nothing_of_another_account_is_matched_or_shown(runtime, client, make_key, create_project, call,
                                                             matched):
    ours = await create_project("Ours", trackers=[REFUND])
    other = await make_key(account="other")
    theirs = (await client.post("/projects", json={"name": "Theirs", "language": "en", "trackers": [CANCEL]},
                                headers=other)).json()["data"]
    mine = await call(LINES, project_id=ours["id"])
    their_call = await call(LINES, headers=other, project_id=theirs["id"])
    assert await matched(mine) == {"Refund": [5.0, 10.0]}
    assert await matched(their_call, headers=other) == {"Cancel": [20.0]}
    assert (await client.get(f"/recordings/{their_call}/results", headers=await make_key())).status_code == 404
    with runtime.catalog.session() as session:
        per_account = dict(session.execute(select(TrendTrackerDay.account, TrendTrackerDay.tracker)
                                           .where(TrendTrackerDay.calls > 0).distinct()).all())
    assert per_account == {"default": "Refund", "other": "Cancel"}
