"""CustomResourceDefinitions generated from the resource models (the models are the single source).

`build_crd(cls)` turns one kind's pydantic models into an apiextensions.k8s.io/v1 CRD with a *structural* schema
(every `$ref` inlined, `nullable` for optional fields, only the keywords an API server accepts) and standard-CEL
`x-kubernetes-validations` for what a pattern cannot say. ``python -m callscope.resources.crd`` rewrites crds/*.yaml
(``--check`` exits 1 when one is stale; tests/k8s/test_crds.py checks it). Details: docs/development.md.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from callscope.resources.kinds import KINDS, Permission, RedactionEntity, WebhookEventType, WebhookSection
from callscope.resources.meta import GROUP, VERSION, BaseStatus, Resource
from callscope.validation import INVISIBLE_RANGES

CATEGORIES = ["callscope"]
CRD_DIR = Path(__file__).resolve().parents[2] / "crds"
REGENERATE = "python -m callscope.resources.crd"
HEADER = (
    "# Generated from the pydantic models in callscope/resources/ by `{cmd}`: do not edit.\n"
    "# tests/k8s/test_crds.py fails when this file is stale.\n"
)

# Keywords copied from pydantic's JSON schema into the structural schema; anything else that
# pydantic emits is an error here (a new constraint must be mapped consciously, not dropped).
_KEPT = {"type", "description", "default", "enum", "pattern", "minimum", "maximum", "minLength", "maxLength",
         "minItems", "maxItems", "items", "properties", "required", "additionalProperties", "format"}
_DROPPED = {"title"}
_FORMATS = {"date-time"}

KIND_DESCRIPTIONS: dict[str, str] = {
    "Account": "An account: the tenant that owns every other configuration object of its namespace.",
    "Member": "A person of the account that recordings can be shared with.",
    "Project": "A project: language, retention, goals, categories, extracted fields, trackers and webhook of its "
               "calls.",
    "Operator": "A person who takes calls (an agent), linked to projects and virtual numbers.",
    "VirtualNumber": "A phone number that receives calls, routed to operators and recorded into a project.",
    "Tag": "A label recordings of a project can carry.",
    "ApiKey": "A key of the public REST API; the key material lives in a Secret, only its hash in status.",
    "Scorecard": "A QA form: sections of weighted questions, each answered automatically from what the analysis found "
                 "(or by a reviewer), scoring every analysed call of the projects it names.",
}

# Descriptions for model fields that have none yet (the model's own description always wins).
# Each entry is a field that should gain `description=` in kinds.py / meta.py.
_FALLBACK_DESCRIPTIONS: dict[tuple[str, str], str] = {
    ("ProjectSpec", "description"): "Free-text description of the project.",
    ("ProjectSpec", "industry"): "Industry of the calls, given to the analysis as context.",
    ("ProjectSpec", "quality_baseline_enabled"): "Whether calls are compared with the quality baseline.",
    ("OperatorSpec", "email"): "Email address of the operator.",
    ("VirtualNumberSpec", "name"): "Display name of the number.",
    ("VirtualNumberSpec", "number_type"): "Kind of number: mobile, local, toll-free or national.",
    ("VirtualNumberSpec", "routing_strategy"): "How calls are routed to the operators: priority (in list order), "
                                               "round_robin or simultaneous.",
    ("VirtualNumberStatus", "upfront_cost"): "One-time price paid for the number, as a decimal string.",
    ("VirtualNumberStatus", "monthly_cost"): "Monthly price of the number, as a decimal string.",
    ("ApiKeyStatus", "rotated_at"): "When the key material was last regenerated.",
    ("BaseStatus", "observed_generation"): "metadata.generation the reconciler last acted on.",
    ("BaseStatus", "conditions"): "Conditions of the object, Ready among them.",
    ("Condition", "type"): "Type of the condition, such as Ready or Conflict.",
    ("Condition", "reason"): "Machine-readable reason of the last transition, in CamelCase.",
    ("Condition", "message"): "Human-readable detail of the last transition.",
    ("Condition", "last_transition_time"): "When the status of the condition last changed.",
}

# Bounds that exist only in the CRD: the API server rejects CEL rules whose estimated cost is
# unbounded, so lists (and the strings in them) that a rule iterates over need a maximum size.
# Object references are metadata.name values (DNS subdomains, at most 253 characters).
_BOUNDS: dict[tuple[str, str], dict[str, Any]] = {
    ("VirtualNumberSpec", "operators"): {"maxItems": 256, "items": {"maxLength": 253}},
    ("OperatorSpec", "projects"): {"maxItems": 256, "items": {"maxLength": 253}},
    ("ProjectSpec", "goals"): {"maxItems": 100},
    ("ProjectSpec", "categories"): {"maxItems": 100},
    ("ProjectSpec", "fields"): {"maxItems": 100},
    ("ExtractedField", "name"): {"maxLength": 63},
    # Lists of enum values whose rule forbids repeats hold each value at most once.
    ("Webhook", "sections"): {"maxItems": len(typing.get_args(WebhookSection))},
    ("Webhook", "events"): {"maxItems": len(typing.get_args(WebhookEventType))},
    ("ApiKeySpec", "permissions"): {"maxItems": len(typing.get_args(Permission))},
    ("Redaction", "entities"): {"maxItems": len(typing.get_args(RedactionEntity))},
    ("ScorecardSpec", "projects"): {"items": {"maxLength": 253}},
    ("Question", "id"): {"maxLength": 63},
}

_UNIQUE = "{path}.all(a, {path}.filter(b, b == a).size() == 1)"
_UNIQUE_BY = "{path}.all(a, {path}.filter(b, b.{key} == a.{key}).size() == 1)"


def _unique(field: str, message: str, key: str | None = None) -> dict[str, str]:
    path = f"self.{field}"
    rule = (_UNIQUE_BY.format(path=path, key=key) if key else _UNIQUE.format(path=path))
    return {"rule": f"!has({path}) || {rule}", "message": message}


# CEL rules (standard CEL only) per model, added to that model's object schema.
_VALIDATIONS: dict[str, list[dict[str, str]]] = {
    "VirtualNumberSpec": [_unique("operators", "operators must not contain the same operator twice")],
    "OperatorSpec": [_unique("projects", "projects must not contain the same project twice")],
    "ProjectSpec": [
        _unique("goals", "goal ids must be unique within the project", key="id"),
        _unique("categories", "category names must be unique within the project", key="name"),
        _unique("fields", "extracted field names must be unique within the project", key="name"),
        _unique("trackers", "tracker names must be unique within the project", key="name"),
    ],
    "ExtractedField": [{"rule": "!has(self.type) || self.type != 'enum' || (has(self.values) && size(self.values) > 0)",
                        "message": "an enum field needs values"}],
    "Webhook": [_unique("sections", "webhook sections must not repeat"),
                _unique("events", "webhook events must not repeat")],
    "ApiKeySpec": [_unique("permissions", "permissions must not repeat")],
    "Redaction": [_unique("entities", "redaction entities must not repeat")],
    "ScorecardSpec": [_unique("projects", "projects must not contain the same project twice"),
                      _unique("sections", "section names must not repeat", key="name")],
    "Section": [_unique("questions", "question ids must not repeat in a section", key="id"),
                _unique("sections", "section names must not repeat", key="name")],
    "Subsection": [_unique("questions", "question ids must not repeat in a section", key="id")],
    "Question": [_unique("options", "options must not repeat a value", key="value")],
}

_AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
_ID = {"name": "ID", "type": "integer", "jsonPath": ".status.id"}
_READY = {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'}
_REASON = {"name": "Reason", "type": "string", "priority": 1,
           "jsonPath": '.status.conditions[?(@.type=="Ready")].reason'}


def _col(name: str, path: str, type_: str = "string", priority: int = 0) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": type_, "jsonPath": path}
    if priority:
        column["priority"] = priority
    return column


PRINTER_COLUMNS: dict[str, list[dict[str, Any]]] = {
    "Account": [_ID, _col("Display Name", ".spec.displayName"), _col("Language", ".spec.defaultLanguage"),
                _READY, _REASON, _AGE],
    "Member": [_ID, _col("Email", ".spec.email"), _col("Name", ".spec.name"),
               _col("Locked", ".spec.locked", "boolean"), _READY, _REASON, _AGE],
    "Project": [_ID, _col("Display Name", ".spec.name"), _col("Language", ".spec.language"),
                _col("Retention", ".spec.retentionDays", "integer", priority=1), _READY, _REASON, _AGE],
    "Operator": [_ID, _col("Display Name", ".spec.name"), _col("Phone", ".spec.phoneNumber"),
                 _col("Active", ".spec.active", "boolean"), _col("External ID", ".spec.externalId", priority=1),
                 _READY, _REASON, _AGE],
    "VirtualNumber": [_ID, _col("Phone", ".spec.phoneNumber"), _col("Project", ".spec.project"),
                      _col("Routing", ".spec.routingStrategy"), _col("Active", ".spec.active", "boolean"),
                      _col("Country", ".spec.countryCode", priority=1),
                      _col("Provider", ".status.provider", priority=1),
                      _READY, _REASON, _AGE],
    "Tag": [_ID, _col("Tag", ".spec.name"), _col("Project", ".spec.project"),
            _col("Color", ".status.color", priority=1), _READY, _REASON, _AGE],
    "ApiKey": [_ID, _col("Project", ".spec.project"), _col("Permissions", ".spec.permissions"),
               _col("Revoked", ".spec.revoked", "boolean"), _col("Expires", ".spec.expiresAt", "date"),
               _col("Hint", ".status.keyHint", priority=1), _READY, _REASON, _AGE],
    "Scorecard": [_ID, _col("Display Name", ".spec.name"), _col("Projects", ".spec.projects"),
                  _col("Version", ".metadata.generation", "integer"), _READY, _REASON, _AGE],
}


def _models(root: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """Every model reachable from root, by class name (pydantic's $defs key)."""
    found: dict[str, type[BaseModel]] = {}

    def visit(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp.__name__ in found:
                return
            found[tp.__name__] = tp
            for field in tp.model_fields.values():
                visit(field.annotation)
        for arg in typing.get_args(tp):
            visit(arg)

    visit(root)
    return found


class _Converter:
    def __init__(self, model: type[BaseModel], *, defaults_from_factories: bool):
        self.name = model.__name__
        self.models = _models(model)
        self.schema = model.model_json_schema(by_alias=True, mode="validation")
        self.defs = self.schema.pop("$defs", {})
        self.defaults_from_factories = defaults_from_factories

    def convert(self) -> dict[str, Any]:
        return self._node(self.schema, self.name)

    def _node(self, node: dict[str, Any], model_name: str | None = None) -> dict[str, Any]:
        node = dict(node)
        if "$ref" in node:
            name = node.pop("$ref").rsplit("/", 1)[-1]
            target = self._node(self.defs[name], name)
            target.update(self._node(node))  # the property's own description/default win over the model's
            return target
        if "oneOf" in node:
            return self._union(node)
        if "anyOf" in node:
            options = node.pop("anyOf")
            non_null = [o for o in options if o.get("type") != "null"]
            if len(non_null) != 1 or len(options) != 2:
                raise ValueError(f"only `X | None` unions map onto a structural schema, got {options}")
            target = self._node(non_null[0])
            target["nullable"] = True
            rest = self._node(node)
            rest.pop("type", None)
            target.update(rest)
            return target
        if "const" in node:  # Literal["x"]: a one-value enum
            node["enum"] = [node.pop("const")]
            node.setdefault("type", "string")
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED:
                continue
            if key not in _KEPT:
                raise ValueError(f"JSON schema keyword {key!r} has no mapping in the CRD generator")
            if key == "format" and value not in _FORMATS:
                continue
            if key == "default" and value is None:
                continue  # nullable fields simply stay unset
            if key == "additionalProperties":
                if value is False:
                    continue  # structural schemas prune unknown fields; `false` is not allowed
                out[key] = self._node(value) if isinstance(value, dict) else value
            elif key == "items":
                out[key] = self._node(value)
            elif key == "properties":
                out[key] = {prop: self._property(model_name, prop, sub) for prop, sub in value.items()}
            else:
                out[key] = value
        if "properties" in out:
            out["type"] = "object"
            if model_name in _VALIDATIONS:
                out["x-kubernetes-validations"] = copy.deepcopy(_VALIDATIONS[model_name])
        return out

    def _union(self, node: dict[str, Any]) -> dict[str, Any]:
        """A discriminated union (a scorecard question's answer source) as one object schema, since a structural
        schema cannot say "one of these shapes": every variant's fields, each as loose as the loosest variant's, and
        per variant CEL rules for what it requires, what it has not and where it is stricter."""
        node = dict(node)
        options, discriminator = node.pop("oneOf"), node.pop("discriminator", None)
        if discriminator is None:
            raise ValueError("only discriminated unions map onto a structural schema")
        key = discriminator["propertyName"]
        variants = [self._node(option) for option in options]
        names = list(dict.fromkeys(name for v in variants for name in v["properties"]))
        # No defaults: the API server would write one variant's default into every other variant, which has not
        # that field (the model applies its own defaults).
        merged = {name: {k: v for k, v in _loosest([v["properties"][name] for v in variants
                                                     if name in v["properties"]]).items() if k != "default"}
                  for name in names}
        rules = []
        for variant in variants:
            value = variant["properties"][key]["enum"][0]
            when = f"self.{key} != '{value}' || "
            absent = [name for name in names if name not in variant["properties"]]
            if absent:
                rules.append({"rule": when + "!(" + " || ".join(f"has(self.{n})" for n in absent) + ")",
                              "message": f"the {value} {key} has no {', '.join(absent)}"})
            needed = [name for name in variant.get("required", []) if name != key]
            if needed:
                rules.append({"rule": when + " && ".join(f"has(self.{n})" for n in needed),
                              "message": f"the {value} {key} needs {', '.join(needed)}"})
            for name, sub in variant["properties"].items():
                if name != key:
                    rules += [{"rule": when + f"!has(self.{name}) || " + check, "message": message}
                              for check, message in _narrower(f"self.{name}", sub, merged[name], f"the {value} {key}")]
        out = {k: v for k, v in self._node(node).items() if k != "type"}
        return {"type": "object", **out, "required": [key], "properties": merged, "x-kubernetes-validations": rules}

    def _property(self, model_name: str | None, alias: str, sub: dict[str, Any]) -> dict[str, Any]:
        schema = self._node(sub)
        model = self.models.get(model_name or "")
        if model is None:
            return schema
        field_name, field = next(((n, f) for n, f in model.model_fields.items() if (f.alias or n) == alias),
                                 (alias, None))
        owners = [c.__name__ for c in model.__mro__ if field_name in getattr(c, "__annotations__", {})]
        if not schema.get("description"):
            schema["description"] = next(
                (_FALLBACK_DESCRIPTIONS[(o, field_name)] for o in owners if (o, field_name) in _FALLBACK_DESCRIPTIONS),
                f"{field_name.replace('_', ' ').capitalize()}.")
        if (self.defaults_from_factories and field is not None and field.default_factory is not None
                and "default" not in schema):
            schema["default"] = to_jsonable_python(field.default_factory())
        bounds = next((_BOUNDS[(o, field_name)] for o in owners if (o, field_name) in _BOUNDS), {})
        for key, value in bounds.items():
            if key == "items":
                schema["items"].update(value)
            else:
                schema[key] = value
        return _ordered(schema)


def _loosest(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    """One field of several union variants: what any of them allows (the variants' own rules narrow it again)."""
    out = copy.deepcopy(schemas[0])
    for other in schemas[1:]:
        if other == out:
            continue
        if {out.get("type"), other.get("type")} == {"integer", "number"}:
            out["type"] = "number"
        elif out.get("type") != other.get("type") or "properties" in out or "items" in out:
            raise ValueError(f"union variants disagree on a field beyond its bounds: {out} / {other}")
        for bound, pick in (("minimum", min), ("maximum", max), ("minLength", min)):
            out[bound] = pick(out[bound], other[bound]) if bound in out and bound in other else None
        # a string without a maxLength has a pattern that bounds it (a field's name): CEL's cost needs one
        lengths = [n["maxLength"] for n in (out, other) if "maxLength" in n]
        out["maxLength"] = max(lengths) if lengths else None
        out["enum"] = (list(dict.fromkeys(out["enum"] + other["enum"])) if "enum" in out and "enum" in other
                       else None)
        if out.get("pattern") != other.get("pattern"):
            out["pattern"] = None
        if out.get("default") != other.get("default"):
            out["default"] = None
        if out.get("description") != other.get("description"):
            out["description"] = "Depends on the source: see its own description."
        out["nullable"] = out.get("nullable") or other.get("nullable")
        out = {k: v for k, v in out.items() if v is not None}
    return _ordered(out)


_CEL_SAFE_PATTERN = re.compile(r"^[\x20-\x7e]*$")


def _narrower(path: str, own: dict[str, Any], merged: dict[str, Any], what: str) -> list[tuple[str, str]]:
    """(CEL check, message) for each way a variant's field is stricter than the merged one."""
    out = []
    low, high = own.get("minimum"), own.get("maximum")
    if (low, high) != (merged.get("minimum"), merged.get("maximum")) and low is not None and high is not None:
        out.append((f"(double({path}) >= {float(low)!r} && double({path}) <= {float(high)!r})",
                    f"{path.removeprefix('self.')} of {what} must be {low:g} to {high:g}"))
    if own.get("enum") and own.get("enum") != merged.get("enum"):
        out.append((f"{path} in [{', '.join(repr(e) for e in own['enum'])}]",
                    f"{path.removeprefix('self.')} of {what} must be one of {', '.join(own['enum'])}"))
    pattern = own.get("pattern")
    if pattern and pattern != merged.get("pattern") and _CEL_SAFE_PATTERN.match(pattern) and "'" not in pattern \
            and "\\" not in pattern:
        out.append((f"{path}.matches('{pattern}')", f"{path.removeprefix('self.')} of {what} must match {pattern}"))
    return out


_ORDER = ["description", "type", "format", "nullable", "enum", "pattern", "minimum", "maximum", "minLength",
          "maxLength", "minItems", "maxItems", "default", "required", "properties", "items", "additionalProperties",
          "x-kubernetes-preserve-unknown-fields", "x-kubernetes-validations"]


def _ordered(schema: dict[str, Any]) -> dict[str, Any]:
    """Stable, readable key order (description first) so generated files diff nicely."""
    keys = sorted(schema, key=lambda k: (_ORDER.index(k) if k in _ORDER else len(_ORDER), k))
    out = {k: schema[k] for k in keys}
    for key in ("properties",):
        if key in out:
            out[key] = {name: _ordered(sub) for name, sub in out[key].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _ordered(out["items"])
    return out


def _model_of(cls: type[Resource], field: str) -> type[BaseModel]:
    annotation = cls.model_fields[field].annotation
    assert isinstance(annotation, type) and issubclass(annotation, BaseModel), annotation
    return annotation


def openapi_schema(cls: type[Resource]) -> dict[str, Any]:
    """The structural openAPIV3Schema of one kind."""
    spec_model = _model_of(cls, "spec")
    status_model = _model_of(cls, "status")
    assert issubclass(status_model, BaseStatus)
    spec = _Converter(spec_model, defaults_from_factories=True).convert()
    spec["description"] = f"Desired state of the {cls.KIND}, written by people or GitOps."
    status = _Converter(status_model, defaults_from_factories=False).convert()
    status["description"] = f"Observed state of the {cls.KIND}, written by the reconciler (never taken from files)."
    status["x-kubernetes-preserve-unknown-fields"] = False
    return {
        "description": KIND_DESCRIPTIONS[cls.KIND],
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"description": "APIVersion of the object: callscope.io/v1alpha1.", "type": "string"},
            "kind": {"description": f"Kind of the object: {cls.KIND}.", "type": "string"},
            "metadata": {"description": "Standard object metadata; the namespace is the account.",
                         "type": "object"},
            "spec": _ordered(spec),
            "status": _ordered(status),
        },
    }


def build_crd(cls: type[Resource]) -> dict[str, Any]:
    """One apiextensions.k8s.io/v1 CustomResourceDefinition for a resource kind."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{cls.PLURAL}.{GROUP}",
            "labels": {"app.kubernetes.io/name": "callscope", "app.kubernetes.io/part-of": "callscope"},
        },
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": cls.KIND,
                "listKind": f"{cls.KIND}List",
                "plural": cls.PLURAL,
                "singular": cls.KIND.lower(),
                "shortNames": list(cls.SHORT_NAMES),
                "categories": list(CATEGORIES),
            },
            "versions": [{
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": copy.deepcopy(PRINTER_COLUMNS[cls.KIND]),
                "schema": {"openAPIV3Schema": openapi_schema(cls)},
            }],
        },
    }


def file_name(cls: type[Resource]) -> str:
    return f"{cls.PLURAL}.{GROUP}.yaml"


def build_all() -> dict[str, dict[str, Any]]:
    """File name in crds/ -> CustomResourceDefinition, for every kind."""
    return {file_name(cls): build_crd(cls) for cls in KINDS.values()}


_INVISIBLE = re.compile("[" + "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in INVISIBLE_RANGES) + "]")


def _shown(body: str) -> str:
    """The invisible characters PyYAML writes as they are (those of the display names' patterns) as YAML escapes:
    in the file they would show nothing, or turn the rest of their line around (U+202E). PyYAML double-quotes every
    string holding them (each such pattern also holds U+FEFF), where the escapes mean the characters again."""
    def escape(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"

    return _INVISIBLE.sub(escape, body)


def render(crd: dict[str, Any]) -> str:
    """The exact text of a generated file."""
    raw = yaml.safe_dump(crd, sort_keys=False, width=200, allow_unicode=True)
    body = _shown(raw)
    if body != raw and yaml.safe_load(body) != yaml.safe_load(raw):
        raise ValueError("an invisible character outside a double-quoted string: escape it another way")
    return HEADER.format(cmd=REGENERATE) + body


KUSTOMIZATION = "kustomization.yaml"


def render_all() -> dict[str, str]:
    """File name -> exact text of every generated file in crds/, the kustomization listing them included."""
    files = {name: render(crd) for name, crd in build_all().items()}
    kustomization = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                     "resources": sorted(files)}
    files[KUSTOMIZATION] = render(kustomization)
    return files


def write_all(directory: Path = CRD_DIR) -> list[str]:
    """Write every generated file to directory; return the names of the files that changed (or are new)."""
    directory.mkdir(parents=True, exist_ok=True)
    changed = []
    for name, text in render_all().items():
        path = directory / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(name)
    return changed


def stale(directory: Path = CRD_DIR) -> list[str]:
    """Files in directory that differ from the generated text, are missing, or are left over."""
    expected = render_all()
    out = [name for name, text in expected.items()
           if not (directory / name).exists() or (directory / name).read_text() != text]
    out += sorted(p.name for p in directory.glob(f"*.{GROUP}.yaml") if p.name not in expected)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REGENERATE, description="Generate crds/ from the resource models.")
    parser.add_argument("--check", action="store_true", help="only report stale files; exit 1 if any")
    parser.add_argument("--dir", type=Path, default=CRD_DIR, help="output directory (default: crds/)")
    args = parser.parse_args(argv)
    if args.check:
        names = stale(args.dir)
        for name in names:
            print(f"stale: {args.dir / name}")
        return 1 if names else 0
    changed = write_all(args.dir)
    for name in changed:
        print(f"wrote {args.dir / name}")
    if not changed:
        print(f"{args.dir}: up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
