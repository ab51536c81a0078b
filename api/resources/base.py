"""What every resource shares: the context, the caller, and the `data` envelope."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from callscope.services.context import Context, Principal


class Resource:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @property
    def body_limit(self) -> int:
        return self.ctx.settings.max_json_body_bytes


def principal_of(req) -> Principal:
    return req.context.principal


def data(value: BaseModel | list[BaseModel]) -> dict[str, Any]:
    if isinstance(value, list):
        return {"data": [v.model_dump(mode="json") for v in value]}
    return {"data": value.model_dump(mode="json")}
