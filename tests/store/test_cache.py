"""CachedStore (the informer): over the real back ends, and over a scripted fake back end whose
watch events the tests deliver by hand, to reproduce late events deterministically."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from store_helpers import eventually, operator, project

from callscope.resources import Operator, Project
from callscope.store.cache import CachedStore, is_newer
from callscope.store.interface import Gone, ObjectNotFound, StaleResourceVersion, WatchEvent

# -- over the real back ends --------------------------------------------------------------


@pytest.fixture
async def cache(backend):
    cache = CachedStore(backend, owns_backend=False)
    await cache.start()
    yield cache
    await cache.close()


async def test_ready_after_start(backend):
    cache = CachedStore(backend, owns_backend=False)
    assert not cache.ready
    await cache.start()
    try:
        assert cache.ready
    finally:
        await cache.close()


async def test_start_loads_existing_objects(backend, ns):
    await backend.create(project("p", ns))
    cache = CachedStore(backend, owns_backend=False)
    await cache.start()
    try:
        assert (await cache.get(Project, ns, "p")).spec.name == "Support"
    finally:
        await cache.close()


async def test_read_your_writes_create(cache, ns):
    created = await cache.create(project("p", ns))
    assert (await cache.get(Project, ns, "p")).metadata.uid == created.metadata.uid
    assert [p.name for p in await cache.list(Project, ns)] == ["p"]


async def test_read_your_writes_update(cache, ns):
    created = await cache.create(project("p", ns))
    created.spec.name = "Changed"
    updated = await cache.update(created)
    cached = await cache.get(Project, ns, "p")
    assert cached.spec.name == "Changed"
    assert cached.metadata.resource_version == updated.metadata.resource_version


async def test_read_your_writes_update_status(cache, ns):
    created = await cache.create(project("p", ns))
    created.status.id = 3
    await cache.update_status(created)
    assert (await cache.get(Project, ns, "p")).status.id == 3


async def test_read_your_writes_delete(cache, ns):
    await cache.create(project("p", ns))
    await cache.delete(Project, ns, "p")
    with pytest.raises(ObjectNotFound):
        await cache.get(Project, ns, "p")


async def test_own_writes_survive_their_watch_events(cache, ns):
    created = await cache.create(project("p", ns))
    created.spec.name = "Changed"
    final = await cache.update(created)
    await cache.sync()
    await asyncio.sleep(0.15)  # let any watch event arrive
    assert (await cache.get(Project, ns, "p")).metadata.resource_version == final.metadata.resource_version


async def test_deleted_object_stays_deleted_after_watch_events(cache, ns):
    await cache.create(project("p", ns))
    await cache.delete(Project, ns, "p")
    await cache.sync()
    await asyncio.sleep(0.15)
    with pytest.raises(ObjectNotFound):
        await cache.get(Project, ns, "p")


async def test_write_results_are_private_copies(cache, ns):
    created = await cache.create(project("p", ns))
    created.spec.name = "Mutated by caller"
    assert (await cache.get(Project, ns, "p")).spec.name == "Support"


async def test_stale_update_through_cache_raises(cache, ns):
    created = await cache.create(project("p", ns))
    fresh = created.model_copy(deep=True)
    fresh.spec.name = "Fresh"
    await cache.update(fresh)
    created.spec.name = "Stale"
    with pytest.raises(StaleResourceVersion):
        await cache.update(created)
    assert (await cache.get(Project, ns, "p")).spec.name == "Fresh"


async def test_get_missing_raises_not_found(cache, ns):
    with pytest.raises(ObjectNotFound):
        await cache.get(Project, ns, "nope")


async def test_list_with_label_selector_and_namespace(cache, ns):
    await cache.create(project("a", ns, labels={"env": "prod"}))
    await cache.create(project("b", ns, labels={"env": "dev"}))
    await cache.create(project("c", ns + "-other", labels={"env": "prod"}))
    assert [p.name for p in await cache.list(Project, ns, label_selector="env=prod")] == ["a"]
    assert [p.name for p in await cache.list(Project, ns, label_selector="env notin (prod)")] == ["b"]
    assert {p.name for p in await cache.list(Project, None, label_selector="env=prod")} == {"a", "c"}


async def test_sees_other_clients_writes_after_sync(store_factory, ns):
    backend = store_factory(slow_watch=True)
    other = store_factory()
    cache = CachedStore(backend, owns_backend=False)
    await cache.start()
    try:
        created = await other.create(project("p", ns))
        await cache.sync()
        assert (await cache.get(Project, ns, "p")).metadata.uid == created.metadata.uid
        created.spec.name = "Changed"
        await other.update(created)
        await cache.sync()
        assert (await cache.get(Project, ns, "p")).spec.name == "Changed"
        await other.delete(Project, ns, "p")
        await cache.sync()
        with pytest.raises(ObjectNotFound):
            await cache.get(Project, ns, "p")
    finally:
        await cache.close()


async def test_sees_other_clients_writes_through_watch(store_factory, ns):
    backend, other = store_factory(), store_factory()
    cache = CachedStore(backend, owns_backend=False)
    await cache.start()
    try:
        await other.create(operator("op", ns))

        async def present() -> bool:
            return bool(await cache.list(Operator, ns))

        for _ in range(200):
            if await present():
                break
            await asyncio.sleep(0.01)
        assert await present()
    finally:
        await cache.close()


async def test_index_by_spec_field(cache, ns):
    cache.add_index(Operator, "project", lambda o: o.spec.projects)
    a = operator("a", ns)
    a.spec.projects = ["sales", "support"]
    b = operator("b", ns)
    b.spec.projects = ["support"]
    await cache.create(a)
    created_b = await cache.create(b)
    assert [o.name for o in cache.by_index(Operator, "project", "support")] == ["a", "b"]
    assert [o.name for o in cache.by_index(Operator, "project", "sales")] == ["a"]
    created_b.spec.projects = ["sales"]
    await cache.update(created_b)
    assert [o.name for o in cache.by_index(Operator, "project", "support")] == ["a"]
    assert [o.name for o in cache.by_index(Operator, "project", "sales")] == ["a", "b"]
    await cache.delete(Operator, ns, "a")
    assert [o.name for o in cache.by_index(Operator, "project", "sales")] == ["b"]
    assert cache.by_index(Operator, "project", "nothing") == []


async def test_index_added_after_start_covers_existing_objects(cache, ns):
    await cache.create(project("p", ns, labels={"team": "red"}))
    cache.add_index(Project, "team", lambda p: p.metadata.labels.get("team"))
    assert [p.name for p in cache.by_index(Project, "team", "red")] == ["p"]


async def test_unknown_index_raises(cache):
    with pytest.raises(KeyError):
        cache.by_index(Project, "nope", "x")


async def test_get_by_id(cache, ns):
    created = await cache.create(project("p", ns))
    assert cache.get_by_id(Project, ns, 5) is None
    created.status.id = 5
    await cache.update_status(created)
    found = cache.get_by_id(Project, ns, 5)
    assert found is not None and found.name == "p"
    assert cache.get_by_id(Project, ns + "-other", 5) is None
    assert cache.get_by_id(Operator, ns, 5) is None
    await cache.delete(Project, ns, "p")
    assert cache.get_by_id(Project, ns, 5) is None


async def test_get_by_id_follows_other_clients_after_sync(store_factory, ns):
    backend, other = store_factory(slow_watch=True), store_factory()
    cache = CachedStore(backend, owns_backend=False)
    await cache.start()
    try:
        created = await other.create(project("p", ns))
        created.status.id = 11
        await other.update_status(created)
        await cache.sync()
        found = cache.get_by_id(Project, ns, 11)
        assert found is not None and found.name == "p"
    finally:
        await cache.close()


async def test_watch_delegates_to_backend(cache, ns):
    _, rv = await cache.list_with_version(Project, ns)
    it = cache.watch(Project, ns, rv)
    try:
        await cache.create(project("p", ns))
        event = await asyncio.wait_for(anext(it), 2)
    finally:
        await it.aclose()
    assert (event.type, event.object.name) == ("ADDED", "p")


# -- over a scripted fake back end --------------------------------------------------------


class FakeWatch:
    def __init__(self, backend: FakeBackend, kind, resource_version):
        self.kind = kind
        self.queue: asyncio.Queue = asyncio.Queue()
        backend.watches.append(self)
        for event in backend.history:  # replay what was sent after resource_version
            if event.object.KIND == kind.KIND and int(event.object.metadata.resource_version) > int(resource_version):
                self.queue.put_nowait(event)

    def __aiter__(self):
        return self

    async def __anext__(self):
        item = await self.queue.get()
        if isinstance(item, BaseException):
            raise item
        return item

    async def aclose(self):
        pass


class FakeBackend:
    """Writes apply at once and return the object; watch events come only when a test sends them."""

    def __init__(self):
        self.objects: dict[tuple[str, str, str], object] = {}
        self.rv = 0
        self.watches: list[FakeWatch] = []
        self.history: list[WatchEvent] = []
        self.lists = 0
        self.uids = itertools.count(1)

    def _key(self, obj):
        return (obj.KIND, obj.namespace, obj.name)

    async def list_with_version(self, kind, namespace=None):
        self.lists += 1
        items = [o.model_copy(deep=True) for k, o in self.objects.items() if k[0] == kind.KIND]
        return items, str(self.rv)

    async def list(self, kind, namespace=None, label_selector=None):
        return (await self.list_with_version(kind, namespace))[0]

    async def get(self, kind, namespace, name):
        try:
            return self.objects[(kind.KIND, namespace, name)].model_copy(deep=True)
        except KeyError:
            raise ObjectNotFound(kind.KIND, name) from None

    def _store(self, obj):
        self.rv += 1
        obj = obj.model_copy(deep=True)
        obj.metadata.resource_version = str(self.rv)
        obj.metadata.uid = obj.metadata.uid or f"uid-{next(self.uids)}"
        self.objects[self._key(obj)] = obj
        return obj.model_copy(deep=True)

    async def create(self, obj):
        return self._store(obj)

    async def update(self, obj):
        return self._store(obj)

    async def update_status(self, obj):
        return self._store(obj)

    async def delete(self, kind, namespace, name):
        if self.objects.pop((kind.KIND, namespace, name), None) is None:
            raise ObjectNotFound(kind.KIND, name)
        self.rv += 1

    def watch(self, kind, namespace=None, resource_version=None):
        return FakeWatch(self, kind, resource_version or self.rv)

    async def close(self):
        pass

    def send(self, type_, obj, rv):
        obj = obj.model_copy(deep=True)
        obj.metadata.resource_version = str(rv)
        self.history.append(WatchEvent(type_, obj))
        for w in self.watches:
            if w.kind.KIND == obj.KIND:
                w.queue.put_nowait(WatchEvent(type_, obj))

    def fail_watches(self, exc, kind=Project):
        for w in self.watches:
            if w.kind is kind:
                w.queue.put_nowait(exc)


@pytest.fixture
async def fake():
    return FakeBackend()


@pytest.fixture
async def fcache(fake):
    cache = CachedStore(fake, retry_initial=0.01)
    await cache.start()
    yield cache
    await cache.close()


_marks = itertools.count(1)


async def settle(cache: CachedStore, fake: FakeBackend, rv: int) -> None:
    """Send a marker event after the ones under test and wait until the cache has applied it."""
    name = f"marker-{next(_marks)}"
    fake.send("ADDED", project(name, "markers"), rv)
    applied: list[bool] = []

    async def check():
        try:
            await cache.get(Project, "markers", name)
            applied.append(True)
        except ObjectNotFound:
            pass

    for _ in range(300):
        await check()
        if applied:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the cache did not apply the marker event")


async def test_late_event_does_not_roll_back_own_write(fcache, fake):
    created = await fcache.create(project("p", "ns"))  # rv 1
    created.spec.name = "Changed"
    updated = await fcache.update(created)  # rv 2
    fake.send("ADDED", created.model_copy(update={"spec": project("p", "ns").spec}), 1)
    await settle(fcache, fake, 3)
    cached = await fcache.get(Project, "ns", "p")
    assert cached.spec.name == "Changed"
    assert cached.metadata.resource_version == updated.metadata.resource_version


async def test_event_with_same_version_keeps_own_write(fcache, fake):
    created = await fcache.create(project("p", "ns"))
    before = await fcache.get(Project, "ns", "p")
    fake.send("ADDED", created, int(created.metadata.resource_version))
    await settle(fcache, fake, 10)
    assert await fcache.get(Project, "ns", "p") is before


async def test_newer_event_replaces_own_write(fcache, fake):
    created = await fcache.create(project("p", "ns"))  # rv 1
    theirs = created.model_copy(deep=True)
    theirs.spec.name = "Theirs"
    fake.send("MODIFIED", theirs, 5)
    await settle(fcache, fake, 6)
    assert (await fcache.get(Project, "ns", "p")).spec.name == "Theirs"


async def test_late_events_do_not_resurrect_deleted_object(fcache, fake):
    created = await fcache.create(project("p", "ns"))  # rv 1
    await fcache.delete(Project, "ns", "p")  # rv 2
    fake.send("ADDED", created, 1)
    await settle(fcache, fake, 3)
    with pytest.raises(ObjectNotFound):
        await fcache.get(Project, "ns", "p")


async def test_late_modified_before_deleted_event_does_not_resurrect(fcache, fake):
    created = await fcache.create(project("p", "ns"))  # rv 1
    await fcache.delete(Project, "ns", "p")  # rv 2
    # someone else's change that happened before our delete, delivered after it
    fake.send("MODIFIED", created, 2)
    await settle(fcache, fake, 3)
    with pytest.raises(ObjectNotFound):
        await fcache.get(Project, "ns", "p")


async def test_recreation_after_deletion_event_is_seen(fcache, fake):
    created = await fcache.create(project("p", "ns"))  # rv 1
    await fcache.delete(Project, "ns", "p")  # rv 2
    fake.send("ADDED", created, 1)
    fake.send("DELETED", created, 2)
    again = project("p", "ns", title="Again")
    fake.send("ADDED", again, 3)
    await settle(fcache, fake, 4)
    assert (await fcache.get(Project, "ns", "p")).spec.name == "Again"


async def test_stale_deletion_event_does_not_remove_recreated_object(fcache, fake):
    await fcache.create(project("p", "ns"))  # rv 1
    await fcache.delete(Project, "ns", "p")  # rv 2
    recreated = await fcache.create(project("p", "ns", title="New"))  # rv 3
    fake.send("DELETED", recreated, 2)
    await settle(fcache, fake, 4)
    assert (await fcache.get(Project, "ns", "p")).spec.name == "New"


async def test_relists_after_gone(fcache, fake):
    lists = fake.lists
    await fake.create(project("while-gone", "ns"))  # no event for it: only a relist shows it
    fake.fail_watches(Gone("too old"))
    await eventually(lambda: fake.lists > lists)
    await eventually(lambda: len(fcache._kinds["Project"].objects) == 1)
    assert (await fcache.get(Project, "ns", "while-gone")).name == "while-gone"


async def test_survives_backend_errors(fcache, fake):
    fake.fail_watches(RuntimeError("connection reset"))
    await asyncio.sleep(0.05)
    fake.send("ADDED", project("after-error", "ns"), 7)
    await settle(fcache, fake, 8)
    assert (await fcache.get(Project, "ns", "after-error")).name == "after-error"


async def test_start_raises_when_backend_fails():
    class Broken(FakeBackend):
        async def list_with_version(self, kind, namespace=None):
            raise ConnectionError("no store")

    cache = CachedStore(Broken())
    with pytest.raises(ConnectionError):
        await cache.start()
    assert not cache.ready


async def test_sync_without_poll_now_returns(fcache):
    await asyncio.wait_for(fcache.sync(), 1)


def test_is_newer():
    assert is_newer("10", "9")
    assert not is_newer("9", "10")
    assert not is_newer("5", "5")
    assert is_newer("abc", "abd") and is_newer("abd", "abc")
    assert not is_newer("abc", "abc")
    assert is_newer("1", None)


async def test_cached_get_and_cached_list_read_memory_synchronously(cache, ns):
    await cache.create(project("b", ns, labels={"env": "prod"}))
    await cache.create(project("a", ns))
    assert cache.cached_get(Project, ns, "b").metadata.labels == {"env": "prod"}
    assert cache.cached_get(Project, ns, "missing") is None
    assert [p.name for p in cache.cached_list(Project, ns)] == ["a", "b"]
    assert [p.name for p in cache.cached_list(Project, ns, "env=prod")] == ["b"]


async def test_reads_return_the_cached_instances(cache, ns):
    await cache.create(project("p", ns))
    assert await cache.get(Project, ns, "p") is cache.cached_get(Project, ns, "p")
