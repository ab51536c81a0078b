"""`callscope controller` (and its former name `callscope operator`): runs Kopf with the controller's registry,
peering name and options, and hands the handlers the Runtime's opener."""

from __future__ import annotations

import kopf
from click.testing import CliRunner

from callscope.cli import main


def run(monkeypatch, *args, command: str = "controller"):
    calls = []
    monkeypatch.setattr(kopf, "run", lambda **kwargs: calls.append(kwargs))
    result = CliRunner().invoke(main, [command, *args])
    assert result.exit_code == 0, result.output
    return calls[0]


def test_operator_is_the_controllers_former_name(monkeypatch):
    assert main.get_command(None, "operator") is main.get_command(None, "controller")
    kwargs = run(monkeypatch, "--standalone", command="operator")
    assert kwargs["standalone"] is True and kwargs["peering_name"] == "callscope"


def test_the_handlers_get_the_runtime_from_the_composition_root(monkeypatch):
    from callscope.runtime import opened

    assert run(monkeypatch)["memo"].open_runtime is opened


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
