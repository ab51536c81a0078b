"""A form's review queue: per project and agent a random sample of the period's calls, the same every time it is
asked for during the period (a reviewed call keeps its place), plus every automatic fail and low score; through the
real server, and the sampling itself on many calls."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from callscope.catalog.scorecards import Scored
from callscope.resources import Scorecard, ScorecardSpec
from callscope.resources.meta import ObjectMeta
from callscope.services.scorecard_queue import period_of, picked
from tests.api.conftest import create_operator  # noqa: F401 - a fixture
from tests.scorecards.conftest import FORM, LINES
from tests.search.calls import analyse, result

DAY = "2026-11-10"


@pytest.fixture
def catalog_settings(both_catalogs) -> dict:
    return both_catalogs


@pytest.fixture
def call_of(upload, wav, runtime):
    async def make(project_id: int, operator_id: int, day: str, goals: dict[int, bool]) -> str:
        resp = await upload(wav, project_id=project_id, operator_id=operator_id, called_at=f"{day}T10:00:00Z")
        assert resp.status_code == 201, resp.text
        public_id = resp.json()["data"]["public_id"]
        await analyse(runtime, public_id, result(LINES, goals=goals, categories=("billing",)))
        return public_id
    return make


async def test_the_queue_samples_each_agents_calls_and_adds_fails_stable_for_the_period(
        client, admin, make_key, project, analysed_project, create_operator, call_of):
    made = await client.post("/scorecards", headers=admin, json={
        "name": "QA", "project_ids": [project["id"]], "sections": FORM,
        "review": {"calls_per_agent": 2, "period": "month", "below_score": 50}})
    form = made.json()["data"]
    ana, ben = (await create_operator("Ana"))["id"], (await create_operator("Ben"))["id"]
    good = {1: True, 2: True}
    ana_calls = [await call_of(project["id"], ana, DAY, good) for _ in range(4)]
    ben_calls = [await call_of(project["id"], ben, DAY, good) for _ in range(3)]
    failed = await call_of(project["id"], ben, DAY, {1: True, 2: False})  # resolved: no fails its section: 40
    await call_of(project["id"], ana, "2026-12-01", good)  # next month: another period

    async def queue() -> dict:
        resp = await client.get(f"/scorecards/{form['id']}/queue", params={"on": DAY}, headers=admin)
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]

    first = await queue()
    assert (first["period_start"], first["period_end"]) == ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")
    sampled = {c["public_id"] for c in first["calls"] if "sample" in c["reasons"]}
    assert len(sampled & set(ana_calls)) == 2 and len(sampled & {*ben_calls, failed}) == 2
    [fail] = [c for c in first["calls"] if c["public_id"] == failed]
    assert {"auto_failed", "low_score"} <= set(fail["reasons"]) and fail["score"] == 40.0
    assert await queue() == first  # the same every time

    kept = next(p for p in ana_calls if p in sampled)
    reviewed = await client.patch(f"/recordings/{kept}/scorecard", headers=admin,
                                  json={"scorecard_id": form["id"], "answers": [], "reviewed": True})
    assert reviewed.status_code == 200, reviewed.text
    for _ in range(3):  # more of Ana's calls later in the month: the reviewed one keeps its place
        await call_of(project["id"], ana, "2026-11-20", good)
    later = await queue()
    mine = next(c for c in later["calls"] if c["public_id"] == kept)
    assert "sample" in mine["reasons"] and mine["reviewed_by"] == "key-1"
    assert sum("sample" in c["reasons"] and c["operator_id"] == ana for c in later["calls"]) == 2

    assert (await client.get(f"/scorecards/{form['id']}/queue", params={"project_id": 999}, headers=admin)
            ).status_code == 404
    assert (await client.get(f"/scorecards/{form['id']}/queue", params={"on": "soon"}, headers=admin)
            ).status_code == 422
    other = await analysed_project("Sales")
    stranger = await make_key(project_id=other["id"])  # a key of another project sees no form of this one
    assert (await client.get(f"/scorecards/{form['id']}/queue", headers=stranger)).status_code == 404


def test_the_sample_is_random_and_the_same_all_the_period():
    form = Scorecard(metadata=ObjectMeta(name="qa", namespace="default"), spec=ScorecardSpec.model_validate({
        "name": "QA", "sections": [{"name": "A", "weight": 100, "questions": [
            {"id": "q", "text": "Q?", "weight": 100, "answer": {"source": "pauses"}}]}],
        "review": {"callsPerAgent": 3, "belowScore": None}}))
    form.status.id = 7
    start, _ = period_of(datetime(2026, 11, 10, tzinfo=UTC).date(), "month")
    calls = [Scored(i, f"call-{i}", 1, 5, start + timedelta(hours=i), 90.0, False, None, None) for i in range(30)]

    def sample(at: datetime) -> list[int]:
        return [w.call.recording_id for w in picked(calls, form, at)]

    assert len(sample(start)) == 3 and sample(start) == sample(start)
    assert sample(start) != [0, 1, 2]  # not the first calls
    later, _ = period_of(datetime(2026, 12, 10, tzinfo=UTC).date(), "month")
    assert sample(later) != sample(start)  # another period, another sample
    assert period_of(datetime(2026, 11, 12, tzinfo=UTC).date(), "week")[0] == datetime(2026, 11, 9, tzinfo=UTC)
