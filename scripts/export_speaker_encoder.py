"""Export resemblyzer's voice encoder to ONNX and check it against resemblyzer on real speech.

Run once, by a maintainer, in a throw-away environment that has torch (the CPU build is enough), resemblyzer,
onnx, onnxruntime and callscope (`pip install --no-deps -e .`); the product needs none of torch/resemblyzer:

    python -m venv /tmp/exp && /tmp/exp/bin/pip install torch==2.13.0 && \\
        /tmp/exp/bin/pip install resemblyzer==0.1.4 onnx onnxruntime && /tmp/exp/bin/pip install --no-deps -e .
    /tmp/exp/bin/python scripts/export_speaker_encoder.py [--out analysis/models/voice_encoder.onnx] WAV...

It writes the ONNX file (input `mels` (batch, 160, 40) float32, output `embeddings` (batch, 256), L2-normalised,
the same computation as `VoiceEncoder.forward`), then embeds each WAV (any speech; 16 kHz mono after decoding)
twice: with resemblyzer itself (librosa mel + torch) and with callscope's runtime (numpy mel + onnxruntime), and
prints the largest absolute difference of the mel frames, the partial embeddings and the utterance embeddings,
and the file's sha256 for `speaker_encoder.EMBEDDED_SHA256`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from resemblyzer import VoiceEncoder, audio
from resemblyzer.hparams import partials_n_frames

from callscope.analysis.models import speaker_encoder as runtime
from callscope.analysis.models.files import file_sha256
from callscope.analysis.stages.decode import decode


class _Forward(torch.nn.Module):
    """VoiceEncoder.forward without the device bookkeeping: mels -> normalised embeddings."""

    def __init__(self, encoder: VoiceEncoder) -> None:
        super().__init__()
        self.lstm, self.linear = encoder.lstm, encoder.linear

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        _, (hidden, _) = self.lstm(mels)
        raw = torch.relu(self.linear(hidden[-1]))
        return raw / torch.norm(raw, dim=1, keepdim=True)


def export(encoder: VoiceEncoder, out: Path) -> None:
    example = torch.zeros(2, partials_n_frames, runtime.N_MELS)
    torch.onnx.export(
        _Forward(encoder).eval(), (example,), str(out), input_names=["mels"], output_names=["embeddings"],
        dynamic_axes={"mels": {0: "batch"}, "embeddings": {0: "batch"}}, opset_version=17, dynamo=False,
    )


def compare(encoder: VoiceEncoder, onnx_path: Path, wav_path: Path) -> dict[str, float]:
    wav = runtime.normalize_volume(decode(wav_path).channels[0])
    reference_wav = audio.normalize_volume(wav, audio.audio_norm_target_dBFS, increase_only=True)
    ours = runtime.SpeakerEncoder(onnx_path, threads=2)
    mel_theirs, mel_ours = audio.wav_to_mel_spectrogram(reference_wav), runtime.mel_spectrogram(wav)
    embed_theirs, partials_theirs, _ = encoder.embed_utterance(reference_wav, return_partials=True)
    starts = runtime.partial_slices(len(wav))
    partials_ours = ours.embed_partials(wav, starts)
    return {
        "seconds": len(wav) / runtime.SAMPLE_RATE,
        "mel_rel": float(np.abs(mel_theirs - mel_ours).max() / np.abs(mel_theirs).max()),
        "partials": float(np.abs(partials_theirs - partials_ours).max()),
        "embedding": float(np.abs(embed_theirs - ours.embed_utterance(wav)).max()),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=runtime.EMBEDDED_MODEL)
    parser.add_argument("wavs", type=Path, nargs="+", help="speech files to compare resemblyzer and ONNX on")
    args = parser.parse_args(argv)
    encoder = VoiceEncoder("cpu", verbose=False)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    export(encoder, args.out)
    worst = 0.0
    for wav in args.wavs:
        diff = compare(encoder, args.out, wav)
        worst = max(worst, diff["embedding"], diff["partials"])
        print(f"{wav.name}: {diff['seconds']:.1f} s; max |mel diff| / max mel {diff['mel_rel']:.2e}; "
              f"max |diff| partial embeddings {diff['partials']:.2e}, utterance embedding {diff['embedding']:.2e}")
    print(f"max abs difference of embeddings: {worst:.2e}")
    print(f"sha256 {file_sha256(args.out)}  {args.out}")
    return 0 if worst < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
