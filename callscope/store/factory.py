"""Build the configured back end of the configuration objects (``CALLSCOPE_STORE``)."""

from __future__ import annotations

from callscope.config import Settings
from callscope.store.interface import ResourceStore


def build_store_backend(settings: Settings) -> ResourceStore:
    """sqlite: one SQLite file in the data directory; kubernetes: the Kubernetes API of
    ``settings.kubeconfig`` / ``settings.kube_context`` (unset: in-cluster, then $KUBECONFIG or
    ~/.kube/config, current context)."""
    if settings.store == "sqlite":
        from callscope.store.sqlite import SQLiteStore

        return SQLiteStore(settings.store_path, poll_interval=settings.store_poll_interval)
    if settings.store == "kubernetes":
        from callscope.store.kubernetes import KubernetesStore

        return KubernetesStore(settings.kubeconfig, settings.kube_context)
    raise ValueError(f"unknown store back end {settings.store!r}")
