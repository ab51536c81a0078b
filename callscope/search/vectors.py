"""The segment vectors meaning search compares, held in this process's memory per account: reading every vector from
the catalog for each search would cost far more than comparing them. The catalog stays the truth: each search first
reads which calls its scope and filters allow, with their analysis version (catalog/search.py `calls`), loads the
calls this process has not seen at that version, and compares the query with the allowed calls' segments only. A
call re-analysed is read again (its old rows are dropped), and so is a call held without vectors; a deleted call is
no longer allowed, so never found.

Exact search: one matrix product over the account's vectors (float32, L2-normalised: the product is the cosine),
about 1.6 KB of memory per segment. benchmarks/search.py measures it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

Row = tuple[int, int, str, str | None, bytes]  # segment id, recording id, role, emotion, vector
Loader = Callable[[list[int]], list[Row]]

LOAD_BATCH = 500  # recordings per catalog read: a query's parameters stay few
LOAD_ROWS = 50_000


@dataclass(frozen=True)
class Candidates:
    """The segments a meaning search found, best first."""

    ids: np.ndarray  # segment ids
    scores: np.ndarray  # cosine similarities


class AccountVectors:
    """One account's segment vectors, as this process last loaded them; rows grow in place (by a quarter)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # the catalog's threads load and search at once
        self.size = 0
        self.dead = 0
        self.ids = np.zeros(0, np.int64)
        self.recordings = np.zeros(0, np.int64)
        self.roles = np.zeros(0, np.int16)
        self.emotions = np.zeros(0, np.int16)
        self.live = np.zeros(0, bool)
        self.matrix = np.zeros((0, 0), np.float32)
        self.loaded: dict[int, tuple[int, int, int]] = {}  # recording id -> (version, first row, end row)
        self.codes: dict[str | None, int] = {None: 0}  # roles and emotions as small integers

    def code(self, value: str | None) -> int:
        return self.codes.setdefault(value, len(self.codes))

    def _reserve(self, rows: int, dim: int) -> None:
        if self.matrix.shape[1] != dim and self.size == 0:
            self.matrix = np.zeros((0, dim), np.float32)
        need = self.size + rows
        if need <= len(self.ids):
            return
        capacity = max(need, len(self.ids) * 5 // 4, 1024)  # a quarter spare at most: the matrix is most of memory
        for name in ("ids", "recordings", "roles", "emotions", "live"):
            old = getattr(self, name)
            grown = np.zeros(capacity, old.dtype)
            grown[: self.size] = old[: self.size]
            setattr(self, name, grown)
        matrix = np.zeros((capacity, dim), np.float32)
        matrix[: self.size] = self.matrix[: self.size]
        self.matrix = matrix

    def _append(self, versions: dict[int, int], rows: list[Row]) -> None:
        for rid in versions:  # the rows of an older version go
            if rid in self.loaded:
                _, start, end = self.loaded.pop(rid)
                self.live[start:end] = False
                self.dead += end - start
        dim = self.matrix.shape[1] if self.size else len(rows[0][4]) // 4 if rows else 0
        rows = [row for row in rows if len(row[4]) == 4 * dim]  # another model's vectors: not comparable
        if rows:
            self._reserve(len(rows), dim)
            start, end = self.size, self.size + len(rows)
            self.ids[start:end] = [row[0] for row in rows]
            self.recordings[start:end] = [row[1] for row in rows]
            self.roles[start:end] = [self.code(row[2]) for row in rows]
            self.emotions[start:end] = [self.code(row[3]) for row in rows]
            self.live[start:end] = True
            for at in range(0, len(rows), LOAD_ROWS):  # a slice at a time: one copy of the bytes, not of them all
                chunk = rows[at : at + LOAD_ROWS]
                self.matrix[start + at : start + at + len(chunk)] = np.frombuffer(
                    b"".join(row[4] for row in chunk), np.float32).reshape(-1, dim)
            self.size = end
        at = self.size - len(rows)  # rows come ordered by recording: each recording's are one run
        runs, firsts, counts = np.unique(self.recordings[at : self.size], return_index=True, return_counts=True)
        spans = {int(rid): (at + int(first), at + int(first) + int(count))
                 for rid, first, count in zip(runs, firsts, counts, strict=True)}
        for rid, version in versions.items():
            if rid in spans:  # a call without vectors is read again next time: `callscope reindex` may write them
                self.loaded[rid] = (version, *spans[rid])
        if self.dead > self.size // 2:
            self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self.live[: self.size])
        moved = {int(old): new for new, old in enumerate(keep)}
        for name in ("ids", "recordings", "roles", "emotions", "live"):
            setattr(self, name, getattr(self, name)[keep].copy())
        self.matrix = self.matrix[keep].copy()
        self.size, self.dead = len(keep), 0
        self.loaded = {rid: (version, moved[start], moved[start] + end - start)
                       for rid, (version, start, end) in self.loaded.items()}

    def sync(self, calls: Iterable[tuple[int, int]], load: Loader) -> None:
        """Load the calls not held at their version (`load`: their rows, by recording)."""
        stale = {rid: version for rid, version in calls if self.loaded.get(rid, (None,))[0] != version}
        pending = sorted(stale)
        # read them all, then grow once: the first search of a process reads every call of the account
        self._append(stale, [row for at in range(0, len(pending), LOAD_BATCH)
                             for row in load(pending[at : at + LOAD_BATCH])])

    def search(self, vector: np.ndarray, calls: Iterable[int], role: str | None, emotion: str | None,
               min_similarity: float, excluded: set[int]) -> Candidates:
        """The live segments of `calls` (with the role and emotion asked for, none of `excluded`) at least
        `min_similarity` to `vector`, best first (ties: in the order they were indexed)."""
        if self.size == 0 or len(vector) != self.matrix.shape[1]:
            return Candidates(np.zeros(0, np.int64), np.zeros(0, np.float32))
        scores = self.matrix[: self.size] @ vector.astype(np.float32)
        found = np.flatnonzero((scores >= min_similarity) & self.live[: self.size])
        allowed = np.fromiter(calls, np.int64)
        allowed.sort()
        at = np.clip(np.searchsorted(allowed, self.recordings[found]), 0, max(len(allowed) - 1, 0))
        keep = allowed[at] == self.recordings[found] if len(allowed) else np.zeros(len(found), bool)
        for column, value in ((self.roles, role), (self.emotions, emotion)):
            if value is not None:
                keep &= column[found] == self.codes.get(value, -1)
        found = found[keep]
        if excluded:
            found = found[~np.isin(self.ids[found], np.fromiter(excluded, np.int64))]
        order = np.lexsort((self.ids[found], -scores[found]))
        return Candidates(self.ids[found][order], scores[found][order])


class VectorCache:
    """This process's :class:`AccountVectors`, by account."""

    def __init__(self) -> None:
        self._accounts: dict[str, AccountVectors] = {}
        self._lock = threading.Lock()

    def of(self, account: str) -> AccountVectors:
        with self._lock:
            return self._accounts.setdefault(account, AccountVectors())
