"""Reading Kubernetes-style Secrets (a name and a key in an account's namespace), such as a project's webhook
signing secret (``spec.webhook.signingSecretRef``).

* embedded (``CALLSCOPE_STORE=sqlite``): the file ``$CALLSCOPE_DATA_DIR/secrets/<account>/<name>/<key>``, the local
  stand-in for a Secret (``callscope webhooks new-secret`` writes one, mode 0600);
* cluster (``CALLSCOPE_STORE=kubernetes``): the Secret through the Kubernetes API (the operator's RBAC reads Secrets).
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
from pathlib import Path
from typing import Protocol

from callscope.config import Settings

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")  # a DNS subdomain name: never a path
_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")  # a Secret data key


class SecretStore(Protocol):
    async def read(self, namespace: str, name: str, key: str) -> str | None:
        """The value, or None when the Secret or its key does not exist."""


def _checked(namespace: str, name: str, key: str) -> None:
    if not (_NAME.match(namespace) and _NAME.match(name) and _KEY.match(key)) or key in (".", ".."):
        raise ValueError(f"invalid secret reference {namespace}/{name}/{key}")


class FileSecretStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, namespace: str, name: str, key: str) -> Path:
        _checked(namespace, name, key)
        return self.root / namespace / name / key

    async def read(self, namespace: str, name: str, key: str) -> str | None:
        try:
            return (await asyncio.to_thread(self.path(namespace, name, key).read_text)).strip() or None
        except FileNotFoundError:
            return None

    def write(self, namespace: str, name: str, key: str, value: str) -> Path:
        path = self.path(namespace, name, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(value + "\n")
        return path


class KubernetesSecretStore:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client = None

    def _lightkube(self):
        if self._client is None:
            from lightkube import AsyncClient, KubeConfig

            kubeconfig = self.settings.kubeconfig
            config = KubeConfig.from_file(kubeconfig) if kubeconfig is not None else KubeConfig.from_env()
            self._client = AsyncClient(config.get(context_name=self.settings.kube_context))
        return self._client

    async def read(self, namespace: str, name: str, key: str) -> str | None:
        from lightkube.core.exceptions import ApiError
        from lightkube.resources.core_v1 import Secret

        _checked(namespace, name, key)
        try:
            secret = await self._lightkube().get(Secret, name=name, namespace=namespace)
        except ApiError as exc:
            if exc.status.code == 404:
                return None
            raise
        if secret.data and key in secret.data:
            return base64.b64decode(secret.data[key]).decode().strip() or None
        return (secret.stringData or {}).get(key)


def build_secret_store(settings: Settings) -> SecretStore:
    if settings.store == "kubernetes":
        return KubernetesSecretStore(settings)
    return FileSecretStore(settings.data_dir / "secrets")
