"""What a text value may hold, said once: the API's request models (and so the OpenAPI document) and the
resource models (and so the CRDs, `callscope apply` and the stores) take their types from here, so that
nothing reaches the catalog that PostgreSQL would refuse (NUL, values longer than their column) and no
object is stored that breaks later work (a project language no upload can use).

Sizes come from the catalog's columns where a value ends up in one. Patterns stay in the dialect that
JSON Schema, Python's `re`, Rust's `regex` (pydantic) and RE2 (the Kubernetes API server) read alike.
Surrounding whitespace is dropped after the checks; lengths count what was sent.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from callscope.catalog.tables import BIGINT_MAX, Recording, Share, WebhookEndpoint

NAME_MAX = Recording.name.type.length  # display names of every kind, like a recording's
EXTERNAL_ID_MAX = Recording.external_id.type.length
LANGUAGE_MAX = Recording.language.type.length
SOURCE_MAX = Recording.recording_source.type.length
FILENAME_MAX = Recording.original_filename.type.length
EMAIL_MAX = Share.member_email.type.length
URL_MAX = WebhookEndpoint.url.type.length
TEXT_MAX = 4000  # descriptions and transcription hints: a few paragraphs, and a table row stays a row
PHONE_INPUT_MAX = 64  # a phone number as people type it, before it is normalised to E.164
COST_MAX = 32  # a decimal price such as "1.15"

_CONTROL = r"\x00-\x1f\x7f-\x9f"  # Unicode's control characters (category Cc)
_CONTROL_BUT_TAB_AND_LINE_BREAKS = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
# Unicode's format characters (category Cf) but the zero-width non-joiner and joiner, and the line and paragraph
# separators: invisible, or marks joined to what follows, they make a display name look like another or hide text in
# it (U+202E shows what follows it reversed; U+200B, U+2060 and U+FEFF show nothing; U+E0020-E007F spell invisible
# ASCII). ZWNJ (U+200C) and ZWJ (U+200D) stay: Persian, the Indic scripts and emoji sequences are spelt with them.
# Unicode 15's list, so that an older Python misses none. In patterns as the characters themselves: no escape of a
# code point reads alike in JSON Schema, Python's `re`, Rust's `regex` and RE2.
INVISIBLE_RANGES = (
    (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891),
    (0x08E2, 0x08E2), (0x180E, 0x180E), (0x200B, 0x200B), (0x200E, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064),
    (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)
_INVISIBLE = "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in INVISIBLE_RANGES)

SINGLE_LINE = rf"^[^{_CONTROL}]*$"
NON_BLANK_LINE = rf"^[^{_CONTROL}]*[^\s{_CONTROL}][^{_CONTROL}]*$"
# Display names (people, projects, operators, tags, numbers, accounts): a line without invisible characters either.
DISPLAY_LINE = rf"^[^{_CONTROL}{_INVISIBLE}]*$"
NON_BLANK_DISPLAY_LINE = rf"^[^{_CONTROL}{_INVISIBLE}]*[^\s{_CONTROL}{_INVISIBLE}][^{_CONTROL}{_INVISIBLE}]*$"
MULTI_LINE = rf"^[^{_CONTROL_BUT_TAB_AND_LINE_BREAKS}]*$"
NON_BLANK_MULTI_LINE = (rf"^[^{_CONTROL_BUT_TAB_AND_LINE_BREAKS}]*[^\s{_CONTROL}]"
                        rf"[^{_CONTROL_BUT_TAB_AND_LINE_BREAKS}]*$")  # text over lines that must be given
# A BCP 47 language tag (RFC 5646 langtag, without the grandfathered forms), any letter case.
LANGUAGE_TAG = (
    r"^(?:[A-Za-z]{2,3}(?:-[A-Za-z]{3}){0,3}|[A-Za-z]{4,8})(?:-[A-Za-z]{4})?(?:-(?:[A-Za-z]{2}|[0-9]{3}))?"
    r"(?:-(?:[A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*(?:-[0-9A-WYZa-wyz](?:-[A-Za-z0-9]{2,8})+)*"
    r"(?:-[Xx](?:-[A-Za-z0-9]{1,8})+)?$"
)
EMAIL_OR_BLANK = rf"^(?: *|[^{_CONTROL}]*@[^{_CONTROL}]*)$"
# An address mail is sent to (a member's): the HTML standard's "valid email address" (what a browser's email field
# takes), ASCII only. A local part of other characters (a quote, `<`, `>`, a space) would be taken apart differently
# by every reader of a `To:` header, and a non-ASCII one needs SMTPUTF8, which the mail path does not use; an
# internationalised domain is written in its xn-- form.
MEMBER_EMAIL = (r"^[-A-Za-z0-9.!#$%&'*+/=?^_`{|}~]+@[A-Za-z0-9](?:[-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
                r"(?:\.[A-Za-z0-9](?:[-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*$")
# An http(s) URL as far as a pattern can say it (the CRD's check): a host name (parts of letters, any script's,
# digits, '-' and '_' between single dots) or IPv4 address, no user name or password, or an IPv6 address in brackets;
# an optional port from 1 to 65535, then a path, query or fragment; no spaces or control characters. `endpoint` checks
# the rest (the parts' lengths and IDNA form, the IPv6 address) and is what delivery parses the URL with.
_URL_PORT = r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
_URL_LABEL = r"[^\s\x00-\x2c\x2e\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x9f]+"  # ASCII: only letters, digits, - and _
_URL_HOST = rf"(?:\[[0-9A-Fa-f:.]+\]|{_URL_LABEL}(?:\.{_URL_LABEL})*\.?)"
WEBHOOK_URL = rf"^https?://{_URL_HOST}(?::{_URL_PORT})?(?:[/?#][^\s{_CONTROL}]*)?$"
# A Secret's name (a DNS subdomain, at most 253 characters) and a key in it (not ".", ".." or starting with ".."),
# as both secret stores take them (callscope/secret_store.py, a file name there); a webhook's key leaves room for the
# `.previous-until` beside it (callscope/signing_secrets.py).
SECRET_NAME = r"^[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?$"
SECRET_NAME_MAX = 253
SECRET_KEY = r"^(?:[-_a-zA-Z0-9]|\.[-_a-zA-Z0-9])[-._a-zA-Z0-9]*$"
SECRET_KEY_MAX = 253 - len(".previous-until")

# What a value that misses a pattern is told (after its field's name).
PATTERN_PROBLEMS = {
    SINGLE_LINE: "must not contain control characters",
    NON_BLANK_LINE: "must not be blank or contain control characters",
    MULTI_LINE: "must not contain control characters other than tab and line breaks",
    LANGUAGE_TAG: "must be a BCP 47 language tag such as en, en-US or zh-Hant-TW",
    EMAIL_OR_BLANK: "is invalid",
    MEMBER_EMAIL: "is not an email address such as ana@example.com (before the @ only ASCII letters, digits and "
                  "the characters .!#$%&'*+/=?^_`{|}~-; after it a domain name, an internationalised one in its xn-- "
                  "form)",
    DISPLAY_LINE: "must not contain control characters or invisible formatting characters such as U+202E (which "
                  "shows the text after it reversed) or U+200B",
    NON_BLANK_DISPLAY_LINE: "must not be blank or contain control characters or invisible formatting characters such "
                            "as U+202E (which shows the text after it reversed) or U+200B",
    WEBHOOK_URL: "must be an http or https URL: a host (no user name or password), an optional port from 1 to "
                 "65535 and a path, without spaces or control characters",
    SECRET_NAME: "must be a Secret name: lowercase letters, digits, '-' and '.', starting and ending with a letter "
                 "or digit",
    SECRET_KEY: "must be a Secret key: letters, digits, '-', '_' and '.'",
}


def _stripped(value: str) -> str:
    return value.strip()


def canonical_language(tag: str) -> str:
    """The tag in BCP 47's conventional case: en-US, zh-Hant-TW, de-CH-1901 (tags compare case-insensitively,
    so stored tags are spelt one way and filters find them)."""
    subtags = tag.strip().split("-")
    out = [subtags[0].lower()]
    in_extension = False
    for subtag in subtags[1:]:
        in_extension = in_extension or len(subtag) == 1
        if not in_extension and len(subtag) == 4 and subtag.isalpha():
            out.append(subtag.title())  # script
        elif not in_extension and len(subtag) == 2 and subtag.isalpha():
            out.append(subtag.upper())  # region
        else:
            out.append(subtag.lower())
    return "-".join(out)


_LABEL = re.compile(r"^[A-Za-z0-9_](?:[-A-Za-z0-9_]*[A-Za-z0-9_])?$")  # a DNS label (underscores too: some use them)


@dataclass(frozen=True)
class Endpoint:
    """An http(s) URL taken apart as a client connects to it."""

    scheme: str  # http or https
    host: str  # the ASCII (IDNA) host name, or the IP address without brackets
    port: int | None  # as written; None: the scheme's
    path: str  # path and query as sent, "/" at least (a fragment is never sent)

    @property
    def connect_port(self) -> int:
        return self.port or (443 if self.scheme == "https" else 80)

    @property
    def authority(self) -> str:
        """The `Host` header: the host (an IPv6 address in brackets) and the port when one was written."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}" if self.port else host


def endpoint(url: str) -> Endpoint:
    """`url` taken apart as webhook delivery connects to it (workers/webhooks.py); ValueError saying what is
    wrong. The resource models check every webhook URL with it when it is saved (the Settings page, `callscope
    apply`, the stores: `WebhookUrl`), so that nothing is saved that delivery cannot parse."""
    if not url.startswith(("https://", "http://")):
        raise ValueError("it must start with https:// or http://")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # unbalanced brackets, a port out of range, characters NFKC turns into / ? # @ ...
        raise ValueError(f"it cannot be parsed ({exc})") from None
    if "@" in parts.netloc:
        raise ValueError("it must not carry a user name or password (they would not be sent)")
    if port == 0:
        raise ValueError("its port must be from 1 to 65535")
    host = parts.hostname or ""
    if not host:
        raise ValueError("it has no host")
    if parts.netloc.startswith("["):
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"[{host}] is not an IPv6 address") from None
    else:
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise ValueError(f"{host} is not a host name (each part 1 to 63 characters, 253 in all)") from None
        if len(host) > 253 or not all(_LABEL.fullmatch(label) for label in host.removesuffix(".").split(".")):
            raise ValueError(f"{host} is not a host name (letters, digits, '-' and '_' in parts separated by dots)")
    if not re.fullmatch(WEBHOOK_URL, url):
        raise ValueError("it must be a host, an optional port from 1 to 65535 and a path, without spaces or control "
                         "characters")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Endpoint(parts.scheme, host, port, path)


def _usable_url(value: str) -> str:
    try:
        endpoint(value)
    except ValueError as exc:
        raise PydanticCustomError("unusable", "is not a URL that can be delivered to: {problem}",
                                  {"problem": str(exc)}) from None
    return value


def secret_name(value: str) -> str:
    """`value` if the secret stores take it as a Secret's name (callscope/secret_store.py); ValueError if not."""
    if len(value) > SECRET_NAME_MAX or not re.fullmatch(SECRET_NAME, value):
        raise ValueError(f"invalid Secret name {value!r}")
    return value


def secret_key(value: str) -> str:
    """`value` if the secret stores take it as a key of a Secret; ValueError if not."""
    if len(value) > SECRET_NAME_MAX or not re.fullmatch(SECRET_KEY, value):
        raise ValueError(f"invalid Secret key {value!r}")
    return value


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def line(max_length: int = NAME_MAX, pattern: str = SINGLE_LINE) -> Any:
    """One line of text: no control characters, at most max_length characters."""
    return Annotated[str, Field(max_length=max_length, pattern=pattern), AfterValidator(_stripped)]


def text(max_length: int = TEXT_MAX) -> Any:
    """Text that may span lines (tab and line breaks allowed, other control characters not)."""
    return Annotated[str, Field(max_length=max_length, pattern=MULTI_LINE), AfterValidator(_stripped)]


Line = line()
Name = line(pattern=NON_BLANK_DISPLAY_LINE)  # a display name that must be given
DisplayLine = line(pattern=DISPLAY_LINE)  # a display name that may be empty
Text = text()
ExternalId = line(EXTERNAL_ID_MAX)
Language = Annotated[str, Field(max_length=LANGUAGE_MAX, pattern=LANGUAGE_TAG), AfterValidator(canonical_language)]
# A project's or recording's transcription language may also be "auto" (a tag's form already): not fixed, the
# transcription model identifies it and the recording keeps what it found.
AUTO_LANGUAGE = "auto"
Email = line(EMAIL_MAX, EMAIL_OR_BLANK)
MemberEmail = line(EMAIL_MAX, MEMBER_EMAIL)
# Checked with `endpoint`, the parser delivery uses, after the pattern (which is all the CRD can say).
WebhookUrl = Annotated[str, Field(max_length=URL_MAX, pattern=WEBHOOK_URL), AfterValidator(_stripped),
                       AfterValidator(_usable_url)]
SecretName = Annotated[str, Field(min_length=1, max_length=SECRET_NAME_MAX, pattern=SECRET_NAME),
                       AfterValidator(secret_name)]
SecretKey = Annotated[str, Field(min_length=1, max_length=SECRET_KEY_MAX, pattern=SECRET_KEY),
                      AfterValidator(secret_key)]
# A moment compared with the clock (an expiry): one written without an offset is UTC, as the CLI reads it, so that
# the comparison never meets a naive datetime.
UtcDatetime = Annotated[datetime, AfterValidator(_utc)]
PhoneInput = line(PHONE_INPUT_MAX)
Cost = line(COST_MAX)

# Numbers of a project: beyond these the arithmetic on them (dates, durations) stops making sense.
RetentionDays = Annotated[int, Field(ge=1, le=36_500)]
PauseSeconds = Annotated[int, Field(ge=1, le=86_400)]
Percent = Annotated[float, Field(ge=0, le=100)]
# Any other count or id: what Kubernetes (int64) and the catalog's BIGINT hold, so both modes take the same values.
PositiveInt64 = Annotated[int, Field(ge=1, le=BIGINT_MAX)]
