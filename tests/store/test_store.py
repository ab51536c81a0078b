"""Behaviour of every ResourceStore back end, written against the interface only."""

from __future__ import annotations

import asyncio

import pytest
from store_helpers import account, next_event, operator, project

from callscope.errors import ValidationFailed
from callscope.resources import Project
from callscope.store.interface import AlreadyExists, ObjectNotFound, StaleResourceVersion


async def test_create_assigns_metadata(backend, ns):
    created = await backend.create(project("support", ns))
    assert created.metadata.uid
    assert created.metadata.resource_version
    assert created.metadata.generation == 1
    assert created.metadata.creation_timestamp is not None
    assert created.metadata.namespace == ns
    fetched = await backend.get(Project, ns, "support")
    assert fetched.metadata.uid == created.metadata.uid
    assert fetched.metadata.resource_version == created.metadata.resource_version


async def test_create_ignores_status(backend, ns):
    obj = project("support", ns)
    obj.status.id = 42
    obj.status.observed_generation = 9
    created = await backend.create(obj)
    assert created.status.id is None
    assert created.status.observed_generation is None
    assert (await backend.get(Project, ns, "support")).status.id is None


async def test_create_ignores_given_metadata(backend, ns):
    obj = project("support", ns)
    obj.metadata.uid = "mine"
    obj.metadata.resource_version = "12345"
    obj.metadata.generation = 7
    created = await backend.create(obj)
    assert created.metadata.uid != "mine"
    assert created.metadata.generation == 1


async def test_create_requires_namespace(backend):
    obj = project("support", "x")
    obj.metadata.namespace = None
    with pytest.raises(ValidationFailed):
        await backend.create(obj)


async def test_uids_differ(backend, ns):
    a = await backend.create(project("a", ns))
    b = await backend.create(project("b", ns))
    assert a.metadata.uid != b.metadata.uid
    assert a.metadata.resource_version != b.metadata.resource_version


async def test_create_existing_name_raises_already_exists(backend, ns):
    await backend.create(project("support", ns))
    with pytest.raises(AlreadyExists):
        await backend.create(project("support", ns, title="Other"))
    assert (await backend.get(Project, ns, "support")).spec.name == "Support"


async def test_same_name_in_other_namespace_or_kind_is_allowed(backend, ns):
    await backend.create(project("x", ns))
    await backend.create(project("x", ns + "-other"))
    await backend.create(operator("x", ns))


async def test_get_missing_raises_not_found(backend, ns):
    with pytest.raises(ObjectNotFound):
        await backend.get(Project, ns, "nope")


async def test_list_by_namespace(backend, ns):
    await backend.create(project("b", ns))
    await backend.create(project("a", ns))
    await backend.create(project("c", ns + "-other"))
    await backend.create(operator("d", ns))
    names = sorted(p.name for p in await backend.list(Project, ns))
    assert names == ["a", "b"]
    assert all(isinstance(p, Project) for p in await backend.list(Project, ns))


async def test_list_all_namespaces(backend, ns):
    await backend.create(project("a", ns))
    await backend.create(project("c", ns + "-other"))
    found = {(p.namespace, p.name) for p in await backend.list(Project)}
    assert {(ns, "a"), (ns + "-other", "c")} <= found


async def test_list_empty(backend, ns):
    assert await backend.list(Project, ns) == []


@pytest.fixture
async def labelled(backend, ns):
    await backend.create(project("prod-web", ns, labels={"env": "prod", "tier": "web"}))
    await backend.create(project("prod-db", ns, labels={"env": "prod", "tier": "db"}))
    await backend.create(project("dev-web", ns, labels={"env": "dev", "tier": "web"}))
    await backend.create(project("bare", ns))


async def _names(backend, ns, selector):
    return sorted(p.name for p in await backend.list(Project, ns, label_selector=selector))


async def test_selector_equals(backend, ns, labelled):
    assert await _names(backend, ns, "env=prod") == ["prod-db", "prod-web"]


async def test_selector_double_equals(backend, ns, labelled):
    assert await _names(backend, ns, "tier==web") == ["dev-web", "prod-web"]


async def test_selector_not_equals_includes_unlabelled(backend, ns, labelled):
    assert await _names(backend, ns, "env!=prod") == ["bare", "dev-web"]


async def test_selector_in(backend, ns, labelled):
    assert await _names(backend, ns, "tier in (db, cache)") == ["prod-db"]


async def test_selector_notin_includes_unlabelled(backend, ns, labelled):
    assert await _names(backend, ns, "tier notin (web)") == ["bare", "prod-db"]


async def test_selector_exists(backend, ns, labelled):
    assert await _names(backend, ns, "env") == ["dev-web", "prod-db", "prod-web"]


async def test_selector_does_not_exist(backend, ns, labelled):
    assert await _names(backend, ns, "!env") == ["bare"]


async def test_selector_several_requirements(backend, ns, labelled):
    assert await _names(backend, ns, "env=prod,tier!=db") == ["prod-web"]


async def test_selector_all_namespaces(backend, ns, labelled):
    await backend.create(project("elsewhere", ns + "-other", labels={"env": "prod"}))
    found = {p.name for p in await backend.list(Project, None, label_selector="env=prod")}
    assert {"prod-web", "prod-db", "elsewhere"} <= found
    assert "dev-web" not in found


async def test_selector_bad_syntax_raises(backend, ns):
    with pytest.raises(ValidationFailed):
        await backend.list(Project, ns, label_selector="env in prod")


async def test_update_replaces_labels_annotations_spec(backend, ns):
    created = await backend.create(project("p", ns, labels={"a": "1"}))
    created.metadata.labels = {"b": "2"}
    created.metadata.annotations = {"note": "x"}
    created.spec.name = "Renamed"
    updated = await backend.update(created)
    fetched = await backend.get(Project, ns, "p")
    for obj in (updated, fetched):
        assert obj.metadata.labels == {"b": "2"}
        assert obj.metadata.annotations == {"note": "x"}
        assert obj.spec.name == "Renamed"
        assert obj.metadata.uid == created.metadata.uid
    assert updated.metadata.resource_version != created.metadata.resource_version


async def test_update_with_stale_resource_version_raises_and_changes_nothing(backend, ns):
    first = await backend.create(project("p", ns))
    second = first.model_copy(deep=True)
    second.spec.name = "Second"
    current = await backend.update(second)
    first.spec.name = "Stale"
    with pytest.raises(StaleResourceVersion):
        await backend.update(first)
    fetched = await backend.get(Project, ns, "p")
    assert fetched.spec.name == "Second"
    assert fetched.metadata.resource_version == current.metadata.resource_version


async def test_update_without_resource_version_is_unconditional(backend, ns):
    first = await backend.create(project("p", ns))
    other = first.model_copy(deep=True)
    other.spec.name = "Other"
    await backend.update(other)
    first.spec.name = "Forced"
    first.metadata.resource_version = None
    assert (await backend.update(first)).spec.name == "Forced"
    assert (await backend.get(Project, ns, "p")).spec.name == "Forced"


async def test_update_missing_raises_not_found(backend, ns):
    with pytest.raises(ObjectNotFound):
        await backend.update(project("ghost", ns))


async def test_concurrent_updates_from_same_read_exactly_one_wins(backend, ns):
    await backend.create(project("p", ns))
    read = await backend.get(Project, ns, "p")
    attempts = []
    for i in range(5):
        copy = read.model_copy(deep=True)
        copy.spec.name = f"writer-{i}"
        attempts.append(copy)
    results = await asyncio.gather(*(backend.update(a) for a in attempts), return_exceptions=True)
    winners = [r for r in results if isinstance(r, Project)]
    losers = [r for r in results if isinstance(r, StaleResourceVersion)]
    assert len(winners) == 1 and len(losers) == 4
    assert (await backend.get(Project, ns, "p")).spec.name == winners[0].spec.name


async def test_generation_grows_on_spec_change(backend, ns):
    created = await backend.create(project("p", ns))
    created.spec.name = "Changed"
    updated = await backend.update(created)
    assert updated.metadata.generation == 2


async def test_generation_unchanged_on_label_change(backend, ns):
    created = await backend.create(project("p", ns))
    created.metadata.labels = {"x": "y"}
    updated = await backend.update(created)
    assert updated.metadata.generation == 1
    assert updated.metadata.labels == {"x": "y"}


async def test_generation_unchanged_on_status_change(backend, ns):
    created = await backend.create(project("p", ns))
    created.status.id = 5
    updated = await backend.update_status(created)
    assert updated.metadata.generation == 1


async def test_update_ignores_status(backend, ns):
    created = await backend.create(project("p", ns))
    created.status.id = 99
    created.spec.name = "Changed"
    updated = await backend.update(created)
    assert updated.status.id is None
    assert updated.spec.name == "Changed"
    assert (await backend.get(Project, ns, "p")).status.id is None


async def test_update_status_changes_only_status(backend, ns):
    created = await backend.create(project("p", ns, labels={"keep": "me"}))
    created.status.id = 7
    created.spec.name = "Ignored"
    created.metadata.labels = {"ignored": "too"}
    updated = await backend.update_status(created)
    fetched = await backend.get(Project, ns, "p")
    for obj in (updated, fetched):
        assert obj.status.id == 7
        assert obj.spec.name == "Support"
        assert obj.metadata.labels == {"keep": "me"}
    assert updated.metadata.resource_version != created.metadata.resource_version


async def test_update_status_with_stale_resource_version_raises(backend, ns):
    created = await backend.create(project("p", ns))
    fresh = created.model_copy(deep=True)
    fresh.status.id = 1
    await backend.update_status(fresh)
    created.status.id = 2
    with pytest.raises(StaleResourceVersion):
        await backend.update_status(created)
    assert (await backend.get(Project, ns, "p")).status.id == 1


async def test_delete_then_get_not_found(backend, ns):
    await backend.create(project("p", ns))
    await backend.delete(Project, ns, "p")
    with pytest.raises(ObjectNotFound):
        await backend.get(Project, ns, "p")
    assert await backend.list(Project, ns) == []


async def test_delete_missing_raises_not_found(backend, ns):
    with pytest.raises(ObjectNotFound):
        await backend.delete(Project, ns, "ghost")


async def test_recreate_after_delete_is_a_new_object(backend, ns):
    first = await backend.create(project("p", ns))
    await backend.delete(Project, ns, "p")
    second = await backend.create(project("p", ns))
    assert second.metadata.uid != first.metadata.uid
    assert second.metadata.generation == 1


async def test_list_with_version_starts_a_watch(backend, ns):
    await backend.create(project("a", ns))
    items, rv = await backend.list_with_version(Project, ns)
    assert [p.name for p in items] == ["a"]
    assert isinstance(rv, str) and rv
    it = backend.watch(Project, ns, rv)
    try:
        await backend.create(project("b", ns))
        event = await next_event(it)
        assert (event.type, event.object.name) == ("ADDED", "b")
    finally:
        await it.aclose()


async def test_watch_yields_added_modified_deleted_in_order(backend, ns):
    _, rv = await backend.list_with_version(Project, ns)
    it = backend.watch(Project, ns, rv)
    try:
        created = await backend.create(project("p", ns))
        created.spec.name = "Changed"
        updated = await backend.update(created)
        await backend.delete(Project, ns, "p")
        events = [await next_event(it) for _ in range(3)]
    finally:
        await it.aclose()
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert all(isinstance(e.object, Project) and e.object.name == "p" for e in events)
    assert events[0].object.metadata.resource_version == created.metadata.resource_version
    assert events[1].object.spec.name == "Changed"
    assert events[1].object.metadata.resource_version == updated.metadata.resource_version


async def test_watch_from_resource_version_replays_later_changes(backend, ns):
    first = await backend.create(project("a", ns))
    await backend.create(project("b", ns))
    await backend.create(project("c", ns))
    it = backend.watch(Project, ns, first.metadata.resource_version)
    try:
        events = [await next_event(it) for _ in range(2)]
    finally:
        await it.aclose()
    assert [(e.type, e.object.name) for e in events] == [("ADDED", "b"), ("ADDED", "c")]


async def test_watch_without_resource_version_starts_now(backend, ns):
    await backend.create(project("old", ns))
    it = backend.watch(Project, ns)
    try:
        # the watch is established on the first __anext__; start it, then write
        pending = asyncio.ensure_future(next_event(it))
        await asyncio.sleep(0.05)
        await backend.create(project("new", ns))
        event = await pending
    finally:
        await it.aclose()
    assert event.object.name == "new"


async def test_watch_filters_kind_and_namespace(backend, ns):
    _, rv = await backend.list_with_version(Project, ns)
    it = backend.watch(Project, ns, rv)
    try:
        await backend.create(operator("op", ns))
        await backend.create(project("elsewhere", ns + "-other"))
        await backend.create(project("here", ns))
        event = await next_event(it)
    finally:
        await it.aclose()
    assert (event.object.namespace, event.object.name) == (ns, "here")


async def test_watch_all_namespaces(backend, ns):
    _, rv = await backend.list_with_version(Project)
    it = backend.watch(Project, None, rv)
    try:
        await backend.create(project("a", ns))
        await backend.create(project("b", ns + "-other"))
        events = [await next_event(it) for _ in range(2)]
    finally:
        await it.aclose()
    assert [(e.object.namespace, e.object.name) for e in events] == [(ns, "a"), (ns + "-other", "b")]


async def test_two_watchers_get_the_same_events(backend, ns):
    _, rv = await backend.list_with_version(Project, ns)
    a, b = backend.watch(Project, ns, rv), backend.watch(Project, ns, rv)
    try:
        await backend.create(project("p", ns))
        ea, eb = await next_event(a), await next_event(b)
    finally:
        await a.aclose()
        await b.aclose()
    assert ea.object.name == eb.object.name == "p"
    assert ea.object is not eb.object


async def test_no_op_update_does_not_change_resource_version(backend, ns):
    created = await backend.create(project("p", ns))
    again = await backend.update(created)
    assert again.metadata.resource_version == created.metadata.resource_version
    assert again.metadata.generation == 1


async def test_second_client_sees_writes_at_once(store_factory, ns):
    one, two = store_factory(), store_factory()
    await one.create(project("p", ns))
    assert [p.name for p in await two.list(Project, ns)] == ["p"]
    assert (await two.get(Project, ns, "p")).spec.name == "Support"
    await two.delete(Project, ns, "p")
    with pytest.raises(ObjectNotFound):
        await one.get(Project, ns, "p")


async def test_second_client_watch_sees_writes_within_poll_interval(store_factory, ns):
    one, two = store_factory(), store_factory()
    _, rv = await two.list_with_version(Project, ns)
    it = two.watch(Project, ns, rv)
    try:
        await one.create(project("p", ns))
        event = await next_event(it, timeout=store_factory.watch_latency + 1.0)
    finally:
        await it.aclose()
    assert (event.type, event.object.name) == ("ADDED", "p")


async def test_second_client_concurrent_updates_one_wins(store_factory, ns):
    one, two = store_factory(), store_factory()
    created = await one.create(project("p", ns))
    a, b = created.model_copy(deep=True), created.model_copy(deep=True)
    a.spec.name, b.spec.name = "A", "B"
    results = await asyncio.gather(one.update(a), two.update(b), return_exceptions=True)
    assert sorted(type(r).__name__ for r in results) == ["Project", "StaleResourceVersion"]


async def test_accounts_live_in_their_own_namespace(backend):
    created = await backend.create(account("acme"))
    assert created.namespace == "acme"
