"""Pytest fixtures of the emulated Kubernetes API server.

* ``kube_api_server`` (session): one emulator on 127.0.0.1 (a free port) for the whole run, with a
  kubeconfig file pointing at it;
* ``kube_api``: the same server, emptied before the test (``reset()``: objects gone, watches closed,
  resourceVersions keep growing so that old ones are Gone).

Both yield a `KubeApiServer`: ``.url``, ``.kubeconfig`` (Path), ``.reset()``, ``.emulator`` (the
state, e.g. ``.emulator.requests``), ``.call(fn, *args)`` (run on the server's loop).

Use them from another test folder with ``from kube.fixtures import kube_api, kube_api_server``
(tests/ is on sys.path through its rootdir conftest).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kube.emulator import KubeApiServer


@pytest.fixture(scope="session")
def kube_api_server(tmp_path_factory) -> Iterator[KubeApiServer]:
    server = KubeApiServer(tmp_path_factory.mktemp("kube") / "kubeconfig").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def kube_api(kube_api_server: KubeApiServer) -> KubeApiServer:
    kube_api_server.reset()
    return kube_api_server
