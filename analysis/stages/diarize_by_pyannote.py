"""pyannote.audio's own speaker-diarization pipeline (`CALLSCOPE_DIARIZATION_MODEL=pyannote`), for GPU clusters
that have its weights on a volume.

The embedded diarization (CAM++ and segmentation-3.0 as ONNX, diarize_by_voice.py) needs neither torch nor gated
weights.
Where a deployment may install pyannote.audio with its torch and keep a pipeline (e.g. speaker-diarization-3.1 or
community-1) on a volume, `CALLSCOPE_PYANNOTE_PIPELINE` names it: a directory with its config.yaml and the
checkpoints that config names by local path, or the config.yaml itself. It is loaded from there only; nothing is
fetched from a hub. Its turns take the place of the CAM++ clusters behind the same stage interface
(`diarize_by_voice.diarize_turns`): each word takes the speaker of the turn nearest to it and each speaker's segments
follow that speaker's turns, overlapped speech included.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from callscope.analysis.result import ModelUsed
from callscope.analysis.types import SAMPLE_RATE


class PyannoteUnavailable(RuntimeError):
    """The pyannote pipeline is configured but cannot be loaded; the message says what to install or set."""


@dataclass(frozen=True)
class Turn:
    """A span of the call (ms) where one speaker talks; two speakers' turns overlap where both do."""

    start_ms: int
    end_ms: int
    speaker: str


def turns_of(annotation: Any) -> list[Turn]:
    """The turns of a pyannote.core Annotation (or of a pipeline output that holds one, pyannote.audio 4's
    DiarizeOutput), in time order."""
    annotation = getattr(annotation, "speaker_diarization", annotation)
    turns = [Turn(round(segment.start * 1000), round(segment.end * 1000), str(label))
             for segment, _, label in annotation.itertracks(yield_label=True)]
    return sorted((t for t in turns if t.end_ms > t.start_ms), key=lambda t: (t.start_ms, t.end_ms))


def pipeline_config(location: str | Path) -> Path:
    """The config.yaml of a local pipeline: the file itself, or the one in a directory."""
    path = Path(location).expanduser()
    config = path / "config.yaml" if path.is_dir() else path
    if not config.is_file():
        raise PyannoteUnavailable(f"CALLSCOPE_PYANNOTE_PIPELINE: no pipeline config at {config} (a directory with "
                                  "config.yaml, or the config.yaml itself)")
    return config


class PyannotePipeline:
    """A loaded pyannote.audio pipeline: `turns(samples)` of one 16 kHz channel."""

    def __init__(self, pipeline: Any, info: ModelUsed, torch: Any) -> None:
        self._pipeline, self.info, self._torch = pipeline, info, torch

    def turns(self, samples: np.ndarray) -> list[Turn]:
        waveform = self._torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32))[None]
        return turns_of(self._pipeline({"waveform": waveform, "sample_rate": SAMPLE_RATE}))


def load_pyannote_pipeline(location: str | None, device: str = "auto") -> PyannotePipeline:
    """The pipeline at `location` (CALLSCOPE_PYANNOTE_PIPELINE) on `device` (auto: CUDA when torch sees one)."""
    if not location:
        raise PyannoteUnavailable("CALLSCOPE_DIARIZATION_MODEL=pyannote needs CALLSCOPE_PYANNOTE_PIPELINE: the local "
                                  "directory of a pyannote.audio speaker-diarization pipeline")
    config = pipeline_config(location)
    try:
        import pyannote.audio  # optional and heavy (torch): a GPU cluster's install; the embedded diarization
        import torch  # needs neither
    except ImportError as exc:
        raise PyannoteUnavailable(f"CALLSCOPE_DIARIZATION_MODEL=pyannote needs pyannote.audio and torch installed "
                                  f"({exc}); the default, campplus, needs neither") from exc
    pipeline = pyannote.audio.Pipeline.from_pretrained(config)
    if pipeline is None:  # pyannote.audio answers None, with a warning, where a checkpoint cannot be loaded
        raise PyannoteUnavailable(f"pyannote.audio could not load the pipeline of {config}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    pipeline.to(torch.device(device))
    info = ModelUsed(stage="diarization", name=f"pyannote.audio pipeline ({config.parent.name})",
                     version=f"pyannote.audio {pyannote.audio.__version__}; {device}")
    return PyannotePipeline(pipeline, info, torch)
