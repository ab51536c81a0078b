"""What every service function works with: the stores, the catalog, the provider, and who is asking."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from callscope.catalog.recordings import Scope
from callscope.config import Settings
from callscope.search.vectors import VectorCache

if TYPE_CHECKING:
    from callscope.blobs.base import BlobStore
    from callscope.catalog.db import Catalog
    from callscope.mail import MailQueue
    from callscope.search.embedding import SearchEmbedder
    from callscope.store.cache import CachedStore
    from callscope.telephony.base import NumberProvider


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Context:
    settings: Settings
    store: CachedStore
    catalog: Catalog
    provider: NumberProvider
    blobs: BlobStore
    mail: MailQueue
    url_secret: bytes  # signs the audio URLs this service serves itself
    clock: Callable[[], datetime] = field(default=utcnow)
    embedder: SearchEmbedder | None = None  # search's sentence embedder; None: calls indexed by their words only
    vectors: VectorCache = field(default_factory=VectorCache)  # meaning search's segment vectors, this process's
    # exclusive()'s first step: within this process, before the catalog's lock
    account_locks: defaultdict[str, asyncio.Lock] = field(default_factory=lambda: defaultdict(asyncio.Lock))

    @asynccontextmanager
    async def exclusive(self, scope: str) -> AsyncIterator[None]:
        """Hold the rules lock of `scope`, an account (or a rule across accounts, named as no account can be): a
        check across several objects (a name or number not taken, an unlocked admin kept) and the write it allows
        run as one, against every replica and process of the service (the catalog's lock), each process's requests
        queued here first. The cache is brought up to date once the lock is held, so a check reads what another
        replica wrote under it."""
        async with self.account_locks[scope], self.catalog.exclusive(f"rules:{scope}"):
            await self.store.sync()
            yield


@dataclass(frozen=True)
class Principal:
    """The caller, as its API key says: one account, some permissions, maybe one project."""

    account: str
    key_name: str
    key_uid: str
    permissions: frozenset[str]
    project: str | None = None  # metadata.name of the bound project; None for account-wide keys
    project_id: int | None = None
    rate_limit_per_minute: int | None = None
    expires_at: datetime | None = None

    @property
    def scoped(self) -> bool:
        return self.project is not None

    @property
    def scope(self) -> Scope:
        """The recordings this key may see. A project-scoped key whose project id is unknown sees none
        (no project has id 0), never the whole account."""
        return Scope(self.account, (self.project_id or 0) if self.scoped else None)
