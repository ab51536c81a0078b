"""The public API over a provider whose answers cannot be read (Twilio's API on a local pytest-httpserver): 502 with
the spec's `{error}`, never a 500, and nothing stored for a purchase whose answer is unreadable."""

from __future__ import annotations

import pytest

from callscope.resources import VirtualNumber
from callscope.services import keys
from callscope.telephony.base import PROVIDER_BAD_ANSWER
from tests.telephony.webhook_world import ACCOUNT_PATH, SID, TOKEN, TWILIO_AUTH, carrier, settings  # noqa: F401

API = "/api/v1/public"
US_PRICES = {"phone_number_prices": [{"number_type": "mobile", "current_price": "1.15"}]}


@pytest.fixture
def catalog_settings() -> dict:
    return {}  # the provider's answers touch no catalog


@pytest.fixture
def provider_settings(httpserver) -> dict:
    return {"number_provider": "twilio", "twilio_account_sid": SID, "twilio_auth_token": TOKEN,
            "twilio_base_url": httpserver.url_for("").rstrip("/"), "virtual_number_purchase_paused": False}


@pytest.fixture
async def admin(runtime) -> dict[str, str]:
    _, key = await keys.create_key(runtime.ctx, "default", "admin", ["read", "write"])
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize("body", ["<html>Service Temporarily Unavailable</html>", "[]",
                                  '{"available_phone_numbers": [{"phone_number": 18089251571}]}'])
async def test_an_unreadable_search_answer_is_502(carrier, admin, httpserver, body):
    httpserver.expect_request(f"{ACCOUNT_PATH}/AvailablePhoneNumbers/US/Mobile.json",
                              headers={"Authorization": TWILIO_AUTH}).respond_with_data(body)
    resp = await carrier.http.get(f"{API}/virtual_numbers/available", headers=admin)
    assert (resp.status_code, resp.json()) == (502, {"error": PROVIDER_BAD_ANSWER})


async def test_an_unreadable_purchase_answer_is_502_and_stores_no_number(carrier, admin, httpserver, runtime):
    runtime.ctx.provider.pricing_base_url = httpserver.url_for("/pricing").rstrip("/")  # no setting of its own
    httpserver.expect_request("/pricing/v1/PhoneNumbers/Countries/US").respond_with_json(US_PRICES)
    httpserver.expect_request(f"{ACCOUNT_PATH}/IncomingPhoneNumbers.json", method="POST").respond_with_data(
        '{"sid": "../../Accounts"}', status=201, content_type="application/json")
    before = runtime.store.cached_list(VirtualNumber, "default")
    resp = await carrier.http.post(f"{API}/virtual_numbers/purchase", json={"phone_number": "+14155550177"},
                                   headers=admin)
    assert (resp.status_code, resp.json()) == (502, {"error": PROVIDER_BAD_ANSWER})
    assert runtime.store.cached_list(VirtualNumber, "default") == before
