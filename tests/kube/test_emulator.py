"""Fidelity of the emulated Kubernetes API server (what our clients rely on), and the store's
mapping of its answers."""

from __future__ import annotations

import json

import httpx
import pytest

from callscope.errors import ValidationFailed
from callscope.resources import KINDS, ObjectMeta, Project, ProjectSpec
from callscope.store.interface import Gone, ObjectNotFound
from callscope.store.kubernetes import KubernetesStore

BASE = "/apis/callscope.io/v1alpha1"


def project(name: str = "p", ns: str = "acme", **labels: str) -> dict:
    return {
        "apiVersion": "callscope.io/v1alpha1", "kind": "Project",
        "metadata": {"name": name, "labels": labels},
        "spec": {"name": "Support", "language": "en"},
        "status": {"id": 7},
    }


@pytest.fixture
def api(kube_api):
    with httpx.Client(base_url=kube_api.url, timeout=5) as client:
        r = client.post("/api/v1/namespaces", json={"metadata": {"name": "acme"}})
        assert r.status_code == 201
        yield client


def watch_lines(api: httpx.Client, path: str, count: int) -> list[dict]:
    out = []
    with api.stream("GET", path) as resp:
        assert resp.status_code == 200
        for line in resp.iter_lines():
            if line.strip():
                out.append(json.loads(line))
            if len(out) >= count:
                break
    return out


def test_discovery(api):
    assert api.get("/api").json()["versions"] == ["v1"]
    groups = {g["name"] for g in api.get("/apis").json()["groups"]}
    assert {"callscope.io", "apiextensions.k8s.io", "kopf.dev"} <= groups
    resources = {r["name"] for r in api.get(BASE).json()["resources"]}
    assert {cls.PLURAL for cls in KINDS.values()} <= resources
    assert "projects/status" in resources
    crds = api.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions").json()
    assert crds["kind"] == "CustomResourceDefinitionList"
    assert {c["metadata"]["name"] for c in crds["items"]} == {f"{c.PLURAL}.callscope.io" for c in KINDS.values()}
    namespaces = api.get("/api/v1/namespaces").json()
    assert namespaces["kind"] == "NamespaceList"
    assert {"default", "acme"} <= {n["metadata"]["name"] for n in namespaces["items"]}
    assert api.get("/api/v1/namespaces/acme").json()["status"]["phase"] == "Active"


def test_create_answers_201_with_server_metadata(api):
    r = api.post(f"{BASE}/namespaces/acme/projects", json=project())
    assert r.status_code == 201
    body = r.json()
    meta = body["metadata"]
    assert meta["namespace"] == "acme" and meta["uid"] and meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0 and meta["creationTimestamp"].endswith("Z")
    assert body["status"] == {}  # status subresource: create ignores it
    other = api.post(f"{BASE}/namespaces/acme/projects", json=project("q")).json()
    assert int(other["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])


def test_create_conflicts_and_missing_namespace(api):
    api.post(f"{BASE}/namespaces/acme/projects", json=project())
    r = api.post(f"{BASE}/namespaces/acme/projects", json=project())
    assert r.status_code == 409
    assert r.json() | {} == r.json() and r.json()["kind"] == "Status"
    assert (r.json()["reason"], r.json()["code"]) == ("AlreadyExists", 409)
    r = api.post(f"{BASE}/namespaces/nowhere/projects", json=project())
    assert (r.status_code, r.json()["reason"]) == (404, "NotFound")
    wrong = project()
    wrong["metadata"]["namespace"] = "other"
    assert api.post(f"{BASE}/namespaces/acme/projects", json=wrong).status_code == 400


def test_schema_validation_is_422(api):
    bad = project()
    del bad["spec"]["name"]
    r = api.post(f"{BASE}/namespaces/acme/projects", json=bad)
    assert (r.status_code, r.json()["reason"]) == (422, "Invalid")
    assert "spec.name" in r.json()["message"]


def test_list_has_kind_version_and_selectors(api):
    api.post(f"{BASE}/namespaces/acme/projects", json=project("a", env="prod"))
    api.post(f"{BASE}/namespaces/acme/projects", json=project("b", env="dev"))
    listing = api.get(f"{BASE}/projects", params={"labelSelector": "env in (prod)"}).json()
    assert listing["kind"] == "ProjectList" and listing["metadata"]["resourceVersion"]
    assert [i["metadata"]["name"] for i in listing["items"]] == ["a"]
    assert api.get(f"{BASE}/projects", params={"labelSelector": "env in prod"}).status_code == 400


def test_put_optimistic_concurrency_generation_and_status(api):
    created = api.post(f"{BASE}/namespaces/acme/projects", json=project()).json()
    url = f"{BASE}/namespaces/acme/projects/p"
    same = api.put(url, json=created).json()
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]  # no-op
    changed = dict(created, spec={"name": "Sales", "language": "en"}, status={"id": 3})
    updated = api.put(url, json=changed).json()
    assert updated["metadata"]["generation"] == 2 and updated["status"] == {}
    r = api.put(url, json=changed)  # stale now
    assert (r.status_code, r.json()["reason"]) == (409, "Conflict")
    unconditional = dict(changed, metadata={k: v for k, v in changed["metadata"].items() if k != "resourceVersion"})
    assert api.put(url, json=unconditional).status_code == 422  # custom resources need a resourceVersion
    status = api.put(url + "/status", json=dict(updated, status={"id": 3}, spec={"name": "Ignored", "language": "en"}))
    assert status.status_code == 200
    assert status.json()["status"] == {"id": 3} and status.json()["spec"]["name"] == "Sales"
    assert status.json()["metadata"]["generation"] == 2
    assert api.get(url + "/status").json()["status"]["id"] == 3


def test_merge_patch_honours_resource_version(api):
    created = api.post(f"{BASE}/namespaces/acme/projects", json=project(env="prod")).json()
    url = f"{BASE}/namespaces/acme/projects/p"
    headers = {"Content-Type": "application/merge-patch+json"}
    patch = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"], "labels": {"env": None, "x": "1"}}}
    patched = api.patch(url, content=json.dumps(patch), headers=headers).json()
    assert patched["metadata"]["labels"] == {"x": "1"} and patched["metadata"]["generation"] == 1
    r = api.patch(url, content=json.dumps(patch), headers=headers)
    assert (r.status_code, r.json()["reason"]) == (409, "Conflict")
    r = api.patch(url + "/status", content=json.dumps({"status": {"id": 4}}), headers=headers)
    assert r.json()["status"]["id"] == 4
    assert api.patch(url, content="[]", headers={"Content-Type": "application/json-patch+json"}).status_code == 415


def test_delete_with_finalizers_waits_for_them(api):
    body = project()
    body["metadata"]["finalizers"] = ["callscope.io/cleanup"]
    created = api.post(f"{BASE}/namespaces/acme/projects", json=body).json()
    url = f"{BASE}/namespaces/acme/projects/p"
    marked = api.delete(url).json()
    assert marked["metadata"]["deletionTimestamp"]
    assert api.get(url).status_code == 200
    start = created["metadata"]["resourceVersion"]
    api.patch(url, content=json.dumps({"metadata": {"finalizers": None}}),
              headers={"Content-Type": "application/merge-patch+json"})
    assert api.get(url).status_code == 404
    events = watch_lines(api, f"{BASE}/namespaces/acme/projects?watch=true&resourceVersion={start}", 2)
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    assert (r := api.delete(url)).status_code == 404 and r.json()["reason"] == "NotFound"


def test_watch_from_resource_version_bookmarks_and_timeout(api):
    first = api.post(f"{BASE}/namespaces/acme/projects", json=project("a")).json()
    api.post(f"{BASE}/namespaces/acme/projects", json=project("b"))
    api.post(f"{BASE}/namespaces/acme/operators", json={
        "apiVersion": "callscope.io/v1alpha1", "kind": "Operator", "metadata": {"name": "o"}, "spec": {"name": "O"}})
    rv = first["metadata"]["resourceVersion"]
    events = watch_lines(api, f"{BASE}/projects?watch=true&resourceVersion={rv}&timeoutSeconds=1", 10)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "b")]
    # no resourceVersion: the current objects as ADDED, then changes
    events = watch_lines(api, f"{BASE}/namespaces/acme/projects?watch=true&timeoutSeconds=1", 10)
    assert [e["object"]["metadata"]["name"] for e in events] == ["a", "b"]
    events = watch_lines(
        api, f"{BASE}/projects?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=2", 2
    )
    assert events[1]["type"] == "BOOKMARK" and int(events[1]["object"]["metadata"]["resourceVersion"]) > int(rv)


def test_watch_from_compacted_version_is_410(api, kube_api):
    first = api.post(f"{BASE}/namespaces/acme/projects", json=project("a")).json()
    old = kube_api.emulator.max_events
    kube_api.call(setattr, kube_api.emulator, "max_events", 2)
    try:
        for name in "bcd":
            api.post(f"{BASE}/namespaces/acme/projects", json=project(name))
    finally:
        kube_api.call(setattr, kube_api.emulator, "max_events", old)
    (event,) = watch_lines(api, f"{BASE}/projects?watch=true&resourceVersion={first['metadata']['resourceVersion']}", 1)
    assert event["type"] == "ERROR"
    assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")


def test_core_resources_for_kopf(api):
    r = api.post("/api/v1/namespaces/acme/events", json={"metadata": {"generateName": "p."}, "reason": "Test"})
    assert r.status_code == 201 and r.json()["metadata"]["name"].startswith("p.")
    secret = {"metadata": {"name": "hook"}, "data": {"signing-secret": "c2VjcmV0"}}
    assert api.post("/api/v1/namespaces/acme/secrets", json=secret).status_code == 201
    assert api.get("/api/v1/namespaces/acme/secrets/hook").json()["data"] == secret["data"]
    assert api.delete("/api/v1/namespaces/acme/secrets/hook").status_code == 200
    peering = {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "default"}}
    assert api.post("/apis/kopf.dev/v1/clusterkopfpeerings", json=peering).status_code == 201


# -- the store over the emulator: what the shared behaviour tests cannot show --------------


async def test_store_creates_the_namespace_and_maps_errors(kube_api):
    store = KubernetesStore(kube_api.kubeconfig)
    try:
        obj = Project(metadata=ObjectMeta(name="p", namespace="fresh"), spec=ProjectSpec(name="S", language="en"))
        await store.create(obj)
        assert kube_api.call(lambda: ("namespaces", "", "fresh") in kube_api.emulator.objects)
        bad = Project.model_construct(
            api_version="callscope.io/v1alpha1", kind="Project",
            metadata=ObjectMeta(name="Not A Name", namespace="fresh"), spec=ProjectSpec(name="S", language="en"), status=obj.status,
        )
        with pytest.raises(ValidationFailed, match="metadata.name"):
            await store.create(bad)
        with pytest.raises(ObjectNotFound):
            await store.get(Project, "fresh", "ghost")
    finally:
        await store.close()


async def test_store_watch_raises_gone_for_a_compacted_version(kube_api):
    store = KubernetesStore(kube_api.kubeconfig)
    try:
        created = await store.create(Project(metadata=ObjectMeta(name="p", namespace="acme"), spec=ProjectSpec(name="S", language="en")))
        kube_api.reset()  # every earlier version is now too old
        it = store.watch(Project, None, created.metadata.resource_version)
        with pytest.raises(Gone):
            await anext(it)
    finally:
        await store.close()
