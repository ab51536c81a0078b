"""No bearer secret in any log line: the token of a signed file URL, of a sign-in link, an S3 presigned signature,
the credentials of a carrier's URL, an Authorization value, an API key, a webhook signing secret. Checked on the log
of a real `callscope serve`, and line by line on structlog's and the standard library's output.

No call content in any log line either, whatever the project redacts: what was said, the model's words about it
(summary sentences, quotes, values, its prompts and answers). Checked on the whole log of an analysis of a scripted
call whose every path that logs about the model's answers is taken."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
import sqlalchemy
import structlog
from pydantic import ValidationError

from callscope import logs
from callscope.analysis.models.language_model import OpenAICompatibleModel, _generate_json
from callscope.analysis.result import Evidence, ModelUsed
from callscope.analysis.runtime.pipeline import Pipeline
from callscope.catalog.db import Catalog
from callscope.config import Settings
from callscope.log_scrubbing import REDACTED, Redactor
from callscope.resources.kinds import Category, ExtractedField, Goal, ProjectSpec
from tests.analysis.transcripts import call
from tests.audio_samples import make_audio
from tests.live import start_server
from tests.pages.site import csrf_of, make_site, upload

PREFIX = "cs_live_"
KEY = PREFIX + "A1b2C3d4" * 4
SETTINGS = Settings(log_level="INFO", log_format="json", api_key_prefix=PREFIX)
S3_URL = ("https://bucket.s3.amazonaws.com/accounts/a/audio.wav?X-Amz-Algorithm=AWS4-HMAC-SHA256"
          "&X-Amz-Credential=AKIAEXAMPLE%2F20240101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20240101T000000Z"
          "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=5ecre7519a7e")


@pytest.fixture
def configured() -> Iterator[None]:
    """logs.configure as the CLI runs it; structlog's defaults and the handlers' filters restored after."""
    root = logging.getLogger()
    before = {handler: list(handler.filters) for handler in root.handlers}
    logs.configure(SETTINGS)
    yield
    structlog.reset_defaults()
    for handler, filters in before.items():
        handler.filters[:] = filters


def test_signed_file_and_sign_in_link_tokens_are_not_in_the_server_log(tmp_path):
    data_dir = tmp_path / "data"
    server = start_server(data_dir, log_level="INFO", dispatcher_enabled="false")
    try:
        site = make_site(server, data_dir, [("default", "ana@example.com", "Ana")])
        public_id = upload(site, make_audio(tmp_path / "call.wav", "wav", seconds=1.0), "Call")
        audio_url = site.api("GET", f"/recordings/{public_id}/audio_url").json()["data"]["url"]
        file_token = urlsplit(audio_url).path.rsplit("/", 1)[1]
        assert httpx.get(f"{site.url}/files/{file_token}").status_code == 200
        assert httpx.get(f"{site.url}/files/{file_token[:-2]}xx").status_code == 403  # a tampered one: still a secret
        link_token = _sign_in_by_link(site, "ana@example.com")
    finally:
        server.stop()
    log_text = (data_dir.parent / f"server-{urlsplit(site.url).port}.log").read_text()
    assert '"path": "/files/' + REDACTED in log_text  # the request was logged, without its token
    assert file_token not in log_text and file_token[:-2] not in log_text
    assert link_token not in log_text
    assert site.key not in log_text


def _sign_in_by_link(site, address: str) -> str:
    """Ask for a sign-in link, open it and confirm it (the real flow); the link's token."""
    client = httpx.Client(base_url=site.url, timeout=30)
    form = client.get("/sign-in")
    assert client.post("/sign-in", data={"email": address, "csrf": csrf_of(form.text)}).status_code == 200
    link = site.sign_in_link(address)
    token = link.split("token=", 1)[1]
    page = client.get(link.removeprefix(site.url))
    assert client.post("/sign-in/link", data={"token": token, "csrf": csrf_of(page.text)}).status_code == 303
    return token


@pytest.mark.parametrize(("line", "secrets", "kept"), [
    pytest.param("GET http://h:8080/files/eyJ4IjoxfQ.bWFjbWFjbWFj 200", ["eyJ4IjoxfQ.bWFjbWFjbWFj"],
                 ["http://h:8080/files/"], id="signed-file-url"),
    pytest.param("opened https://x.test/sign-in/link?token=Zm9vYmFy-_x&next=/r", ["Zm9vYmFy-_x"], ["next=/r"],
                 id="sign-in-link"),
    pytest.param("token=Zm9vYmFy&csrf=Y3NyZg", ["Zm9vYmFy", "Y3NyZg"], ["token=", "&csrf="], id="form-body"),
    pytest.param(f"fetch failed: {S3_URL}", ["5ecre7519a7e", "AKIAEXAMPLE"], ["X-Amz-Expires=3600", "bucket.s3"],
                 id="s3-presigned"),
    pytest.param("GET https://AC0123:t0ps3cr3tt0k3n@api.twilio.com/2010-04-01/Accounts/AC0123/Recordings/RE1",
                 ["t0ps3cr3tt0k3n"], ["https://AC0123:", "@api.twilio.com/"], id="url-credentials"),
    pytest.param("headers {'Authorization': 'Bearer " + KEY + "'}", [KEY], ["Authorization"], id="bearer"),
    pytest.param("Authorization: Basic QUMwMTIzOnNlY3JldA==", ["QUMwMTIzOnNlY3JldA=="], ["Basic"], id="basic"),
    pytest.param(f"1 validation error: input_value='{KEY}x'", [KEY], [], id="api-key-in-exception"),
    pytest.param("secret whsec_c2VjcmV0c2VjcmV0c2VjcmV0+/= written", ["c2VjcmV0c2VjcmV0"], [" written"],
                 id="webhook-secret"),
    pytest.param("https://hooks.example.com/in?api_key=k3y&sig=s1g&x=1", ["k3y", "s1g"], ["x=1"], id="query-keys"),
])
def test_secrets_are_redacted_in_any_text(line, secrets, kept):
    redacted = Redactor(PREFIX).text(line)
    for secret in secrets:
        assert secret not in redacted, redacted
    for text in kept:
        assert text in redacted, redacted
    assert REDACTED in redacted


def test_what_is_no_secret_is_left_as_it_is():
    line = ("runtime_started data_dir=/srv/files/callscope path=/recordings/abc-123 key=ci secret=hook-secret "
            "basic settings, status 200, https://api.twilio.com/2010-04-01/Accounts/AC1/Calls.json")
    assert Redactor(PREFIX).text(line) == line


def test_structlog_lines_are_redacted_in_fields_nested_values_and_exceptions(configured, capsys):
    # after capsys took stderr: the renderer writes there
    logs.configure(Settings(log_level="INFO", log_format="json", api_key_prefix="ak_"))
    key = "ak_" + "Z" * 32
    try:
        raise RuntimeError(f"could not fetch {S3_URL}")
    except RuntimeError:
        structlog.get_logger().exception("fetch_failed", url=S3_URL, headers={"Authorization": f"Bearer {key}",
                                                                             "Cookie": "callscope_session=abc"},
                                         attempts=[f"{key} refused"], error=ValueError(f"bad {key}"))
    err = capsys.readouterr().err
    assert '"event": "fetch_failed"' in err and "Traceback" in err
    for secret in ("5ecre7519a7e", "AKIAEXAMPLE", key, "callscope_session=abc"):
        assert secret not in err, err


def test_standard_library_records_of_any_logger_are_redacted(configured, caplog):
    with caplog.at_level(logging.INFO):
        logs.configure(SETTINGS)  # the filter goes on the handlers present, caplog's among them
        logging.getLogger("uvicorn.error").warning("GET %s?token=%s", "/sign-in/link", "Zm9vYmFy")
        try:
            raise httpx.HTTPStatusError(f"Client error '403 Forbidden' for url '{S3_URL}'", request=None,
                                        response=None)
        except httpx.HTTPStatusError:
            logging.getLogger("httpx").exception("download failed for %s", KEY)
    assert "/sign-in/link?token=" + REDACTED in caplog.text
    for secret in ("Zm9vYmFy", "5ecre7519a7e", KEY):
        assert secret not in caplog.text, caplog.text


def test_words_after_basic_that_are_no_credentials_stay() -> None:
    redactor = Redactor("cs_live_")
    assert redactor.text("Basic configuration of the sandbox") == "Basic configuration of the sandbox"
    credentials = base64.b64encode(b"AC0123:auth-token").decode()
    assert redactor.text(f"Authorization: Basic {credentials}") == "Authorization: Basic [redacted]"


# --- call content: never in a log line ---------------------------------------------------------------------------

# A call whose names and numbers are rare words: a log line that holds any of them (or the model's words about the
# call) is found by a plain search. Log lines carry counts, ids and stage names, never what was said.
TURNS = [
    ("speaker-1", "Thank you for calling Brightwater Energy, my name is Marisol. How can I help you today?"),
    ("speaker-2", "Hi Marisol, this is Jennifer Okafor. I paid the Zephyrine invoice yesterday, two hundred fifteen "
                  "dollars."),
    ("speaker-1", "Let me check. Yes, the payment on account Quillfeather has been received."),
    ("speaker-2", "Wonderful. Please call me back on 415 555 0199 if anything changes."),
    ("speaker-1", "Of course Jennifer. Thank you for calling, goodbye."),
]
CALL_WORDS = ("Brightwater", "Marisol", "Jennifer", "Okafor", "Zephyrine", "Quillfeather", "Wonderful", "555 0199",
              "5550199")  # the number as said and as a value (digits alone: a timestamp's microseconds may hold them)
MODEL_WORDS = ("Bartholomew", "Vandersloot", "Xanthippe")  # the model's own words about the call
SUMMARY = ["Jennifer Okafor called Brightwater Energy about the Zephyrine invoice.",
           "Jennifer confirms that a payment has been made.",
           "Bartholomew Vandersloot promised Xanthippe a refund of 512 dollars."]


def _project():
    return ProjectSpec(name="Utility line", language="en", goals=[
        Goal(id=1, name="greeting", description="The agent greets the caller.", phrases=["thank you for calling"],
             speaker="agent"),
        Goal(id=2, name="payment_checked", description="The agent checks the payment.", phrases=["has been received"]),
    ], categories=[Category(name="billing", description="Questions about bills.", keywords=["invoice"])], fields=[
        ExtractedField(name="callback_number", description="The number to call back on.", type="phone"),
        ExtractedField(name="invoice_name", description="The name of the invoice paid.", type="string"),
        ExtractedField(name="paid", description="Whether the customer says they paid.", type="boolean"),
    ])


class _Transcriber:
    """Stands in for Whisper: the scripted call's turns, each on its speaker's channel."""

    multilingual, device = True, "cpu"

    def __init__(self):
        self.info = ModelUsed(stage="asr", name="scripted", version="0")
        self.segments = call(*TURNS)

    def transcribe(self, audio, channel, language, hints, regions):
        return [s for s in self.segments if s.channel == channel]


def _answers(schema: dict) -> list[str]:
    """The raw replies (JSON text) of a model asked with this schema: what it is asked for, by its keys; the first
    of several does not validate and is asked again (language_model._generate_json)."""
    keys = list(schema["properties"])
    if "quotes" in keys:  # a goal's verdict: not JSON, then a value against the schema (the goal falls to evidence)
        return ["Jennifer Okafor was greeted by Marisol at Brightwater",
                json.dumps({"met": "Marisol greeted Jennifer Okafor", "score": 1, "explanation": "Bartholomew.",
                            "quotes": []})]
    if keys[0].startswith("goal_"):  # explanations quoting what the evidence does not say
        return [json.dumps({k: {"explanation": 'Marisol said "Bartholomew Vandersloot paid Zephyrine".',
                                "quote_ids": [1]} for k in keys})]
    if keys[0].startswith("field_"):  # values the call does not say: dropped
        def value(question: dict) -> dict:
            if "quote" in question["properties"]:
                return {"found": True, "value": True, "quote": "Xanthippe paid Vandersloot for Zephyrine"}
            if "found" in question["properties"]:
                return {"found": True, "value": "Bartholomew Zephyrine"}
            return {"value": question["properties"]["value"]["enum"][0]}
        return [json.dumps({k: {"found": "Jennifer Okafor"} for k in keys}),
                json.dumps({k: value(schema["properties"][k]) for k in keys})]
    # the summary's brief: a sentence too long, then sentences of which the transcript supports not all
    return [json.dumps({k: "Jennifer Okafor of Quillfeather " * 20 for k in keys}),
            json.dumps({k: SUMMARY[i % len(SUMMARY)] for i, k in enumerate(keys)})]


class _RawModel:
    """A language model whose replies go through the real validation and asking again of both back ends."""

    context_tokens = 8192

    def __init__(self):
        self.info = ModelUsed(stage="language-model", name="scripted", version="0")

    def generate_json(self, prompt: str, schema: dict, max_tokens: int = 512) -> dict:
        replies = iter(_answers(schema))
        return _generate_json(lambda messages, schema, max_tokens: next(replies), prompt, schema, max_tokens,
                              "scripted")

    def yes_probabilities(self, head: str, questions: list[str]) -> list[float]:
        return [1.0] * len(questions)  # the claim judge finds each sentence stated


def _echoing_endpoint():
    """An OpenAI-compatible server that refuses every request with a validation error quoting what it was sent
    (as a FastAPI or pydantic server answers a 422)."""
    def refuse(request: httpx.Request) -> httpx.Response:
        sent = json.loads(request.content)
        return httpx.Response(422, json={"detail": [{"msg": "Field required", "input": sent["messages"][0]}]})

    model = OpenAICompatibleModel("http://llm.test/v1", "served")
    model._client = httpx.Client(base_url=model.base_url, transport=httpx.MockTransport(refuse))
    return model


@pytest.mark.parametrize("llm", [pytest.param(_RawModel, id="answers-to-check"),
                                 pytest.param(_echoing_endpoint, id="endpoint-error-quoting-the-request")])
def test_an_analysis_logs_none_of_the_calls_words(configured, capsys, caplog, tmp_path, llm):
    # after capsys took stderr (the renderer writes there); DEBUG: every line the stages may write
    logs.configure(Settings(log_level="DEBUG", log_format="json"))
    settings = Settings(llm_judges_goals=True, llm_phrases_goals=True)
    pipeline = Pipeline(settings, transcriber=_Transcriber(), speakers=None, embedder=None, llm=llm())
    with caplog.at_level(logging.DEBUG):
        result = pipeline.run(make_audio(tmp_path / "call.wav", "wav", seconds=25.0, channels=2), _project())
    logged = capsys.readouterr().err + caplog.text
    assert "Jennifer" in " ".join(s.text for s in result.segments)  # the call was analysed as scripted
    stages = {s.name: s.detail for s in result.stages}
    assert stages["goals"].startswith("2 of 2 met") and stages["fields"] and stages["summary"]
    if llm is _RawModel:  # every path that logs about the model's answers was taken
        assert "the transcript does not support" in stages["summary"]
        for event in ("summary_sentences_unsupported", "goal_judge_failed", "goal_explanation_not_used",
                      "field_value_dropped", "language_model_answer_unusable"):
            assert f'"event": "{event}"' in logged, event
    else:
        for event in ("goal_judge_failed", "goal_explanations_failed", "fields_model_failed"):
            assert f'"event": "{event}"' in logged, event
    for word in CALL_WORDS + MODEL_WORDS:
        assert word.lower() not in logged.lower(), [line for line in logged.splitlines() if word in line]


def test_result_and_statement_errors_never_quote_their_values(tmp_path):
    """A result that does not validate (a stored document read back, a stage's bug) and a catalog statement that
    fails (an analysis's row and its webhook event hold its summary and quotes): their errors, logged with their
    tracebacks and kept as failure reasons, name the field and the statement, never the values."""
    with pytest.raises(ValidationError) as invalid:
        Evidence(dialogue_id=SUMMARY[1], start_ms=0, quote=SUMMARY[1])
    assert "dialogue_id" in str(invalid.value) and "Jennifer" not in str(invalid.value)
    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    with pytest.raises(sqlalchemy.exc.StatementError) as failed, catalog.session() as session:
        session.execute(sqlalchemy.text("INSERT INTO no_such_table VALUES (:summary)"), {"summary": SUMMARY[1]})
    assert "no_such_table" in str(failed.value) and "Jennifer" not in str(failed.value)
