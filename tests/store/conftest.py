"""Fixtures of the store tests.

`store_factory` opens clients of one shared store (as separate processes would); `backend` is the
first of them. Both are parametrized over the back ends: only "sqlite" for now; a "kubernetes" one
will be added here. Behaviour tests use the `ResourceStore` interface only.
"""

from __future__ import annotations

import itertools

import pytest

from callscope.store.sqlite import SQLiteStore

BACKENDS = ["sqlite"]

# The most a watch may lag behind a write made through another client.
WATCH_LATENCY = {"sqlite": 0.1}

_names = itertools.count(1)


@pytest.fixture(params=BACKENDS)
async def store_factory(request, tmp_path):
    opened = []

    def factory(*, slow_watch: bool = False):
        """A client of the shared store; slow_watch: its watches see other clients' writes only
        after a long delay (to show that a test does not rely on them)."""
        if request.param == "sqlite":
            poll = 30.0 if slow_watch else WATCH_LATENCY["sqlite"] / 2
            store = SQLiteStore(tmp_path / "store.db", poll_interval=poll)
        else:  # pragma: no cover
            raise AssertionError(request.param)
        opened.append(store)
        return store

    factory.kind = request.param  # type: ignore[attr-defined]
    factory.watch_latency = WATCH_LATENCY[request.param]  # type: ignore[attr-defined]
    yield factory
    for store in opened:
        await store.close()


@pytest.fixture
def backend(store_factory):
    return store_factory()


@pytest.fixture
def ns() -> str:
    return f"acct-{next(_names)}"

