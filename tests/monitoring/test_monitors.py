"""manifests/monitoring/monitors.yaml scrapes every component: each monitor's selector picks the pods (or the
Service) of its component in manifests/, and the port it names is one those declare."""

from __future__ import annotations

from pathlib import Path

import yaml

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"


def load(name: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all((MANIFESTS / name).read_text()) if doc]


def picks(selector: dict, labels: dict) -> bool:
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    return all(labels.get(e["key"]) in e["values"] for e in selector.get("matchExpressions", []))


def pod_templates() -> list[dict]:
    """Every pod template of the core manifests: the Deployments', the Ray head's and worker groups'."""
    templates = []
    for name in ("api.yaml", "operator.yaml", "raycluster.yaml"):
        for doc in load(name):
            if doc["kind"] == "Deployment":
                templates.append(doc["spec"]["template"])
            elif doc["kind"] == "RayCluster":
                templates.append(doc["spec"]["headGroupSpec"]["template"])
                templates += [group["template"] for group in doc["spec"]["workerGroupSpecs"]]
    return templates


def ports(template: dict) -> set[str]:
    return {port["name"] for container in template["spec"]["containers"] for port in container.get("ports", [])}


def test_every_component_is_scraped_on_a_port_it_declares() -> None:
    monitors = load("monitoring/monitors.yaml")
    scraped = set()
    for monitor in (m for m in monitors if m["kind"] == "PodMonitor"):
        chosen = [t for t in pod_templates() if picks(monitor["spec"]["selector"], t["metadata"]["labels"])]
        assert chosen, monitor["metadata"]["name"]
        for template in chosen:
            assert {e["port"] for e in monitor["spec"]["podMetricsEndpoints"]} <= ports(template)
            scraped.add(template["metadata"]["labels"]["app.kubernetes.io/component"])
    [service_monitor] = [m for m in monitors if m["kind"] == "ServiceMonitor"]
    [service] = [d for d in load("api.yaml") if d["kind"] == "Service"]
    assert picks(service_monitor["spec"]["selector"], service["metadata"]["labels"])
    assert {e["port"] for e in service_monitor["spec"]["endpoints"]} <= {p["name"] for p in service["spec"]["ports"]}
    scraped.add(service["metadata"]["labels"]["app.kubernetes.io/component"])
    assert scraped == {"api", "operator", "ray-head", "ray-worker"}
