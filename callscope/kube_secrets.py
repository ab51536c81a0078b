"""The cluster's SecretStore (callscope/secret_store.py): Secrets through the Kubernetes API, with lightkube
(callscope/kube.py). The controller's RBAC reads and writes Secrets; the API's does not."""

from __future__ import annotations

import base64

from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta, OwnerReference
from lightkube.resources.core_v1 import Secret

from callscope.config import Settings
from callscope.kube import kube_client
from callscope.resources.meta import GROUP, Resource
from callscope.secret_store import checked

PUT_ATTEMPTS = 5  # create, or replace what another writer made meanwhile


def _owned_by(owner: Resource | None) -> tuple[dict[str, str], list[OwnerReference]]:
    """A label naming the owner, and an owner reference: Kubernetes deletes the Secret with its owner."""
    if owner is None:
        return {}, []
    labels = {f"{GROUP}/{owner.KIND.lower()}": owner.name}
    if not owner.metadata.uid:
        return labels, []
    return labels, [OwnerReference(apiVersion=owner.api_version, kind=owner.KIND, name=owner.name,
                                   uid=owner.metadata.uid, controller=True, blockOwnerDeletion=False)]


class KubernetesSecretStore:
    def __init__(self, settings: Settings) -> None:
        self._client = kube_client(settings.kubeconfig, settings.kube_context)

    async def read(self, namespace: str, name: str, key: str) -> str | None:
        checked(namespace, name, key)
        try:
            secret = await self._client.get(Secret, name=name, namespace=namespace)
        except ApiError as exc:
            if exc.status.code == 404:
                return None
            raise
        if secret.data and key in secret.data:
            return base64.b64decode(secret.data[key]).decode().strip() or None
        return (secret.stringData or {}).get(key)

    async def put(self, namespace: str, name: str, key: str, value: str, owner: Resource | None = None) -> None:
        checked(namespace, name, key)
        labels, references = _owned_by(owner)
        secret = Secret(type="Opaque", data={key: base64.b64encode(value.encode()).decode()},
                        metadata=ObjectMeta(name=name, namespace=namespace, labels=labels, ownerReferences=references))
        for attempt in range(PUT_ATTEMPTS):
            try:
                await self._client.create(secret)
                return
            except ApiError as exc:
                if exc.status.code != 409:
                    raise
            try:
                current = await self._client.get(Secret, name=name, namespace=namespace)
                secret.metadata.resourceVersion = current.metadata.resourceVersion
                await self._client.replace(secret)
                return
            except ApiError as exc:  # deleted or changed meanwhile: create again
                if exc.status.code not in (404, 409) or attempt == PUT_ATTEMPTS - 1:
                    raise
                secret.metadata.resourceVersion = None

    async def aclose(self) -> None:
        await self._client.close()
