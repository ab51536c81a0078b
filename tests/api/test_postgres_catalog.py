"""The API wired to a PostgreSQL catalog: ids, usage, call stats and shared rate limits there."""

from __future__ import annotations

import pytest

from callscope.catalog.usage import read_usage
from callscope.services import keys as key_service

pytestmark = pytest.mark.postgres


@pytest.fixture
def settings_overrides(emptied_postgres_url):
    return {"database_url": emptied_postgres_url, "rate_limit_enabled": True, "virtual_number_purchase_paused": False}


async def test_objects_get_ids_from_the_postgres_allocator(client, admin, create_project, create_operator, runtime):
    first, second = await create_project("A"), await create_project("B")
    assert second["id"] == first["id"] + 1
    operator = await create_operator(project_id=first["id"])
    assert operator["recording_project_ids"] == [first["id"]]
    assert runtime.catalog.dialect == "postgresql"


async def test_usage_and_rate_limits_live_in_postgres(client, make_key, runtime):
    headers = await make_key("read", rate_limit=2)
    statuses = [(await client.get("/projects", headers=headers)).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    await runtime.usage.flush()
    key = key_service.list_keys(runtime.ctx, "default")[0]
    usage = runtime.catalog.query(read_usage, [key.metadata.uid])[key.metadata.uid]
    assert usage.total_requests == 3 and usage.total_errors == 1


async def test_number_detail_reads_stats_from_postgres(client, admin):
    candidate = (await client.get("/virtual_numbers/available", headers=admin)).json()["data"][0]
    number = (await client.post("/virtual_numbers/purchase", json={"phone_number": candidate["phone_number"]},
                                headers=admin)).json()["data"]
    detail = (await client.get(f"/virtual_numbers/{number['id']}", headers=admin)).json()["data"]
    assert detail["stats"]["total_calls"] == 0 and detail["recent_calls"] == []
