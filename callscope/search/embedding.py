"""The sentence embedder search reads meaning with: the text embedding model the analysis ships
(analysis/models/text_embedding.py; the composition root hands its loader in), loaded on first use, once per process,
off the event loop. Without the model, meaning search is unavailable and calls are indexed by their words only."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import structlog

log = structlog.get_logger()

QUERIES_KEPT = 256  # a query's vector is kept for its next pages (and the next person who asks the same)


class TextEmbedder(Protocol):
    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class SearchEmbedder:
    def __init__(self, load: Callable[[], TextEmbedder]) -> None:
        self._load = load
        self._model: TextEmbedder | None = None
        self._missing = False  # loading failed once: the files will not appear while the process runs
        self._lock = asyncio.Lock()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()

    async def _loaded(self) -> TextEmbedder | None:
        async with self._lock:
            if self._model is None and not self._missing:
                try:
                    self._model = await asyncio.to_thread(self._load)
                except (FileNotFoundError, ValueError) as exc:
                    self._missing = True
                    log.warning("search_embedder_unavailable", error=str(exc))
            return self._model

    async def embed(self, texts: Sequence[str]) -> np.ndarray | None:
        """L2-normalised float32 vectors of `texts`, one row each; None without the model."""
        model = await self._loaded()
        return await asyncio.to_thread(model.embed, list(texts)) if model is not None else None

    async def embed_query(self, text: str) -> np.ndarray | None:
        """The vector of one query (the last QUERIES_KEPT are kept); None without the model."""
        if (kept := self._queries.get(text)) is not None:
            self._queries.move_to_end(text)
            return kept
        embedded = await self.embed([text])
        if embedded is None:
            return None
        self._queries[text] = embedded[0]
        if len(self._queries) > QUERIES_KEPT:
            self._queries.popitem(last=False)
        return embedded[0]
