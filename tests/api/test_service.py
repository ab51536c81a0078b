"""Errors everywhere in the spec's shape, app settings, rate limiting, health and metrics."""

from __future__ import annotations

import httpx
import pytest

from callscope.api.app import create_app
from callscope.ratelimit import build_rate_limiter
from tests.api.conftest import BASE


async def test_unknown_route_is_404_json(client, admin):
    resp = await client.get("/nothing/here", headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})


async def test_non_integer_id_is_404_json(client, admin):
    resp = await client.get("/projects/abc", headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})


async def test_unsupported_method_is_405_json(client, admin):
    resp = await client.put("/projects", headers=admin, json={})
    assert resp.status_code == 405
    assert resp.json() == {"error": "Method not allowed"}


async def test_wrong_content_type_is_400(client, admin):
    resp = await client.post("/projects", content=b"name=x", headers={**admin, "Content-Type": "text/plain"})
    assert (resp.status_code, resp.json()) == (400, {"error": "Content-Type must be application/json"})


async def test_non_integer_query_parameter_is_422(client, admin):
    resp = await client.get("/tags", params={"project_id": "abc"}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["project_id must be an integer"]})


async def test_app_settings(client, make_key, create_project):
    project = await create_project()
    headers = await make_key("read", project_id=project["id"])
    resp = await client.get("/app/settings", headers=headers)
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data["account"] == "default" and data["default_language"] == "en"
    assert data["audio_formats"] == ["flac", "m4a", "mp3", "ogg", "wav", "webm"]
    assert data["upload_limits_bytes"]["wav"] == 500_000_000 and data["upload_limits_bytes"]["mp3"] == 100_000_000
    assert len(data["emotion_classes"]) == 8
    assert data["api_key"]["permissions"] == ["read"] and data["api_key"]["project_id"] == project["id"]
    assert data["virtual_number_purchase_paused"] is True


async def test_no_rate_limit_headers_when_limiting_is_off(client, make_key):
    resp = await client.get("/projects", headers=await make_key(rate_limit=1))
    resp = await client.get("/projects", headers=await make_key(rate_limit=1))
    assert resp.status_code == 200 and "X-RateLimit-Limit" not in resp.headers


@pytest.fixture(params=["database", pytest.param("redis", marks=pytest.mark.redis)])
def rate_limited_settings(request):
    if request.param == "redis":
        return {"rate_limit_enabled": True, "rate_limit_backend": "redis",
                "redis_url": request.getfixturevalue("redis_url")}
    return {"rate_limit_enabled": True}


@pytest.fixture
def settings_overrides(request):
    """Tests that ask for `rate_limited_settings` run with limiting on, once per back end."""
    return request.getfixturevalue("rate_limited_settings") if "rate_limited_settings" in request.fixturenames else {}


async def test_rate_limited_per_key(rate_limited_settings, client, make_key):
    limited = await make_key(rate_limit=2)
    for remaining in (1, 0):
        resp = await client.get("/projects", headers=limited)
        assert resp.status_code == 200
        assert resp.headers["X-RateLimit-Limit"] == "2"
        assert resp.headers["X-RateLimit-Remaining"] == str(remaining)
        assert int(resp.headers["X-RateLimit-Reset"]) > 0
    resp = await client.get("/projects", headers=limited)
    assert resp.status_code == 429
    body = resp.json()
    assert body["error"] == "Rate limit exceeded" and isinstance(body["retry_after"], int) and body["retry_after"] >= 1
    assert resp.headers["Retry-After"] == str(body["retry_after"])
    other = await make_key(rate_limit=2)
    assert (await client.get("/projects", headers=other)).status_code == 200


async def test_rate_limited_counts_are_shared_between_api_processes(rate_limited_settings, runtime, make_key):
    """Two app instances (two API processes) on one catalog share each key's count."""
    headers = await make_key(rate_limit=3)
    limiters = [runtime.limiter, build_rate_limiter(runtime.settings, runtime.catalog)]
    apps = [create_app(runtime.ctx, runtime.usage, limiter) for limiter in limiters]
    statuses = []
    for i in range(4):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=apps[i % 2]), base_url=BASE) as http:
            statuses.append((await http.get("/projects", headers=headers)).status_code)
    assert statuses == [200, 200, 200, 429]


async def test_healthz_and_metrics(client, admin):
    async with httpx.AsyncClient(transport=client._transport, base_url="http://callscope.test") as root:
        resp = await root.get("/healthz")
        assert resp.status_code == 200 and resp.json()["status"] == "ok"
        await client.get("/projects", headers=admin)
        metrics = await root.get("/metrics")
        assert metrics.status_code == 200
        assert ('callscope_http_requests_total{method="GET",route="/api/v1/public/projects",status="200"}'
                in metrics.text)


async def test_openapi_document_lists_every_public_operation(client):
    resp = await client.get("/openapi.json")
    assert resp.status_code == 200
    doc = resp.json()
    assert doc["openapi"] == "3.1.0"
    ops = {(m.upper(), p) for p, item in doc["paths"].items() for m in item}
    prefix = "/api/v1/public"
    expected = {
        ("GET", "/projects"), ("POST", "/projects"), ("GET", "/projects/{id}"), ("PATCH", "/projects/{id}"),
        ("DELETE", "/projects/{id}"), ("GET", "/operators"), ("POST", "/operators"), ("GET", "/operators/{id}"),
        ("PATCH", "/operators/{id}"), ("POST", "/operators/{id}/add_project"),
        ("DELETE", "/operators/{id}/remove_project"), ("GET", "/virtual_numbers"), ("GET", "/virtual_numbers/{id}"),
        ("PATCH", "/virtual_numbers/{id}"), ("GET", "/virtual_numbers/available"),
        ("POST", "/virtual_numbers/purchase"), ("POST", "/virtual_numbers/{id}/add_operator"),
        ("DELETE", "/virtual_numbers/{id}/remove_operator"), ("GET", "/tags"), ("POST", "/tags"),
        ("DELETE", "/tags/{id}"), ("GET", "/app/settings"),
        ("POST", "/recordings"), ("GET", "/recordings"), ("GET", "/recordings/filters"), ("GET", "/recordings/{id}"),
        ("PATCH", "/recordings/{id}"), ("DELETE", "/recordings/{id}"), ("GET", "/recordings/{id}/audio_url"),
        ("GET", "/recordings/{id}/transcription"), ("GET", "/recordings/{id}/results"),
        ("GET", "/recordings/{id}/summary"), ("POST", "/recordings/{id}/shares"), ("GET", "/recordings/{id}/shares"),
        ("DELETE", "/recordings/{id}/shares/{share_id}"), ("GET", "/search"), ("GET", "/recordings/{id}/live"),
        ("POST", "/scorecards"), ("GET", "/scorecards"), ("GET", "/scorecards/{id}"), ("PATCH", "/scorecards/{id}"),
        ("DELETE", "/scorecards/{id}"), ("GET", "/scorecards/{id}/queue"), ("GET", "/recordings/{id}/scorecard"),
        ("PATCH", "/recordings/{id}/scorecard"), ("GET", "/recordings/{id}/notes"), ("POST", "/recordings/{id}/notes"),
        ("DELETE", "/recordings/{id}/notes/{note_id}"),
    }
    assert ops == {(m, prefix + p) for m, p in expected}


async def test_every_reference_in_the_openapi_document_resolves_in_it(client):
    doc = (await client.get("/openapi.json")).json()

    def refs(node):
        if isinstance(node, dict):
            yield from ([node["$ref"]] if isinstance(node.get("$ref"), str) else [])
            for value in node.values():
                yield from refs(value)
        elif isinstance(node, list):
            for item in node:
                yield from refs(item)

    def resolves(ref: str) -> bool:
        node = doc
        for part in ref.removeprefix("#/").split("/"):
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return ref.startswith("#/")

    assert [ref for ref in set(refs(doc)) if not resolves(ref)] == []
    status = next(p for p in doc["paths"]["/api/v1/public/recordings"]["get"]["parameters"] if p["name"] == "status")
    assert set(status["schema"]["enum"]) == {"pending", "processing", "completed", "failed"}
