"""The OpenAPI 3.1 document of the public API, generated from the operation table and the same pydantic
models that validate requests and build responses."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema
from pydantic_core import core_schema

from callscope import __version__
from callscope.api import schemas as s
from callscope.api.routing import PATH_INT_MAX, Router

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


# The tags, in the order a generated client's documentation lists them.
TAGS = {
    "recordings": "Calls uploaded for analysis: upload, list and filter, change, delete, and the analysis read-outs "
                  "(transcription, results, summary) and a time-limited audio URL.",
    "shares": "Sharing a recording's conversation with a member of the account, or with every member.",
    "notes": "Notes members and API keys write on a recording, each with its author and time.",
    "projects": "Projects group recordings, tags and virtual numbers, and hold the analysis settings (languages, "
                "pauses, retention, redaction).",
    "operators": "The people who take calls: they belong to the account and are linked to projects.",
    "virtual_numbers": "Phone numbers bought through the provider, the operators each one rings and its recent calls.",
    "tags": "A project's labels for recordings.",
    "settings": "The account's processing settings and the calling key's own.",
    "search": "Search across the calls' transcripts, by words and by meaning.",
    "scorecards": "QA forms (scorecards) every analysed call of their projects is scored against, and reviewers' "
                  "overrides of a call's answers.",
}
PERMISSIONS = {"read": "reading", "write": "creating and changing", "delete": "deleting"}
DEFAULT_SCOPE = ("Sees and changes only what belongs to its own project; anything of another project answers 404, as "
                 "if it did not exist.")
PAGINATION = ("Paginated: `page` (1-indexed, default 1) and `per_page` (default 20, at most 100: larger values are "
              "capped). The answer's `meta` gives `current_page`, `per_page`, `total_pages` and `total_count`.")
# Components whose models live outside this package (the analysis read-outs, the call records).
COMPONENT_DESCRIPTIONS = {
    "CallCharacteristics": "Characteristics of the call as a whole (talk ratios, interruptions and the like).",
    "CallRecord": "A call to a virtual number, as the call log keeps it.",
    "CategoryResult": "A category the call was put in, with the evidence.",
    "Evidence": "Where in the transcript a finding rests: the words and their times.",
    "ExtractedValue": "A value the analysis took from the call (a field of the project).",
    "GoalResult": "Whether the call met one of the project's goals, with the evidence.",
    "NumberStats": "Counts of a virtual number's calls.",
    "Pause": "A silence longer than the project's long-pause threshold.",
    "Results": "The analysis results of a recording: empty lists until its analysis has completed.",
    "SpeakerResult": "One speaker of the call.",
    "SpeakerTraits": "What the analysis heard of a speaker (emotions, pace and the like).",
    "Summary": "The AI summary of a recording: null until its analysis has completed.",
    "Transcription": "The transcript of a recording: speakers and segments, empty until its analysis has completed.",
    "TranscriptWord": "One word of a segment with its times (milliseconds from the start of the call).",
    "RecordingStatus": "Where a recording is in its analysis: pending, processing, completed or failed.",
    "SectionScore": "A section's score on a call's scorecard (0 to 100), with its subsections'.",
    "SubsectionScore": "A subsection's score on a call's scorecard (0 to 100).",
}
SECURITY = ("An API key, sent as `Authorization: Bearer <key>`: a fixed prefix plus 32 alphanumerics, created with "
            "`callscope keys create` (or by an administrator). A key carries permissions (`read`, `write`, `delete`), "
            "may be scoped to one project, may expire and may have its own rate limit per minute. A missing, "
            "malformed, revoked or expired key is 401; a key without the operation's permission is 403.")


def _description(op, statuses: list[int]) -> str:
    parts = [op.description or f"{op.summary}."]
    parts.append(f"**Permission:** `{op.permission}` (an API key allowed {PERMISSIONS[op.permission]}).")
    parts.append(f"**Project-scoped keys:** {op.scope or DEFAULT_SCOPE}")
    if op.query is not None and issubclass(op.query, s.PageQuery):
        parts.append(f"**Pagination:** {PAGINATION}")
    parts.append("**Errors:**\n\n" + "\n".join(f"- `{status}`: {_error_text(op, status)}" for status in statuses))
    return "\n\n".join(parts)


def _error_text(op, status: int) -> str:
    return op.error_notes.get(status, _ERROR_TEXT[status] + ".")


def _example(schema: JsonSchemaValue) -> Any:
    return (schema.get("examples") or [None])[0]


def _component(ref: JsonSchemaValue, schemas: dict[str, Any]) -> JsonSchemaValue:
    return schemas[ref["$ref"].rsplit("/", 1)[1]] if "$ref" in ref else ref


def _spread_examples(schemas: dict[str, Any]) -> None:
    """A component without examples takes its value in the example of one that holds it (a Project's example
    gives its ProjectRedaction one), until nothing changes."""
    changed = True
    while changed:
        changed = False
        for schema in list(schemas.values()):
            example = _example(schema)
            if not isinstance(example, dict):
                continue
            for name, prop in schema.get("properties", {}).items():
                value = example.get(name)
                options = prop.get("anyOf", [prop])
                for option in options:
                    target, item = option, value
                    if option.get("type") == "array" and isinstance(value, list) and value:
                        target, item = option.get("items", {}), value[0]
                    ref = target.get("$ref", "")
                    if ref and item is not None and not isinstance(item, list):
                        component = schemas[ref.rsplit("/", 1)[1]]
                        if "examples" not in component:
                            component["examples"] = [item]
                            changed = True


def _typed(node: Any) -> None:
    """An `enum` or `const` without a `type` gets the type of its values (generators read an untyped one as
    nothing they know: openapi-python-client dropped a whole model over one)."""
    if isinstance(node, list):
        for item in node:
            _typed(item)
    elif isinstance(node, dict):
        values = node.get("enum", [node["const"]] if "const" in node else None)
        if values is not None and "type" not in node:
            names = sorted({_JSON_TYPES[type(value)] for value in values})
            node["type"] = names[0] if len(names) == 1 else names
        for value in node.values():
            _typed(value)


_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}


def _curl(op, path: str, body_example: Any) -> str:
    url = "$CALLSCOPE_URL" + re.sub(r"\{(\w+)\}", lambda m: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" if (
        m[1] == "id" and "/recordings/" in path) else "1", path)
    lines = [f"curl -X {op.method} '{url}'", '  -H "Authorization: Bearer $CALLSCOPE_KEY"']
    if op.body_content_type == "multipart/form-data":
        lines += ["  -F file=@call.wav -F project_id=1 -F external_id=crm-77"]
    elif body_example is not None:
        lines += ["  -H 'Content-Type: application/json'", f"  -d '{json.dumps(body_example)}'"]
    return " \\\n".join(lines)


def build_document(router: Router, base_url: str = "") -> dict[str, Any]:
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
    schemas: dict[str, Any] = defs.get("$defs", {})
    for name, schema in schemas.items():
        if name in COMPONENT_DESCRIPTIONS and "description" not in schema:
            schema["description"] = COMPONENT_DESCRIPTIONS[name]
    _spread_examples(schemas)
    _typed(schemas)

    names = [op.name for op in ops]
    missing = [f"{op.method} {op.path}" for op in ops if not op.name]
    if missing or len(set(names)) != len(names):
        raise ValueError(f"every operation needs a name of its own (its operationId): {missing or sorted(names)}")
    paths: dict[str, dict[str, Any]] = {}
    for op in sorted(ops, key=lambda o: (o.path, o.method)):
        path = _PATH_PARAM.sub(r"{\1}", op.path)
        parameters = [{"name": name, "in": "path", "required": True, "schema": _PATH_SCHEMAS[conv],
                       "description": _PATH_TEXT.get((name, "/recordings/" in path), "")}
                      for name, conv in _PATH_PARAM.findall(op.path)]
        if op.query is not None:
            parameters += query_parameters(op.query)
        responses: dict[str, Any] = {}
        for status, model in {op.status: op.response, **op.extra_statuses}.items():
            entry: dict[str, Any] = {"description": _SUCCESS_TEXT.get((op.name, status), "Success")}
            if model is not None and status != 204:
                ref = refs[(model, "serialization")]
                media: dict[str, Any] = {"schema": ref}
                if (example := _example(_component(ref, schemas))) is not None:
                    media["example"] = example
                entry["content"] = {"application/json": media}
            responses[str(status)] = entry
        statuses = sorted({*op.errors, 401, 403, 429, *((400, 413, 422) if op.body else ())})
        for status in statuses:
            responses[str(status)] = {
                "description": _error_text(op, status),
                "content": {"application/json": {"schema": refs[(_ERROR_MODELS[status], "serialization")]}},
            }
        body_example = None
        entry = {"operationId": op.name, "summary": op.summary, "description": _description(op, statuses),
                 "tags": [op.tag], "parameters": parameters, "responses": responses, "x-permission": op.permission}
        if op.body is not None:
            body_ref = refs[(op.body, "validation")]
            body_schema = _component(body_ref, schemas)
            media = {"schema": body_ref}
            if op.body_content_type == "application/json" and (body_example := _example(body_schema)) is not None:
                media["example"] = body_example
            entry["requestBody"] = {"required": _body_required(op.body_content_type, body_schema),
                                    "content": {op.body_content_type: media}}
        entry["x-codeSamples"] = [{"lang": "Shell", "label": "curl", "source": _curl(op, path, body_example)}]
        paths.setdefault(path, {})[op.method.lower()] = entry

    used = {op.tag for op in ops}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Callscope public API", "version": __version__,
                 "description": "Call-recording analysis: projects, operators, virtual numbers, tags, recordings. "
                 "Generate a client from this document (docs/api.md, \"Generating a client\"); "
                 "examples/client/analyse_call.py uploads a call, waits for its analysis and prints it."},
        "servers": [{"url": base_url or "/", "description": "This Callscope service (its public base URL)."}],
        "security": [{"bearerAuth": []}],
        "tags": [{"name": name, "description": text} for name, text in TAGS.items() if name in used],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer", "description": SECURITY}},
        },
    }


_PATH_TEXT = {("id", True): "The recording's public_id (a UUID) or its legacy integer id.",
              ("id", False): "The object's id.", ("share_id", True): "The share's id."}
_SUCCESS_TEXT = {("uploadRecording", 201): "Uploaded: the new recording, pending analysis.",
                 ("uploadRecording", 200): "A repeat of project_id + external_id: the first upload's recording.",
                 ("createRecordingShare", 201): "Shared.",
                 ("createRecordingShare", 200): "Already shared with that person: the existing share (no email).",
                 ("createTag", 201): "Created.", ("createTag", 200): "The project's tag of that name already existed.",
                 ("createProject", 201): "Created.", ("purchaseVirtualNumber", 201): "Purchased.",
                 ("deleteProject", 204): "Deleted.", ("deleteRecording", 204): "Deleted.",
                 ("deleteRecordingShare", 204): "Removed.", ("deleteTag", 204): "Deleted."}
