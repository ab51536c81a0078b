"""Fixtures of the store tests.

`store_factory` opens clients of one shared store (as separate processes would); `backend` is the
first of them. Both are parametrized over the back ends: "sqlite" (a file in tmp_path) and
"kubernetes" (KubernetesStore clients of the emulated API server of tests/kube, emptied before each
test). Behaviour tests use the `ResourceStore` interface only.
"""

from __future__ import annotations

import itertools

import pytest
from kube.fixtures import kube_api, kube_api_server  # noqa: F401 - fixtures used by store_factory

from callscope.store.kubernetes import KubernetesStore
from callscope.store.sqlite import SQLiteStore

BACKENDS = ["sqlite", "kubernetes"]

# The most a watch may lag behind a write made through another client.
WATCH_LATENCY = {"sqlite": 0.1, "kubernetes": 0.1}

_names = itertools.count(1)


@pytest.fixture(params=BACKENDS)
async def store_factory(request, tmp_path):
    opened = []
    api = request.getfixturevalue("kube_api") if request.param == "kubernetes" else None

    def factory(*, slow_watch: bool = False):
        """A client of the shared store; slow_watch: its watches see other clients' writes only
        after a long delay (to show that a test does not rely on them). The Kubernetes back end
        has no polling to slow down: its watches are pushed by the API server, and `sync()` waits
        on them (see KubernetesStore.poll_now), so slow_watch changes nothing there."""
        if request.param == "sqlite":
            poll = 30.0 if slow_watch else WATCH_LATENCY["sqlite"] / 2
            store = SQLiteStore(tmp_path / "store.db", poll_interval=poll)
        elif request.param == "kubernetes":
            store = KubernetesStore(api.kubeconfig)
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
