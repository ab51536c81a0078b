"""The cluster back end: configuration objects as custom resources (group callscope.io) on the
Kubernetes API, through lightkube's async client (callscope/kube.py).

Every kind is a namespaced custom resource with a status subresource (an account is a namespace). `update` and
`update_status` are PUTs with optimistic concurrency (retried on conflict without a resourceVersion); API errors map
onto the interface's; `watch` streams from a resourceVersion, reconnects, and raises Gone on a 410. `poll_now()` and
the watches' `drained()` let `CachedStore.sync()` wait for the cache, bounded by ``sync_grace``. Details:
docs/development.md.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import weakref
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta as KubeObjectMeta
from lightkube.resources.core_v1 import Namespace

from callscope.errors import ServiceUnavailable, ValidationFailed
from callscope.kube import kube_client
from callscope.resources import KINDS
from callscope.resources.meta import GROUP, VERSION, Resource
from callscope.store.interface import AlreadyExists, Gone, ObjectNotFound, StaleResourceVersion, WatchEvent
from callscope.store.selectors import parse_selector

R = TypeVar("R", bound=Resource)

_SERVER_SET = ("resourceVersion", "uid", "generation", "creationTimestamp", "deletionTimestamp", "managedFields")


def _int(rv: str | None) -> int | None:
    try:
        return int(rv) if rv is not None else None
    except ValueError:
        return None


class KubernetesWatch:
    """The async iterator `KubernetesStore.watch` returns; see the module docstring."""

    def __init__(self, store: KubernetesStore, kind: type[Resource], namespace: str | None, rv: str | None):
        self._store = store
        self.kind = kind
        self.namespace = namespace
        self._rv = rv  # the version to (re)start from: the last event or bookmark read
        self._processed: int | None = _int(rv)  # every event up to it has been handled by the consumer
        self._pending: int | None = None  # version of the event handed out, not yet known handled
        self._resp: Any = None
        self._lines: Any = None
        self._finished = False
        self._cond = asyncio.Condition()

    def __aiter__(self) -> KubernetesWatch:
        return self

    async def _progress(self, rv: int | None) -> None:
        if rv is not None and (self._processed is None or rv > self._processed):
            self._processed = rv
        async with self._cond:
            self._cond.notify_all()

    async def __anext__(self) -> WatchEvent:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            await self._progress(pending)
        while True:
            if self._finished:
                raise StopAsyncIteration
            if self._lines is None:
                try:
                    await self._connect()
                except BaseException:
                    await self._finish()
                    raise
            try:
                line = await anext(self._lines)
            except StopAsyncIteration:
                await self._disconnect()  # the server ended the stream (timeout): watch again from _rv
                continue
            except httpx2.HTTPError as exc:
                await self._finish()
                raise ServiceUnavailable(f"the watch of {self.kind.PLURAL} failed: {exc}") from exc
            except BaseException:
                await self._finish()
                raise
            if not line.strip():
                continue
            event = json.loads(line)
            type_, obj = event.get("type"), event.get("object") or {}
            if type_ == "ERROR":
                await self._finish()
                code = obj.get("code")
                if code == 410:
                    raise Gone(obj.get("message") or f"resourceVersion {self._rv} is too old")
                raise ServiceUnavailable(f"the watch of {self.kind.PLURAL} failed: {obj.get('message')}")
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self._rv = rv
            if type_ == "BOOKMARK":
                await self._progress(_int(rv))
                continue
            if type_ not in ("ADDED", "MODIFIED", "DELETED"):
                continue
            self._pending = _int(rv)
            if (parsed := self.kind.from_stored(obj)) is None:
                continue
            return WatchEvent(type_, parsed)

    async def _connect(self) -> None:
        store = self._store
        if store._closed:
            raise ServiceUnavailable("the store is closed")
        if self._rv is None:
            _, self._rv = await store.list_with_version(self.kind, self.namespace)
            if self._processed is None:
                self._processed = _int(self._rv)
        gc = store._client._client
        br = gc.prepare_request(
            "list", res=store._res(self.kind), namespace=self.namespace or "*", watch=True,
            params={"resourceVersion": self._rv, "allowWatchBookmarks": "true"},
        )
        req = gc._client.build_request(br.method, br.url, params=br.params, timeout=gc._watch_timeout)
        try:
            resp = await gc.send(req, stream=True)
        except httpx2.HTTPError as exc:
            raise ServiceUnavailable(f"the Kubernetes API is unreachable: {exc}") from exc
        if resp.status_code != 200:
            body = await resp.aread()
            await resp.aclose()
            try:
                status = json.loads(body)
            except ValueError:
                status = {"message": body.decode(errors="replace")}
            if resp.status_code == 410:
                raise Gone(status.get("message") or f"resourceVersion {self._rv} is too old")
            raise _map_status(resp.status_code, status, self.kind.KIND, "")
        self._resp = resp
        self._lines = resp.aiter_lines()
        store._watches.add(self)

    async def _disconnect(self) -> None:
        resp, self._resp, self._lines = self._resp, None, None
        if resp is not None:
            try:
                await resp.aclose()
            except Exception:  # noqa: BLE001 - closing a broken stream
                pass

    async def _finish(self) -> None:
        self._finished = True
        self._store._watches.discard(self)
        await self._disconnect()
        async with self._cond:
            self._cond.notify_all()

    async def aclose(self) -> None:
        await self._finish()

    async def _reached(self, target: int | None, grace: float) -> None:
        if target is None:
            return

        def done() -> bool:
            return self._finished or self._processed is None or self._processed >= target

        try:
            async with asyncio.timeout(grace):
                async with self._cond:
                    await self._cond.wait_for(done)
        except TimeoutError:
            pass  # no bookmark in time (a real API server sends them rarely): best effort

    async def drained(self) -> None:
        """Wait until the consumer has handled every event up to the version `poll_now` took."""
        await self._reached(self._store._sync_target, self._store.sync_grace)


def _map_status(code: int, status: dict[str, Any], kind: str, name: str) -> Exception:
    reason = status.get("reason") or ""
    message = status.get("message") or f"HTTP {code}"
    if code == 404:
        return ObjectNotFound(kind, name)
    if code == 409:
        return AlreadyExists(kind, name) if reason == "AlreadyExists" else StaleResourceVersion(kind, name)
    if code == 410:
        return Gone(message)
    if code in (400, 422):
        return ValidationFailed(message)
    return ServiceUnavailable(f"the Kubernetes API answered {code}: {message}")


class KubernetesStore:
    """`ResourceStore` on the Kubernetes API; see the module docstring."""

    def __init__(
        self,
        kubeconfig: Path | str | None = None,
        context: str | None = None,
        *,
        timeout: float = 30.0,
        sync_grace: float = 1.0,
        conflict_retries: int = 10,
    ):
        self._client = kube_client(kubeconfig, context, timeout=timeout)
        self._resources = {
            cls.KIND: create_namespaced_resource(GROUP, VERSION, cls.KIND, cls.PLURAL) for cls in KINDS.values()
        }
        self.sync_grace = sync_grace
        self.conflict_retries = conflict_retries
        self._watches: weakref.WeakSet[KubernetesWatch] = weakref.WeakSet()
        self._sync_target: int | None = None
        self._closed = False

    def _res(self, kind: type[Resource]) -> Any:
        res = self._resources.get(kind.KIND)
        if res is None:
            res = self._resources[kind.KIND] = create_namespaced_resource(GROUP, VERSION, kind.KIND, kind.PLURAL)
        return res

    async def _call(self, kind: str, name: str, coro: Any) -> Any:
        if self._closed:
            coro.close()
            raise ServiceUnavailable("the store is closed")
        try:
            return await coro
        except ApiError as exc:
            status = exc.status
            raise _map_status(
                status.code or exc.response.status_code, {"reason": status.reason, "message": status.message},
                kind, name,
            ) from exc
        except httpx2.HTTPStatusError as exc:
            try:
                status_body = exc.response.json()
            except ValueError:
                status_body = {"message": exc.response.text}
            raise _map_status(exc.response.status_code, status_body, kind, name) from exc
        except httpx2.HTTPError as exc:
            raise ServiceUnavailable(f"the Kubernetes API is unreachable: {exc}") from exc

    @staticmethod
    def _parse(kind: type[R], obj: Any) -> R:
        return kind.from_dict(obj.to_dict() if hasattr(obj, "to_dict") else dict(obj))

    @staticmethod
    def _require_namespace(obj: Resource) -> str:
        if not obj.metadata.namespace:
            raise ValidationFailed(f"{obj.KIND} {obj.metadata.name!r}: metadata.namespace is required")
        return obj.metadata.namespace

    # -- reads ----------------------------------------------------------------------------

    async def get(self, kind: type[R], namespace: str, name: str) -> R:
        obj = await self._call(kind.KIND, name, self._client.get(self._res(kind), name, namespace=namespace))
        return self._parse(kind, obj)

    async def _list(self, kind: type[R], namespace: str | None, selector: str | None) -> tuple[list[R], str]:
        gc = self._client._client
        params = {"labelSelector": selector} if selector else None
        br = gc.prepare_request("list", res=self._res(kind), namespace=namespace or "*", params=params)

        async def run() -> tuple[list[R], str]:
            listing = gc.list(br)
            items = [parsed async for o in listing
                     if (parsed := kind.from_stored(o.to_dict() if hasattr(o, "to_dict") else dict(o))) is not None]
            return items, listing.resourceVersion

        items, rv = await self._call(kind.KIND, "", run())
        items.sort(key=lambda o: (o.namespace, o.name))
        return items, rv

    async def list(
        self, kind: type[R], namespace: str | None = None, label_selector: str | None = None
    ) -> list[R]:
        selector = parse_selector(label_selector)  # syntax errors surface here, before any I/O
        items, _ = await self._list(kind, namespace, str(selector) if not selector.empty else None)
        return items

    async def list_with_version(self, kind: type[R], namespace: str | None = None) -> tuple[builtins.list[R], str]:
        return await self._list(kind, namespace, None)

    # -- writes ---------------------------------------------------------------------------

    @staticmethod
    def _body(obj: Resource, *, keep_rv: bool, keep_status: bool) -> dict[str, Any]:
        data = obj.to_dict()
        if not keep_status:
            data.pop("status", None)
        meta = data["metadata"]
        for field in _SERVER_SET:
            if field == "resourceVersion" and keep_rv:
                continue
            meta.pop(field, None)
        return data

    async def _ensure_namespace(self, namespace: str) -> None:
        try:
            await self._call("Namespace", namespace,
                             self._client.create(Namespace(metadata=KubeObjectMeta(name=namespace))))
        except AlreadyExists:
            pass  # created meanwhile by someone else

    async def create(self, obj: R) -> R:
        cls = type(obj)
        namespace = self._require_namespace(obj)
        res = self._res(cls)
        data = self._body(obj, keep_rv=False, keep_status=False)
        try:
            created = await self._call(cls.KIND, obj.name, self._client.create(res(data), namespace=namespace))
        except ObjectNotFound:  # the namespace (the account) does not exist yet
            await self._ensure_namespace(namespace)
            created = await self._call(cls.KIND, obj.name, self._client.create(res(data), namespace=namespace))
        return self._parse(cls, created)

    async def _put(self, obj: R, *, status: bool) -> R:
        cls = type(obj)
        namespace = self._require_namespace(obj)
        res = self._res(cls)
        data = self._body(obj, keep_rv=True, keep_status=status)
        target = res.Status if status else res

        async def put(body: dict[str, Any]) -> R:
            coro = self._client.replace(target(body), obj.name, namespace=namespace)
            return self._parse(cls, await self._call(cls.KIND, obj.name, coro))

        if obj.metadata.resource_version is not None:
            return await put(data)
        # unconditional: PUT over the current version, again if someone else wrote in between
        for attempt in range(self.conflict_retries):
            current = await self.get(cls, namespace, obj.name)
            data["metadata"]["resourceVersion"] = current.metadata.resource_version
            try:
                return await put(data)
            except StaleResourceVersion:
                if attempt == self.conflict_retries - 1:
                    raise
                await asyncio.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover

    async def update(self, obj: R) -> R:
        return await self._put(obj, status=False)

    async def update_status(self, obj: R) -> R:
        return await self._put(obj, status=True)

    async def delete(self, kind: type[R], namespace: str, name: str) -> None:
        await self._call(kind.KIND, name, self._client.delete(self._res(kind), name, namespace=namespace))

    # -- watch ----------------------------------------------------------------------------

    def watch(
        self, kind: type[R], namespace: str | None = None, resource_version: str | None = None
    ) -> KubernetesWatch:
        """Changes after resource_version (None: from now), in order; Gone when it is too old.

        The stream opens on the first `__anext__`. Close the iterator with `aclose()`."""
        return KubernetesWatch(self, kind, namespace, resource_version)

    async def current_revision(self) -> str:
        """The API server's current resourceVersion (that of a one-item list)."""
        gc = self._client._client
        kind = next(iter(KINDS.values()))
        br = gc.prepare_request("list", res=self._res(kind), namespace="*", params={"limit": 1})

        async def run() -> str:
            req = gc.build_adapter_request(br)
            resp = await gc.send(req)
            _, rv, _ = gc.handle_response("list", resp, br)
            return rv

        return await self._call(kind.KIND, "", run())

    async def poll_now(self) -> None:
        """Take the current resourceVersion as the point `drained()` waits for, and wait (at most
        ``sync_grace`` seconds) until every open watch of this store has read up to it."""
        self._sync_target = _int(await self.current_revision())
        watches = [w for w in list(self._watches) if not w._finished]
        await asyncio.gather(*(w._reached(self._sync_target, self.sync_grace) for w in watches))

    async def close(self) -> None:
        if self._closed:
            return
        for w in list(self._watches):
            await w.aclose()
        self._closed = True
        await self._client.close()
