"""End to end: the Kopf controller (operator/main.py), run in-process against the emulated
Kubernetes API server (tests/kube), with the kubernetes store; objects are written through the API
server as kubectl would."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import kopf
import pytest

from callscope.operator.main import FINALIZER, controller_memo, registry
from callscope.runtime import opened
from callscope.services.tags import PALETTE

NS = "acme"
API = "/apis/callscope.io/v1alpha1"
TIMEOUT = 20.0

pytestmark = pytest.mark.timeout(90)


def path(plural: str, name: str | None = None, ns: str = NS) -> str:
    return f"{API}/namespaces/{ns}/{plural}" + (f"/{name}" if name else "")


async def eventually(check: Callable[[], Awaitable[Any]], what: str, timeout: float = TIMEOUT) -> Any:
    """Poll `check` until it returns something truthy; fail with `what` and the last value otherwise."""
    deadline = asyncio.get_running_loop().time() + timeout
    last: Any = None
    while asyncio.get_running_loop().time() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}; last seen: {last!r}")


def condition(obj: dict, kind: str) -> dict | None:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == kind), None)


@pytest.fixture
async def kube(kube_api):
    async with httpx.AsyncClient(base_url=kube_api.url, timeout=10) as client:
        response = await client.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                                  "metadata": {"name": NS}})
        assert response.status_code == 201, response.text
        yield client


@pytest.fixture
async def operator(kube_api, kube, tmp_path, monkeypatch):
    """The controller as `callscope controller --standalone` runs it, on an event loop of its own (a thread): on
    stopping, Kopf waits up to 5 s for every task of its loop it did not start from, and the test's teardown is one
    such task on a shared loop."""
    monkeypatch.setenv("CALLSCOPE_STORE", "kubernetes")
    monkeypatch.setenv("CALLSCOPE_KUBECONFIG", str(kube_api.kubeconfig))
    monkeypatch.setenv("CALLSCOPE_DATA_DIR", str(tmp_path / "operator-data"))
    monkeypatch.setenv("CALLSCOPE_LOG_LEVEL", "WARNING")
    # The analysis dispatcher (a local Ray) and webhook delivery have tests of their own (tests/queue,
    # tests/webhooks); a Ray started inside the pytest process would outlive the operator here.
    monkeypatch.setenv("CALLSCOPE_DISPATCHER_ENABLED", "false")
    monkeypatch.setenv("CALLSCOPE_WEBHOOK_DELIVERY_ENABLED", "false")
    stop, ready = threading.Event(), threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(kopf.operator(registry=registry, standalone=True, clusterwide=True, stop_flag=stop,
                                      ready_flag=ready, memo=controller_memo(opened)))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            failed.append(exc)

    thread = threading.Thread(target=run, name="kopf", daemon=True)
    thread.start()
    if not await asyncio.to_thread(ready.wait, TIMEOUT):
        stop.set()
        raise failed[0] if failed else AssertionError("the operator did not get ready")
    yield kube_api
    stop.set()
    await asyncio.to_thread(thread.join, TIMEOUT)
    assert not thread.is_alive(), "the operator did not stop"


async def create(kube: httpx.AsyncClient, plural: str, kind: str, name: str, spec: dict, ns: str = NS) -> dict:
    response = await kube.post(path(plural, ns=ns), json={"apiVersion": "callscope.io/v1alpha1", "kind": kind,
                                                          "metadata": {"name": name, "namespace": ns}, "spec": spec})
    assert response.status_code == 201, response.text
    return response.json()


async def get(kube: httpx.AsyncClient, plural: str, name: str, ns: str = NS) -> dict | None:
    response = await kube.get(path(plural, name, ns))
    if response.status_code == 404:
        return None
    response.raise_for_status()
    return response.json()


async def ready(kube: httpx.AsyncClient, plural: str, name: str) -> dict | None:
    obj = await get(kube, plural, name)
    cond = condition(obj or {}, "Ready")
    if obj and cond and cond["status"] == "True" and obj["status"].get("observedGeneration") == \
            obj["metadata"]["generation"]:
        return obj
    return None


async def settled(kube: httpx.AsyncClient, plural: str, name: str, quiet: float = 1.5) -> dict:
    """The object once its resourceVersion has stayed the same for `quiet` seconds."""
    obj = await get(kube, plural, name)
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(quiet)
        again = await get(kube, plural, name)
        if again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]:
            return again
        obj = again
    pytest.fail(f"{plural}/{name} kept changing")


async def events_for(kube: httpx.AsyncClient, name: str) -> list[dict]:
    response = await kube.get(f"/api/v1/namespaces/{NS}/events")
    response.raise_for_status()
    return [e for e in response.json()["items"] if e.get("involvedObject", {}).get("name") == name]


async def test_objects_applied_with_kubectl_get_ids_colours_keys_and_conditions(operator, kube):
    await create(kube, "projects", "Project", "support", {"name": "Support", "language": "en"})
    await create(kube, "tags", "Tag", "vip", {"name": "VIP", "project": "support"})
    await create(kube, "apikeys", "ApiKey", "ci", {"permissions": ["read"]})

    project = await eventually(lambda: ready(kube, "projects", "support"), "the project to be Ready")
    assert isinstance(project["status"]["id"], int)
    assert project["metadata"]["labels"]["callscope.io/id"] == str(project["status"]["id"])
    assert project["status"]["observedGeneration"] == 1
    assert condition(project, "Conflict")["status"] == "False"
    assert FINALIZER in project["metadata"]["finalizers"]

    tag = await eventually(lambda: ready(kube, "tags", "vip"), "the tag to be Ready")
    assert tag["status"]["color"] in PALETTE
    assert tag["metadata"]["labels"]["callscope.io/id"] == str(tag["status"]["id"])

    key = await eventually(lambda: ready(kube, "apikeys", "ci"), "the api key to be Ready")
    secret = (await kube.get(f"/api/v1/namespaces/{NS}/secrets/ci-key")).json()
    material = base64.b64decode(secret["data"]["api-key"]).decode()
    assert material.startswith("cs_live_")
    assert hashlib.sha256(material.encode()).hexdigest() == key["status"]["keyHash"]
    assert material not in str(key)  # only the hash (and a hint) is kept on the ApiKey
    assert secret["metadata"]["ownerReferences"][0]["uid"] == key["metadata"]["uid"]

    ids = [project["status"]["id"], tag["status"]["id"]]
    assert all(i >= 1 for i in ids)
    reasons = [e["reason"] for e in await eventually(lambda: events_for(kube, "support"), "a Ready event")]
    assert "Ready" in reasons


async def test_the_later_of_two_operators_with_one_external_id_is_in_conflict(operator, kube):
    await create(kube, "operators", "Operator", "alice", {"name": "Alice", "externalId": "emp-7"})
    await eventually(lambda: ready(kube, "operators", "alice"), "the first operator to be Ready")
    await create(kube, "operators", "Operator", "alice-copy", {"name": "Alice Again", "externalId": "emp-7"})

    async def conflicted():
        obj = await get(kube, "operators", "alice-copy")
        cond = condition(obj or {}, "Conflict")
        return obj if cond and cond["status"] == "True" else None

    later = await eventually(conflicted, "Conflict=True on the later operator")
    assert "emp-7" in condition(later, "Conflict")["message"]
    assert condition(later, "Ready")["status"] == "False"
    assert later["status"]["id"] is not None  # it still gets its own id, never the other's
    first = await get(kube, "operators", "alice")
    assert condition(first, "Conflict")["status"] == "False"
    assert first["status"]["id"] != later["status"]["id"]
    warnings = await eventually(
        lambda: _with_reason(events_for(kube, "alice-copy"), "Conflict"), "a Conflict Warning event")
    assert warnings[0]["type"] == "Warning"


async def _with_reason(events: Awaitable[list[dict]], reason: str) -> list[dict]:
    return [e for e in await events if e["reason"] == reason]


async def _status_of(kube: httpx.AsyncClient, plural: str, name: str, kind: str, ns: str = NS) -> str | None:
    return (condition(await get(kube, plural, name, ns) or {}, kind) or {}).get("status")


async def test_a_number_whose_e164_another_account_holds_is_in_conflict_until_the_holder_goes(operator, kube):
    response = await kube.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                            "metadata": {"name": "globex"}})
    assert response.status_code == 201, response.text
    spec = {"phoneNumber": "+14155550110", "countryCode": "US"}
    await create(kube, "virtualnumbers", "VirtualNumber", "desk", spec)
    await eventually(lambda: ready(kube, "virtualnumbers", "desk"), "the first number to be Ready")
    await asyncio.sleep(1.05)  # creation timestamps have whole seconds
    await create(kube, "virtualnumbers", "VirtualNumber", "desk", spec, ns="globex")

    async def conflicted():
        return await _status_of(kube, "virtualnumbers", "desk", "Conflict", "globex") == "True"

    await eventually(conflicted, "Conflict=True on the other account's number")
    later = await get(kube, "virtualnumbers", "desk", "globex")
    message = condition(later, "Conflict")["message"]
    assert "+14155550110" in message and NS not in message
    assert condition(later, "Ready")["status"] == "False"
    assert await _status_of(kube, "virtualnumbers", "desk", "Ready") == "True"

    # the holder goes: the event of its deletion re-checks the other number (the timer is minutes away)
    response = await kube.delete(path("virtualnumbers", "desk"))
    assert response.status_code in (200, 202), response.text

    async def freed():
        return await _status_of(kube, "virtualnumbers", "desk", "Ready", "globex") == "True"

    await eventually(freed, "the later number to be Ready once the earlier is deleted")


async def test_a_dangling_reference_is_reported_and_clears_when_the_named_object_appears(operator, kube):
    await create(kube, "virtualnumbers", "VirtualNumber", "line", {"phoneNumber": "+14155550120", "countryCode": "US",
                                                                   "project": "later", "operators": ["zed"]})

    async def dangling():
        obj = await get(kube, "virtualnumbers", "line")
        cond = condition(obj or {}, "ReferencesResolved")
        return obj if cond and cond["status"] == "False" else None

    obj = await eventually(dangling, "ReferencesResolved=False")
    message = condition(obj, "ReferencesResolved")["message"]
    assert "Project 'later'" in message and "Operator 'zed'" in message
    assert (condition(obj, "Ready")["status"], condition(obj, "Ready")["reason"]) == ("False", "UnresolvedReferences")
    warnings = await eventually(lambda: _with_reason(events_for(kube, "line"), "UnresolvedReferences"),
                                "an UnresolvedReferences Warning event")
    assert warnings[0]["type"] == "Warning"

    # the named objects appear: the number is re-checked on their events, not on its own
    await create(kube, "projects", "Project", "later", {"name": "Later", "language": "en"})
    await create(kube, "operators", "Operator", "zed", {"name": "Zed", "projects": ["later"]})
    await eventually(lambda: ready(kube, "virtualnumbers", "line"), "the number to be Ready")
    assert await _status_of(kube, "virtualnumbers", "line", "ReferencesResolved") == "True"


async def test_deleting_a_project_cascades_like_the_rest_delete(operator, kube):
    await create(kube, "projects", "Project", "sales", {"name": "Sales", "language": "en"})
    await create(kube, "projects", "Project", "other", {"name": "Other", "language": "en"})
    await create(kube, "tags", "Tag", "hot", {"name": "Hot", "project": "sales"})
    await create(kube, "tags", "Tag", "cold", {"name": "Cold", "project": "sales"})
    await create(kube, "tags", "Tag", "keep", {"name": "Keep", "project": "other"})
    for plural, name in (("projects", "sales"), ("tags", "hot"), ("tags", "cold"), ("tags", "keep")):
        await eventually(lambda p=plural, n=name: ready(kube, p, n), f"{plural}/{name} to be Ready")

    response = await kube.delete(path("projects", "sales"))
    assert response.status_code in (200, 202), response.text

    async def gone():
        return all([await get(kube, "projects", "sales") is None, await get(kube, "tags", "hot") is None,
                    await get(kube, "tags", "cold") is None])

    await eventually(gone, "the project and its tags to be deleted")
    assert await get(kube, "tags", "keep") is not None
    assert await get(kube, "projects", "other") is not None


async def test_reapplying_the_same_spec_changes_nothing(operator, kube):
    await create(kube, "projects", "Project", "gitops", {"name": "GitOps", "language": "de", "retentionDays": 30})
    await eventually(lambda: ready(kube, "projects", "gitops"), "the project to be Ready")
    before = await settled(kube, "projects", "gitops")
    writes_before = _writes(operator, "gitops")

    # what `kubectl apply` of the unchanged file sends: the same spec (and metadata) again
    again = {**before, "spec": {"name": "GitOps", "language": "de", "retentionDays": 30}}
    response = await kube.put(path("projects", "gitops"), json=again)
    assert response.status_code == 200, response.text
    await asyncio.sleep(2)

    after = await get(kube, "projects", "gitops")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["spec"] == before["spec"] and after["metadata"]["generation"] == 1
    assert _writes(operator, "gitops") == writes_before + 1  # the PUT above, nothing from the operator


def _writes(server, name: str) -> int:
    return sum(1 for method, p in list(server.emulator.requests)
               if method in ("PUT", "PATCH", "POST", "DELETE") and f"/projects/{name}" in p)


async def test_the_quality_baseline_timer_reports_on_projects(operator, kube):
    await create(kube, "projects", "Project", "quality", {"name": "Quality", "language": "en",
                                                          "qualityBaselineEnabled": True, "qualityBaselinePct": 90})

    async def reported():
        cond = condition(await get(kube, "projects", "quality") or {}, "BaselineReady")
        return cond if cond else None

    cond = await eventually(reported, "the BaselineReady condition")
    assert (cond["status"], cond["reason"]) == ("False", "NoCompletedRecordings")


async def test_the_reanalyze_annotation_queues_the_projects_completed_recordings_once(operator, kube, tmp_path):
    from sqlalchemy import select

    from callscope.catalog.db import Catalog
    from callscope.catalog.tables import Job
    from tests.queue.rows import add_recording

    await create(kube, "projects", "Project", "redo", {"name": "Redo", "language": "en"})
    project = await eventually(lambda: ready(kube, "projects", "redo"), "the project to be Ready")
    catalog = Catalog(f"sqlite:///{tmp_path / 'operator-data' / 'catalog.db'}")
    try:
        project_id = project["status"]["id"]
        done = add_recording(catalog, status="completed", job=False, account=NS, project_id=project_id)
        add_recording(catalog, status="pending", job=False, account=NS, project_id=project_id)  # not finished yet
        add_recording(catalog, status="completed", job=False, account=NS, project_id=project_id + 1)  # elsewhere

        def reanalysis_jobs() -> list[tuple[int, str]]:
            with catalog.session() as session:
                return [tuple(row) for row in session.execute(select(Job.recording_id, Job.kind))]

        annotate = {"metadata": {"annotations": {"analysis.callscope.io/reanalyze": "goals-v2"}}}
        response = await kube.patch(path("projects", "redo"), json=annotate,
                                    headers={"Content-Type": "application/merge-patch+json"})
        assert response.status_code == 200, response.text

        async def handled():
            annotations = (await get(kube, "projects", "redo"))["metadata"].get("annotations") or {}
            return annotations.get("callscope.io/reanalyze-handled") == "goals-v2"
        await eventually(handled, "the annotation to be handled")
        assert reanalysis_jobs() == [(done, "reanalyze")]

        await kube.patch(path("projects", "redo"), json={"metadata": {"labels": {"touched": "yes"}}},
                         headers={"Content-Type": "application/merge-patch+json"})
        await asyncio.sleep(1.5)
        assert reanalysis_jobs() == [(done, "reanalyze")]  # the same value is not handled twice
    finally:
        catalog.dispose()
