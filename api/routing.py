"""One table of the API's operations: each responder declares its permission, models and statuses once,
and the auth middleware, the OpenAPI document and the usage tracker all read it from here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from falcon.routing import IntConverter
from pydantic import BaseModel

from callscope.catalog.tables import BIGINT_MAX

PREFIX = "/api/v1/public"
PATH_INT_MAX = BIGINT_MAX  # an id of the catalog's


class PathInt(IntConverter):
    """`{name:int}` in a route: 1 to the catalog's BIGINT maximum; any other number is not found (404), and
    never reaches a query."""

    def __init__(self, num_digits: int | None = None, min: int = 1, max: int = PATH_INT_MAX):
        super().__init__(num_digits, min, max)


@dataclass
class Operation:
    """One operation. `name` is its operationId (what a generated client calls it: `listRecordings` becomes
    `list_recordings`); `description`, `scope` (what a project-scoped key sees and may do) and `error_notes` (when
    each error status happens, where that is more than the document's general words) become the operation's
    description, with the permission, the pagination and the errors the table states already."""

    summary: str
    permission: str | None  # None: no API key needed (health, metrics, the OpenAPI document)
    response: type[BaseModel] | None = None
    status: int = 200
    body: type[BaseModel] | None = None
    body_content_type: str = "application/json"
    query: type[BaseModel] | None = None  # the query string's model (api/body.py parse_query)
    errors: tuple[int, ...] = ()
    forbidden_message: str | None = None  # the spec's odd `Forbidden` on the virtual-number list
    extra_statuses: dict[int, type[BaseModel]] = field(default_factory=dict)
    method: str = ""
    path: str = ""
    tag: str = ""
    name: str = ""
    description: str = ""
    scope: str = ""
    error_notes: dict[int, str] = field(default_factory=dict)


def operation(summary: str, permission: str | None, **kwargs: Any) -> Callable:
    def decorate(responder: Callable) -> Callable:
        responder.__operation__ = Operation(summary=summary, permission=permission, **kwargs)
        return responder
    return decorate


class Router:
    """Registers Falcon routes and remembers their operations by (METHOD, URI template)."""

    def __init__(self, app):
        self.app = app
        app.router_options.converters["int"] = PathInt
        self.operations: dict[tuple[str, str], Operation] = {}

    def add(self, path: str, resource: object, *, tag: str, suffix: str | None = None, prefix: str = PREFIX) -> None:
        template = prefix + path
        self.app.add_route(template, resource, suffix=suffix) if suffix else self.app.add_route(template, resource)
        for method in ("get", "head", "post", "patch", "put", "delete"):
            name = f"on_{method}" + (f"_{suffix}" if suffix else "")
            responder = getattr(resource, name, None)
            op: Operation | None = getattr(responder, "__operation__", None)
            if op is not None:
                op.method, op.path, op.tag = method.upper(), template, tag
                self.operations[(method.upper(), template)] = op

    def find(self, method: str, template: str | None) -> Operation | None:
        return self.operations.get((method, template or ""))
