# Ray head and GPU workers: Callscope's analysis actors with faster-whisper and pyannote.audio.
#   docker build -f manifests/images/ray-worker.Dockerfile -t callscope-ray-worker:dev .
# No model is downloaded at build or run time: the weights live on the volume /models
# (mounted read-only), and the hubs are switched off. Non-root; writes only to /tmp.
FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.11 python3.11-venv ffmpeg ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN python3.11 -m venv /opt/callscope
ENV PATH=/opt/callscope/bin:$PATH
WORKDIR /src
COPY pyproject.toml README.md ./
COPY callscope ./callscope
COPY api ./api
COPY operator ./operator
COPY workers ./workers
COPY analysis ./analysis
# Ray comes from the project's own pin (pyproject.toml), so the head, the workers and the dispatchers that join as
# clients run the same Ray on the same Python (3.11, as api.Dockerfile); `default` adds the head's dashboard and
# autoscaler. faster-whisper comes with the project; pyannote.audio explicitly (the GPU diarization pipeline).
RUN pip install --no-cache-dir . "ray[default]" "pyannote.audio>=3.1" \
 && rm -rf /src
WORKDIR /tmp
RUN groupadd --gid 10001 callscope \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin callscope \
 && mkdir -p /models && chown 10001:10001 /models
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    CALLSCOPE_MODELS_DIR=/models \
    HF_HOME=/models/huggingface \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    TORCH_HOME=/models/torch
VOLUME ["/models", "/tmp"]
USER 10001:10001
