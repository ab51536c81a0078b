"""`callscope operator`: runs Kopf with the operator's registry, peering name and options."""

from __future__ import annotations

import kopf
from click.testing import CliRunner

from callscope.cli import main


def run(monkeypatch, *args):
    calls = []
    monkeypatch.setattr(kopf, "run", lambda **kwargs: calls.append(kwargs))
    result = CliRunner().invoke(main, ["operator", *args])
    assert result.exit_code == 0, result.output
    return calls[0]


def test_operator_runs_kopf_on_all_namespaces_with_peering(monkeypatch):
    import callscope.operator.main as entry

    kwargs = run(monkeypatch)
    assert kwargs["registry"] is entry.registry
    assert (kwargs["standalone"], kwargs["peering_name"], kwargs["clusterwide"]) == (False, "callscope", True)


def test_operator_standalone_and_namespaces_pass_through(monkeypatch):
    kwargs = run(monkeypatch, "--standalone", "-n", "acme", "-n", "team-*", "--liveness", "http://0.0.0.0:8080/healthz")
    assert kwargs["standalone"] is True
    assert (kwargs["clusterwide"], kwargs["namespaces"]) == (False, ["acme", "team-*"])
    assert kwargs["liveness_endpoint"] == "http://0.0.0.0:8080/healthz"


def test_the_operator_registry_serves_every_kind():
    import callscope.operator.main as entry

    from callscope.resources import KINDS

    plurals = {h.selector.any_name for h in entry.registry._changing.get_all_handlers()}
    assert plurals == {cls.PLURAL for cls in KINDS.values()}
