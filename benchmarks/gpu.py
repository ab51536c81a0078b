r"""The GPU run: seconds per stage and real-time factor of the analysis pipeline on CUDA, beside the CPU.

What it measures
----------------
First what the machine offers, as found: CTranslate2's CUDA devices, onnxruntime's execution providers, whether
the installed llama.cpp can offload to a GPU, torch's CUDA device (where torch is installed) and NVML's memory
readings (nvidia-ml-py). ``--devices cuda`` on a machine without a CUDA device says so and exits non-zero.

The calls: the English real-speech clips joined in turn to each ``--minutes`` length, mono
(benchmarks/faithfulness.py ``real_call``: real voices, though not one conversation); where the real-speech set
is absent (scripts/fetch_real_speech.py), the espeak-ng dialogue of benchmarks/speed.py instead, which the output
says.

Per device of ``--devices`` (default: cuda where there is one, then cpu beside it unless ``--skip-cpu``) the
models are loaded for that device, a 30 s call of the same speech is analysed to warm them up, then each call
once (faithfulness.timed: its project's goals, categories and fields; the language model's KV cache emptied
first). A stage's seconds are the wall time between the pipeline's progress reports, so the stages add up to the
whole. On CUDA:

* transcription: CTranslate2 on CUDA (``--compute-type`` float16, batched by ``--batch-size``), checked by
  transcribing the warm-up call (CUDA's libraries load at the first decode, not with the model); where it cannot
  run there (a CTranslate2 wheel built for CUDA 12 beside CUDA 13 libraries), Whisper through transformers on
  torch's CUDA (``--torch-whisper``, a transformers Whisper folder); else the CPU. Beside a GPU transcription
  the pipeline finds a mono call's speaker turns at the same time, so their seconds are in asr then;
* the speaker models: the embedded ONNX models are created on onnxruntime's CPU provider (diarization_model
  pyannote runs on torch's CUDA);
* the language model: llama.cpp with every layer offloaded where its build can, a served model where
  CALLSCOPE_LLM_ENDPOINT is set, else the CPU;
* decode, VAD (Silero in faster-whisper, CPU provider), the text embedder (numpy) and the rule stages have no
  GPU path.

The table's last column says where each stage ran in the CUDA run, and why not on the GPU where it could not:
nothing falls back silently. xRT is the real-time factor as audio seconds over wall seconds (higher is faster:
10 is ten times real time). Peak RSS is this process's resident memory, GPU the device's used memory (NVML),
both sampled every 0.1 s during the call's run.

``--save FILE`` writes the figures as JSON; ``--baseline FILE`` prints a saved run's figures beside ("saved >
now"), and a device that only the saved run has (the CPU figures of another machine with ``--skip-cpu`` here) as
columns of its own.

How to run
----------
Here, on the CPU (a check of the script, and CPU figures to set beside a GPU run's)::

    .venv/bin/python -P benchmarks/gpu.py --devices cpu --minutes 1
    .venv/bin/python -P benchmarks/gpu.py --devices cpu --minutes 5 60 --save /tmp/gpu-cpu.json

On a lent GPU machine. Its image has Python 3.12, torch (CUDA 13), transformers, onnxruntime (no CUDA provider)
and no registry; a call takes 64 MiB, 42 MiB of it this tree, so the rest goes over in 20 MiB parts. Here, once:
the wheels the image lacks, Whisper base and the three English clips in one archive, one part per folder::

    echo /.gpu/ >>.git/info/exclude; mkdir -p /tmp/gpu/wheels /tmp/gpu/whisper-base /tmp/gpu/real-speech/clips
    .venv/bin/python -P -m pip freeze | grep -iE '^(annotated-types|av|ctranslate2|faster-whisper|jsonpointer|'\
    'jsonschema|jsonschema-specifications|phonenumbers|pydantic|pydantic[-_]core|pydantic-settings|python-dotenv|'\
    'referencing|rfc3339-validator|rpds-py|sqlalchemy|structlog|typing-inspection)==' >/tmp/gpu-requirements.txt
    .venv/bin/python -P -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -r /tmp/gpu-requirements.txt -d /tmp/gpu/wheels                                       # 87 MB
    cp ~/.cache/callscope/models/whisper-base/{config.json,model.bin,tokenizer.json,vocabulary.txt} \
        /tmp/gpu/whisper-base/
    cp ~/.cache/callscope/real-speech/clips/en-{call,read-a,read-b}-mono.wav /tmp/gpu/real-speech/clips/
    tar -cf /tmp/gpu.tar -C /tmp gpu && .venv/bin/python -P scripts/model_parts.py split /tmp/gpu.tar /tmp/gpu-parts
    i=0; for p in /tmp/gpu-parts/gpu.tar.part[0-9]*; do i=$((i+1)); mkdir -p .gpu/$i; cp $p .gpu/$i/; done
    cp /tmp/gpu-parts/gpu.tar.parts.json .gpu/1/

There, one device call per folder, each carrying it (``carry: [".gpu/K"]``), then the join and the run::

    python3 -m pip install -q --no-deps --no-build-isolation . && mkdir -p /root/parts && cp .gpu/1/* /root/parts/
    cp .gpu/K/* /root/parts/                                                     # K = 2 .. the last folder
    python3 -P scripts/model_parts.py join /root/parts /root/gpu.tar && tar -xf /root/gpu.tar -C /root \
        && python3 -m pip install -q --no-index --no-deps /root/gpu/wheels/*.whl
    export CALLSCOPE_REAL_SPEECH_DIR=/root/gpu/real-speech; w="--whisper-model /root/gpu/whisper-base --threads 16"
    python3 -P benchmarks/gpu.py $w --minutes 5 60 --skip-cpu --save /root/cuda.json && cp /root/cuda.json $OUT/
    python3 -P benchmarks/gpu.py $w --minutes 5 60 --devices cpu --baseline /root/cuda.json --save $OUT/cpu.json

The CPU side is a command of its own (a command runs 10 minutes at most) and prints the CUDA run's figures
beside its own; where device time runs short, the CPU figures saved here are the CUDA run's ``--baseline``. That
CTranslate2 wheel loads CUDA 12's cuBLAS (libcublas.so.12), which a CUDA 13 image may lack: the table then says
so, and a transformers Whisper folder carried the same way (``--torch-whisper``; this project ships none) runs
the transcription on torch's CUDA instead. The language model on the GPU needs llama-cpp-python built there
(its sdist, ``CMAKE_ARGS=-DGGML_CUDA=on``, scripts/llama_wheel.sh) and a GGUF carried in parts (the embedded one
is 1.1 GB: 55 calls); without them its stages say "not run".

Live calls on the GPU: ``benchmarks/live_replay.py --gpu`` replays calls through ``callscope serve`` with Whisper
on CUDA (float16, live and batch), beside this machine's CPU figures in benchmarks/RESULTS.md. The server needs
every runtime dependency, so carry the wheels of the whole ``pip freeze`` of the venv (less llama-cpp-python,
which it does not load with the language model off) instead of the list above, and the real-speech cache's
``downloads/debian/asterisk-core-sounds-en*`` folders (the prompts the calls are made of), then::

    python3 -P benchmarks/live_replay.py --gpu --whisper-model /root/gpu/whisper-base --paths generic \
        --concurrent 1 4 8 16 --minutes 2 --save $OUT/live-cuda.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import tempfile
import threading
import time
import wave
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks.*, scripts.*, tests.analysis.*
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # transformers (torch Whisper) loads from its folder, never a hub

from benchmarks.faithfulness import REAL_CLIPS, real_call, synthetic_call, timed
from callscope.analysis.models.language_model import language_model_from_settings
from callscope.analysis.result import ModelUsed, TranscriptSegment, TranscriptWord
from callscope.analysis.runtime.pipeline import Pipeline, load_model
from callscope.analysis.stages.asr import transcriber_from_settings
from callscope.analysis.stages.decode import decode
from callscope.analysis.types import Audio, SpeechRegion
from callscope.config import Settings
from callscope.errors import one_line
from scripts.fetch_real_speech import cache_dir
from tests.analysis import speech

WARM_UP_MINUTES = 0.5
# Stages with no GPU path whatever the device, and what runs them.
CPU_ONLY = {"decode": "PyAV", "vad": "Silero VAD in faster-whisper, onnxruntime's CPU provider",
            "emotions": "prosody and the numpy text embedder", "pauses": "rules", "characteristics": "rules",
            "categories": "the numpy text embedder"}


@dataclass
class Found:
    """What the machine offers, as its libraries report it."""

    ctranslate2_cuda: int
    onnx_providers: list[str]
    llama_offload: bool | None  # None: llama-cpp-python is absent, or too old to say
    torch: str | None  # torch's version; None: not installed
    torch_cuda: str | None  # the CUDA device torch sees; None: no torch, or no device
    nvml: bool  # NVML answers: GPU memory is readable

    @property
    def cuda(self) -> bool:
        return self.ctranslate2_cuda > 0 or self.torch_cuda is not None


def detect() -> Found:
    import ctranslate2
    import onnxruntime

    try:
        import llama_cpp

        supports = getattr(llama_cpp, "llama_supports_gpu_offload", None)
        offload = bool(supports()) if supports else None
    except ImportError:
        offload = None
    try:
        import torch

        version, torch_cuda = torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        version = torch_cuda = None
    return Found(ctranslate2.get_cuda_device_count(), onnxruntime.get_available_providers(), offload, version,
                 torch_cuda, _nvml() is not None)


def print_found(found: Found) -> None:
    import ctranslate2
    import onnxruntime

    cuda_provider = "CUDAExecutionProvider" in found.onnx_providers
    print("found:")
    print(f"  CTranslate2 {ctranslate2.__version__}: {found.ctranslate2_cuda} CUDA device(s)")
    print(f"  onnxruntime {onnxruntime.__version__}: {', '.join(found.onnx_providers)} "
          f"({'with' if cuda_provider else 'no'} CUDAExecutionProvider)")
    print("  llama-cpp-python: " + {None: "absent, or no llama_supports_gpu_offload", True: "GPU offload: yes",
                                    False: "GPU offload: no (a CPU build)"}[found.llama_offload])
    print(f"  torch {found.torch}: {found.torch_cuda or 'no CUDA device'}" if found.torch else "  torch: not installed")
    print(f"  GPU memory (NVML): {'readable' if found.nvml else 'not readable (no nvidia-ml-py, or no driver)'}")


def _nvml() -> Any:
    """NVML's handle of GPU 0, or None where nvidia-ml-py or the driver is absent."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:  # noqa: BLE001 - ImportError, or any NVMLError: no readable GPU
        return None


class Peaks:
    """This process's peak resident memory and the GPU's peak used memory (MiB) while the block runs, sampled every
    0.1 s: ru_maxrss cannot be reset between runs, and the GPU's memory belongs to CTranslate2 and llama.cpp as
    much as to torch."""

    def __init__(self) -> None:
        self.rss_mib = 0.0
        self.gpu_mib: float | None = None
        self._gpu = _nvml()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while True:
            with open("/proc/self/statm") as statm:
                self.rss_mib = max(self.rss_mib, int(statm.read().split()[1]) * page / 2**20)
            if self._gpu is not None:
                import pynvml

                used = pynvml.nvmlDeviceGetMemoryInfo(self._gpu).used / 2**20
                self.gpu_mib = max(self.gpu_mib or 0.0, used)
            if self._stop.wait(0.1):
                return

    def __enter__(self) -> Peaks:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


class TorchWhisper:
    """Whisper through transformers on torch's CUDA, float16: the CUDA run's transcriber where CTranslate2 cannot
    run on the GPU. What the pipeline asks of a transcriber (transcribe, info, device, multilingual, name); one
    word-timed segment per channel, which the pipeline cuts at its pauses (diarize_by_channel.split_at_gaps)."""

    device = "cuda"

    def __init__(self, path: Path, batch_size: int) -> None:
        import torch
        import transformers

        self._asr = transformers.pipeline("automatic-speech-recognition", model=str(path), device="cuda",
                                          dtype=torch.float16, chunk_length_s=30, batch_size=max(batch_size, 1))
        self.multilingual = bool(getattr(self._asr.model.generation_config, "is_multilingual", True))
        self.name = path.name
        self.info = ModelUsed(stage="asr", name=f"whisper {path.name} ({path}, transformers)",
                              version=f"transformers {transformers.__version__}, torch {torch.__version__}, float16")

    def transcribe(self, audio: Audio, channel: int, language: str | None, hints: str | None,
                   regions: Sequence[SpeechRegion] = ()) -> list[TranscriptSegment]:
        """One channel's words (`hints` and `regions` are not used: the run's project has no hints, and no missed
        speech is decoded again)."""
        options = {"task": "transcribe"} | ({"language": language} if language and self.multilingual else {})
        out = self._asr({"raw": np.asarray(audio.channels[channel], dtype=np.float32),
                         "sampling_rate": audio.sample_rate}, return_timestamps="word", generate_kwargs=options)
        words = []
        for chunk in out["chunks"]:
            start, end = chunk["timestamp"]
            if chunk["text"].strip():  # transformers gives no word confidences: 1.0 stands in (no stage reads them)
                words.append(TranscriptWord(start_ms=round(start * 1000), end_ms=round((end or start) * 1000),
                                            text=chunk["text"].strip(), probability=1.0))
        if not words:
            return []
        return [TranscriptSegment(id=0, channel=channel, speaker=f"channel-{channel}", start_ms=words[0].start_ms,
                                  end_ms=words[-1].end_ms, text=" ".join(w.text for w in words), words=words)]


def make_calls(folder: Path, minutes: list[float]) -> tuple[str, Path, dict[str, tuple[Path, float]]]:
    """What the calls are made of, the warm-up call, and each length's call with its seconds of audio."""
    if all((cache_dir() / "clips" / f"{name}.wav").is_file() for name in REAL_CLIPS):
        source, build = f"real speech: {', '.join(REAL_CLIPS)} joined in turn", real_call
    elif speech.ESPEAK is not None:
        source = "SYNTHETIC espeak-ng speech: the real-speech set is absent (run scripts/fetch_real_speech.py)"
        build = synthetic_call
    else:
        sys.exit(f"no speech to analyse: the real-speech set is absent (scripts/fetch_real_speech.py) and "
                 f"{speech.SKIP_REASON}")
    calls = {}
    for m in minutes:
        path = build(folder, m)
        with wave.open(str(path)) as wav:  # the header: no need to decode an hour to know its length
            calls[f"{m:g}"] = (path, wav.getnframes() / wav.getframerate())
    return source, build(folder, WARM_UP_MINUTES), calls


def cuda_transcriber(settings: Settings, found: Found, probe: Audio, torch_whisper: Path | None) -> tuple[Any, str]:
    """The CUDA run's transcriber and where it runs: CTranslate2 on CUDA, else Whisper in transformers on torch,
    else CTranslate2 on the CPU. Each transcribes the probe first (CUDA's libraries load at the first decode, not
    with the model), and the note says why each one passed over was."""
    passed, attempts = [], []
    if found.ctranslate2_cuda:
        attempts.append(("CTranslate2 on CUDA", lambda: transcriber_from_settings(settings),
                         f"cuda: CTranslate2, {settings.whisper_compute_type}, batch {settings.whisper_batch_size}"))
    else:
        passed.append("CTranslate2 sees no CUDA device")
    if torch_whisper is None:
        passed.append("no --torch-whisper model to fall back to")
    elif not found.torch_cuda:
        passed.append("torch sees no CUDA device")
    else:
        attempts.append(("Whisper in transformers", lambda: TorchWhisper(torch_whisper, settings.whisper_batch_size),
                         "cuda: Whisper in transformers on torch, float16"))
    for what, make, where in attempts:
        try:
            model = make()
            model.transcribe(probe, 0, "en", None)
            return model, where + (f" ({'; '.join(passed)})" if passed else "")
        except Exception as exc:  # noqa: BLE001 - no cuBLAS or cuDNN, an unsupported compute type: not on this GPU
            passed.append(f"{what} failed: {one_line(exc)}")
    cpu = settings.model_copy(update={"whisper_device": "cpu", "whisper_compute_type": "int8", "whisper_batch_size": 0})
    return transcriber_from_settings(cpu), "cpu: " + "; ".join(passed)


def language_model(settings: Settings, found: Found, on_cuda: bool) -> tuple[Any, str]:
    """The language model for a run and where it runs."""
    if settings.llm_endpoint:
        model, where = language_model_from_settings(settings), f"served by {settings.llm_endpoint}"
    elif on_cuda and found.llama_offload:
        model, where = language_model_from_settings(settings, gpu_layers=-1), "cuda: llama.cpp, every layer"
    else:
        model = language_model_from_settings(settings)
        where = "cpu" + (": this llama-cpp-python has no GPU offload (build it with CMAKE_ARGS=-DGGML_CUDA=on)"
                         if on_cuda else "")
    return model, where if model is not None else "not run: no language model installed or configured"


def cuda_where(settings: Settings, found: Found, asr: str, llm: str, speakers: Any) -> dict[str, str]:
    """Where each stage runs in the CUDA run, and why on the CPU where it does."""
    if speakers is None:
        turns = "not run: no speaker models"
    elif settings.diarization_model == "pyannote":
        turns = "cuda: pyannote on torch" if found.torch_cuda and settings.pyannote_device != "cpu" else "cpu"
    else:
        provider = "present" if "CUDAExecutionProvider" in found.onnx_providers else "absent"
        turns = ("cpu: the embedded ONNX models are created on onnxruntime's CPU provider (CUDAExecutionProvider "
                 f"{provider} here)" + ("; a mono call's turns are found during asr" if asr.startswith("cuda") else ""))
    judges = settings.llm_judges_goals or settings.llm_phrases_goals
    return {**{stage: f"cpu: {how} (no GPU path)" for stage, how in CPU_ONLY.items()}, "asr": asr,
            "diarization": turns, "speakers": "cpu: roles from the words (no enrolled voices: no speaker model)",
            "fields": llm, "summary": llm,
            "goals": llm if judges else f"cpu: {CPU_ONLY['categories']} (no GPU path)"}


def load(device: str, settings: Settings, found: Found, probe: Audio,
         torch_whisper: Path | None) -> tuple[Pipeline, Any, dict[str, str]]:
    """The pipeline with its models loaded for `device`, its language model, and (CUDA) where each stage runs."""
    on_cuda = device == "cuda"
    started = time.perf_counter()
    if on_cuda:
        transcriber, asr = cuda_transcriber(settings, found, probe, torch_whisper)
    else:
        transcriber, asr = transcriber_from_settings(settings), "cpu"
    speakers, embedder = load_model("speakers", settings), load_model("embedder", settings)
    llm, llm_where = language_model(settings, found, on_cuda)
    print(f"\n{device}: models ready in {time.perf_counter() - started:.1f} s")
    for name, model in (("transcriber", transcriber), ("speakers", speakers), ("embedder", embedder), ("llm", llm)):
        print(f"  {name:<12} {model.info.name if model is not None else 'not installed or disabled'}")
    pipeline = Pipeline(settings, transcriber=transcriber, speakers=speakers, embedder=embedder, llm=llm)
    return pipeline, llm, cuda_where(settings, found, asr, llm_where, speakers) if on_cuda else {}


def run_device(device: str, settings: Settings, found: Found, warm_up: Path, calls: dict[str, tuple[Path, float]],
               torch_whisper: Path | None) -> dict:
    """One device's figures: where each stage ran, and per call its seconds per stage, whole and peaks."""
    probe = decode(warm_up)
    pipeline, llm, where = load(device, settings, found, probe, torch_whisper)
    timed(pipeline, warm_up, llm)  # first-call allocations, CUDA kernels and caches
    figures: dict = {"where": where, "calls": {}}
    for minutes, (path, seconds) in calls.items():
        with Peaks() as peaks:
            total, stages, _ = timed(pipeline, path, llm)
        figures["calls"][minutes] = {"audio_s": seconds, "total": total, "stages": stages,
                                     "peak_rss_mib": peaks.rss_mib, "gpu_mib": peaks.gpu_mib}
        print(f"  {minutes}-minute call: {total:.1f} s, {seconds / total:.1f}x real time", flush=True)
    del pipeline, llm  # the next device's models load into the memory these free
    gc.collect()
    return figures


def _fmt(value: float | None, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "xrt":  # a stage of a few milliseconds is thousands of times real time: no figure to compare
        return "1000+" if value >= 1000 else f"{value:.0f}" if value >= 100 else f"{value:.1f}"
    return f"{value:.0f}" if kind == "mib" else f"{value:.2f}"


def report(now: dict, saved: dict | None) -> None:
    """Per call, a row per stage: each device's seconds and xRT ("saved > now" with a baseline), the CPU/CUDA
    ratio of seconds, and where the stage ran in the CUDA run."""
    runs = {"now": now["runs"], "saved": (saved or {}).get("runs", {})}
    devices = list(runs["now"]) + [d for d in runs["saved"] if d not in runs["now"]]
    cuda_where = (runs["now"].get("cuda") or runs["saved"].get("cuda") or {}).get("where")
    width = 17 if saved else 9

    def cell(values: dict[str, float | None], kind: str, device: str) -> str:
        """Now's figure; the saved one for a device that only the saved run has; "saved > now" where both have it."""
        if device not in runs["now"]:
            return _fmt(values["saved"], kind)
        if device not in runs["saved"]:
            return _fmt(values["now"], kind)
        return f"{_fmt(values['saved'], kind)} > {_fmt(values['now'], kind)}"

    for minutes in now["minutes"]:
        def call(when: str, device: str, minutes: str = minutes) -> dict | None:
            return runs[when].get(device, {}).get("calls", {}).get(minutes)

        def row(label: str, value, kind: str, note: str = "") -> None:
            cells, seconds = [], {}
            for device in devices:
                figures = {when: call(when, device) for when in runs}
                values = {when: f and value(f) for when, f in figures.items()}
                seconds[device] = values["now"] or values["saved"]
                cells.append(cell(values, kind, device))
                cells.append(cell({when: f and v and f["audio_s"] / v for (when, f), v
                                   in zip(figures.items(), values.values(), strict=True)}, "xrt", device)
                             if kind == "s" else "")
            ratio = f"{seconds['cpu'] / seconds['cuda']:.1f}x" if kind == "s" and seconds.get("cpu") and seconds.get(
                "cuda") else ""
            print(f"  {label:<16}" + "".join(f"{c:>{width}}" for c in cells)
                  + (f"{ratio:>10}  {note}" if cuda_where else ""))

        audio = next(f["audio_s"] for d in devices if (f := call("now", d)))
        print(f"\n{minutes}-minute call, {audio:.1f} s of audio ({now['source']})")
        heads = [f"{d}{'' if d in runs['now'] else ' (saved)'} {what}" for d in devices for what in ("s", "xRT")]
        print(f"  {'stage':<16}" + "".join(f"{h:>{width}}" for h in heads)
              + (f"{'cpu/cuda':>10}  where the CUDA run ran it" if cuda_where else ""))
        stages = dict.fromkeys(s for d in devices for when in runs if (f := call(when, d)) for s in f["stages"])
        for stage in stages:
            row(stage, lambda f, stage=stage: f["stages"].get(stage), "s", (cuda_where or {}).get(stage, ""))
        row("whole", lambda f: f["total"], "s")
        row("peak RSS MiB", lambda f: f["peak_rss_mib"], "mib")
        row("GPU used MiB", lambda f: f["gpu_mib"], "mib")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=lambda s: s.split(","), help="cpu,cuda (default: cuda where found, and cpu)")
    parser.add_argument("--skip-cpu", action="store_true", help="no CPU run beside the CUDA one")
    parser.add_argument("--minutes", type=float, nargs="+", default=[5, 60], help="call lengths (default 5 60)")
    parser.add_argument("--whisper-model", help="a CTranslate2 Whisper folder (CALLSCOPE_WHISPER_MODEL)")
    parser.add_argument("--torch-whisper", type=Path,
                        help="a transformers Whisper folder: the CUDA run's transcriber where CTranslate2 cannot run")
    parser.add_argument("--compute-type", default="float16", help="CTranslate2's compute type on CUDA")
    parser.add_argument("--batch-size", type=int, default=16, help="Whisper's batch size on CUDA")
    parser.add_argument("--threads", type=int, help="CPU threads per model (CALLSCOPE_ANALYSIS_THREADS)")
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--baseline", type=Path, help="a JSON file written by --save: print it beside")
    args = parser.parse_args()
    if unknown := set(args.devices or []) - {"cpu", "cuda"}:
        parser.error(f"unknown device(s) {', '.join(sorted(unknown))}: cpu, cuda")

    found = detect()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.1f}")
    print_found(found)
    devices = [d for d in args.devices or (["cuda"] if found.cuda else []) + ["cpu"]
               if not (args.skip_cpu and d == "cpu")]
    if "cuda" in devices and not found.cuda:
        sys.exit("no CUDA device: CTranslate2 sees none and torch sees none (see above); run with --devices cpu")
    if not devices:
        sys.exit("nothing to run: no CUDA device, and --skip-cpu")
    if not found.cuda:
        print("no CUDA device: the CPU only")

    base = {k: v for k, v in (("whisper_model", args.whisper_model), ("analysis_threads", args.threads)) if v}
    per_device = {"cpu": {"whisper_device": "cpu"},
                  "cuda": {"whisper_device": "cuda", "whisper_compute_type": args.compute_type,
                           "whisper_batch_size": args.batch_size}}
    now: dict = {"machine": f"{platform.node()}: {os.cpu_count()} CPUs", "found": asdict(found),
                 "minutes": [f"{m:g}" for m in args.minutes], "runs": {}}
    with tempfile.TemporaryDirectory(prefix="callscope-gpu-") as tmp:
        now["source"], warm_up, calls = make_calls(Path(tmp), args.minutes)
        print(f"calls: {now['source']}")
        for device in devices:
            settings = Settings(**base, **per_device[device])
            now["runs"][device] = run_device(device, settings, found, warm_up, calls, args.torch_whisper)
    report(now, json.loads(args.baseline.read_text()) if args.baseline else None)
    if args.save:
        args.save.write_text(json.dumps(now, indent=1))
        print(f"saved {args.save}")


if __name__ == "__main__":
    main()
