"""SandboxProvider: real phonenumbers-valid candidates, purchases and requirement groups in a JSON file."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import phonenumbers
import pytest
from phonenumbers import PhoneNumberType as T

from callscope.config import Settings
from callscope.errors import ProviderError
from callscope.telephony.base import REQUIREMENT_GROUP_NOT_APPROVED, NumberProvider
from callscope.telephony.factory import ProviderConfigurationError, build_provider
from callscope.telephony.sandbox import SandboxProvider
from callscope.telephony.twilio import TwilioProvider
from callscope.telephony.voice import RecordingReady

ACCEPTED = {
    "mobile": {T.MOBILE, T.FIXED_LINE_OR_MOBILE},
    "local": {T.FIXED_LINE, T.FIXED_LINE_OR_MOBILE},
    "toll-free": {T.TOLL_FREE},
    "national": {T.UAN, T.SHARED_COST, T.FIXED_LINE},
}


@pytest.fixture
def state_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "sandbox-provider.json"


@pytest.fixture
def provider(state_path: Path) -> SandboxProvider:
    return SandboxProvider(state_path)


def test_is_a_number_provider(provider):
    assert isinstance(provider, NumberProvider)
    assert provider.name == "sandbox"


@pytest.mark.parametrize("country", ["US", "GB", "DE", "FR", "JP"])
@pytest.mark.parametrize("number_type", ["mobile", "local", "toll-free"])
async def test_candidates_are_valid_numbers_of_the_type(provider, country, number_type):
    candidates = await provider.search(country, number_type)
    assert len(candidates) == 10
    assert len({c.phone_number for c in candidates}) == 10
    for c in candidates:
        parsed = phonenumbers.parse(c.phone_number, None)
        assert phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164) == c.phone_number
        assert phonenumbers.is_valid_number_for_region(parsed, country), c.phone_number
        assert phonenumbers.number_type(parsed) in ACCEPTED[number_type], c.phone_number
        assert c.country_code == country
        assert c.number_type == number_type
        assert "voice" in c.features
        assert float(c.upfront_cost) >= 0 and float(c.monthly_cost) > 0
        assert c.monthly_cost == f"{float(c.monthly_cost):.2f}"


@pytest.mark.parametrize("country", ["GB", "DE", "FR", "JP"])
async def test_national_candidates(provider, country):
    candidates = await provider.search(country, "national")
    assert candidates
    for c in candidates:
        parsed = phonenumbers.parse(c.phone_number, None)
        assert phonenumbers.is_valid_number_for_region(parsed, country)
        assert phonenumbers.number_type(parsed) in {T.UAN, T.SHARED_COST}


async def test_region_information_from_geocoder(provider):
    candidates = await provider.search("GB", "local")
    regions = {(r.region_type, r.region_name) for r in candidates[0].region_information}
    assert ("country", "United Kingdom") in regions
    locality = [r.region_name for r in candidates[0].region_information if r.region_type == "locality"]
    parsed = phonenumbers.parse(candidates[0].phone_number, None)
    assert locality == [phonenumbers.geocoder.description_for_number(parsed, "en")]


async def test_search_is_deterministic_and_case_insensitive(provider, state_path):
    first = await provider.search("DE", "mobile")
    again = await provider.search("de", "MOBILE")
    other_instance = await SandboxProvider(state_path).search(" De ", "mobile")
    assert first == again == other_instance
    assert [c.phone_number for c in first] != [c.phone_number for c in await provider.search("DE", "local")]


@pytest.mark.parametrize("country", ["XX", "", "USA", "1"])
async def test_unknown_country_rejected(provider, country):
    with pytest.raises(ProviderError, match="Unknown country"):
        await provider.search(country, "mobile")


async def test_unknown_type_rejected(provider):
    with pytest.raises(ProviderError, match="number_type must be one of"):
        await provider.search("US", "premium")


async def test_type_without_numbers_rejected(provider):
    # NANP has no non-geographic (UAN / shared cost) range and its fixed lines are
    # FIXED_LINE_OR_MOBILE, so the sandbox offers no "national" numbers in the US.
    with pytest.raises(ProviderError, match="No national numbers are available in US"):
        await provider.search("US", "national")


async def test_purchase_records_and_excludes_from_search(provider, state_path):
    before = await provider.search("US", "local")
    bought = await provider.purchase(before[0].phone_number, "us", "local", None)
    assert bought.phone_number == before[0].phone_number
    assert bought.country_code == "US" and bought.number_type == "local"
    assert bought.provider == "sandbox" and bought.provider_ref.startswith("SB")
    assert (bought.upfront_cost, bought.monthly_cost) == (before[0].upfront_cost, before[0].monthly_cost)

    after = await provider.search("US", "local")
    assert bought.phone_number not in {c.phone_number for c in after}
    assert [c.phone_number for c in after][:9] == [c.phone_number for c in before][1:]
    assert len(after) == 10

    state = json.loads(state_path.read_text())
    assert state["numbers"][bought.phone_number]["provider_ref"] == bought.provider_ref
    assert not list(state_path.parent.glob("*.tmp"))


async def test_double_purchase_rejected(provider, state_path):
    number = (await provider.search("GB", "mobile"))[0].phone_number
    await provider.purchase(number, None, None, None)
    with pytest.raises(ProviderError) as err:
        await provider.purchase(number, "GB", "mobile", None)
    assert err.value.errors == ["Phone number is not available"]
    with pytest.raises(ProviderError, match="not available"):
        await SandboxProvider(state_path).purchase(number, None, None, None)


async def test_purchase_infers_country_and_type(provider):
    number = (await provider.search("GB", "toll-free"))[0].phone_number
    bought = await provider.purchase(number, None, None, None)
    assert (bought.country_code, bought.number_type) == ("GB", "toll-free")


@pytest.mark.parametrize(
    ("number", "country", "kind", "message"),
    [
        ("", None, None, "phone_number is required"),
        ("2015550123", None, None, "E.164"),
        ("+1 201 555 0123", None, None, "E.164"),
        ("+12015550123", "GB", None, "does not belong to country GB"),
        ("+4412", None, None, "not a valid number in GB"),
        ("+4412", "US", None, "does not belong to country US"),
        ("+80012345678", None, None, "Cannot tell the country"),
        ("+447400123456", "GB", "local", "not a local number"),
        ("+447400123456", "GB", "pager", "number_type must be one of"),
    ],
)
async def test_purchase_validates_the_number(provider, number, country, kind, message):
    with pytest.raises(ProviderError, match=message):
        await provider.purchase(number, country, kind, None)


async def test_document_country_needs_an_approved_group(provider):
    assert provider.requires_documents("de") and provider.requires_documents("JP")
    assert not provider.requires_documents("US")
    number = (await provider.search("DE", "local"))[0].phone_number

    pending = provider.add_requirement_group("de", "pending")
    rejected = provider.add_requirement_group("DE", "rejected")
    for group_id in (None, pending, rejected, 999):
        with pytest.raises(ProviderError) as err:
            await provider.purchase(number, "DE", "local", group_id)
        assert err.value.errors == [REQUIREMENT_GROUP_NOT_APPROVED]
    assert await provider.requirement_group_status(999) is None
    assert await provider.requirement_group_status(pending) == "pending"

    provider.set_requirement_group_status(pending, "approved")
    assert await provider.requirement_group_status(pending) == "approved"
    bought = await provider.purchase(number, "DE", "local", pending)
    assert bought.country_code == "DE"


async def test_group_for_another_country_or_unapproved_group_elsewhere(provider):
    fr_group = provider.add_requirement_group("FR", "approved")
    de_number = (await provider.search("DE", "mobile"))[0].phone_number
    with pytest.raises(ProviderError, match="is for FR, not DE"):
        await provider.purchase(de_number, None, None, fr_group)
    # A country without documents needs no group, but a group passed must be approved.
    us_number = (await provider.search("US", "mobile"))[0].phone_number
    pending = provider.add_requirement_group("US", "pending")
    with pytest.raises(ProviderError, match=REQUIREMENT_GROUP_NOT_APPROVED):
        await provider.purchase(us_number, "US", "mobile", pending)
    assert (await provider.purchase(us_number, "US", "mobile", None)).phone_number == us_number


def test_requirement_groups_crud(provider, state_path):
    a = provider.add_requirement_group("at", "pending")
    b = provider.add_requirement_group("AU", "approved")
    assert b == a + 1
    provider.set_requirement_group_status(a, "rejected")
    fresh = SandboxProvider(state_path)
    assert fresh.list_requirement_groups() == [
        {"id": a, "country": "AT", "status": "rejected"},
        {"id": b, "country": "AU", "status": "approved"},
    ]
    with pytest.raises(ValueError):
        fresh.add_requirement_group("AT", "unknown")
    with pytest.raises(ProviderError):
        fresh.add_requirement_group("XX", "pending")
    with pytest.raises(Exception, match="not found"):
        fresh.set_requirement_group_status(12345, "approved")


async def test_state_survives_a_new_instance_and_release(provider, state_path):
    number = (await provider.search("FR", "mobile"))[0].phone_number
    group = provider.add_requirement_group("FR", "approved")
    bought = await provider.purchase(number, "FR", "mobile", group)

    fresh = SandboxProvider(state_path)
    assert [n.phone_number for n in fresh.purchased_numbers()] == [number]
    assert number not in {c.phone_number for c in await fresh.search("FR", "mobile")}
    assert await fresh.requirement_group_status(group) == "approved"

    await fresh.release(bought.provider_ref)
    assert fresh.purchased_numbers() == []
    assert (await provider.search("FR", "mobile"))[0].phone_number == number
    with pytest.raises(ProviderError):
        await fresh.release(bought.provider_ref)


def _add_groups(path: str, n: int) -> None:
    p = SandboxProvider(Path(path))
    for _ in range(n):
        p.add_requirement_group("DE", "pending")


def test_concurrent_processes_do_not_lose_writes(state_path):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_add_groups, args=(str(state_path), 15)) for _ in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(30)
        assert proc.exitcode == 0
    ids = [g["id"] for g in SandboxProvider(state_path).list_requirement_groups()]
    assert sorted(ids) == list(range(1, 61))


def test_factory_builds_sandbox_and_twilio(tmp_path):
    sandbox = build_provider(Settings(data_dir=tmp_path, number_provider="sandbox"))
    assert isinstance(sandbox, SandboxProvider)
    assert sandbox.state_path == tmp_path / "sandbox-provider.json"

    with pytest.raises(ProviderConfigurationError, match="CALLSCOPE_TWILIO_AUTH_TOKEN"):
        build_provider(Settings(data_dir=tmp_path, number_provider="twilio", twilio_account_sid="AC1"))
    twilio = build_provider(
        Settings(
            data_dir=tmp_path,
            number_provider="twilio",
            twilio_account_sid="AC1",
            twilio_auth_token="secret-token",
            twilio_bundles={"3": "BU3"},
        )
    )
    assert isinstance(twilio, TwilioProvider)
    assert twilio.bundle_sids == {3: "BU3"}
    assert "secret-token" not in repr(twilio)


def test_voice_credentials_are_made_once_and_kept_private(provider, state_path):
    account_sid, token = provider.voice_credentials()
    assert account_sid.startswith("AC") and len(token) == 32
    assert SandboxProvider(state_path).voice_credentials() == (account_sid, token)  # another process reads the same
    assert json.loads(state_path.read_text())["voice"] == {"account_sid": account_sid, "auth_token": token}
    assert state_path.stat().st_mode & 0o077 == 0


async def test_recordings_are_served_from_the_sandbox_folder_only(provider, state_path, tmp_path):
    audio = tmp_path / "call.wav"
    audio.write_bytes(b"RIFF....WAVE" * 1000)
    recording_id = "RE" + "0" * 32
    held = provider.add_recording(recording_id, audio)
    assert held.parent == state_path.with_name("sandbox-recordings")
    assert (held.parent.stat().st_mode & 0o777, held.stat().st_mode & 0o777) == (0o700, 0o600)
    ready = RecordingReady(call_id="CA1", recording_id=recording_id, completed=True)
    assert b"".join([chunk async for chunk in provider.recording_chunks(ready)]) == audio.read_bytes()
    await provider.delete_recording(ready)
    await provider.delete_recording(ready)  # gone already is fine
    assert not held.exists()
    with pytest.raises(ProviderError, match="has no recording"):
        [chunk async for chunk in provider.recording_chunks(ready)]
    with pytest.raises(ValueError):  # the id names a file: no path in it
        RecordingReady(call_id="CA1", recording_id="../catalog", completed=True)
