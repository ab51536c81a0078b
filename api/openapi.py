"""The OpenAPI 3.1 document of the public API, generated from the operation table and the same pydantic
models that validate requests and build responses."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema
from pydantic_core import core_schema

from callscope import __version__
from callscope.api import schemas as s
from callscope.api.routing import PATH_INT_MAX, PREFIX, Router

_PATH_PARAM = re.compile(r"\{(\w+)(?::(\w+))?\}")
_PATH_SCHEMAS = {"int": {"type": "integer", "minimum": 1, "maximum": PATH_INT_MAX}, "": {"type": "string"}}
_ERROR_MODELS = {400: s.ErrorBody, 401: s.ErrorBody, 403: s.ErrorBody, 404: s.ErrorBody, 413: s.ErrorBody,
                 422: s.ErrorsBody, 429: s.RateLimitBody, 502: s.ErrorBody, 503: s.ErrorBody}
_ERROR_TEXT = {400: "Malformed request", 401: "Missing, malformed, revoked or expired API key",
               403: "The key lacks the permission or the scope", 404: "Not found or outside the key's scope",
               413: "Request body too large", 422: "Validation failed", 429: "Rate limit exceeded",
               502: "An upstream service's answer could not be read", 503: "Temporarily unavailable"}


class _Document(GenerateJsonSchema):
    """pydantic's JSON schema, less `default: null` on fields that may be left out but not sent as null."""

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        json_schema = super().default_schema(schema)
        if json_schema.get("default", ...) is None and not _allows_null(json_schema):
            del json_schema["default"]
        return json_schema


def _allows_null(schema: JsonSchemaValue) -> bool:
    return schema.get("type") == "null" or any(option.get("type") == "null" for option in schema.get("anyOf", ()))


def _body_required(content_type: str, schema: JsonSchemaValue) -> bool:
    """An empty JSON body counts as `{}` (api/body.py), so one is needed only where `{}` is refused."""
    return content_type != "application/json" or any(k in schema for k in ("required", "oneOf", "anyOf"))


def _inlined(node: Any, defs: dict[str, Any]) -> Any:
    """`node` with each `{"$ref": "#/$defs/Name"}` replaced by that definition: a parameter's schema has no
    `$defs` of its own to point into (an enum such as RecordingStatus)."""
    if isinstance(node, list):
        return [_inlined(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref", "")
    if ref.startswith("#/$defs/"):
        target = {k: v for k, v in defs[ref.removeprefix("#/$defs/")].items() if k != "title"}
        return _inlined({**target, **{k: v for k, v in node.items() if k != "$ref"}}, defs)
    return {key: _inlined(value, defs) for key, value in node.items()}


def query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    """The query parameters a model reads (api/body.py parse_query), in the document's form."""
    schema = model.model_json_schema(mode="validation", schema_generator=_Document)
    out = []
    for name, prop in schema["properties"].items():
        prop = {k: v for k, v in _inlined(prop, schema.get("$defs", {})).items() if k != "title"}
        description = prop.pop("description", "")
        out.append({"name": name, "in": "query", "required": name in schema.get("required", ()), "schema": prop,
                    **({"description": description} if description else {})})
    return out


def build_document(router: Router) -> dict[str, Any]:
    ops = [op for op in router.operations.values() if op.permission is not None]
    wanted: list[tuple[type[BaseModel], str]] = [(m, "serialization") for m in set(_ERROR_MODELS.values())]
    for op in ops:
        if op.body is not None:
            wanted.append((op.body, "validation"))
        for model in (op.response, *op.extra_statuses.values()):
            if model is not None:
                wanted.append((model, "serialization"))
    refs, defs = models_json_schema(list(dict.fromkeys(wanted)), ref_template="#/components/schemas/{model}",
                                    schema_generator=_Document)

    paths: dict[str, dict[str, Any]] = {}
    for op in sorted(ops, key=lambda o: (o.path, o.method)):
        path = _PATH_PARAM.sub(r"{\1}", op.path)
        parameters = [{"name": name, "in": "path", "required": True, "schema": _PATH_SCHEMAS[conv]}
                      for name, conv in _PATH_PARAM.findall(op.path)]
        if op.query is not None:
            parameters += query_parameters(op.query)
        responses: dict[str, Any] = {}
        for status, model in {op.status: op.response, **op.extra_statuses}.items():
            entry: dict[str, Any] = {"description": "Success"}
            if model is not None and status != 204:
                entry["content"] = {"application/json": {"schema": refs[(model, "serialization")]}}
            responses[str(status)] = entry
        for status in sorted({*op.errors, 401, 403, 429, *((400, 413, 422) if op.body else ())}):
            responses[str(status)] = {
                "description": _ERROR_TEXT[status],
                "content": {"application/json": {"schema": refs[(_ERROR_MODELS[status], "serialization")]}},
            }
        entry = {
            "operationId": f"{op.method.lower()}_"
                f"{path.removeprefix(PREFIX).strip('/').replace('/', '_').replace('{', '').replace('}', '')}",
            "summary": op.summary, "tags": [op.tag], "parameters": parameters, "responses": responses,
            "x-permission": op.permission,
        }
        if op.body is not None:
            entry["requestBody"] = {"required": _body_required(op.body_content_type, defs["$defs"][op.body.__name__]),
                                    "content": {op.body_content_type: {"schema": refs[(op.body, "validation")]}}}
        paths.setdefault(path, {})[op.method.lower()] = entry

    return {
        "openapi": "3.1.0",
        "info": {"title": "Callscope public API", "version": __version__,
                 "description": "Call-recording analysis: projects, operators, virtual numbers, tags, recordings."},
        "servers": [{"url": "/"}],
        "security": [{"bearerAuth": []}],
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer",
                                               "description": "API key: a fixed prefix plus 32 alphanumerics."}},
        },
    }
