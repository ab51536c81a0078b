"""What a text value may hold, said once: the API's request models (and so the OpenAPI document) and the
resource models (and so the CRDs, `callscope apply` and the stores) take their types from here, so that
nothing reaches the catalog that PostgreSQL would refuse (NUL, values longer than their column) and no
object is stored that breaks later work (a project language no upload can use).

Sizes come from the catalog's columns where a value ends up in one. Patterns stay in the dialect that
JSON Schema, Python's `re`, Rust's `regex` (pydantic) and RE2 (the Kubernetes API server) read alike.
Surrounding whitespace is dropped after the checks; lengths count what was sent.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field

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

SINGLE_LINE = rf"^[^{_CONTROL}]*$"
NON_BLANK_LINE = rf"^[^{_CONTROL}]*[^\s{_CONTROL}][^{_CONTROL}]*$"
MULTI_LINE = rf"^[^{_CONTROL_BUT_TAB_AND_LINE_BREAKS}]*$"
# A BCP 47 language tag (RFC 5646 langtag, without the grandfathered forms), any letter case.
LANGUAGE_TAG = (
    r"^(?:[A-Za-z]{2,3}(?:-[A-Za-z]{3}){0,3}|[A-Za-z]{4,8})(?:-[A-Za-z]{4})?(?:-(?:[A-Za-z]{2}|[0-9]{3}))?"
    r"(?:-(?:[A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*(?:-[0-9A-WYZa-wyz](?:-[A-Za-z0-9]{2,8})+)*"
    r"(?:-[Xx](?:-[A-Za-z0-9]{1,8})+)?$"
)
EMAIL_OR_BLANK = rf"^(?: *|[^{_CONTROL}]*@[^{_CONTROL}]*)$"
MEMBER_EMAIL = rf"^[^@\s{_CONTROL}]+@[^@\s{_CONTROL}]+$"
WEBHOOK_URL = rf"^https?://[^\s{_CONTROL}]+$"

# What a value that misses a pattern is told (after its field's name).
PATTERN_PROBLEMS = {
    SINGLE_LINE: "must not contain control characters",
    NON_BLANK_LINE: "must not be blank or contain control characters",
    MULTI_LINE: "must not contain control characters other than tab and line breaks",
    LANGUAGE_TAG: "must be a BCP 47 language tag such as en, en-US or zh-Hant-TW",
    EMAIL_OR_BLANK: "is invalid",
    MEMBER_EMAIL: "is invalid",
    WEBHOOK_URL: "must be an http or https URL without spaces or control characters",
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


def line(max_length: int = NAME_MAX, pattern: str = SINGLE_LINE) -> Any:
    """One line of text: no control characters, at most max_length characters."""
    return Annotated[str, Field(max_length=max_length, pattern=pattern), AfterValidator(_stripped)]


def text(max_length: int = TEXT_MAX) -> Any:
    """Text that may span lines (tab and line breaks allowed, other control characters not)."""
    return Annotated[str, Field(max_length=max_length, pattern=MULTI_LINE), AfterValidator(_stripped)]


Line = line()
Name = line(pattern=NON_BLANK_LINE)
Text = text()
ExternalId = line(EXTERNAL_ID_MAX)
Language = Annotated[str, Field(max_length=LANGUAGE_MAX, pattern=LANGUAGE_TAG), AfterValidator(canonical_language)]
# A project's or recording's transcription language may also be "auto" (a tag's form already): not fixed, the
# transcription model identifies it and the recording keeps what it found.
AUTO_LANGUAGE = "auto"
Email = line(EMAIL_MAX, EMAIL_OR_BLANK)
MemberEmail = line(EMAIL_MAX, MEMBER_EMAIL)
WebhookUrl = line(URL_MAX, WEBHOOK_URL)
PhoneInput = line(PHONE_INPUT_MAX)
Cost = line(COST_MAX)

# Numbers of a project: beyond these the arithmetic on them (dates, durations) stops making sense.
RetentionDays = Annotated[int, Field(ge=1, le=36_500)]
PauseSeconds = Annotated[int, Field(ge=1, le=86_400)]
Percent = Annotated[float, Field(ge=0, le=100)]
# Any other count or id: what Kubernetes (int64) and the catalog's BIGINT hold, so both modes take the same values.
PositiveInt64 = Annotated[int, Field(ge=1, le=BIGINT_MAX)]
