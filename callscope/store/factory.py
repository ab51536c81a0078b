"""Build the back ends of the configured mode (``CALLSCOPE_STORE``): the configuration objects' store and the
Secrets'. The cluster's load lightkube, which embedded mode never imports (start-up time)."""

from __future__ import annotations

from callscope.config import Settings
from callscope.secret_store import FileSecretStore, SecretStore
from callscope.store.interface import ResourceStore
from callscope.store.sqlite import SQLiteStore


def build_store_backend(settings: Settings) -> ResourceStore:
    """sqlite: one SQLite file in the data directory; kubernetes: the Kubernetes API of
    ``settings.kubeconfig`` / ``settings.kube_context`` (unset: in-cluster, then $KUBECONFIG or
    ~/.kube/config, current context)."""
    if settings.store == "sqlite":
        return SQLiteStore(settings.store_path, poll_interval=settings.store_poll_interval)
    if settings.store == "kubernetes":
        from callscope.store.kubernetes import KubernetesStore  # lightkube: cluster only

        return KubernetesStore(settings.kubeconfig, settings.kube_context)
    raise ValueError(f"unknown store back end {settings.store!r}")


def build_secret_store(settings: Settings) -> SecretStore:
    """Files under the data directory's secrets/ embedded; Secrets through the Kubernetes API in a cluster."""
    if settings.store == "kubernetes":
        from callscope.kube_secrets import KubernetesSecretStore  # lightkube: cluster only

        return KubernetesSecretStore(settings)
    return FileSecretStore(settings.secrets_dir)
