"""What is particular to the SQLite back end: compaction, polling, several processes on one file."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
from store_helpers import next_event, project

from callscope.resources import Project
from callscope.store.interface import Gone, ObjectNotFound
from callscope.store.sqlite import SQLiteStore


@pytest.fixture
async def make(tmp_path):
    opened: list[SQLiteStore] = []

    def factory(**kwargs) -> SQLiteStore:
        store = SQLiteStore(tmp_path / "store.db", **kwargs)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        await store.close()


async def test_watch_from_compacted_revision_raises_gone(make):
    store = make(max_events=3)
    first = await store.create(project("a", "ns"))
    for name in "bcdef":
        await store.create(project(name, "ns"))
    it = store.watch(Project, "ns", first.metadata.resource_version)
    with pytest.raises(Gone):
        await next_event(it)


async def test_watch_from_oldest_kept_revision_works(make):
    store = make(max_events=3)
    for name in "abcde":
        await store.create(project(name, "ns"))
    rev = int(await store.current_revision())
    it = store.watch(Project, "ns", str(rev - 3))
    try:
        names = [(await next_event(it)).object.name for _ in range(3)]
    finally:
        await it.aclose()
    assert names == ["c", "d", "e"]


async def test_events_table_stays_bounded(make):
    store = make(max_events=5)
    for i in range(20):
        await store.create(project(f"p{i}", "ns"))
    with pytest.raises(Gone):
        await next_event(store.watch(Project, "ns", "10"))
    assert len(await store.list(Project, "ns")) == 20  # objects are never compacted


async def test_watcher_that_falls_behind_compaction_gets_gone(make):
    reader = make(poll_interval=60, max_events=3)
    writer = make(max_events=3)
    it = reader.watch(Project, "ns", await reader.current_revision())
    pending = asyncio.ensure_future(next_event(it))
    await asyncio.sleep(0.05)  # the watch is established
    for name in "abcdef":
        await writer.create(project(name, "ns"))
    await reader.poll_now()
    with pytest.raises(Gone):
        await pending


async def test_poll_now_catches_up_without_waiting(make):
    reader = make(poll_interval=60)
    writer = make()
    it = reader.watch(Project, "ns", await reader.current_revision())
    pending = asyncio.ensure_future(next_event(it))
    try:
        await asyncio.sleep(0.05)
        await writer.create(project("p", "ns"))
        await reader.poll_now()
        event = await asyncio.wait_for(pending, 0.5)
    finally:
        await it.aclose()
    assert event.object.name == "p"


async def test_watch_sees_other_instance_within_poll_interval(make):
    reader = make(poll_interval=0.1)
    writer = make()
    it = reader.watch(Project, "ns", await reader.current_revision())
    pending = asyncio.ensure_future(next_event(it))
    try:
        await asyncio.sleep(0.05)
        await writer.create(project("p", "ns"))
        started = time.monotonic()
        event = await asyncio.wait_for(pending, 1.0)
        assert time.monotonic() - started < 0.1 + 0.15
    finally:
        await it.aclose()
    assert event.object.name == "p"


async def test_current_revision_grows_with_every_write(make):
    store = make()
    before = int(await store.current_revision())
    created = await store.create(project("p", "ns"))
    assert int(created.metadata.resource_version) == before + 1
    await store.delete(Project, "ns", "p")
    assert int(await store.current_revision()) == before + 2


async def test_revisions_are_global_across_instances(make):
    one, two = make(), make()
    a = await one.create(project("a", "ns"))
    b = await two.create(project("b", "ns"))
    assert int(b.metadata.resource_version) == int(a.metadata.resource_version) + 1
    assert await one.current_revision() == await two.current_revision()


async def test_watch_after_close_ends(make):
    store = make()
    it = store.watch(Project, "ns", await store.current_revision())
    pending = asyncio.ensure_future(next_event(it))
    await asyncio.sleep(0.05)
    await store.close()
    with pytest.raises(StopAsyncIteration):
        await pending


async def test_writes_from_another_process(make, tmp_path):
    store = make(poll_interval=0.05)
    it = store.watch(Project, "ns", await store.current_revision())
    pending = asyncio.ensure_future(next_event(it, timeout=30))
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parent)!r})
        from store_helpers import project
        from callscope.store.sqlite import SQLiteStore

        async def main():
            store = SQLiteStore({str(tmp_path / "store.db")!r})
            await asyncio.gather(*(store.create(project(f"child-{{i}}", "ns")) for i in range(20)))
            await store.close()

        asyncio.run(main())
        """
    )
    try:
        # both processes write at the same time
        child = await asyncio.create_subprocess_exec(sys.executable, "-c", script, stderr=subprocess.PIPE)
        for i in range(20):
            await store.create(project(f"parent-{i}", "ns"))
        _, err = await child.communicate()
        assert child.returncode == 0, err.decode()
        assert len(await store.list(Project, "ns")) == 40
        await pending
    finally:
        await it.aclose()


async def test_an_object_the_current_rules_refuse_is_skipped_not_fatal(make, tmp_path):
    """An older version stored a project whose language no upload can use: readers skip it (with an error in
    the log) and still see every other object; the row itself stays."""
    store = make()
    await store.create(project("good", "default"))
    await store.create(project("bad", "default"))
    with sqlite3.connect(tmp_path / "store.db") as conn:
        body = json.loads(conn.execute("SELECT body FROM objects WHERE name = 'bad'").fetchone()[0])
        body["spec"]["language"] = "zz-notalang-verylong"
        conn.execute("UPDATE objects SET body = ? WHERE name = 'bad'", (json.dumps(body),))
    assert [p.name for p in await store.list(Project)] == ["good"]
    with pytest.raises(ObjectNotFound):
        await store.get(Project, "default", "bad")
    with sqlite3.connect(tmp_path / "store.db") as conn:
        assert conn.execute("SELECT count(*) FROM objects WHERE name = 'bad'").fetchone()[0] == 1
