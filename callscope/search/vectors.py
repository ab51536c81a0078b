"""The segment vectors meaning search compares, held in this process's memory per account: reading every vector from
the catalog for each search would cost far more than comparing them. The catalog stays the truth: each search first
reads which calls its scope and filters allow, with their analysis version (catalog/search.py `calls`), loads the
calls this process has not seen at that version, and compares the query with the allowed calls' segments only. A
call re-analysed is read again (its old rows are dropped), and so is a call held without vectors; a deleted call is
no longer allowed, so never found.

Stored and held as 8-bit codes (:func:`encode`: each component of the unit vector, from -1 to 1, in 255 equal steps;
384 bytes a segment of all-MiniLM-L6-v2, a quarter of float32), compared exactly (every allowed segment, no
approximate index) by faiss's scalar-quantizer scan (QT_8bit_uniform over [-1, 1]: the same codes), which reads them
as they are and keeps the NEAREST best: the cosine errs by about 0.002, and the scan takes a quarter of a float32
matrix product's time (benchmarks/RESULTS.md). Counting every segment above the floor would need faiss's range
search, which is no faster than the float32 product, so a meaning search finds the NEAREST best, as keyword search
ranks its newest 1000."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import faiss
import numpy as np

STEP = 2 / 255  # a unit vector's components lie in [-1, 1]: a code u stands for -1 + (u + 0.5) * STEP
NEAREST = 1000  # the most segments a meaning search finds: its pages end there


def encode(vectors: np.ndarray) -> bytes:
    """The codes of L2-normalised float32 rows, a byte a component, row after row."""
    return np.clip(np.floor((vectors + 1) / STEP), 0, 255).astype(np.uint8).tobytes()


def decode(codes: bytes, dim: int) -> np.ndarray:
    """The float32 rows of :func:`encode`'s codes (each within half a STEP, 0.004, of the vector's component)."""
    return np.frombuffer(codes, np.uint8).reshape(-1, dim).astype(np.float32) * np.float32(STEP) + np.float32(
        STEP / 2 - 1)


@dataclass(frozen=True)
class CallVectors:
    """One call's segments as meaning search holds them: the codes of their vectors, one row per segment id."""

    recording_id: int
    segment_ids: list[int]  # ascending: the order of the rows of `codes`
    roles: list[str]
    emotions: list[str | None]
    codes: bytes  # encode()d, len(segment_ids) rows of the same length

    @property
    def dim(self) -> int:
        return len(self.codes) // len(self.segment_ids)


Loader = Callable[[list[int]], list[CallVectors]]

LOAD_BATCH = 500  # recordings per catalog read: a query's parameters stay few


@dataclass(frozen=True)
class Candidates:
    """The segments a meaning search found, best first."""

    ids: np.ndarray  # segment ids
    scores: np.ndarray  # cosine similarities


def _index(dim: int, codes: np.ndarray) -> faiss.IndexScalarQuantizer:
    """An index of :func:`encode`'s codes: faiss's uniform 8-bit quantizer over [-1, 1] reads them as they are, so
    that its product with the query is the cosine."""
    index = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit_uniform, faiss.METRIC_INNER_PRODUCT)
    index.train(np.array([[-1.0] * dim, [1.0] * dim], np.float32))  # the range, not the data
    if len(codes):
        index.add_sa_codes(codes)
    return index


class AccountVectors:
    """One account's segment vectors, as this process last loaded them: the codes in a faiss index, each row's
    segment id, call, role and emotion beside them in numpy arrays (rows grow in place, by a quarter)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # the catalog's threads load and search at once
        self.size = 0
        self.dead = 0
        self.dim = 0
        self.index = _index(1, np.zeros((0, 1), np.uint8))
        self.ids = np.zeros(0, np.int64)
        self.calls = np.zeros(0, np.int32)  # the row's call, as its place in `recordings`
        self.roles = np.zeros(0, np.int16)
        self.emotions = np.zeros(0, np.int16)
        self.live = np.zeros(0, bool)
        self.recordings: list[int] = []  # the recording id of each call place
        self.places: dict[int, int] = {}  # recording id -> its call place
        self.loaded: dict[int, tuple[int, int, int]] = {}  # recording id -> (version, first row, end row)
        self.codes: dict[str | None, int] = {None: 0}  # roles and emotions as small integers

    @property
    def nbytes(self) -> int:
        """The memory the rows take: codes and the arrays beside them."""
        return self.size * self.dim + sum(a.nbytes for a in (self.ids, self.calls, self.roles, self.emotions,
                                                                self.live))

    def code(self, value: str | None) -> int:
        return self.codes.setdefault(value, len(self.codes))

    def _place(self, rid: int) -> int:
        if rid not in self.places:
            self.places[rid] = len(self.recordings)
            self.recordings.append(rid)
        return self.places[rid]

    def _reserve(self, rows: int) -> None:
        need = self.size + rows
        if need <= len(self.ids):
            return
        capacity = max(need, len(self.ids) * 5 // 4, 1024)
        for name in ("ids", "calls", "roles", "emotions", "live"):
            old = getattr(self, name)
            grown = np.zeros(capacity, old.dtype)
            grown[: self.size] = old[: self.size]
            setattr(self, name, grown)

    def _append(self, versions: dict[int, int], calls: list[CallVectors]) -> None:
        for rid in versions:  # the rows of an older version go
            if rid in self.loaded:
                _, start, end = self.loaded.pop(rid)
                self.live[start:end] = False
                self.dead += end - start
        if not self.dim and calls:
            self.dim = calls[0].dim
            self.index = _index(self.dim, np.zeros((0, self.dim), np.uint8))
        calls = [c for c in calls if c.dim == self.dim]  # another model's vectors: not comparable
        rows = sum(len(c.segment_ids) for c in calls)
        if rows:
            self._reserve(rows)
            self.index.add_sa_codes(np.frombuffer(b"".join(c.codes for c in calls), np.uint8).reshape(rows, self.dim))
        at = self.size
        for c in calls:
            end = at + len(c.segment_ids)
            self.ids[at:end] = c.segment_ids
            self.calls[at:end] = self._place(c.recording_id)
            self.roles[at:end] = [self.code(role) for role in c.roles]
            self.emotions[at:end] = [self.code(emotion) for emotion in c.emotions]
            self.live[at:end] = True
            # held at its version; a call without vectors is not, and is read again (`callscope reindex` may write them)
            self.loaded[c.recording_id] = (versions[c.recording_id], at, end)
            at = end
        self.size = at
        if self.dead > self.size // 2:
            self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self.live[: self.size])
        self.index = _index(self.dim, faiss.vector_to_array(self.index.codes).reshape(-1, self.dim)[keep])
        moved = np.zeros(self.size + 1, np.int64)
        moved[keep] = np.arange(len(keep))
        for name in ("ids", "calls", "roles", "emotions", "live"):
            setattr(self, name, getattr(self, name)[keep].copy())
        self.loaded = {rid: (version, int(moved[start]), int(moved[start]) + end - start)
                       for rid, (version, start, end) in self.loaded.items()}
        self.size, self.dead = len(keep), 0

    def sync(self, calls: Iterable[tuple[int, int]], load: Loader) -> None:
        """Load the calls not held at their version (`load`: their vectors, by recording)."""
        stale = {rid: version for rid, version in calls if self.loaded.get(rid, (None,))[0] != version}
        pending = sorted(stale)
        # read them all, then grow once: the first search of a process reads every call of the account
        self._append(stale, [call for at in range(0, len(pending), LOAD_BATCH)
                             for call in load(pending[at : at + LOAD_BATCH])])

    def search(self, vector: np.ndarray, calls: Iterable[int], role: str | None, emotion: str | None,
               min_similarity: float, excluded: set[int]) -> Candidates:
        """The NEAREST live segments of `calls` (with the role and emotion asked for, none of `excluded`) at least
        `min_similarity` to `vector`, best first (ties: in the order they were indexed)."""
        if self.size == 0 or len(vector) != self.dim:
            return Candidates(np.zeros(0, np.int64), np.zeros(0, np.float32))
        allowed = np.zeros(len(self.recordings) + 1, bool)
        allowed[[self.places[rid] for rid in calls if rid in self.places]] = True
        keep = allowed[self.calls[: self.size]] & self.live[: self.size]
        for column, value in ((self.roles, role), (self.emotions, emotion)):
            if value is not None:
                keep &= column[: self.size] == self.codes.get(value, -1)
        if excluded:
            keep &= ~np.isin(self.ids[: self.size], np.fromiter(excluded, np.int64))
        nearest = min(NEAREST, int(np.count_nonzero(keep)))
        if nearest == 0:
            return Candidates(np.zeros(0, np.int64), np.zeros(0, np.float32))
        bitmap = np.packbits(keep, bitorder="little")  # held here: the selector and the parameters only point at them
        selector = faiss.IDSelectorBitmap(self.size, faiss.swig_ptr(bitmap))
        params = faiss.SearchParameters()
        params.sel = selector
        # one thread (OpenMP's setting is the calling thread's): the server's threads each search, and OpenMP's
        # spinning team on a busy machine took seconds for what one thread does in a tenth of one
        faiss.omp_set_num_threads(1)
        products, rows = self.index.search(vector.astype(np.float32)[None, :], nearest, params=params)
        found = (rows[0] >= 0) & (products[0] >= np.float32(min_similarity))
        products, rows = products[0][found], rows[0][found]
        order = np.lexsort((self.ids[rows], -products))
        return Candidates(self.ids[rows][order], products[order])


class VectorCache:
    """This process's :class:`AccountVectors`, by account."""

    def __init__(self) -> None:
        self._accounts: dict[str, AccountVectors] = {}
        self._lock = threading.Lock()

    def of(self, account: str) -> AccountVectors:
        with self._lock:
            return self._accounts.setdefault(account, AccountVectors())
