"""The Kubernetes API for everything that is not Kopf itself (the store, Secrets, the controller's login): one
client library, lightkube, and one way to find the cluster: ``CALLSCOPE_KUBECONFIG`` (and
``CALLSCOPE_KUBE_CONTEXT``) when set, else the in-cluster service account, else $KUBECONFIG or ~/.kube/config."""

from __future__ import annotations

from pathlib import Path

import httpx2
from lightkube import AsyncClient, ConfigError, KubeConfig, SingleConfig

from callscope.errors import ServiceUnavailable

FIELD_MANAGER = "callscope"


def kube_config(kubeconfig: Path | str | None = None, context: str | None = None) -> SingleConfig:
    """The cluster and credentials to use; ServiceUnavailable when there are none."""
    try:
        config = KubeConfig.from_file(kubeconfig) if kubeconfig is not None else KubeConfig.from_env()
        return config.get(context_name=context)
    except ConfigError as exc:
        raise ServiceUnavailable(f"no Kubernetes configuration: {exc}") from exc


def kube_client(kubeconfig: Path | str | None = None, context: str | None = None, *,
                timeout: float = 30.0) -> AsyncClient:
    return AsyncClient(kube_config(kubeconfig, context), timeout=httpx2.Timeout(timeout), field_manager=FIELD_MANAGER)
