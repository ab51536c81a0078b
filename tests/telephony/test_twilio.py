"""TwilioProvider against a real local HTTP server (pytest-httpserver) standing in for Twilio."""

from __future__ import annotations

import base64
import logging

import httpx
import pytest
from pytest_httpserver import HTTPServer
from structlog.testing import capture_logs

from callscope.errors import ProviderError
from callscope.telephony.base import (
    PROVIDER_BAD_ANSWER,
    PROVIDER_UNAVAILABLE,
    REQUIREMENT_GROUP_NOT_APPROVED,
    NumberCandidate,
    NumberProvider,
    ProviderBadAnswer,
    ProviderUnavailable,
    RegionInfo,
)
from callscope.telephony.twilio import TwilioProvider
from callscope.telephony.twilio_voice import signature
from callscope.telephony.voice import RecordingReady

SID = "AC0123456789abcdef0123456789abcdef"
TOKEN = "s3cret-auth-token"
AUTH = "Basic " + base64.b64encode(f"{SID}:{TOKEN}".encode()).decode()
ACCOUNT = f"/2010-04-01/Accounts/{SID}"

US_PRICES = {
    "country": "United States",
    "iso_country": "US",
    "price_unit": "USD",
    "phone_number_prices": [
        {"number_type": "local", "base_price": "1.15", "current_price": "1.15"},
        {"number_type": "toll free", "base_price": "2.15", "current_price": "2.15"},
    ],
}
DE_PRICES = {
    "iso_country": "DE",
    "phone_number_prices": [
        {"number_type": "mobile", "base_price": "12.00", "current_price": "12.0"},
        {"number_type": "local", "base_price": "1.00", "current_price": "1.00"},
    ],
}
AVAILABLE = {
    "available_phone_numbers": [
        {
            "friendly_name": "(808) 925-1571",
            "phone_number": "+18089251571",
            "lata": "834",
            "locality": "Hilo",
            "rate_center": "HILO",
            "latitude": "19.720000",
            "longitude": "-155.090000",
            "region": "HI",
            "postal_code": "96720",
            "iso_country": "US",
            "address_requirements": "none",
            "beta": False,
            "capabilities": {"voice": True, "SMS": True, "MMS": False, "fax": False},
        },
        {
            "friendly_name": "(808) 925-5327",
            "phone_number": "+18089255327",
            "locality": None,
            "rate_center": None,
            "region": "HI",
            "iso_country": "US",
            "capabilities": {"voice": True, "SMS": False, "MMS": False},
        },
    ],
    "uri": f"{ACCOUNT}/AvailablePhoneNumbers/US/Local.json",
}


@pytest.fixture
async def provider(httpserver: HTTPServer):
    url = httpserver.url_for("").rstrip("/")
    p = TwilioProvider(
        SID,
        TOKEN,
        base_url=url,
        bundle_sids={7: "BU_approved", 8: "BU_pending", 9: "BU_rejected", 10: "BU_gone"},
        numbers_base_url=url + "/numbers",
        pricing_base_url=url + "/pricing",
        timeout=2.0,
    )
    yield p
    await p.aclose()


def _expect(httpserver: HTTPServer, path: str, method: str = "GET", **kwargs):
    return httpserver.expect_oneshot_request(path, method=method, headers={"Authorization": AUTH}, **kwargs)


def test_is_a_number_provider(provider):
    assert isinstance(provider, NumberProvider)
    assert provider.name == "twilio"
    assert TOKEN not in repr(provider)


async def test_search_maps_available_numbers(provider, httpserver):
    _expect(httpserver, f"{ACCOUNT}/AvailablePhoneNumbers/US/Local.json", query_string="PageSize=10").respond_with_json(
        AVAILABLE
    )
    _expect(httpserver, "/pricing/v1/PhoneNumbers/Countries/US").respond_with_json(US_PRICES)

    candidates = await provider.search("us", "local")

    httpserver.check_assertions()
    assert candidates == [
        NumberCandidate(
            phone_number="+18089251571",
            country_code="US",
            number_type="local",
            upfront_cost="0.00",
            monthly_cost="1.15",
            features=["voice", "sms"],
            region_information=[
                RegionInfo(region_type="locality", region_name="Hilo"),
                RegionInfo(region_type="region", region_name="HI"),
                RegionInfo(region_type="rate_center", region_name="HILO"),
            ],
        ),
        NumberCandidate(
            phone_number="+18089255327",
            country_code="US",
            number_type="local",
            upfront_cost="0.00",
            monthly_cost="1.15",
            features=["voice"],
            region_information=[RegionInfo(region_type="region", region_name="HI")],
        ),
    ]


@pytest.mark.parametrize(
    ("number_type", "segment", "price"),
    [("mobile", "Mobile", "12.00"), ("toll-free", "TollFree", "2.15"), ("national", "National", None)],
)
async def test_search_type_paths_and_pricing(provider, httpserver, number_type, segment, price):
    country = "DE" if number_type == "mobile" else "US"
    _expect(httpserver, f"{ACCOUNT}/AvailablePhoneNumbers/{country}/{segment}.json").respond_with_json(AVAILABLE)
    _expect(httpserver, f"/pricing/v1/PhoneNumbers/Countries/{country}").respond_with_json(
        DE_PRICES if country == "DE" else US_PRICES
    )
    if price is None:
        with pytest.raises(ProviderError, match="No national numbers are offered in US"):
            await provider.search(country, number_type)
    else:
        candidates = await provider.search(country, number_type)
        assert {c.monthly_cost for c in candidates} == {price}
        assert {c.number_type for c in candidates} == {number_type}
    httpserver.check_assertions()


async def test_pricing_is_cached_per_country(provider, httpserver):
    for _ in range(2):
        _expect(httpserver, f"{ACCOUNT}/AvailablePhoneNumbers/US/Local.json").respond_with_json(AVAILABLE)
    _expect(httpserver, "/pricing/v1/PhoneNumbers/Countries/US").respond_with_json(US_PRICES)
    await provider.search("US", "local")
    await provider.search("US", "local")
    httpserver.check_assertions()
    assert len(httpserver.log) == 3


async def test_empty_search_needs_no_pricing(provider, httpserver):
    _expect(httpserver, f"{ACCOUNT}/AvailablePhoneNumbers/GB/Mobile.json").respond_with_json(
        {"available_phone_numbers": []}
    )
    assert await provider.search("GB", "mobile") == []
    assert len(httpserver.log) == 1


async def test_search_4xx_gives_twilios_message(provider, httpserver):
    _expect(httpserver, f"{ACCOUNT}/AvailablePhoneNumbers/US/Local.json").respond_with_json(
        {"code": 21452, "message": "AreaCode must be a valid area code", "more_info": "https://x", "status": 400},
        status=400,
    )
    with pytest.raises(ProviderError) as err:
        await provider.search("US", "local")
    assert err.value.errors == ["AreaCode must be a valid area code"]
    assert not isinstance(err.value, ProviderUnavailable)


async def test_search_404_gives_a_readable_message(provider, httpserver):
    _expect(httpserver, f"{ACCOUNT}/AvailablePhoneNumbers/GB/TollFree.json").respond_with_json(
        {"code": 20404, "message": f"The requested resource {ACCOUNT}/... was not found", "status": 404},
        status=404,
    )
    with pytest.raises(ProviderError) as err:
        await provider.search("GB", "toll-free")
    assert err.value.errors == ["No toll-free numbers are offered in GB"]


async def test_search_rejects_bad_input_without_calling(provider, httpserver):
    with pytest.raises(ProviderError, match="Unknown country"):
        await provider.search("XX", "local")
    with pytest.raises(ProviderError, match="number_type must be one of"):
        await provider.search("US", "fax")
    assert httpserver.log == []


@pytest.mark.parametrize("status", [500, 503, 401, 429])
async def test_5xx_and_credentials_give_unavailable(provider, httpserver, status, caplog):
    _expect(httpserver, f"{ACCOUNT}/AvailablePhoneNumbers/US/Local.json").respond_with_json(
        {"code": 20500, "message": "Internal Server Error", "status": status}, status=status
    )
    with capture_logs() as logs, caplog.at_level(logging.DEBUG), pytest.raises(ProviderUnavailable) as err:
        await provider.search("US", "local")
    assert err.value.errors == [PROVIDER_UNAVAILABLE]
    assert err.value.status == 422 and isinstance(err.value, ProviderError)
    [warning] = [e for e in logs if e["event"] == "twilio_unavailable"]
    assert (warning["log_level"], warning["status"]) == ("warning", status)
    assert TOKEN not in caplog.text and TOKEN not in repr(logs)  # ours (structlog) and httpx's (the standard library)


async def test_timeout_and_connection_errors_give_unavailable(httpserver, caplog):
    def slow(request):
        import time

        time.sleep(0.6)
        from werkzeug import Response

        return Response("{}", content_type="application/json")

    httpserver.expect_request(f"{ACCOUNT}/AvailablePhoneNumbers/US/Local.json").respond_with_handler(slow)
    slow_provider = TwilioProvider(SID, TOKEN, base_url=httpserver.url_for("").rstrip("/"), timeout=0.2)
    with capture_logs() as logs, caplog.at_level(logging.DEBUG):
        with pytest.raises(ProviderUnavailable):
            await slow_provider.search("US", "local")
        await slow_provider.aclose()

        async with httpx.AsyncClient() as client:
            down = TwilioProvider(SID, TOKEN, base_url="http://127.0.0.1:9", client=client)
            with pytest.raises(ProviderError, match=PROVIDER_UNAVAILABLE):
                await down.search("US", "local")
    assert [(e["event"], e["log_level"], e["error"]) for e in logs] == [
        ("twilio_request_failed", "warning", "ReadTimeout"), ("twilio_request_failed", "warning", "ConnectError")]
    assert TOKEN not in caplog.text and TOKEN not in repr(logs)


async def test_purchase_posts_the_number(provider, httpserver):
    _expect(httpserver, "/pricing/v1/PhoneNumbers/Countries/US").respond_with_json(US_PRICES)
    _expect(httpserver, f"{ACCOUNT}/IncomingPhoneNumbers.json", method="POST").respond_with_json(
        {"sid": "PN0123456789abcdef0123456789abcdef", "phone_number": "+18089251571", "account_sid": SID},
        status=201,
    )
    bought = await provider.purchase("+18089251571", "US", "local", None)
    httpserver.check_assertions()
    request = httpserver.log[-1][0]
    assert request.content_type.startswith("application/x-www-form-urlencoded")
    assert request.form.to_dict() == {"PhoneNumber": "+18089251571"}
    assert bought.model_dump() == {
        "phone_number": "+18089251571",
        "country_code": "US",
        "number_type": "local",
        "provider": "twilio",
        "provider_ref": "PN0123456789abcdef0123456789abcdef",
        "upfront_cost": "0.00",
        "monthly_cost": "1.15",
    }


async def test_purchase_with_approved_bundle(provider, httpserver):
    _expect(httpserver, "/numbers/v2/RegulatoryCompliance/Bundles/BU_approved").respond_with_json(
        {"sid": "BU_approved", "status": "twilio-approved"}
    )
    _expect(httpserver, "/pricing/v1/PhoneNumbers/Countries/DE").respond_with_json(DE_PRICES)
    _expect(httpserver, f"{ACCOUNT}/IncomingPhoneNumbers.json", method="POST").respond_with_json(
        {"sid": "PN" + "de" * 16, "phone_number": "+4915123456789"}, status=201
    )
    bought = await provider.purchase("+4915123456789", None, None, 7)
    httpserver.check_assertions()
    assert httpserver.log[-1][0].form.to_dict() == {"PhoneNumber": "+4915123456789", "BundleSid": "BU_approved"}
    assert (bought.country_code, bought.number_type, bought.monthly_cost) == ("DE", "mobile", "12.00")


@pytest.mark.parametrize(
    ("twilio_status", "expected"),
    [
        ("twilio-approved", "approved"),
        ("pending-review", "pending"),
        ("in-review", "pending"),
        ("draft", "pending"),
        ("twilio-rejected", "rejected"),
        ("something-new", None),
    ],
)
async def test_requirement_group_status_maps_bundles(provider, httpserver, twilio_status, expected):
    _expect(httpserver, "/numbers/v2/RegulatoryCompliance/Bundles/BU_pending").respond_with_json(
        {"sid": "BU_pending", "status": twilio_status}
    )
    assert await provider.requirement_group_status(8) == expected
    httpserver.check_assertions()


async def test_requirement_group_status_unknown(provider, httpserver):
    assert await provider.requirement_group_status(1234) is None  # no bundle mapped: no request
    assert httpserver.log == []
    _expect(httpserver, "/numbers/v2/RegulatoryCompliance/Bundles/BU_gone").respond_with_json(
        {"code": 20404, "message": "not found"}, status=404
    )
    assert await provider.requirement_group_status(10) is None


@pytest.mark.parametrize(
    ("group", "bundle_status"), [(None, None), (8, "pending-review"), (9, "twilio-rejected"), (55, None)]
)
async def test_document_country_needs_approved_bundle(provider, httpserver, group, bundle_status):
    if bundle_status:
        sid = provider.bundle_sids[group]
        _expect(httpserver, f"/numbers/v2/RegulatoryCompliance/Bundles/{sid}").respond_with_json(
            {"sid": sid, "status": bundle_status}
        )
    with pytest.raises(ProviderError) as err:
        await provider.purchase("+4930123456", "DE", "local", group)
    assert err.value.errors == [REQUIREMENT_GROUP_NOT_APPROVED]
    assert all("IncomingPhoneNumbers" not in req.path for req, _ in httpserver.log)


async def test_purchase_4xx_gives_twilios_message(provider, httpserver):
    _expect(httpserver, "/pricing/v1/PhoneNumbers/Countries/US").respond_with_json(US_PRICES)
    _expect(httpserver, f"{ACCOUNT}/IncomingPhoneNumbers.json", method="POST").respond_with_json(
        {"code": 21422, "message": "Phone number +18089251571 is not available", "status": 400}, status=400
    )
    with pytest.raises(ProviderError) as err:
        await provider.purchase("+18089251571", "US", "local", None)
    assert err.value.errors == ["Phone number +18089251571 is not available"]


async def test_purchase_5xx_gives_unavailable(provider, httpserver):
    _expect(httpserver, "/pricing/v1/PhoneNumbers/Countries/US").respond_with_json(US_PRICES)
    _expect(httpserver, f"{ACCOUNT}/IncomingPhoneNumbers.json", method="POST").respond_with_data(
        "<html>bad gateway</html>", status=502
    )
    with pytest.raises(ProviderUnavailable):
        await provider.purchase("+18089251571", "US", "local", None)


async def test_release_deletes_the_incoming_number(provider, httpserver):
    _expect(httpserver, f"{ACCOUNT}/IncomingPhoneNumbers/PNabc.json", method="DELETE").respond_with_data("", status=204)
    assert await provider.release("PNabc") is None
    httpserver.check_assertions()
    _expect(httpserver, f"{ACCOUNT}/IncomingPhoneNumbers/PNgone.json", method="DELETE").respond_with_json(
        {"code": 20404, "message": "The requested resource was not found", "status": 404}, status=404
    )
    with pytest.raises(ProviderError, match="not found"):
        await provider.release("PNgone")


# An answer that is not what Twilio documents: not JSON, nested past any parser's depth, of another shape, or
# with a value the service would pass on (a number, a SID that becomes a URL path, a price).
UNREADABLE = ["<html>502 Bad Gateway</html>", "", "[" * 100_000, "[]", '"text"', "null"]
SEARCH_ANSWERS = [*UNREADABLE, '{"available_phone_numbers": "none"}', '{"available_phone_numbers": [{}]}',
                  '{"available_phone_numbers": [{"phone_number": "+1808\\u00009251571"}]}',
                  '{"available_phone_numbers": [{"phone_number": "+18089251571", "iso_country": "U S"}]}',
                  '{"available_phone_numbers": [{"phone_number": "+18089251571", "locality": 7}]}']
PRICING_ANSWERS = [*UNREADABLE, '{"phone_number_prices": {}}',
                   '{"phone_number_prices": [{"number_type": "local", "current_price": "NaN"}]}',
                   '{"phone_number_prices": [{"number_type": "local", "current_price": "1e999999"}]}',
                   '{"phone_number_prices": [{"number_type": "local", "current_price": [1]}]}']
PURCHASE_ANSWERS = [*UNREADABLE, "{}", '{"sid": "../../Accounts/AC1"}', '{"sid": 7}',
                    '{"sid": "PN0123456789abcdef0123456789abcdef", "phone_number": "+1 808"}']


@pytest.mark.parametrize("body", SEARCH_ANSWERS)
async def test_a_search_answer_that_cannot_be_read_is_a_bad_answer(provider, httpserver, body):
    _expect(httpserver, f"{ACCOUNT}/AvailablePhoneNumbers/US/Local.json").respond_with_data(
        body, content_type="application/json")
    _expect(httpserver, "/pricing/v1/PhoneNumbers/Countries/US").respond_with_json(US_PRICES)
    with pytest.raises(ProviderBadAnswer) as err:
        await provider.search("US", "local")
    assert (err.value.status, err.value.message) == (502, PROVIDER_BAD_ANSWER)


@pytest.mark.parametrize("body", PRICING_ANSWERS)
async def test_a_pricing_answer_that_cannot_be_read_is_a_bad_answer(provider, httpserver, body):
    _expect(httpserver, f"{ACCOUNT}/AvailablePhoneNumbers/US/Local.json").respond_with_json(AVAILABLE)
    _expect(httpserver, "/pricing/v1/PhoneNumbers/Countries/US").respond_with_data(
        body, content_type="application/json")
    with pytest.raises(ProviderBadAnswer):
        await provider.search("US", "local")


@pytest.mark.parametrize("body", PURCHASE_ANSWERS)
async def test_a_purchase_answer_that_cannot_be_read_is_a_bad_answer(provider, httpserver, body, caplog):
    _expect(httpserver, "/pricing/v1/PhoneNumbers/Countries/US").respond_with_json(US_PRICES)
    _expect(httpserver, f"{ACCOUNT}/IncomingPhoneNumbers.json", method="POST").respond_with_data(
        body, status=201, content_type="application/json")
    with capture_logs() as logs, caplog.at_level(logging.WARNING), pytest.raises(ProviderBadAnswer):
        await provider.purchase("+18089251571", "US", "local", None)
    [warning] = [e for e in logs if e["event"] == "twilio_answer_unreadable"]
    assert warning["log_level"] == "warning" and (warning["method"], warning["status"]) == ("POST", 201)
    assert warning["url"].endswith("IncomingPhoneNumbers.json")
    assert TOKEN not in caplog.text and TOKEN not in repr(logs)


@pytest.mark.parametrize("body", [*UNREADABLE, '{"status": ["twilio-approved"]}'])
async def test_a_bundle_answer_that_cannot_be_read_is_a_bad_answer(provider, httpserver, body):
    _expect(httpserver, "/numbers/v2/RegulatoryCompliance/Bundles/BU_pending").respond_with_data(
        body, content_type="application/json")
    with pytest.raises(ProviderBadAnswer):
        await provider.requirement_group_status(8)


@pytest.mark.parametrize("body", [*UNREADABLE, '{"message": ["a"]}', '{"message": "two\\nlines"}',
                                  '{"message": "' + "x" * 501 + '"}'])
async def test_a_refusal_that_cannot_be_read_gets_a_message_of_its_own(provider, httpserver, body):
    _expect(httpserver, f"{ACCOUNT}/IncomingPhoneNumbers/PNabc.json", method="DELETE").respond_with_data(
        body, status=400, content_type="application/json")
    with pytest.raises(ProviderError) as err:
        await provider.release("PNabc")
    assert err.value.errors == ["Phone-number provider rejected the request (HTTP 400)"]


async def test_unexpected_request_fails_loudly(provider, httpserver):
    # No expectation registered: the server answers 500, which must read as unavailable, not crash.
    with pytest.raises(ProviderUnavailable):
        await provider.release("PNnone")
    httpserver.clear_log()
    httpserver.clear_assertions()


# --- voice: recordings ------------------------------------------------------------------------------------------

RECORDING = RecordingReady(call_id="CA1", recording_id="RE0123", completed=True, channels=2, duration=3)


async def _download(provider) -> bytes:
    return b"".join([chunk async for chunk in provider.recording_chunks(RECORDING)])


async def test_recording_is_fetched_from_the_configured_api_with_both_channels(provider, httpserver):
    _expect(httpserver, f"{ACCOUNT}/Recordings/RE0123.wav", query_string="RequestedChannels=2").respond_with_data(
        b"RIFF...WAVE", content_type="audio/x-wav")
    assert await _download(provider) == b"RIFF...WAVE"
    httpserver.check_assertions()


async def test_a_recording_redirected_to_another_host_is_fetched_without_the_credentials(provider, httpserver):
    media = HTTPServer(host="127.0.0.1", port=0)
    media.start()
    try:
        media.expect_oneshot_request("/media/RE0123.wav").respond_with_data(b"RIFF...WAVE")
        _expect(httpserver, f"{ACCOUNT}/Recordings/RE0123.wav").respond_with_data(
            b"", status=302, headers={"Location": media.url_for("/media/RE0123.wav")})
        assert await _download(provider) == b"RIFF...WAVE"
        [(request, _)] = media.log
        assert "Authorization" not in request.headers
    finally:
        media.clear()
        media.stop()


@pytest.mark.parametrize(("status", "error"), [(500, ProviderUnavailable), (401, ProviderUnavailable),
                                               (404, ProviderError)])
async def test_recording_download_failures_are_typed(provider, httpserver, status, error):
    _expect(httpserver, f"{ACCOUNT}/Recordings/RE0123.wav").respond_with_data(b"{}", status=status)
    with pytest.raises(error):
        await _download(provider)


async def test_recording_delete_tolerates_a_copy_gone_already(provider, httpserver):
    _expect(httpserver, f"{ACCOUNT}/Recordings/RE0123.json", method="DELETE").respond_with_data(b"", status=204)
    _expect(httpserver, f"{ACCOUNT}/Recordings/RE0123.json", method="DELETE").respond_with_data(b"", status=404)
    await provider.delete_recording(RECORDING)
    await provider.delete_recording(RECORDING)
    httpserver.check_assertions()
    _expect(httpserver, f"{ACCOUNT}/Recordings/RE0123.json", method="DELETE").respond_with_data(b"", status=503)
    with pytest.raises(ProviderUnavailable):
        await provider.delete_recording(RECORDING)


def test_webhooks_are_signed_with_the_auth_token(provider):
    params = [("CallSid", "CA1"), ("To", "+14155550100")]
    url = "https://callscope.example/telephony/twilio/voice"
    assert provider.valid_signature(url, params, signature(TOKEN, url, params))
    assert not provider.valid_signature(url, params, signature("another-token", url, params))
