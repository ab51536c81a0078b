"""Bearer secrets out of log lines: whoever reads the logs must not be able to act as a key, a member or a signed
URL. Wherever they appear in a line: signed ``/files/<token>`` tokens, secret query or form parameters (``token``,
``X-Amz-Signature``, ``api_key``, ...), URL passwords, ``Authorization`` values, API keys, ``whsec_`` secrets, and
the whole value of a field named like a secret (``authorization``, ``cookie``, ``password``, ...).

`callscope.logs.configure` puts `Redactor` in front of structlog's renderer and `RedactingFilter` on the handlers
of the standard library's root logger (uvicorn, httpx and the modules that log through `logging`).
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Mapping, MutableMapping
from typing import Any

from callscope.webhook_signing import PREFIX as WEBHOOK_SECRET_PREFIX

REDACTED = "[redacted]"

# A signed token is `<payload>.<mac>` in base64url (callscope/blobs/signing.py).
_SIGNED_FILE = re.compile(r"(/files/)[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
_SECRET_PARAMETERS = (
    "token", "access_token", "refresh_token", "id_token", "auth", "auth_token", "api_key", "apikey", "key", "secret",
    "client_secret", "password", "passwd", "signature", "sig", "csrf",
    "x-amz-signature", "x-amz-credential", "x-amz-security-token", "awsaccesskeyid",
    "x-goog-signature", "x-goog-credential",
)
_PARAMETER = re.compile(r"((?:^|[?&;\"'])(?:" + "|".join(map(re.escape, _SECRET_PARAMETERS)) + r")=)[^&#\s\"'<>]+",
                        re.IGNORECASE)
_USER_PASSWORD = re.compile(r"(://[^/\s:@\"'<>]*:)[^/\s@\"'<>]+@")
_BEARER = re.compile(r"\b((?i:bearer)\s+)[A-Za-z0-9._~+/=-]{8,}")
_BASIC = re.compile(r"\b((?i:basic)\s+)([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])")
_WEBHOOK_SECRET = re.compile(re.escape(WEBHOOK_SECRET_PREFIX) + r"[A-Za-z0-9+/=]+")
_SECRET_FIELDS = frozenset({
    "authorization", "proxy_authorization", "cookie", "set_cookie", "password", "token", "access_token",
    "auth_token", "api_key", "x_api_key", "csrf", "signing_secret", "url_signing_secret",
})


def _basic_credentials(match: re.Match) -> str:
    """Basic credentials are base64 of `user:password`; other words after "Basic" ("Basic configuration") stay."""
    try:
        decoded = base64.b64decode(match[2] + "=" * (-len(match[2]) % 4), validate=True)
    except ValueError:
        return match[0]
    return f"{match[1]}{REDACTED}" if b":" in decoded else match[0]


def redact_path(path: str) -> str:
    """A request path with the token of a signed file URL replaced (the request log's `path`)."""
    return _SIGNED_FILE.sub(rf"\1{REDACTED}", path)


class Redactor:
    """Redacts bearer secrets in text and in structlog event dicts (it is a structlog processor)."""

    def __init__(self, api_key_prefix: str) -> None:
        # 16 or more characters after the prefix: a key, or most of one (never its hint, `cs_live_abcd…wxyz`).
        self._api_key = re.compile(re.escape(api_key_prefix) + r"[A-Za-z0-9]{16,}")

    def text(self, text: str) -> str:
        text = redact_path(text)
        text = _PARAMETER.sub(rf"\1{REDACTED}", text)
        text = _USER_PASSWORD.sub(rf"\1{REDACTED}@", text)
        text = _BEARER.sub(rf"\1{REDACTED}", text)
        text = _BASIC.sub(_basic_credentials, text)
        text = _WEBHOOK_SECRET.sub(REDACTED, text)
        return self._api_key.sub(REDACTED, text)

    def value(self, value: Any) -> Any:
        """`value` with its strings redacted, through mappings, lists and tuples. Numbers and None stay; any other
        object becomes its redacted repr, which is what the JSON and console renderers would print (an
        exception's repr carries its message, a URL perhaps)."""
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {key: REDACTED if _secret_field(key) and value[key] is not None else self.value(value[key])
                    for key in value}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return self.text(repr(value))

    def __call__(self, logger: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        return self.value(event)


def _secret_field(name: Any) -> bool:
    return isinstance(name, str) and name.lower().replace("-", "_") in _SECRET_FIELDS


class RedactingFilter(logging.Filter):
    """Redacts a standard library record's message and exception text (on a handler, it sees every record that
    reaches the handler, from any logger)."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # arguments that do not fit the format: logging would print both
            message = f"{record.msg} {record.args!r}"
        record.msg, record.args = self.redactor.text(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redactor.text(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redactor.text(record.stack_info)
        return True
