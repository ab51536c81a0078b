"""An informer: an in-memory copy of every object, kept fresh from the back end's watch.

`CachedStore` wraps any `ResourceStore` and is one: `await start()` lists every kind, then watches each; reads are
served from memory, writes go to the back end and are applied at once (read-your-writes, never rolled back by an
older event). READ-ONLY RESULTS: `get`, `list`, `list_with_version`, `by_index` and `get_by_id` return the cached
instances themselves; call `obj.model_copy(deep=True)` before changing one. Details: docs/development.md.
"""

from __future__ import annotations

import asyncio
import builtins
import itertools
from bisect import bisect_left
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog

from callscope.errors import ServiceUnavailable
from callscope.resources import KINDS
from callscope.resources.meta import Resource
from callscope.store.interface import Gone, ObjectNotFound, ResourceStore, WatchEvent
from callscope.store.selectors import parse_selector

R = TypeVar("R", bound=Resource)
Key = tuple[str, str]  # (namespace, name)
IndexFn = Callable[[Any], Any]

log = structlog.get_logger()

ID_INDEX = "__status_id__"


def _int(rv: str | None) -> int | None:
    if rv is None:
        return None
    try:
        return int(rv)
    except ValueError:
        return None


def is_newer(candidate: str | None, current: str | None) -> bool:
    """Whether resourceVersion `candidate` supersedes `current`: numerically when both are integers,
    otherwise whenever they differ (opaque versions)."""
    if current is None:
        return True
    if candidate is None:
        return False
    a, b = _int(candidate), _int(current)
    if a is not None and b is not None:
        return a > b
    return candidate != current


def _index_values(value: Any) -> list[Hashable]:
    if value is None:
        return []
    if isinstance(value, (list, tuple, set, frozenset)) and not (isinstance(value, tuple) and _is_key_tuple(value)):
        return [v for v in value if v is not None]
    return [value]


def _is_key_tuple(value: tuple[Any, ...]) -> bool:
    # a tuple of scalars is one composite key (e.g. (namespace, id)); a tuple of tuples is many
    return not any(isinstance(v, (list, tuple, set, frozenset)) for v in value)


@dataclass
class _Tombstone:
    rv: str | None  # resourceVersion of the deletion, None while it is not known yet
    known_rv: str | None  # resourceVersion of the object when it was deleted through the cache
    seq: int  # local sequence number, to tell whether a relist started after the deletion


class _KindCache:
    def __init__(self, cls: type[Resource]):
        self.cls = cls
        self.objects: dict[Key, Resource] = {}
        self.local_seq: dict[Key, int] = {}  # sequence number of the last local write of a key
        self.tombstones: dict[Key, _Tombstone] = {}
        self.index_fns: dict[str, IndexFn] = {}
        self.indexes: dict[str, dict[Hashable, dict[Key, None]]] = {}
        self.index_entries: dict[str, dict[Key, list[Hashable]]] = {}
        self.rv: str | None = None  # resourceVersion up to which list + watch have been applied
        self.ready = False
        self.watching = asyncio.Event()
        self.watch_iter: Any = None
        self._order: list[Key] | None = None  # keys sorted by (namespace, name); rebuilt after adds/removes

    def ordered(self, namespace: str | None) -> list[Key]:
        """Keys in (namespace, name) order, one namespace as a slice of them: lists stay cheap."""
        if self._order is None:
            self._order = sorted(self.objects)
        if namespace is None:
            return self._order
        return self._order[bisect_left(self._order, (namespace,)):bisect_left(self._order, (namespace + "\0",))]

    # -- indexes ---------------------------------------------------------------------------

    def add_index(self, name: str, fn: IndexFn) -> None:
        self.index_fns[name] = fn
        self.indexes[name] = {}
        self.index_entries[name] = {}
        for key, obj in self.objects.items():
            self._index_add(name, key, obj)

    def _index_add(self, name: str, key: Key, obj: Resource) -> None:
        try:
            values = _index_values(self.index_fns[name](obj))
        except Exception:
            log.warning("index function failed", kind=self.cls.KIND, index=name, object=key, exc_info=True)
            values = []
        self.index_entries[name][key] = values
        for v in values:
            self.indexes[name].setdefault(v, {})[key] = None

    def _index_remove(self, name: str, key: Key) -> None:
        for v in self.index_entries[name].pop(key, []):
            bucket = self.indexes[name].get(v)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del self.indexes[name][v]

    # -- mutation --------------------------------------------------------------------------

    def put(self, key: Key, obj: Resource) -> None:
        for name in self.index_fns:
            self._index_remove(name, key)
        if key not in self.objects:
            self._order = None
        self.objects[key] = obj
        for name in self.index_fns:
            self._index_add(name, key, obj)

    def remove(self, key: Key) -> Resource | None:
        obj = self.objects.pop(key, None)
        if obj is not None:
            self._order = None
            for name in self.index_fns:
                self._index_remove(name, key)
        return obj

    def tombstone(self, key: Key, tomb: _Tombstone, limit: int) -> None:
        self.tombstones.pop(key, None)
        self.tombstones[key] = tomb
        while len(self.tombstones) > limit:
            del self.tombstones[next(iter(self.tombstones))]


class CachedStore:
    """`ResourceStore` served from memory; see the module docstring (results are read-only)."""

    def __init__(
        self,
        backend: ResourceStore,
        *,
        kinds: dict[str, type[Resource]] | None = None,
        owns_backend: bool = True,
        retry_initial: float = 0.2,
        retry_max: float = 5.0,
        max_tombstones: int = 10000,
    ):
        self.backend = backend
        self.owns_backend = owns_backend
        self.retry_initial = retry_initial
        self.retry_max = retry_max
        self.max_tombstones = max_tombstones
        self._kinds: dict[str, _KindCache] = {name: _KindCache(cls) for name, cls in (kinds or KINDS).items()}
        for kc in self._kinds.values():
            kc.add_index(ID_INDEX, lambda o: (o.metadata.namespace, o.status.id) if o.status.id is not None else None)
        self._tasks: list[asyncio.Task[None]] = []
        self._seq = itertools.count(1)
        self._closed = False
        self.ready = False

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """List every kind (raising if the back end fails), then keep the copy fresh in the background."""
        if self._tasks:
            return
        await asyncio.gather(*(self._relist(kc) for kc in self._kinds.values()))
        self.ready = True
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._run_kind(kc), name=f"cache-{kc.cls.KIND}") for kc in self._kinds.values()
        ]

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - closing, whatever the task ended with
                pass
        if self.owns_backend:
            await self.backend.close()

    async def _relist(self, kc: _KindCache) -> None:
        start_seq = next(self._seq)
        items, rv = await self.backend.list_with_version(kc.cls)
        self._apply_list(kc, items, rv, start_seq)

    async def _run_kind(self, kc: _KindCache) -> None:
        delay = self.retry_initial
        need_list = False
        while not self._closed:
            try:
                if need_list:
                    await self._relist(kc)
                    need_list = False
                it = self.backend.watch(kc.cls, None, kc.rv)
                kc.watch_iter = it
                kc.watching.set()
                try:
                    async for event in it:
                        self._apply_event(kc, event)
                        delay = self.retry_initial
                finally:
                    kc.watching.clear()
                    kc.watch_iter = None
                    aclose = getattr(it, "aclose", None)
                    if aclose is not None:
                        await aclose()
                log.info("cache watch ended; watching again", kind=kc.cls.KIND, resource_version=kc.rv)
            except asyncio.CancelledError:
                raise
            except Gone:
                log.info("cache watch expired; listing again", kind=kc.cls.KIND, resource_version=kc.rv)
                need_list = True
            except Exception:
                log.warning(
                    "cache watch failed; retrying", kind=kc.cls.KIND, retry_in=delay, exc_info=True
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.retry_max)

    async def sync(self, timeout: float = 10.0) -> None:
        """Bring the cache up to date with everything committed before the call.

        For a back end with `poll_now()` (SQLiteStore) this polls at once and waits until every
        watch has applied what was dispatched; for other back ends it returns at once."""
        poll_now = getattr(self.backend, "poll_now", None)
        if poll_now is None or not self.ready or self._closed:
            return
        try:
            async with asyncio.timeout(timeout):
                await poll_now()
                for kc in self._kinds.values():
                    await kc.watching.wait()
                    it = kc.watch_iter
                    drained = getattr(it, "drained", None)
                    if drained is not None:
                        await drained()
        except TimeoutError:
            raise ServiceUnavailable("the configuration cache could not catch up with the store") from None

    # -- applying changes -----------------------------------------------------------------

    def _apply_list(self, kc: _KindCache, items: list[Resource], rv: str, start_seq: int) -> None:
        """Replace a kind's copy with a list, keeping local writes and deletions made meanwhile."""
        new: dict[Key, Resource] = {}
        for obj in items:
            key = (obj.namespace, obj.name)
            tomb = kc.tombstones.get(key)
            if tomb is not None and tomb.seq >= start_seq:
                # deleted through the cache while the list ran: the list may predate the deletion
                ref = tomb.rv if tomb.rv is not None else tomb.known_rv
                if ref is None or not is_newer(obj.metadata.resource_version, ref):
                    continue
            current = kc.objects.get(key)
            if (
                current is not None
                and kc.local_seq.get(key, 0) >= start_seq
                and not is_newer(obj.metadata.resource_version, current.metadata.resource_version)
            ):
                new[key] = current  # written through the cache while the list ran
                continue
            new[key] = obj
        for key, current in kc.objects.items():
            if key not in new and kc.local_seq.get(key, 0) >= start_seq:
                new[key] = current
        for key in list(kc.objects):
            if key not in new:
                kc.remove(key)
        for key, obj in new.items():
            if kc.objects.get(key) is not obj:
                kc.put(key, obj)
        kc.tombstones = {k: t for k, t in kc.tombstones.items() if t.seq >= start_seq}
        kc.local_seq = {k: s for k, s in kc.local_seq.items() if s >= start_seq}
        kc.rv = rv
        kc.ready = True

    def _apply_event(self, kc: _KindCache, event: WatchEvent) -> None:
        obj = event.object
        key = (obj.namespace, obj.name)
        rv = obj.metadata.resource_version
        kc.rv = rv if is_newer(rv, kc.rv) or _int(rv) is None else kc.rv
        current = kc.objects.get(key)
        tomb = kc.tombstones.get(key)
        if event.type == "DELETED":
            if current is not None and not is_newer(rv, current.metadata.resource_version):
                return  # deletion of an older incarnation than the one cached (e.g. re-created locally)
            if tomb is not None and tomb.rv is None and tomb.known_rv is not None and not is_newer(rv, tomb.known_rv):
                return
            kc.remove(key)
            kc.local_seq.pop(key, None)
            kc.tombstone(key, _Tombstone(rv=rv, known_rv=None, seq=tomb.seq if tomb else 0), self.max_tombstones)
            return
        if tomb is not None:
            if tomb.rv is None:
                return  # deleted through the cache; its DELETED event has not come yet
            if not is_newer(rv, tomb.rv):
                return  # a late event from before the deletion
            del kc.tombstones[key]
        if current is not None and not is_newer(rv, current.metadata.resource_version):
            return  # the cache already holds this version or a newer one (e.g. our own write)
        kc.put(key, obj)

    def _apply_local(self, obj: R) -> R:
        """Apply the object a write returned (unless the cache already holds a newer version) and
        return a private copy of it to the caller, who may change it freely."""
        kc = self._kinds.get(obj.KIND)
        if kc is None or not kc.ready or kc.cls is not type(obj):
            return obj
        key = (obj.namespace, obj.name)
        current = kc.objects.get(key)
        if current is None or is_newer(obj.metadata.resource_version, current.metadata.resource_version):
            kc.tombstones.pop(key, None)
            kc.local_seq[key] = next(self._seq)
            kc.put(key, obj)
        return obj.model_copy(deep=True)

    def _kind(self, kind: type[Resource]) -> _KindCache | None:
        kc = self._kinds.get(kind.KIND)
        return kc if kc is not None and kc.ready and kc.cls is kind else None

    # -- ResourceStore: reads --------------------------------------------------------------

    async def get(self, kind: type[R], namespace: str, name: str) -> R:
        kc = self._kind(kind)
        if kc is None:
            return await self.backend.get(kind, namespace, name)
        obj = kc.objects.get((namespace, name))
        if obj is None:
            raise ObjectNotFound(kind.KIND, name)
        return obj  # type: ignore[return-value]

    async def latest(self, kind: type[R], namespace: str, name: str) -> R:
        """The object as the backend holds it now, past the cache (which another process's write reaches only with
        the watch); ObjectNotFound when absent."""
        return await self.backend.get(kind, namespace, name)

    def _list(self, kc: _KindCache, namespace: str | None, label_selector: str | None) -> list[Any]:
        objects = [kc.objects[k] for k in kc.ordered(namespace)]
        selector = parse_selector(label_selector)
        if selector.empty:
            return objects
        return [o for o in objects if selector.matches(o.metadata.labels)]

    async def list(
        self, kind: type[R], namespace: str | None = None, label_selector: str | None = None
    ) -> list[R]:
        kc = self._kind(kind)
        if kc is None:
            return await self.backend.list(kind, namespace, label_selector)
        return self._list(kc, namespace, label_selector)

    async def list_with_version(self, kind: type[R], namespace: str | None = None) -> tuple[builtins.list[R], str]:
        """The cached objects and the resourceVersion up to which the watch has been applied."""
        kc = self._kind(kind)
        if kc is None or kc.rv is None:
            return await self.backend.list_with_version(kind, namespace)
        return self._list(kc, namespace, None), kc.rv

    def _cached_kind(self, kind: type[Resource]) -> _KindCache:
        kc = self._kinds.get(kind.KIND)
        if kc is None:
            raise KeyError(f"{kind.KIND} is not cached")
        return kc

    def cached_get(self, kind: type[R], namespace: str, name: str) -> R | None:
        """Synchronous read from memory: the cached object (read-only) or None."""
        return self._cached_kind(kind).objects.get((namespace, name))  # type: ignore[return-value]

    def cached_list(
        self, kind: type[R], namespace: str | None = None, label_selector: str | None = None
    ) -> builtins.list[R]:
        """Synchronous read from memory: cached objects (read-only), by namespace and name."""
        return self._list(self._cached_kind(kind), namespace, label_selector)

    def add_index(self, kind: type[Resource], index_name: str, key_fn: IndexFn) -> None:
        """Index a kind by key_fn(obj): a hashable value (a tuple counts as one composite value),
        a list/set of values (indexed under each), or None (not indexed)."""
        kc = self._kinds.get(kind.KIND)
        if kc is None:
            raise KeyError(f"{kind.KIND} is not cached")
        kc.add_index(index_name, key_fn)

    def by_index(self, kind: type[R], index_name: str, value: Hashable) -> builtins.list[R]:
        """Cached objects whose index value is `value` (read-only), ordered by namespace and name."""
        kc = self._kinds.get(kind.KIND)
        if kc is None or index_name not in kc.indexes:
            raise KeyError(f"no index {index_name!r} on {kind.KIND}")
        bucket = kc.indexes[index_name].get(value, {})
        return [kc.objects[k] for k in sorted(bucket)]  # type: ignore[misc]

    def get_by_id(self, kind: type[R], namespace: str, id: int) -> R | None:
        """The cached object of a namespace whose status.id is `id`, in O(1); None when absent."""
        found = self.by_index(kind, ID_INDEX, (namespace, id))
        return found[0] if found else None

    # -- ResourceStore: writes -------------------------------------------------------------

    async def create(self, obj: R) -> R:
        return self._apply_local(await self.backend.create(obj))

    async def update(self, obj: R) -> R:
        return self._apply_local(await self.backend.update(obj))

    async def update_status(self, obj: R) -> R:
        return self._apply_local(await self.backend.update_status(obj))

    async def delete(self, kind: type[R], namespace: str, name: str) -> None:
        kc = self._kind(kind)
        key = (namespace, name)
        try:
            await self.backend.delete(kind, namespace, name)
        except ObjectNotFound:
            if kc is not None:
                self._forget(kc, key)
            raise
        if kc is not None:
            self._forget(kc, key)

    def _forget(self, kc: _KindCache, key: Key) -> None:
        current = kc.remove(key)
        kc.local_seq.pop(key, None)
        known = current.metadata.resource_version if current is not None else None
        kc.tombstone(key, _Tombstone(rv=None, known_rv=known, seq=next(self._seq)), self.max_tombstones)

    def watch(self, kind: type[R], namespace: str | None = None, resource_version: str | None = None):
        return self.backend.watch(kind, namespace, resource_version)
