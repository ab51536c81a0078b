"""No bearer secret in any log line: the token of a signed file URL, of a sign-in link, an S3 presigned signature,
the credentials of a carrier's URL, an Authorization value, an API key, a webhook signing secret. Checked on the log
of a real `callscope serve`, and line by line on structlog's and the standard library's output."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
import structlog

from callscope import logs
from callscope.config import Settings
from callscope.redaction import REDACTED, Redactor
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
