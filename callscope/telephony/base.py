"""The phone-number provider interface, its models, and the rules every provider shares.

A provider searches, purchases and releases virtual numbers, and carries their calls: it authenticates its voice
webhooks and hands over (and deletes) call recordings (voice.py holds the provider-neutral call models).

Every upstream rejection is a `ProviderError` (422) with a message a user can read; an outage is
`ProviderUnavailable`, a `ProviderError` subclass with the fixed message `Phone-number provider is unavailable`; an
answer that cannot be read (not JSON, not the documented shape) is `ProviderBadAnswer` (502).

The regulatory rule (a country that needs documents may be bought in only with an approved
requirement group) lives here, in `ProviderBase.purchase` / `ensure_requirement_group`, not in
the providers.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncGenerator
from typing import Literal, Protocol, runtime_checkable

import phonenumbers
from phonenumbers import PhoneNumberType
from pydantic import BaseModel, Field

from callscope.errors import BadGateway, ProviderError
from callscope.telephony.voice import RecordingReady

NumberType = Literal["mobile", "local", "toll-free", "national"]
NUMBER_TYPES: tuple[str, ...] = ("mobile", "local", "toll-free", "national")

RequirementGroupStatus = Literal["approved", "pending", "rejected"]
REQUIREMENT_GROUP_STATUSES: tuple[str, ...] = ("approved", "pending", "rejected")

REQUIREMENT_GROUP_NOT_APPROVED = "Requirement group must be approved before purchasing"
NUMBER_NOT_AVAILABLE = "Phone number is not available"
PROVIDER_UNAVAILABLE = "Phone-number provider is unavailable"
PROVIDER_BAD_ANSWER = "Phone-number provider gave an answer that cannot be read"

# Countries (ISO 3166-1 alpha-2) whose numbers may be purchased only with an approved
# regulatory requirement group (proof of address / identity). Deliberately a small, fixed set.
DOCUMENT_COUNTRIES: frozenset[str] = frozenset({"DE", "FR", "AT", "BE", "IT", "ES", "JP", "AU"})


class ProviderUnavailable(ProviderError):
    """The provider could not be reached or failed (5xx, timeout, bad credentials).

    Kept a 422 `ProviderError` because the spec lists only 422 for the search and purchase
    endpoints (its only 503 is `virtual_number_purchase_paused`); callers that want a 503 can
    catch this subclass.
    """

    def __init__(self, message: str = PROVIDER_UNAVAILABLE):
        super().__init__(message)


class ProviderBadAnswer(BadGateway):
    """The provider answered, but not what its API documents (not JSON, a field missing or of another type)."""

    def __init__(self, message: str = PROVIDER_BAD_ANSWER):
        super().__init__(message)


class RegionInfo(BaseModel):
    region_type: str
    region_name: str


class NumberCandidate(BaseModel):
    phone_number: str = Field(description="E.164")
    country_code: str = Field(description="ISO 3166-1 alpha-2")
    number_type: NumberType
    upfront_cost: str = Field(description="One-time cost, decimal as a string")
    monthly_cost: str = Field(description="Monthly cost, decimal as a string")
    features: list[str] = Field(default_factory=list)
    region_information: list[RegionInfo] = Field(default_factory=list)


class PurchasedNumber(BaseModel):
    phone_number: str
    country_code: str
    number_type: NumberType
    provider: str
    provider_ref: str
    upfront_cost: str
    monthly_cost: str


@runtime_checkable
class NumberProvider(Protocol):
    name: str

    async def search(self, country: str, number_type: str) -> list[NumberCandidate]: ...

    async def purchase(
        self,
        phone_number: str,
        country_code: str | None,
        number_type: str | None,
        requirement_group_id: int | None,
    ) -> PurchasedNumber: ...

    async def requirement_group_status(self, group_id: int) -> RequirementGroupStatus | None: ...

    async def release(self, provider_ref: str) -> None: ...

    def requires_documents(self, country: str) -> bool: ...

    # Voice: the provider's webhooks are read by the API resources of its dialect (`twilio_voice.py` for "twilio").
    voice_dialect: str
    operator_channel: int  # the channel of a two-channel call recording that the answering operator speaks on

    def valid_signature(self, url: str, params: list[tuple[str, str]], given: str | None) -> bool:
        """Whether a webhook request to `url` (as the provider saw it) with these POST parameters is the provider's."""
        ...

    def recording_chunks(self, ready: RecordingReady) -> AsyncGenerator[bytes, None]:
        """The call's recording, streamed from the provider (authenticated)."""
        ...

    async def delete_recording(self, ready: RecordingReady) -> None:
        """Delete the provider's copy of a recording (gone already is fine)."""
        ...


# --- shared helpers ------------------------------------------------------------------------

# phonenumbers types that count as each of our number types. NANP numbers (US, CA, ...) are
# FIXED_LINE_OR_MOBILE: they count as mobile and as local.
PN_TYPES_FOR: dict[str, tuple[int, ...]] = {
    "mobile": (PhoneNumberType.MOBILE, PhoneNumberType.FIXED_LINE_OR_MOBILE),
    "local": (PhoneNumberType.FIXED_LINE, PhoneNumberType.FIXED_LINE_OR_MOBILE),
    "toll-free": (PhoneNumberType.TOLL_FREE,),
    "national": (PhoneNumberType.UAN, PhoneNumberType.SHARED_COST),
}


def number_type_from_pn(pn_type: int) -> str | None:
    """Our number type for a phonenumbers type (FIXED_LINE_OR_MOBILE → local), or None."""
    if pn_type == PhoneNumberType.MOBILE:
        return "mobile"
    if pn_type in (PhoneNumberType.FIXED_LINE, PhoneNumberType.FIXED_LINE_OR_MOBILE):
        return "local"
    if pn_type == PhoneNumberType.TOLL_FREE:
        return "toll-free"
    if pn_type in (PhoneNumberType.UAN, PhoneNumberType.SHARED_COST):
        return "national"
    return None


def normalize_country(country: str | None) -> str:
    """Upper-cased ISO alpha-2 code; ProviderError for anything phonenumbers does not know."""
    code = (country or "").strip().upper()
    if len(code) != 2 or not code.isalpha() or code not in phonenumbers.SUPPORTED_REGIONS:
        raise ProviderError(f"Unknown country code: {country!r}")
    return code


def normalize_number_type(number_type: str | None) -> str:
    value = (number_type or "").strip().lower()
    if value not in NUMBER_TYPES:
        raise ProviderError(f"number_type must be one of {', '.join(NUMBER_TYPES)}")
    return value


def parse_e164(phone_number: str) -> phonenumbers.PhoneNumber:
    """Parse a number that must be written in E.164 (`+` and digits only)."""
    text = (phone_number or "").strip()
    if not text:
        raise ProviderError("phone_number is required")
    try:
        parsed = phonenumbers.parse(text, None)
    except phonenumbers.NumberParseException:
        raise ProviderError("phone_number must be in E.164 format") from None
    if phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164) != text:
        raise ProviderError("phone_number must be in E.164 format")
    return parsed


def requires_documents(country: str) -> bool:
    return (country or "").strip().upper() in DOCUMENT_COUNTRIES


async def ensure_requirement_group(
    provider: NumberProvider, country: str, requirement_group_id: int | None
) -> None:
    """The one place of the regulatory rule.

    A country that needs documents needs an approved requirement group; a requirement group
    passed for any country must be approved (pending, rejected or unknown groups are refused).
    """
    if requirement_group_id is None:
        if provider.requires_documents(country):
            raise ProviderError(REQUIREMENT_GROUP_NOT_APPROVED)
        return
    status = await provider.requirement_group_status(requirement_group_id)
    if status != "approved":
        raise ProviderError(REQUIREMENT_GROUP_NOT_APPROVED)


class ProviderBase(abc.ABC):
    """Input checks and the regulatory rule shared by every provider; subclasses do the I/O."""

    name: str = "base"

    def requires_documents(self, country: str) -> bool:
        return requires_documents(country)

    async def search(self, country: str, number_type: str) -> list[NumberCandidate]:
        return await self._search(normalize_country(country), normalize_number_type(number_type))

    async def purchase(
        self,
        phone_number: str,
        country_code: str | None = None,
        number_type: str | None = None,
        requirement_group_id: int | None = None,
    ) -> PurchasedNumber:
        parsed = parse_e164(phone_number)
        e164 = phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)
        region = phonenumbers.region_code_for_number(parsed)
        if region not in phonenumbers.SUPPORTED_REGIONS:  # None, or "001" for global services
            region = None
        given = normalize_country(country_code) if country_code else None
        wrong_code = given and phonenumbers.country_code_for_region(given) != parsed.country_code
        if given and (wrong_code or (region and given != region)):
            raise ProviderError(f"Phone number {e164} does not belong to country {given}")
        # A number outside phonenumbers' known ranges has no region; take the calling code's main one.
        country = given or region or phonenumbers.region_code_for_country_code(parsed.country_code)
        if country not in phonenumbers.SUPPORTED_REGIONS:
            raise ProviderError(f"Cannot tell the country of {e164}; pass country_code")
        if number_type is not None:
            kind = normalize_number_type(number_type)
        else:
            kind = number_type_from_pn(phonenumbers.number_type(parsed)) or "local"
        await ensure_requirement_group(self, country, requirement_group_id)
        return await self._purchase(e164, parsed, country, kind, requirement_group_id)

    @abc.abstractmethod
    async def _search(self, country: str, number_type: str) -> list[NumberCandidate]: ...

    @abc.abstractmethod
    async def _purchase(
        self,
        phone_number: str,
        parsed: phonenumbers.PhoneNumber,
        country: str,
        number_type: str,
        requirement_group_id: int | None,
    ) -> PurchasedNumber: ...

    @abc.abstractmethod
    async def requirement_group_status(self, group_id: int) -> RequirementGroupStatus | None: ...

    @abc.abstractmethod
    async def release(self, provider_ref: str) -> None: ...
