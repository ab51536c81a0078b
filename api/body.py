"""Reading requests: JSON bodies into pydantic models, query parameters into typed values, with the
spec's error shapes (400 for malformed JSON, 422 `{errors}` for wrong fields)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypeVar

import falcon.asgi
from pydantic import BaseModel, ValidationError

from callscope.errors import BadRequest, PayloadTooLarge, ValidationFailed

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
    "datetime_type": "an ISO 8601 timestamp",
    "datetime_parsing": "an ISO 8601 timestamp",
    "datetime_from_date_parsing": "an ISO 8601 timestamp",
}


def messages(exc: ValidationError) -> list[str]:
    out: list[str] = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "body"
        kind = err["type"]
        if kind in ("model_type", "model_attributes_type", "dict_type") and not err["loc"]:
            text = "Request body must be a JSON object"
        elif kind in _TYPE_WORDS:
            text = f"{field} must be {_TYPE_WORDS[kind]}"
        elif kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
            text = f"{field} is out of range"
        elif kind == "missing":
            text = f"{field} is required"
        else:
            text = f"{field}: {err['msg']}"
        if text not in out:
            out.append(text)
    return out


async def read_raw(req: falcon.asgi.Request, limit: int) -> bytes:
    if req.content_length is not None and req.content_length > limit:
        raise PayloadTooLarge(f"Request body is larger than {limit} bytes")
    raw = await req.stream.read(limit + 1)
    if len(raw) > limit:
        raise PayloadTooLarge(f"Request body is larger than {limit} bytes")
    return raw


async def parse_json(req: falcon.asgi.Request, model: type[M], limit: int) -> M:
    """The body validated against `model` (strict JSON types). An empty body counts as `{}`."""
    raw = await read_raw(req, limit)
    if not raw.strip():
        raw = b"{}"
    elif req.content_type and "json" not in req.content_type.lower():
        raise BadRequest("Content-Type must be application/json")
    try:
        return model.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise BadRequest("Malformed JSON in request body") from None
        raise ValidationFailed(messages(exc)) from None


INT64_MAX = 2**63 - 1  # the catalog's BIGINT


def parse_int(name: str, raw: str | None) -> int | None:
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValidationFailed(f"{name} must be an integer") from None
    if not -INT64_MAX <= value <= INT64_MAX:
        raise ValidationFailed(f"{name} is out of range")
    return value


def parse_datetime(name: str, raw: str | None) -> datetime | None:
    if raw is None or raw.strip() == "":
        return None
    try:
        value = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValidationFailed(f"{name} must be an ISO 8601 timestamp") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def query_datetime(req: falcon.asgi.Request, name: str) -> datetime | None:
    return parse_datetime(name, req.get_param(name))


def query_int_list(req: falcon.asgi.Request, name: str) -> list[int]:
    """A repeatable integer parameter, as `name[]=1&name[]=2` (or `name=1&name=2`)."""
    raw = (req.get_param_as_list(f"{name}[]") or []) + (req.get_param_as_list(name) or [])
    return [value for item in raw if (value := parse_int(f"{name}[]", item)) is not None]


def query_int(req: falcon.asgi.Request, name: str, *, minimum: int | None = None) -> int | None:
    value = parse_int(name, req.get_param(name))
    if value is None:
        return None
    if minimum is not None and value < minimum:
        raise ValidationFailed(f"{name} must be greater than or equal to {minimum}")
    return value
