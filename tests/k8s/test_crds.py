"""The generated CRDs: up to date, structural, valid Kubernetes objects, and they accept the examples
(examples/) and reject what the models reject, CEL rules included (evaluated with cel-python)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from callscope.resources.crd import REGENERATE, build_all, render_all, stale
from callscope.resources.kinds import KINDS, kind_class

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "crds"
EXAMPLES = ROOT / "examples"
K8S_VERSION = "1.33.0"



def _celpy():
    return pytest.importorskip("celpy", reason="cel-python (dev extra) evaluates x-kubernetes-validations")


def _jsonschema():
    return pytest.importorskip("jsonschema", reason="jsonschema (dev extra) validates objects against CRDs")


# --- helpers ------------------------------------------------------------------------------------


def to_jsonschema(node: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI v3 structural schema as JSON Schema: nullable -> null allowed, unknown fields rejected
    (what `kubectl apply`'s strict field validation does), x-kubernetes-* dropped."""
    out = {k: v for k, v in node.items() if not k.startswith("x-kubernetes-") and k != "nullable"}
    if "properties" in out:
        out["properties"] = {k: to_jsonschema(v) for k, v in out["properties"].items()}
        if not node.get("x-kubernetes-preserve-unknown-fields"):
            out.setdefault("additionalProperties", False)
    if isinstance(out.get("items"), dict):
        out["items"] = to_jsonschema(out["items"])
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = to_jsonschema(out["additionalProperties"])
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


def cel_errors(schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """Evaluate every x-kubernetes-validations rule on the value it applies to, as the API server does."""
    celpy = _celpy()
    errors: list[str] = []
    if value is None:
        return errors
    env = celpy.Environment()
    for rule in schema.get("x-kubernetes-validations", []):
        program = env.program(env.compile(rule["rule"]))
        result = program.evaluate({"self": celpy.json_to_cel(value)})
        if isinstance(result, Exception) or not bool(result):
            errors.append(f"{path or '<root>'}: {rule.get('message', rule['rule'])}")
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                errors += cel_errors(sub, value[name], f"{path}.{name}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            errors += cel_errors(schema["items"], item, f"{path}[{i}]")
    return errors


def crd_errors(crd: dict[str, Any], obj: dict[str, Any]) -> list[str]:
    """Everything the API server would reject obj for: its openAPIV3Schema and its CEL rules."""
    jsonschema = _jsonschema()
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    validator = jsonschema.Draft202012Validator(to_jsonschema(schema), format_checker=jsonschema.FormatChecker())
    errors = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(obj)]
    return errors + cel_errors(schema, obj)


def crd_for(kind: str) -> dict[str, Any]:
    return next(c for c in build_all().values() if c["spec"]["names"]["kind"] == kind)


def example(kind: str) -> dict[str, Any]:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == kind and doc["apiVersion"].startswith("callscope.io/"):
                return doc
    raise LookupError(kind)


def committed() -> dict[str, dict[str, Any]]:
    return {p.name: yaml.safe_load(p.read_text()) for p in sorted(CRD_DIR.glob("*.callscope.io.yaml"))}


# --- the files in crds/ ---------------------------------------------------------------------------


def test_committed_crds_are_up_to_date():
    names = stale(CRD_DIR)
    assert not names, f"crds/ is stale ({', '.join(names)}): regenerate with `{REGENERATE}` and commit the result"


def test_one_crd_per_kind_with_names_scope_and_status():
    crds = committed()
    assert set(crds) == {f"{cls.PLURAL}.callscope.io.yaml" for cls in KINDS.values()}
    for cls in KINDS.values():
        crd = crds[f"{cls.PLURAL}.callscope.io.yaml"]
        spec = crd["spec"]
        assert crd["metadata"]["name"] == f"{cls.PLURAL}.callscope.io"
        assert spec["group"] == "callscope.io" and spec["scope"] == "Namespaced"
        assert spec["names"]["kind"] == cls.KIND and spec["names"]["plural"] == cls.PLURAL
        assert spec["names"]["shortNames"] == list(cls.SHORT_NAMES)
        assert spec["names"]["categories"] == ["callscope"]
        [version] = spec["versions"]
        assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
        assert version["subresources"] == {"status": {}}
        columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
        assert columns["ID"] == ".status.id" and columns["Age"] == ".metadata.creationTimestamp"
        assert columns["Ready"] == '.status.conditions[?(@.type=="Ready")].status'
        if "project" in cls.model_fields["spec"].annotation.model_fields:
            assert columns.get("Project") == ".spec.project", cls.KIND


def test_operator_kind_is_reachable_by_plural_and_short_name():
    crd = committed()["operators.callscope.io.yaml"]
    assert crd["spec"]["names"]["plural"] == "operators"
    assert crd["spec"]["names"]["shortNames"]


def test_files_carry_the_generated_header():
    for name, text in render_all().items():
        assert text.startswith("# Generated") and REGENERATE in text.splitlines()[0], name


_FORBIDDEN = {"$ref", "anyOf", "oneOf", "allOf", "not", "title", "$defs", "definitions", "const"}


def _structural_problems(node: dict[str, Any], path: str) -> list[str]:
    problems = [f"{path}: {k}" for k in _FORBIDDEN & set(node)]
    if "type" not in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        problems.append(f"{path}: no type")
    if node.get("type") == "object" and "properties" in node and "additionalProperties" in node:
        problems.append(f"{path}: properties and additionalProperties together")
    if node.get("nullable") and node.get("default", 0) is None:
        problems.append(f"{path}: default null")
    for name, sub in node.get("properties", {}).items():
        if not sub.get("description"):
            problems.append(f"{path}.{name}: no description")
        problems += _structural_problems(sub, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        problems += _structural_problems(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        problems += _structural_problems(node["additionalProperties"], f"{path}{{}}")
    return problems


@pytest.mark.parametrize("name", sorted(build_all()))
def test_schema_is_structural_and_documented(name):
    schema = build_all()[name]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert _structural_problems(schema, "") == []
    assert schema["properties"]["metadata"] == {"description": schema["properties"]["metadata"]["description"],
                                                "type": "object"}
    status = schema["properties"]["status"]
    assert status["x-kubernetes-preserve-unknown-fields"] is False
    assert {"id", "conditions"} <= set(status["properties"])


def test_spec_required_fields_match_the_models():
    for name, crd in build_all().items():
        cls = kind_class(crd["spec"]["names"]["kind"])
        spec_model = cls.model_fields["spec"].annotation
        expected = [f.alias or n for n, f in spec_model.model_fields.items() if f.is_required()]
        assert crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].get("required", []) \
            == expected, name


def test_constraints_from_the_models():
    vn = crd_for("VirtualNumber")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert vn["properties"]["phoneNumber"]["pattern"] == r"^\+[1-9]\d{1,14}$"
    assert vn["properties"]["routingStrategy"]["enum"] == ["priority", "round_robin", "simultaneous"]
    assert vn["properties"]["routingStrategy"]["default"] == "priority"
    project = crd_for("Project")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    pct = project["properties"]["qualityBaselinePct"]
    assert (pct["type"], pct["minimum"], pct["maximum"], pct["nullable"]) == ("number", 0, 100, True)
    assert project["properties"]["webhook"]["properties"]["sections"]["default"] == ["metadata"]
    key = crd_for("ApiKey")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert key["properties"]["permissions"]["items"]["enum"] == ["read", "write", "delete"]
    assert key["properties"]["permissions"]["minItems"] == 1
    assert key["properties"]["expiresAt"]["format"] == "date-time"


def test_cel_rules_compile_as_standard_cel():
    env = _celpy().Environment()

    def rules(node):
        yield from node.get("x-kubernetes-validations", [])
        for sub in node.get("properties", {}).values():
            yield from rules(sub)
        if isinstance(node.get("items"), dict):
            yield from rules(node["items"])

    found = 0
    for crd in build_all().values():
        for rule in rules(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]):
            env.compile(rule["rule"])
            assert rule["message"]
            found += 1
    assert found >= 6


def test_crds_are_valid_kubernetes_objects():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for crd in committed().values():
        kubernetes_validate.validate(crd, K8S_VERSION, strict=True)


# --- examples -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_example_is_valid_against_its_crd_and_its_model(kind):
    obj = example(kind)
    assert obj["metadata"]["namespace"] == "acme"
    assert crd_errors(crd_for(kind), obj) == []
    kind_class(kind).from_dict(obj)  # the embedded store (`callscope apply`) takes the same file


def _broken(kind: str, *path_and_value: Any) -> dict[str, Any]:
    obj = copy.deepcopy(example(kind))
    *path, value = path_and_value
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return obj


INVALID = {
    "bad E.164 operator": (_broken("Operator", "spec", "phoneNumber", "+0415555"), "phoneNumber", True),
    "E.164 with spaces": (_broken("VirtualNumber", "spec", "phoneNumber", "+1 415 555 0100"), "phoneNumber", True),
    "country not alpha-2": (_broken("VirtualNumber", "spec", "countryCode", "usa"), "countryCode", True),
    "quality baseline 101": (_broken("Project", "spec", "qualityBaselinePct", 101), "qualityBaselinePct", True),
    "quality baseline -1": (_broken("Project", "spec", "qualityBaselinePct", -1), "qualityBaselinePct", True),
    "unknown routing strategy": (_broken("VirtualNumber", "spec", "routingStrategy", "random"), "routingStrategy",
                                 True),
    "unknown permission": (_broken("ApiKey", "spec", "permissions", ["read", "admin"]), "permissions", True),
    "no permission": (_broken("ApiKey", "spec", "permissions", []), "permissions", True),
    "missing required": (_broken("Project", "spec", {"name": "x"}), "language", True),
    "unknown spec field": (_broken("Tag", "spec", "colour", "red"), "colour", True),
    "retention 0": (_broken("Account", "spec", "audioRetentionDays", 0), "audioRetentionDays", True),
    "bad member email": (_broken("Member", "spec", "email", "alice"), "email", True),
    "webhook not http": (_broken("Project", "spec", "webhook", {"url": "ftp://x"}), "url", True),
    "unknown redaction entity": (_broken("Project", "spec", "redaction", {"entities": ["email", "ssn"]}), "ssn",
                                 True),
    "no redaction entity": (_broken("Project", "spec", "redaction", {"entities": []}), "entities", True),
    "redaction audio not a boolean": (_broken("Project", "spec", "redaction", {"entities": ["email"], "audio": "yes"}),
                                      "audio", False),  # the model reads "yes" as true, as its other booleans
    # CEL rules: what a pattern cannot say (the models accept these: flagged False)
    "duplicate operators": (_broken("VirtualNumber", "spec", "operators", ["jane", "bob", "jane"]),
                            "operators must not contain the same operator twice", False),
    "duplicate permissions": (_broken("ApiKey", "spec", "permissions", ["read", "read"]),
                              "permissions must not repeat", False),
    "duplicate goal ids": (_broken("Project", "spec", "goals", [{"id": 1, "name": "a", "description": "a"},
                                                                {"id": 1, "name": "b", "description": "b"}]),
                           "goal ids must be unique", False),
    "duplicate webhook sections": (_broken("Project", "spec", "webhook",
                                           {"url": "https://x", "sections": ["summary", "summary"]}),
                                   "webhook sections must not repeat", False),
    "duplicate redaction entities": (_broken("Project", "spec", "redaction", {"entities": ["email", "email"]}),
                                     "redaction entities must not repeat", True),  # the model refuses it too
    "duplicate project links": (_broken("Operator", "spec", "projects", ["support", "support"]),
                                "projects must not contain the same project twice", False),
    # the limits of callscope/validation.py, shared with the API (nothing stored that breaks an upload)
    "blank tag name": (_broken("Tag", "spec", "name", "   "), "spec.name", True),
    "language not BCP 47": (_broken("Project", "spec", "language", "zz-notalang-verylong"), "spec.language", True),
    "language with NUL": (_broken("Project", "spec", "summaryLanguage", "en\x00"), "spec.summaryLanguage", True),
    "NUL in project name": (_broken("Project", "spec", "name", "Sales\x00"), "spec.name", True),
    "100,000-character project name": (_broken("Project", "spec", "name", "x" * 100_000), "spec.name", True),
    "500,000-character hints": (_broken("Project", "spec", "transcriptionHints", "x" * 500_000),
                                "spec.transcriptionHints", True),
    "control character in operator name": (_broken("Operator", "spec", "name", "Jane\x1bDoe"), "spec.name", True),
    "NUL in tag name": (_broken("Tag", "spec", "name", "vip\x00"), "spec.name", True),
    "webhook URL longer than its column": (_broken("Project", "spec", "webhook", {"url": "https://x/" + "a" * 2048}),
                                           "url", True),
    # what webhook delivery cannot parse (validation.endpoint): the pattern says as much of it as a pattern can
    "webhook URL with an unclosed bracket": (_broken("Project", "spec", "webhook", {"url": "https://[::1"}), "url",
                                             True),
    "webhook port out of range": (_broken("Project", "spec", "webhook", {"url": "https://a.com:99999/"}), "url", True),
    "webhook port negative": (_broken("Project", "spec", "webhook", {"url": "https://a.com:-1/"}), "url", True),
    "webhook port 0": (_broken("Project", "spec", "webhook", {"url": "https://a.com:0/"}), "url", True),
    "webhook URL with a password": (_broken("Project", "spec", "webhook", {"url": "https://u:p@a.com/"}), "url",
                                    True),
    # a signing secret the secret stores could not read (callscope/secret_store.py)
    "secret name not a DNS name": (_broken("Project", "spec", "webhook", {"url": "https://a.com/",
                                                                          "signingSecretRef": {"name": "My_Secret"}}),
                                   "name", True),
    "secret key a path": (_broken("Project", "spec", "webhook", {"url": "https://a.com/", "signingSecretRef": {
        "name": "hooks", "key": ".."}}), "key", True),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_objects_are_rejected(case):
    obj, expected, model_rejects = INVALID[case]
    errors = crd_errors(crd_for(obj["kind"]), obj)
    assert errors, f"{case}: accepted"
    assert any(expected in e for e in errors), errors
    if model_rejects:
        with pytest.raises(ValueError):
            kind_class(obj["kind"]).from_dict(obj)


def test_cel_rules_accept_absent_and_empty_lists():
    vn = _broken("VirtualNumber", "spec", "operators", [])
    assert crd_errors(crd_for("VirtualNumber"), vn) == []
    del vn["spec"]["operators"]
    assert crd_errors(crd_for("VirtualNumber"), vn) == []
    project = copy.deepcopy(example("Project"))
    project["spec"]["webhook"] = None
    assert crd_errors(crd_for("Project"), project) == []


def test_stale_detects_edited_missing_and_leftover_files(tmp_path):
    from callscope.resources.crd import write_all

    assert sorted(write_all(tmp_path)) == sorted(render_all())
    assert stale(tmp_path) == [] and write_all(tmp_path) == []
    (tmp_path / "tags.callscope.io.yaml").write_text("edited by hand\n")
    (tmp_path / "members.callscope.io.yaml").unlink()
    (tmp_path / "widgets.callscope.io.yaml").write_text("left over\n")
    assert sorted(stale(tmp_path)) == ["members.callscope.io.yaml", "tags.callscope.io.yaml",
                                       "widgets.callscope.io.yaml"]
