"""Reading requests into the pydantic models of api/schemas.py: JSON bodies, query strings and form fields,
with the spec's error shapes (400 for malformed JSON, 422 `{errors}` naming each wrong field)."""

from __future__ import annotations

import re
from typing import TypeVar, get_origin

import falcon.asgi
from pydantic import BaseModel, ValidationError

from callscope.api.schemas import INT64_MAX
from callscope.errors import BadRequest, PayloadTooLarge, ValidationFailed
from callscope.validation import PATTERN_PROBLEMS

M = TypeVar("M", bound=BaseModel)

_TYPE_WORDS = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
    "list_type": "an array",
    "model_type": "an object",  # a nested object (the body itself: "Request body must be a JSON object")
    "dict_type": "an object",
    "datetime_type": "an ISO 8601 timestamp",
    "datetime_parsing": "an ISO 8601 timestamp",
    "datetime_from_date_parsing": "an ISO 8601 timestamp",
    "date_parsing": "a day (YYYY-MM-DD)",
    "date_from_datetime_parsing": "a day (YYYY-MM-DD)",
}
_BOUNDS = {"greater_than_equal": "greater than or equal to", "less_than_equal": "less than or equal to",
           "greater_than": "greater than", "less_than": "less than"}


def messages(exc: ValidationError) -> list[str]:
    out: list[str] = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "body"
        kind, ctx = err["type"], err.get("ctx") or {}
        if kind in ("model_type", "model_attributes_type", "dict_type") and not err["loc"]:
            text = "Request body must be a JSON object"
        elif kind in _TYPE_WORDS:
            text = f"{field} must be {_TYPE_WORDS[kind]}"
        elif kind in _BOUNDS:
            bound = next(iter(ctx.values()))
            bound = int(bound) if isinstance(bound, float) and bound.is_integer() else bound
            text = f"{field} is out of range" if abs(bound) == INT64_MAX else f"{field} must be {_BOUNDS[kind]} {bound}"
        elif kind == "out_of_range":
            text = f"{field} is out of range"
        elif kind == "string_too_long":
            text = f"{field} is too long (maximum is {ctx['max_length']} characters)"
        elif kind == "string_pattern_mismatch":
            text = f"{field} {PATTERN_PROBLEMS.get(ctx['pattern'], 'has an invalid format')}"
        elif kind == "literal_error":
            text = f"{field} must be one of: {', '.join(map(str, _choices(err)))}"
        elif kind == "too_short":
            text = (f"{field} must not be empty" if ctx.get("min_length") == 1
                    else f"{field} must have at least {ctx.get('min_length')} items")
        elif kind == "too_long":
            text = f"{field} must have at most {ctx.get('max_length')} items"
        elif kind in ("repeated", "unusable"):
            text = f"{field} {err['msg']}"
        elif kind == "missing":
            text = f"{field} is required"
        else:
            text = f"{field}: {err['msg']}"
        if text not in out:
            out.append(text)
    return out


def _choices(err) -> list:
    """The values a Literal allows, from pydantic's `expected` text ("'a', 'b' or 'c'")."""
    return re.findall(r"'([^']*)'", err["ctx"]["expected"])


async def read_raw(req: falcon.asgi.Request, limit: int) -> bytes:
    if req.content_length is not None and req.content_length > limit:
        raise PayloadTooLarge(f"Request body is larger than {limit} bytes")
    raw = await req.stream.read(limit + 1)
    if len(raw) > limit:
        raise PayloadTooLarge(f"Request body is larger than {limit} bytes")
    return raw


async def parse_json(req: falcon.asgi.Request, model: type[M], limit: int) -> M:
    """The body validated against `model` (strict JSON types). An empty body counts as `{}`; blank space is not
    JSON (400)."""
    raw = await read_raw(req, limit)
    if not raw:
        raw = b"{}"
    elif req.content_type and "json" not in req.content_type.lower():
        raise BadRequest("Content-Type must be application/json")
    try:
        return model.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise BadRequest("Malformed JSON in request body") from None
        raise ValidationFailed(messages(exc)) from None


def parse_fields(model: type[M], values: dict[str, str | list[str]]) -> M:
    """Text values (a query string, multipart form fields) validated against `model`; only the values sent
    are given, so the model's defaults stand for the rest."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise ValidationFailed(messages(exc)) from None


def parse_query(req: falcon.asgi.Request, model: type[M], *, only_known: bool = False) -> M:
    """The query string read into `model`. A list field also takes its name without `[]`
    (`tag_ids[]=1&tag_ids=2`); an empty value is a value (`page=` is not an integer). `only_known`: a parameter
    the model does not read is 422 (where ignoring it would answer something else than was asked, such as a
    filter misspelt)."""
    if only_known:
        known = {f.alias or name for name, f in model.model_fields.items()}
        if unknown := sorted(set(req.params) - known - {k.removesuffix("[]") for k in known}):
            raise ValidationFailed([f"{name} is not a parameter of this operation" for name in unknown])
    values: dict[str, str | list[str]] = {}
    for name, field in model.model_fields.items():
        key = field.alias or name
        if get_origin(field.annotation) is list:
            items = (req.get_param_as_list(key) or []) + (req.get_param_as_list(key.removesuffix("[]")) or []
                                                          if key.endswith("[]") else [])
            if items:
                values[key] = items
        elif (value := req.get_param(key)) is not None:
            values[key] = value
    return parse_fields(model, values)
