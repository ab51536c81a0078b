"""manifests/monitoring/dashboard.json: every panel's query is valid PromQL (promtool checks it as a recording
rule; skipped without promtool) and reads only metrics Callscope exports or the PrometheusRule records; the
kustomization ships it in a ConfigMap Grafana's sidecar picks up."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.monitoring.exported import exported, metric_names

MONITORING = Path(__file__).resolve().parents[2] / "manifests" / "monitoring"
DASHBOARD = json.loads((MONITORING / "dashboard.json").read_text())
QUERIES = [target["expr"] for panel in DASHBOARD["panels"] for target in panel.get("targets", [])]
GROUPS = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())["spec"]["groups"]
RECORDED = {rule["record"] for group in GROUPS for rule in group["rules"] if "record" in rule}


def test_every_panel_reads_exported_metrics() -> None:
    assert len(QUERIES) >= 20
    for query in QUERIES:
        read = metric_names(query)
        assert read and read <= exported() | RECORDED, (query, sorted(read - exported() - RECORDED))


@pytest.mark.skipif(shutil.which("promtool") is None, reason="no promtool (apt-get install prometheus)")
def test_every_panel_query_is_valid_promql(tmp_path: Path) -> None:
    rules = [{"record": f"panel:query:{i}", "expr": query.replace("$__rate_interval", "5m")}
             for i, query in enumerate(QUERIES)]
    (tmp_path / "panels.yaml").write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    checked = subprocess.run(["promtool", "check", "rules", "panels.yaml"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_dashboard_ships_in_a_configmap_for_grafanas_sidecar() -> None:
    kustomization = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    [generated] = kustomization["configMapGenerator"]
    assert generated["options"]["labels"]["grafana_dashboard"] == "1"
    assert generated["files"] == ["callscope.json=dashboard.json"]
    assert {"monitors.yaml", "prometheusrule.yaml"} <= set(kustomization["resources"])
