"""Models kept loaded only while they are used: the site models that projects name (transcription.model, one of
CALLSCOPE_WHISPER_MODELS), which would otherwise hold their memory (a GPU's, for a large Whisper) for good after one
project's calls. ``Idle`` times one model's use; ``IdleModels`` holds such models in this process (the inline
Pipeline), each loaded on first use and dropped once unused for CALLSCOPE_SITE_MODEL_IDLE_SECONDS. On Ray a site
model's actor times itself with ``Idle`` and exits (analysis/runtime/actors.py)."""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import structlog

log = structlog.get_logger()


def _return_memory() -> None:
    """Hand the freed heap back to the system: glibc keeps a dropped model's pages in its arenas, and the process's
    memory stays at its peak (Whisper base: 365 MiB resident after six loads and drops, 168 MiB once trimmed:
    benchmarks/RESULTS.md). Elsewhere than glibc, nothing to do."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


class Idle:
    """How long a model has gone unused, and how many use it now. Not locked: its holder serialises the calls."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self._clock = seconds, clock
        self.users = 0
        self._since = clock()  # made, and not used yet

    def hold(self) -> None:
        self.users += 1

    def release(self) -> None:
        self.users -= 1
        self._since = self._clock()

    def left(self) -> float | None:
        """Seconds until the model has gone unused for `seconds` (0: it has, it may go); None while it is used."""
        if self.users:
            return None
        return max(0.0, self._since + self.seconds - self._clock())


class IdleModels:
    """Models by name, shared by threads: each loaded on first use, and dropped once unused for `seconds` (nothing
    else holds it, so its memory is freed); the next use loads it again. Never dropped while one uses it."""

    def __init__(self, load: Callable[[str], Any], seconds: float, clock: Callable[[], float] = time.monotonic):
        self._load, self._seconds, self._clock = load, seconds, clock
        self._models: dict[str, tuple[Any, Idle]] = {}
        self._timers: dict[str, threading.Timer] = {}
        self._lock = threading.Lock()

    def __contains__(self, name: str) -> bool:
        """Whether the model `name` is loaded now."""
        return name in self._models

    @contextmanager
    def use(self, name: str) -> Iterator[Any]:
        """The model `name` (loaded now where it is not: its load's errors are raised here), held while the block
        runs."""
        with self._lock:  # one load of a model, however many threads ask for it at once
            if name not in self._models:
                self._models[name] = (self._load(name), Idle(self._seconds, self._clock))
                log.info("site_model_loaded", model=name)
            model, idle = self._models[name]
            idle.hold()
        try:
            yield model
        finally:
            with self._lock:
                idle.release()
                self._drop_after(name, self._seconds)

    def drop_idle(self) -> None:
        """Drop each model unused for `seconds`; the others are checked again when they may be (a timer calls this
        `seconds` after a model's last use)."""
        dropped = []
        with self._lock:
            for name in list(self._models):
                left = self._models[name][1].left()
                if left == 0:
                    del self._models[name]
                    self._timers.pop(name).cancel()
                    dropped.append(name)
                elif left is not None:  # used meanwhile; in use, its release sets its timer
                    self._drop_after(name, left)
        for name in dropped:
            log.info("site_model_unloaded", model=name, idle_seconds=self._seconds)
        if dropped:
            _return_memory()

    def _drop_after(self, name: str, seconds: float) -> None:
        """One timer per model, that many seconds from now (its earlier one cancelled); the caller holds the lock."""
        if (earlier := self._timers.get(name)) is not None:
            earlier.cancel()
        timer = self._timers[name] = threading.Timer(seconds, self.drop_idle)
        timer.daemon = True  # a process that ends does not wait for it
        timer.start()
