"""Twilio adapter on its REST API (httpx, HTTP basic auth with the account SID and auth token).

Searches numbers (prices from Twilio's Pricing API, cached per country for an hour), buys and releases them,
reads a regulatory bundle's status, and fetches and deletes a call's recording from a URL built from the configured
base and the RecordingSid, never taken from a webhook. An answer not of the documented shape is ProviderBadAnswer
(502); a 4xx is ProviderError with Twilio's message; 5xx, timeouts, connection errors, 401 and 429 are
ProviderUnavailable. The auth token is never logged. The endpoints: docs/phone-calls.md.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from decimal import Decimal
from typing import Annotated, Any, TypeVar

import httpx
import phonenumbers
import structlog
from pydantic import BaseModel, Field, ValidationError

from callscope.errors import ProviderError
from callscope.telephony.base import (
    NumberCandidate,
    ProviderBadAnswer,
    ProviderBase,
    ProviderUnavailable,
    PurchasedNumber,
    RegionInfo,
    RequirementGroupStatus,
)
from callscope.telephony.twilio_voice import E164, TwilioVoice, sid
from callscope.telephony.voice import RecordingReady
from callscope.validation import line

log = structlog.get_logger()

_TYPE_PATHS = {"mobile": "Mobile", "local": "Local", "toll-free": "TollFree", "national": "National"}
_PRICING_TYPES = {"mobile": "mobile", "local": "local", "toll-free": "toll free", "national": "national"}
_BUNDLE_STATUSES: dict[str, RequirementGroupStatus] = {
    "twilio-approved": "approved",
    "provisionally-approved": "pending",
    "pending-review": "pending",
    "in-review": "pending",
    "draft": "pending",
    "twilio-rejected": "rejected",
}
_REGION_FIELDS = ("locality", "region", "rate_center")  # region_information entries, by Twilio's own names
PAGE_SIZE = 10
PRICING_TTL_S = 3600.0
UPFRONT_COST = "0.00"
PhoneNumberSid = sid("PN")


# ----- Twilio's answers, as far as they are read ---------------------------------------------------

class _Available(BaseModel):
    phone_number: E164
    iso_country: Annotated[str, Field(pattern=r"^[A-Za-z]{2}$")] | None = None
    locality: str | None = None
    region: str | None = None
    rate_center: str | None = None
    capabilities: dict[str, bool | None] = Field(default_factory=dict)


class _AvailablePage(BaseModel):
    available_phone_numbers: list[_Available] | None = None


Price = Annotated[Decimal, Field(ge=0, lt=1_000_000, allow_inf_nan=False)]


class _NumberPrice(BaseModel):
    number_type: str = ""
    current_price: Price | None = None
    base_price: Price | None = None


class _CountryPrices(BaseModel):
    phone_number_prices: list[_NumberPrice] | None = None


class _IncomingNumber(BaseModel):
    sid: PhoneNumberSid  # it becomes the URL path of the number's release
    phone_number: E164 | None = None


class _Bundle(BaseModel):
    status: str = ""


class _Refusal(BaseModel):
    message: line(500) | None = None  # type: ignore[valid-type]  # shown to the user as it is


M = TypeVar("M", bound=BaseModel)


def _read(response: httpx.Response, model: type[M]) -> M:
    try:
        return model.model_validate_json(response.content)
    except ValidationError:
        log.warning("twilio_answer_unreadable", method=response.request.method, url=str(response.request.url),
                    status=response.status_code)
        raise ProviderBadAnswer() from None


class TwilioProvider(TwilioVoice, ProviderBase):
    name = "twilio"

    def __init__(
        self,
        account_sid: str,
        auth_token: str,
        base_url: str = "https://api.twilio.com",
        bundle_sids: dict[int, str] | None = None,
        client: httpx.AsyncClient | None = None,
        numbers_base_url: str = "https://numbers.twilio.com",
        pricing_base_url: str = "https://pricing.twilio.com",
        timeout: float = 15.0,
    ):
        if not account_sid or not auth_token:
            raise ValueError("Twilio needs an account SID and an auth token")
        self.account_sid = account_sid
        self._auth_token = auth_token
        self._auth = httpx.BasicAuth(account_sid, auth_token)
        self.base_url = base_url.rstrip("/")
        self.numbers_base_url = numbers_base_url.rstrip("/")
        self.pricing_base_url = pricing_base_url.rstrip("/")
        self.bundle_sids = {int(k): v for k, v in (bundle_sids or {}).items()}
        self._own_client = client is None
        self._client = client or httpx.AsyncClient(timeout=timeout)
        self._prices: dict[str, tuple[float, dict[str, str]]] = {}

    def __repr__(self) -> str:  # never show the token
        return f"TwilioProvider(account_sid={self.account_sid!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        if self._own_client:
            await self._client.aclose()

    # --- HTTP -------------------------------------------------------------------------------

    @property
    def _account_url(self) -> str:
        return f"{self.base_url}/2010-04-01/Accounts/{self.account_sid}"

    async def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """Send one request; map failures. Returns the response for 2xx and 404 (caller decides)."""
        try:
            response = await self._client.request(method, url, auth=self._auth, **kwargs)
        except httpx.HTTPError as exc:
            log.warning("twilio_request_failed", method=method, url=url, error=type(exc).__name__)
            raise ProviderUnavailable() from None
        if response.is_success or response.status_code == 404:
            return response
        message = _twilio_message(response)
        if response.status_code >= 500 or response.status_code in (401, 429):
            log.warning("twilio_unavailable", method=method, url=url, status=response.status_code, error=message)
            raise ProviderUnavailable()
        raise ProviderError(message)

    # --- voice -------------------------------------------------------------------------------

    def _voice_credentials(self) -> tuple[str, str]:
        return self.account_sid, self._auth_token

    def _recording_resource(self, ready: RecordingReady) -> str:
        return f"{self._account_url}/Recordings/{ready.recording_id}"

    async def recording_chunks(self, ready: RecordingReady) -> AsyncGenerator[bytes, None]:
        """The recording as WAV, streamed (both channels of a dual-channel recording)."""
        query = {"RequestedChannels": "2"} if ready.channels == 2 else {}
        url = self._recording_resource(ready) + ".wav"
        try:
            # A redirect to another host (Twilio's media store) drops the credentials (httpx's rule).
            async with self._client.stream("GET", url, params=query, auth=self._auth,
                                           follow_redirects=True) as response:
                _check_recording(response, "GET", url)
                async for chunk in response.aiter_bytes():
                    yield chunk
        except httpx.HTTPError as exc:
            log.warning("twilio_recording_download_failed", url=url, error=type(exc).__name__)
            raise ProviderUnavailable() from None

    async def delete_recording(self, ready: RecordingReady) -> None:
        url = self._recording_resource(ready) + ".json"
        try:
            response = await self._client.delete(url, auth=self._auth)
        except httpx.HTTPError as exc:
            log.warning("twilio_recording_delete_failed", url=url, error=type(exc).__name__)
            raise ProviderUnavailable() from None
        if response.status_code != 404:  # already gone is what we wanted
            _check_recording(response, "DELETE", url)

    # --- pricing ----------------------------------------------------------------------------

    async def _monthly_prices(self, country: str) -> dict[str, str]:
        cached = self._prices.get(country)
        if cached and time.monotonic() - cached[0] < PRICING_TTL_S:
            return cached[1]
        response = await self._request("GET", f"{self.pricing_base_url}/v1/PhoneNumbers/Countries/{country}")
        prices: dict[str, str] = {}
        if response.status_code != 404:
            for entry in _read(response, _CountryPrices).phone_number_prices or []:
                price = entry.current_price or entry.base_price
                if entry.number_type and price is not None:
                    prices[entry.number_type.lower()] = str(price.quantize(Decimal("0.01")))
        self._prices[country] = (time.monotonic(), prices)
        return prices

    async def _monthly_cost(self, country: str, number_type: str) -> str:
        prices = await self._monthly_prices(country)
        price = prices.get(_PRICING_TYPES[number_type])
        if price is None:
            raise ProviderError(f"No {number_type} numbers are offered in {country}")
        return price

    # --- provider ---------------------------------------------------------------------------

    async def _search(self, country: str, number_type: str) -> list[NumberCandidate]:
        url = f"{self._account_url}/AvailablePhoneNumbers/{country}/{_TYPE_PATHS[number_type]}.json"
        response = await self._request("GET", url, params={"PageSize": PAGE_SIZE})
        if response.status_code == 404:
            raise ProviderError(f"No {number_type} numbers are offered in {country}")
        entries = _read(response, _AvailablePage).available_phone_numbers or []
        if not entries:
            return []
        monthly = await self._monthly_cost(country, number_type)
        return [_candidate(entry, country, number_type, monthly) for entry in entries[:PAGE_SIZE]]

    async def _purchase(
        self,
        phone_number: str,
        parsed: phonenumbers.PhoneNumber,
        country: str,
        number_type: str,
        requirement_group_id: int | None,
    ) -> PurchasedNumber:
        monthly = await self._monthly_cost(country, number_type)
        form = {"PhoneNumber": phone_number}
        if requirement_group_id is not None and requirement_group_id in self.bundle_sids:
            form["BundleSid"] = self.bundle_sids[requirement_group_id]
        response = await self._request("POST", f"{self._account_url}/IncomingPhoneNumbers.json", data=form)
        if response.status_code == 404:
            raise ProviderError(_twilio_message(response))
        body = _read(response, _IncomingNumber)
        return PurchasedNumber(
            phone_number=body.phone_number or phone_number,
            country_code=country,
            number_type=number_type,  # type: ignore[arg-type]
            provider=self.name,
            provider_ref=body.sid,
            upfront_cost=UPFRONT_COST,
            monthly_cost=monthly,
        )

    async def requirement_group_status(self, group_id: int) -> RequirementGroupStatus | None:
        bundle_sid = self.bundle_sids.get(group_id)
        if bundle_sid is None:
            return None
        response = await self._request("GET", f"{self.numbers_base_url}/v2/RegulatoryCompliance/Bundles/{bundle_sid}")
        if response.status_code == 404:
            return None
        return _BUNDLE_STATUSES.get(_read(response, _Bundle).status)

    async def release(self, provider_ref: str) -> None:
        response = await self._request("DELETE", f"{self._account_url}/IncomingPhoneNumbers/{provider_ref}.json")
        if response.status_code == 404:
            raise ProviderError("Phone number not found at the provider")


def _twilio_message(response: httpx.Response) -> str:
    try:
        message = _Refusal.model_validate_json(response.content).message
    except ValidationError:
        message = None
    return message or f"Phone-number provider rejected the request (HTTP {response.status_code})"


def _candidate(entry: _Available, country: str, number_type: str, monthly: str) -> NumberCandidate:
    return NumberCandidate(
        phone_number=entry.phone_number,
        country_code=(entry.iso_country or country).upper(),
        number_type=number_type,  # type: ignore[arg-type]
        upfront_cost=UPFRONT_COST,
        monthly_cost=monthly,
        features=[name.lower() for name, enabled in entry.capabilities.items() if enabled],
        region_information=[RegionInfo(region_type=field, region_name=value)
                            for field in _REGION_FIELDS if (value := getattr(entry, field))],
    )


def _check_recording(response: httpx.Response, method: str, url: str) -> None:
    if response.is_success:
        return
    log.warning("twilio_recording_refused", method=method, url=url, status=response.status_code)
    if response.status_code >= 500 or response.status_code in (401, 429):
        raise ProviderUnavailable()
    raise ProviderError(f"The provider refused the recording (HTTP {response.status_code})")
