"""manifests/monitoring/prometheusrule.yaml: its rules pass `promtool check rules`, the unit tests beside it pass
`promtool test rules` (Debian's prometheus package ships promtool; skipped without it), every alert has a test where
it fires and one where it does not, and a runbook section in docs/operations.md, and every metric the rules read is
one Callscope exports."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.monitoring.exported import exported, metric_names

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "manifests" / "monitoring"
RULE = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
UNIT_TESTS = sorted((MONITORING / "tests").glob("*.test.yaml"))
RULES = [rule for group in RULE["spec"]["groups"] for rule in group["rules"]]
ALERTS = sorted({rule["alert"] for rule in RULES if "alert" in rule})
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="no promtool (apt-get install prometheus)")


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    """The PrometheusRule's groups as a plain rules file, with the unit tests beside it (their rule_files)."""
    (tmp_path / "callscope.rules.yaml").write_text(yaml.safe_dump(RULE["spec"]))
    for test in UNIT_TESTS:
        shutil.copy(test, tmp_path / test.name)
    return tmp_path


def promtool(rules_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PROMTOOL, *args], cwd=rules_dir, capture_output=True, text=True, timeout=120)


@needs_promtool
def test_the_rules_pass_promtool_check(rules_dir: Path) -> None:
    checked = promtool(rules_dir, "check", "rules", "callscope.rules.yaml")
    assert checked.returncode == 0, checked.stdout + checked.stderr


@needs_promtool
def test_the_alerts_unit_tests_pass(rules_dir: Path) -> None:
    tested = promtool(rules_dir, "test", "rules", *(test.name for test in UNIT_TESTS))
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_alert_is_tested_firing_and_quiet() -> None:
    fired, quiet = set(), set()
    for path in UNIT_TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                (fired if check.get("exp_alerts") else quiet).add(check["alertname"])
    assert set(ALERTS) <= fired, set(ALERTS) - fired
    assert set(ALERTS) <= quiet, set(ALERTS) - quiet


def test_every_alert_has_its_runbook_section() -> None:
    headings = {re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
                for line in (ROOT / "docs" / "operations.md").read_text().splitlines() if line.startswith("#")}
    for rule in RULES:
        if "alert" in rule:
            url = rule["annotations"]["runbook_url"]
            assert url == f"docs/operations.md#{rule['alert'].lower()}" and url.split("#")[1] in headings, url


def test_every_metric_the_rules_read_is_exported() -> None:
    recorded = {rule["record"] for rule in RULES if "record" in rule}
    read = {name for rule in RULES for name in metric_names(rule["expr"])}
    assert read, "no metric found in the rules"
    assert read - recorded <= exported(), sorted(read - recorded - exported())


def test_the_expression_reader_finds_metrics_not_labels_or_functions() -> None:
    expr = ('sum by (model) (increase(callscope_a_total{model="x", le="1.0"}[15m])) / on() '
            'max without (pod) (callscope:b:ratio_rate5m) > 0.1 and callscope_c')
    assert metric_names(expr) == {"callscope_a_total", "callscope:b:ratio_rate5m", "callscope_c"}
