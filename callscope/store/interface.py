"""The store interface every back end implements (SQLite embedded, Kubernetes API in a cluster).

Semantics follow the Kubernetes API so that code behaves the same on both: objects are named in a namespace (the
account); `create` assigns uid, resourceVersion, generation and creationTimestamp and ignores status; `update`
replaces labels, annotations and spec, `update_status` status only, both failing with StaleResourceVersion on a stale
metadata.resourceVersion; resourceVersions are opaque; `watch` raises Gone when its version is too old. In full:
docs/development.md.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from callscope.errors import Conflict, NotFound
from callscope.resources.meta import Resource

R = TypeVar("R", bound=Resource)


class AlreadyExists(Conflict):
    def __init__(self, kind: str, name: str):
        super().__init__(f"{kind} {name!r} already exists")


class StaleResourceVersion(Conflict):
    def __init__(self, kind: str, name: str):
        super().__init__(f"{kind} {name!r} was changed by someone else; read it again and retry")


class Gone(Exception):
    """The resourceVersion a watch asked to start from is no longer available."""


class ObjectNotFound(NotFound):
    def __init__(self, kind: str, name: str):
        super().__init__("Resource not found")
        self.detail = f"{kind} {name!r} not found"


@dataclass(frozen=True)
class WatchEvent:
    type: Literal["ADDED", "MODIFIED", "DELETED"]
    object: Resource


class ResourceStore(Protocol):
    async def get(self, kind: type[R], namespace: str, name: str) -> R:
        """The object, or ObjectNotFound."""

    async def list(
        self, kind: type[R], namespace: str | None = None, label_selector: str | None = None
    ) -> list[R]:
        """Objects of a kind, in one namespace or all, filtered by a Kubernetes label selector."""

    async def list_with_version(
        self, kind: type[R], namespace: str | None = None
    ) -> tuple[builtins.list[R], str]:
        """Objects of a kind plus the collection's resourceVersion to start a watch from."""

    async def create(self, obj: R) -> R:
        """Store a new object (status ignored); AlreadyExists when the name is taken."""

    async def update(self, obj: R) -> R:
        """Replace labels, annotations and spec; StaleResourceVersion on a lost race."""

    async def update_status(self, obj: R) -> R:
        """Replace status only; StaleResourceVersion on a lost race."""

    async def delete(self, kind: type[R], namespace: str, name: str) -> None:
        """Remove the object; ObjectNotFound when absent."""

    def watch(
        self, kind: type[R], namespace: str | None = None, resource_version: str | None = None
    ) -> AsyncIterator[WatchEvent]:
        """Changes after resource_version, in order, forever; Gone when it is too old."""

    async def close(self) -> None:
        """Release connections and background tasks."""
