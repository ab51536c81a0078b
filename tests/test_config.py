"""Settings derived from others: the public base URL follows the address served unless it is set; the trusted
proxies are addresses and networks, checked on start."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from callscope.config import Settings


@pytest.mark.parametrize(("host", "port", "expected"), [
    ("127.0.0.1", 9123, "http://127.0.0.1:9123"),
    ("0.0.0.0", 8081, "http://127.0.0.1:8081"),
    ("::", 8082, "http://[::1]:8082"),
    ("::1", 8083, "http://[::1]:8083"),
    ("calls.internal", 80, "http://calls.internal:80"),
])
def test_unset_public_base_url_is_the_address_served(monkeypatch, host, port, expected):
    monkeypatch.delenv("CALLSCOPE_PUBLIC_BASE_URL", raising=False)
    assert Settings(host=host, port=port).base_url == expected


def test_a_set_public_base_url_wins_without_its_trailing_slash():
    settings = Settings(host="0.0.0.0", port=9000, public_base_url="https://calls.example.com/scope/")
    assert settings.base_url == "https://calls.example.com/scope"


def test_trusted_proxies_are_addresses_or_networks_and_none_by_default(monkeypatch):
    monkeypatch.delenv("CALLSCOPE_TRUSTED_PROXIES", raising=False)
    assert Settings().trusted_proxies == ""
    assert Settings(trusted_proxies=" 10.244.0.0/16, 127.0.0.1 ,::1").trusted_proxies == \
        "10.244.0.0/16,127.0.0.1/32,::1/128"
    for wrong in ("ingress-nginx", "10.0.0.300", "*"):
        with pytest.raises(ValidationError, match="trusted_proxies"):
            Settings(trusted_proxies=wrong)


@pytest.mark.parametrize("field", ["public_base_url", "twilio_base_url", "s3_endpoint_url", "llm_endpoint"])
@pytest.mark.parametrize(("wrong", "why"), [("https://[::1", "Invalid IPv6 URL"),
                                            ("https://calls.example.com:99999", "Port out of range"),
                                            ("https://calls.example.com:-1/x", "Port could not be cast"),
                                            ("calls.example.com", "https:// or http://")])
def test_a_url_setting_that_cannot_be_parsed_stops_the_start(field, wrong, why):
    """Parsed later on every use (the carrier's webhooks check their signature against the public base URL taken
    apart, with its port: a ValueError and a 500 on each), so parsed on start with the same parser."""
    with pytest.raises(ValidationError, match=rf"{field}(.|\n)*{why}"):
        Settings(**{field: wrong})
    assert getattr(Settings(**{field: "http://10.0.0.5:9000/v1"}), field) == "http://10.0.0.5:9000/v1"
    assert getattr(Settings(**{field: ""}), field) == ""  # an empty variable: unset
