"""Kubernetes-style Secrets (a name and keys in an account's namespace): a project's webhook signing secret
(``spec.webhook.signingSecretRef``) is read from one, the key of an ApiKey applied without key material is written
to one (the Secret ``<apikey>-key``, key ``api-key``). One layout in both modes:

* embedded (``CALLSCOPE_STORE=sqlite``): the file ``$CALLSCOPE_DATA_DIR/secrets/<account>/<name>/<key>``, mode 0600
  in folders 0700, the local stand-in for a Secret (``callscope webhooks new-secret`` writes one);
* cluster (``CALLSCOPE_STORE=kubernetes``): the Secret through the Kubernetes API (callscope/kube_secrets.py).

`callscope.store.factory.build_secret_store` picks the one of the configured mode.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Protocol

from callscope.private_files import open_private, private_tree
from callscope.resources.meta import Resource
from callscope.validation import secret_key, secret_name


class SecretStore(Protocol):
    async def read(self, namespace: str, name: str, key: str) -> str | None:
        """The value, or None when the Secret or its key does not exist."""

    async def put(self, namespace: str, name: str, key: str, value: str, owner: Resource | None = None) -> None:
        """Create or replace the Secret `name` holding `value` under `key`; in a cluster it is owned by `owner`
        (deleted with it)."""

    async def aclose(self) -> None: ...


def checked(namespace: str, name: str, key: str) -> None:
    """A DNS subdomain name (never a path) and a Secret data key: at most 253 characters, so a file name too (255
    bytes). The same rules as a `signingSecretRef` is saved with (callscope/validation.py), so that a saved ref is
    never refused here."""
    try:
        secret_name(namespace), secret_name(name), secret_key(key)
    except ValueError:
        raise ValueError(f"invalid secret reference {namespace}/{name}/{key}") from None


class FileSecretStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        private_tree(root)  # on start: a Secret file or folder widened by hand or an earlier version is narrowed

    def path(self, namespace: str, name: str, key: str) -> Path:
        checked(namespace, name, key)
        return self.root / namespace / name / key

    async def read(self, namespace: str, name: str, key: str) -> str | None:
        try:
            return (await asyncio.to_thread(self.path(namespace, name, key).read_text)).strip() or None
        except FileNotFoundError:
            return None

    def write(self, namespace: str, name: str, key: str, value: str) -> Path:
        path = self.path(namespace, name, key)
        with os.fdopen(open_private(path, os.O_WRONLY | os.O_TRUNC), "w") as fh:
            fh.write(value + "\n")
        return path

    async def put(self, namespace: str, name: str, key: str, value: str, owner: Resource | None = None) -> None:
        await asyncio.to_thread(self.write, namespace, name, key, value)

    async def aclose(self) -> None:
        pass
