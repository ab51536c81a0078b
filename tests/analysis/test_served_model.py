"""A served model takes the same code path as the local one: the embedded GGUF behind llama-cpp-python's
OpenAI-compatible server (CALLSCOPE_LLM_ENDPOINT) gives the summaries and field values the local llama.cpp back
end gives, request for request (same prompts, same schema enforced, greedy decoding)."""

from __future__ import annotations

from importlib.util import find_spec

import pytest

from callscope.analysis.models import llm_file
from callscope.analysis.models.language_model import LlamaCppModel, OpenAICompatibleModel, language_model_from_settings
from callscope.analysis.stages.fields import extract_fields
from callscope.analysis.stages.summary import summarize
from callscope.config import Settings
from tests.analysis.llama_server import MODEL_ALIAS, llama_server
from tests.analysis.transcripts import BILLING_CALL, WRITTEN_FIELDS, WRITTEN_ROLES, segments

SKIP = next((why for why, missing in (
    ("llama-cpp-python is not installed", find_spec("llama_cpp") is None),
    ("llama-cpp-python's server needs fastapi, sse-starlette and starlette-context (the dev extra)",
     any(find_spec(name) is None for name in ("fastapi", "sse_starlette", "starlette_context"))),
    ("the embedded model's parts are not installed", not llm_file.parts_installed()),
) if missing), None)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("language_model"), pytest.mark.timeout(1200),
              pytest.mark.skipif(SKIP is not None, reason=SKIP or "")]

CONTEXT, THREADS = 4096, 2


def _answers(llm) -> list:
    """What the text stages that ask the model give on a written call (a summary, then typed fields: both kinds of
    request, free text and schema-enforced JSON), in one fixed order. One call: a second asks nothing new."""
    dialogue = segments(BILLING_CALL)
    return [summarize(dialogue, "en", llm, roles=WRITTEN_ROLES).text,
            [(value.name, value.value) for value in extract_fields(WRITTEN_FIELDS, dialogue, llm,
                                                                    roles=WRITTEN_ROLES)]]


def test_the_served_embedded_model_answers_as_the_local_one():
    gguf = llm_file.embedded_gguf()
    local = _answers(LlamaCppModel(gguf, threads=THREADS, n_ctx=CONTEXT))
    with llama_server(gguf, CONTEXT, THREADS) as endpoint:
        served_model = language_model_from_settings(
            # minutes per request where other work shares the 2 cores
            # llama-cpp-python's server penalises repeated tokens unless told not to (its default 1.1)
            Settings(llm_endpoint=endpoint, llm_endpoint_model=MODEL_ALIAS, llm_context_tokens=CONTEXT,
                     llm_endpoint_timeout_seconds=900, llm_endpoint_extra_body={"repeat_penalty": 1.0}))
        assert isinstance(served_model, OpenAICompatibleModel)
        served = _answers(served_model)
    assert served == local
    assert local[0], "the summary has text"
