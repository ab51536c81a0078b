"""Fidelity of the emulated Kubernetes API server (what our clients rely on), and the store's
mapping of its answers."""

from __future__ import annotations

import asyncio
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
    r = api.patch(url, content="{}", headers={"Content-Type": "application/apply-patch+yaml"})
    assert (r.status_code, r.json()["reason"]) == (415, "UnsupportedMediaType")  # no server-side apply


JSON_PATCH = {"Content-Type": "application/json-patch+json"}


def json_patch(api: httpx.Client, url: str, ops: list[dict]) -> httpx.Response:
    return api.patch(url, content=json.dumps(ops), headers=JSON_PATCH)


def test_json_patch_applies_every_rfc_6902_op(api):
    body = project(env="prod")
    body["metadata"]["finalizers"] = ["other.io/keep"]
    created = api.post(f"{BASE}/namespaces/acme/projects", json=body).json()
    url = f"{BASE}/namespaces/acme/projects/p"
    rv = created["metadata"]["resourceVersion"]
    # what Kopf sends to add its finalizer: guarded by the resourceVersion it last saw
    r = json_patch(api, url, [
        {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "kopf.zalando.org/KopfFinalizerMarker"},
        {"op": "add", "path": "/metadata/annotations", "value": {"a/b": "1"}},
        {"op": "replace", "path": "/spec/name", "value": "Sales"},
        {"op": "copy", "from": "/metadata/labels/env", "path": "/metadata/labels/copied"},
        {"op": "move", "from": "/metadata/annotations/a~1b", "path": "/metadata/labels/moved"},
        {"op": "remove", "path": "/metadata/labels/env"},
        {"op": "test", "path": "/metadata/labels", "value": {"copied": "prod", "moved": "1"}},
    ])
    assert r.status_code == 200, r.text
    patched = r.json()
    assert patched["metadata"]["finalizers"] == ["other.io/keep", "kopf.zalando.org/KopfFinalizerMarker"]
    assert patched["metadata"]["labels"] == {"copied": "prod", "moved": "1"}
    assert patched["metadata"]["annotations"] == {}
    assert patched["spec"]["name"] == "Sales" and patched["metadata"]["generation"] == 2
    assert int(patched["metadata"]["resourceVersion"]) > int(rv)
    assert api.get(url).json() == patched
    # Kopf's removal of its finalizer: by index, from the body it saw
    r = json_patch(api, url, [
        {"op": "test", "path": "/metadata/resourceVersion", "value": patched["metadata"]["resourceVersion"]},
        {"op": "remove", "path": "/metadata/finalizers/0"},
        {"op": "add", "path": "/metadata/finalizers/0", "value": "first.io/x"},
    ])
    assert r.json()["metadata"]["finalizers"] == ["first.io/x", "kopf.zalando.org/KopfFinalizerMarker"]
    # the status subresource: the ops on the status apply, the others are ignored
    r = json_patch(api, url + "/status", [{"op": "add", "path": "/status/id", "value": 9},
                                          {"op": "replace", "path": "/spec/name", "value": "Ignored"}])
    assert r.status_code == 200, r.text
    assert (r.json()["status"]["id"], r.json()["spec"]["name"]) == (9, "Sales")
    # no ops: nothing written
    same = json_patch(api, url, []).json()
    assert same["metadata"]["resourceVersion"] == r.json()["metadata"]["resourceVersion"]


def test_json_patch_is_all_or_nothing(api, kube_api):
    created = api.post(f"{BASE}/namespaces/acme/projects", json=project(env="prod")).json()
    url = f"{BASE}/namespaces/acme/projects/p"
    writes = kube_api.call(lambda: kube_api.emulator.rv)
    stale = str(int(created["metadata"]["resourceVersion"]) - 1)
    failing = [
        # a resourceVersion test that fails (Kopf: someone wrote in between, retry on the next cycle)
        [{"op": "add", "path": "/metadata/labels/x", "value": "1"},
         {"op": "test", "path": "/metadata/resourceVersion", "value": stale}],
        # JSON values: true is not 1, "1" is not 1
        [{"op": "add", "path": "/metadata/labels/x", "value": "1"},
         {"op": "test", "path": "/spec/qualityBaselineEnabled", "value": 0}],
        [{"op": "add", "path": "/metadata/labels/x", "value": "1"},
         {"op": "test", "path": "/metadata/generation", "value": "1"}],
        # paths that are not there
        [{"op": "add", "path": "/metadata/labels/x", "value": "1"}, {"op": "remove", "path": "/metadata/labels/nope"}],
        [{"op": "replace", "path": "/spec/nope", "value": 1}],
        [{"op": "add", "path": "/spec/nope/deeper", "value": 1}],
        [{"op": "test", "path": "/metadata/labels/nope", "value": None}],
        [{"op": "add", "path": "/metadata/finalizers/0", "value": "f"}],  # no finalizers list
        [{"op": "move", "from": "/metadata/labels", "path": "/metadata/labels/env/x"}],
        [{"op": "frobnicate", "path": "/spec"}],
        [{"op": "add", "path": "spec/name", "value": "no leading slash"}],
    ]
    for ops in failing:
        r = json_patch(api, url, ops)
        assert (r.status_code, r.json()["kind"], r.json()["reason"]) == (422, "Status", "Invalid"), ops
    assert "testing value /metadata/resourceVersion failed" in json_patch(api, url, failing[0]).json()["message"]
    for bad in ({"op": "add"}, [1], "nonsense"):
        r = api.patch(url, content=json.dumps(bad), headers=JSON_PATCH)
        assert (r.status_code, r.json()["reason"]) == (400, "BadRequest"), bad
    assert api.get(url).json() == created  # nothing changed...
    assert kube_api.call(lambda: kube_api.emulator.rv) == writes  # ...nor was anything written
    # a patch that sets another resourceVersion is a precondition, as in a merge patch
    r = json_patch(api, url, [{"op": "replace", "path": "/metadata/resourceVersion", "value": stale}])
    assert (r.status_code, r.json()["reason"]) == (409, "Conflict")
    r = json_patch(api, url, [{"op": "replace", "path": "/spec/name", "value": ""}])
    assert (r.status_code, r.json()["reason"]) == (422, "Invalid") and "spec.name" in r.json()["message"]
    assert api.get(url).json() == created
    r = json_patch(api, f"{BASE}/namespaces/acme/projects/ghost", [])
    assert (r.status_code, r.json()["reason"]) == (404, "NotFound")


def test_schema_defaults_are_filled_in_like_the_real_server(api, kube_api):
    created = api.post(f"{BASE}/namespaces/acme/projects", json=project()).json()
    url = f"{BASE}/namespaces/acme/projects/p"
    defaults = {"qualityBaselineEnabled": False, "goals": [], "categories": [], "fields": [], "trackers": [],
                "live": False, "liveAlerts": []}
    assert created["spec"] == {"name": "Support", "language": "en", **defaults}  # crds/projects.callscope.io.yaml
    assert api.get(url).json() == created
    rv = created["metadata"]["resourceVersion"]
    # written back with the defaults spelled out (the kubernetes store), or without them (kubectl
    # apply of the original file): the same object, nothing written, still generation 1
    spelled_out = api.put(url, json=created).json()
    without = api.put(url, json=dict(created, spec={"name": "Support", "language": "en"})).json()
    nulled = {"spec": {"qualityBaselineEnabled": None, "goals": None}}  # a merge patch's null deletes: defaulted again
    merged = api.patch(url, content=json.dumps(nulled), headers={"Content-Type": "application/merge-patch+json"}).json()
    removed = json_patch(api, url, [{"op": "remove", "path": "/spec/goals"}]).json()
    for answer in (spelled_out, without, merged, removed):
        assert answer == created
    assert kube_api.call(lambda: kube_api.emulator.rv) == int(rv)
    # defaults fill in nested objects too, and a real change is one
    spec = {"name": "Support", "language": "en", "categories": [{"name": "billing"}],
            "fields": [{"name": "order_id", "description": "The order number"}]}
    changed = api.put(url, json=dict(created, spec=spec)).json()
    assert changed["metadata"]["generation"] == 2
    assert changed["spec"] == {**defaults, "name": "Support", "language": "en",
                               "categories": [{"name": "billing", "description": "", "keywords": []}],
                               "fields": [{"name": "order_id", "description": "The order number", "type": "string",
                                           "values": []}]}
    # a non-nullable null is dropped (then defaulted); a nullable one is kept
    spec = {"name": "Support", "language": "en", "qualityBaselineEnabled": None, "retentionDays": None}
    again = api.put(url, json=dict(changed, spec={**changed["spec"], **spec})).json()
    assert again["spec"]["qualityBaselineEnabled"] is False and again["spec"]["retentionDays"] is None
    # the status is defaulted as well (its conditions' reason and message)
    status = api.put(url + "/status", json=dict(again, status={"conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}]})).json()
    assert status["status"]["conditions"] == [{"type": "Ready", "status": "True", "reason": "", "message": "",
                                               "lastTransitionTime": "2024-01-01T00:00:00Z"}]
    # the CRDs it serves are those whose defaults it applies
    crd = api.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/projects.callscope.io").json()
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec_schema["properties"]["qualityBaselineEnabled"]["default"] is False


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
            metadata=ObjectMeta(name="Not A Name", namespace="fresh"), spec=ProjectSpec(name="S", language="en"),
            status=obj.status,
        )
        with pytest.raises(ValidationFailed, match=r"metadata\.name"):
            await store.create(bad)
        with pytest.raises(ObjectNotFound):
            await store.get(Project, "fresh", "ghost")
    finally:
        await store.close()


async def test_store_watch_raises_gone_for_a_compacted_version(kube_api):
    # No timing in here: the compaction is one call on the server's loop, made from a worker thread so
    # that this test's loop is never blocked, and each step waits for the answer it needs.
    store = KubernetesStore(kube_api.kubeconfig)
    try:
        created = await store.create(Project(metadata=ObjectMeta(name="p", namespace="acme"),
                                             spec=ProjectSpec(name="S", language="en")))
        later = await store.create(Project(metadata=ObjectMeta(name="q", namespace="acme"),
                                           spec=ProjectSpec(name="T", language="en")))
        before = store.watch(Project, None, created.metadata.resource_version)
        try:  # not compacted yet: the watch from that version sees the later change
            event = await anext(before)
            assert (event.type, event.object.name) == ("ADDED", "q")
        finally:
            await before.aclose()
        current = await asyncio.to_thread(kube_api.call, kube_api.emulator.compact)
        assert int(later.metadata.resource_version) <= current
        it = store.watch(Project, None, created.metadata.resource_version)
        with pytest.raises(Gone):
            await anext(it)
        with pytest.raises(StopAsyncIteration):  # and it stays finished
            await anext(it)
    finally:
        await store.close()
