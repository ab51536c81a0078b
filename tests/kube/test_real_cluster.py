"""The store's behaviour tests (tests/store/test_store.py) against a real Kubernetes API server.

Marked ``kind``; skipped cleanly unless one of these is available:

* ``CALLSCOPE_TEST_KUBECONFIG``: a kubeconfig file of a reachable cluster (its current context, or
  ``CALLSCOPE_TEST_KUBE_CONTEXT``);
* a running Docker engine (``docker info`` succeeds) and pytest-kind: a kind cluster is created for
  the session.

The CustomResourceDefinitions of crds/ are applied first (when present). Every test works in
namespaces of its own, deleted afterwards.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from callscope.resources import KINDS
from callscope.store.kubernetes import KubernetesStore

pytestmark = pytest.mark.kind

ROOT = Path(__file__).resolve().parents[2]
STORE_TESTS = ROOT / "tests" / "store" / "test_store.py"


def _docker_running() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _reachable(kubeconfig: Path, context: str | None) -> str | None:
    """None when the cluster answers, else why not."""
    try:
        from lightkube import Client, KubeConfig
        from lightkube.resources.core_v1 import Namespace

        client = Client(KubeConfig.from_file(kubeconfig).get(context_name=context), timeout=5)
        try:
            next(iter(client.list(Namespace, chunk_size=1)), None)
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - any failure means: no cluster here
        return f"{type(exc).__name__}: {exc}"
    return None


def _apply_crds(kubeconfig: Path, context: str | None) -> None:
    from lightkube import Client, KubeConfig
    from lightkube.codecs import load_all_yaml
    from lightkube.core.exceptions import ApiError

    crd_dir = ROOT / "crds"
    files = sorted(p for p in crd_dir.glob("*.yaml") if p.name != "kustomization.yaml") if crd_dir.is_dir() else []
    client = Client(KubeConfig.from_file(kubeconfig).get(context_name=context), field_manager="callscope-tests")
    try:
        for path in files:
            for obj in load_all_yaml(path.read_text()):
                try:
                    client.apply(obj, force=True)
                except ApiError as exc:
                    if exc.status.code != 409:
                        raise
        # wait until the API serves every kind
        deadline = time.monotonic() + 60
        from lightkube.generic_resource import create_namespaced_resource

        for cls in KINDS.values():
            res = create_namespaced_resource("callscope.io", "v1alpha1", cls.KIND, cls.PLURAL)
            while True:
                try:
                    next(iter(client.list(res, namespace="default", chunk_size=1)), None)
                    break
                except ApiError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
    finally:
        client.close()


@pytest.fixture(scope="session")
def real_cluster(request) -> tuple[Path, str | None]:
    env = os.environ.get("CALLSCOPE_TEST_KUBECONFIG")
    context = os.environ.get("CALLSCOPE_TEST_KUBE_CONTEXT") or None
    if env:
        kubeconfig = Path(env)
        why = _reachable(kubeconfig, context)
        if why is not None:
            pytest.skip(f"CALLSCOPE_TEST_KUBECONFIG={env}: cluster unreachable ({why})")
    elif _docker_running():
        try:
            from pytest_kind import KindCluster
        except ImportError:
            pytest.skip("Docker runs but pytest-kind is not installed")
        cluster = KindCluster(f"callscope-{uuid.uuid4().hex[:6]}")
        try:
            cluster.create()
        except Exception as exc:  # noqa: BLE001
            pytest.skip(f"could not create a kind cluster: {exc}")
        request.addfinalizer(cluster.delete)
        kubeconfig, context = Path(cluster.kubeconfig_path), None
    else:
        pytest.skip("no Kubernetes cluster: set CALLSCOPE_TEST_KUBECONFIG or run a Docker engine (docker info)")
    _apply_crds(kubeconfig, context)
    return kubeconfig, context


@pytest.fixture
async def store_factory(real_cluster):
    kubeconfig, context = real_cluster
    opened: list[KubernetesStore] = []

    def factory(*, slow_watch: bool = False):
        store = KubernetesStore(kubeconfig, context)
        opened.append(store)
        return store

    factory.kind = "kubernetes"  # type: ignore[attr-defined]
    factory.watch_latency = 1.0  # type: ignore[attr-defined]
    yield factory
    for store in opened:
        await store.close()


@pytest.fixture
def backend(store_factory):
    return store_factory()


@pytest.fixture
def ns(real_cluster):
    name = f"cs-test-{uuid.uuid4().hex[:8]}"
    yield name
    from lightkube import Client, KubeConfig
    from lightkube.core.exceptions import ApiError
    from lightkube.resources.core_v1 import Namespace

    kubeconfig, context = real_cluster
    client = Client(KubeConfig.from_file(kubeconfig).get(context_name=context))
    try:
        for n in (name, name + "-other"):
            try:
                client.delete(Namespace, n)
            except ApiError:
                pass
    finally:
        client.close()


def _load_store_behaviours() -> dict[str, object]:
    """The test functions (and their helper fixtures) of tests/store/test_store.py."""
    sys.path.insert(0, str(STORE_TESTS.parent))  # for `store_helpers`
    spec = importlib.util.spec_from_file_location("_callscope_real_cluster_store_tests", STORE_TESTS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {
        name: value for name, value in vars(module).items()
        if name.startswith("test_") or (callable(value) and hasattr(value, "_fixture_function_marker"))
        or name == "labelled"
    }


globals().update(_load_store_behaviours())
