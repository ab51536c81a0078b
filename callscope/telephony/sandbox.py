"""The embedded default provider: real-looking numbers from `phonenumbers`, purchases in a JSON file.

A search gives the same valid numbers every time (seeded by country and type, less those bought); costs come from
`COSTS`; countries needing documents are `base.DOCUMENT_COUNTRIES`. The state file is written atomically under an
`fcntl` lock, so several processes share it. Voice: the sandbox plays Twilio (twilio_voice.py), signing its webhooks
with `voice.auth_token` from the state file, and finds a call's recording in `sandbox-recordings/` by its
RecordingSid. The state file's layout: docs/phone-calls.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import random
import secrets
import shutil
import tempfile
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import phonenumbers
from phonenumbers import PhoneNumberType

from callscope.errors import NotFound, ProviderError
from callscope.private_files import open_private, private_dir
from callscope.telephony.base import (
    NUMBER_NOT_AVAILABLE,
    PN_TYPES_FOR,
    REQUIREMENT_GROUP_STATUSES,
    NumberCandidate,
    ProviderBase,
    PurchasedNumber,
    RegionInfo,
    RequirementGroupStatus,
    normalize_country,
)
from callscope.telephony.twilio_voice import TwilioVoice
from callscope.telephony.voice import RecordingReady

MAX_CANDIDATES = 10
RECORDINGS_DIR = "sandbox-recordings"
_CHUNK_BYTES = 1 << 20
_POOL_SIZE = 60  # candidates generated per (country, type) before purchased ones are removed

# (upfront_cost, monthly_cost) per number type, in USD.
COSTS: dict[str, tuple[str, str]] = {
    "mobile": ("1.00", "3.00"),
    "local": ("1.00", "1.15"),
    "toll-free": ("2.00", "2.15"),
    "national": ("1.00", "2.00"),
}

# Example-number types tried per number type, in order; national falls back to a fixed line
# in countries that have no non-geographic (UAN) or shared-cost range.
_SEED_TYPES: dict[str, tuple[int, ...]] = {
    "mobile": (PhoneNumberType.MOBILE,),
    "local": (PhoneNumberType.FIXED_LINE,),
    "toll-free": (PhoneNumberType.TOLL_FREE,),
    "national": (PhoneNumberType.UAN, PhoneNumberType.SHARED_COST, PhoneNumberType.FIXED_LINE),
}



def _accepted_types(number_type: str) -> tuple[int, ...]:
    """phonenumbers types the sandbox sells as `number_type` (national includes its fallback)."""
    if number_type == "national":
        return PN_TYPES_FOR["national"] + (PhoneNumberType.FIXED_LINE,)
    return PN_TYPES_FOR[number_type]


_SMS_COUNTRIES = frozenset({"US", "CA", "PR"})  # where local and toll-free numbers take SMS/MMS


def _features(country: str, number_type: str) -> list[str]:
    if number_type == "mobile":
        return ["voice", "sms", "mms"] if country in _SMS_COUNTRIES else ["voice", "sms"]
    if number_type in ("local", "toll-free") and country in _SMS_COUNTRIES:
        return ["voice", "sms", "mms"] if number_type == "local" else ["voice", "sms"]
    return ["voice"]


def _region_information(parsed: phonenumbers.PhoneNumber) -> list[RegionInfo]:
    # imported here: its place-name data takes half a second to load, which every CLI command would pay
    from phonenumbers import geocoder

    info: list[RegionInfo] = []
    # Asked "from elsewhere" (region ZZ), the geocoder names the number's country even where
    # country_name_for_number gives up (regions sharing a calling code, non-geographic ranges).
    country_name = geocoder.description_for_valid_number(parsed, "en", region="ZZ")
    if country_name:
        info.append(RegionInfo(region_type="country", region_name=country_name))
    locality = geocoder.description_for_number(parsed, "en")
    if locality and locality != country_name:
        info.append(RegionInfo(region_type="locality", region_name=locality))
    return info


def _matches(parsed: phonenumbers.PhoneNumber, country: str, accepted: tuple[int, ...]) -> bool:
    return (
        phonenumbers.is_valid_number_for_region(parsed, country)
        and phonenumbers.number_type(parsed) in accepted
    )


def _candidate_pool(country: str, number_type: str) -> list[phonenumbers.PhoneNumber]:
    """A deterministic list of valid numbers of the type: vary the tail of the example number."""
    for seed_type in _SEED_TYPES[number_type]:
        example = phonenumbers.example_number_for_type(country, seed_type)
        if example is None:
            continue
        accepted = _accepted_types(number_type)
        if not _matches(example, country, accepted):
            continue
        digest = hashlib.sha256(f"{country}:{number_type}:{seed_type}".encode()).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        nsn = phonenumbers.national_significant_number(example)
        seen: set[str] = set()
        pool: list[phonenumbers.PhoneNumber] = []
        for tail in (6, 5, 4, 3, 2):
            tail = min(tail, len(nsn) - 1)
            for _ in range(400):
                if len(pool) >= _POOL_SIZE:
                    return pool
                digits = nsn[: len(nsn) - tail] + "".join(rng.choice("0123456789") for _ in range(tail))
                if digits in seen:
                    continue
                seen.add(digits)
                try:
                    parsed = phonenumbers.parse(f"+{example.country_code}{digits}", None)
                except phonenumbers.NumberParseException:
                    continue
                if _matches(parsed, country, accepted):
                    pool.append(parsed)
        if pool:
            return pool
    return []


class SandboxProvider(TwilioVoice, ProviderBase):
    name = "sandbox"

    def __init__(self, state_path: Path):
        self.state_path = Path(state_path)
        self._lock_path = self.state_path.with_name(self.state_path.name + ".lock")
        self._pools: dict[tuple[str, str], list[phonenumbers.PhoneNumber]] = {}
        self._credentials: tuple[str, str] | None = None
        self.recordings_dir = self.state_path.with_name(RECORDINGS_DIR)

    # --- state file ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        private_dir(self.state_path.parent)  # the state holds the sandbox's auth token
        with open(open_private(self._lock_path, os.O_RDWR), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            data = {}
        data.setdefault("version", 1)
        data.setdefault("numbers", {})
        data.setdefault("requirement_groups", [])
        data.setdefault("next_group_id", 1 + max((g["id"] for g in data["requirement_groups"]), default=0))
        return data

    def _write(self, data: dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=self.state_path.name + ".", suffix=".tmp", dir=self.state_path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=2, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.state_path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def _snapshot(self) -> dict[str, Any]:
        with self._locked(exclusive=False):
            return self._read()

    # --- voice ---------------------------------------------------------------------------

    def voice_credentials(self) -> tuple[str, str]:
        """(account sid, auth token) of the sandbox's webhooks, made on first use and kept in the state file."""
        if self._credentials is None:
            with self._locked(exclusive=True):
                data = self._read()
                voice = data.get("voice")
                if not voice:
                    voice = data["voice"] = {"account_sid": "AC" + secrets.token_hex(16),
                                             "auth_token": secrets.token_hex(16)}
                    self._write(data)
            self._credentials = (voice["account_sid"], voice["auth_token"])
        return self._credentials

    def _voice_credentials(self) -> tuple[str, str]:
        return self.voice_credentials()

    def recording_path(self, recording_id: str) -> Path:
        """Where the sandbox keeps a recording (the id is a checked RecordingSid: RecordingReady's pattern)."""
        return self.recordings_dir / f"{recording_id}.wav"

    def add_recording(self, recording_id: str, audio: Path) -> Path:
        """Keep `audio` as the recording `recording_id` (what the simulator does before its callback)."""
        path = self.recording_path(recording_id)
        with open(audio, "rb") as source, open(open_private(path, os.O_WRONLY | os.O_TRUNC), "wb") as target:
            shutil.copyfileobj(source, target)
        return path

    async def recording_chunks(self, ready: RecordingReady) -> AsyncGenerator[bytes, None]:
        try:
            audio = await asyncio.to_thread(open, self.recording_path(ready.recording_id), "rb")
        except FileNotFoundError:
            raise ProviderError(f"The provider has no recording {ready.recording_id}") from None
        try:
            while chunk := await asyncio.to_thread(audio.read, _CHUNK_BYTES):
                yield chunk
        finally:
            audio.close()

    async def delete_recording(self, ready: RecordingReady) -> None:
        with contextlib.suppress(FileNotFoundError):  # already gone is what we wanted
            await asyncio.to_thread(os.unlink, self.recording_path(ready.recording_id))

    # --- requirement groups (CLI) -------------------------------------------------------

    @staticmethod
    def _check_status(status: str) -> str:
        if status not in REQUIREMENT_GROUP_STATUSES:
            raise ValueError(f"status must be one of {', '.join(REQUIREMENT_GROUP_STATUSES)}")
        return status

    def add_requirement_group(self, country: str, status: str = "pending") -> int:
        code = normalize_country(country)
        self._check_status(status)
        with self._locked(exclusive=True):
            data = self._read()
            group_id = data["next_group_id"]
            data["next_group_id"] = group_id + 1
            data["requirement_groups"].append({"id": group_id, "country": code, "status": status})
            self._write(data)
        return group_id

    def list_requirement_groups(self) -> list[dict[str, Any]]:
        return [dict(g) for g in self._snapshot()["requirement_groups"]]

    def set_requirement_group_status(self, group_id: int, status: str) -> None:
        self._check_status(status)
        with self._locked(exclusive=True):
            data = self._read()
            for group in data["requirement_groups"]:
                if group["id"] == group_id:
                    group["status"] = status
                    self._write(data)
                    return
        raise NotFound(f"Requirement group {group_id} not found")

    def _group(self, group_id: int) -> dict[str, Any] | None:
        return next((g for g in self._snapshot()["requirement_groups"] if g["id"] == group_id), None)

    async def requirement_group_status(self, group_id: int) -> RequirementGroupStatus | None:
        group = await asyncio.to_thread(self._group, group_id)
        return group["status"] if group else None  # type: ignore[return-value]

    def purchased_numbers(self) -> list[PurchasedNumber]:
        return [PurchasedNumber(**n) for n in self._snapshot()["numbers"].values()]

    # --- search / purchase / release ----------------------------------------------------

    def _pool(self, country: str, number_type: str) -> list[phonenumbers.PhoneNumber]:
        key = (country, number_type)
        if key not in self._pools:
            self._pools[key] = _candidate_pool(country, number_type)
        return self._pools[key]

    def _search_sync(self, country: str, number_type: str) -> list[NumberCandidate]:
        pool = self._pool(country, number_type)
        if not pool:
            raise ProviderError(f"No {number_type} numbers are available in {country}")
        taken = self._snapshot()["numbers"]
        upfront, monthly = COSTS[number_type]
        result: list[NumberCandidate] = []
        for parsed in pool:
            e164 = phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)
            if e164 in taken:
                continue
            result.append(
                NumberCandidate(
                    phone_number=e164,
                    country_code=country,
                    number_type=number_type,  # type: ignore[arg-type]
                    upfront_cost=upfront,
                    monthly_cost=monthly,
                    features=_features(country, number_type),
                    region_information=_region_information(parsed),
                )
            )
            if len(result) >= MAX_CANDIDATES:
                break
        return result

    async def _search(self, country: str, number_type: str) -> list[NumberCandidate]:
        return await asyncio.to_thread(self._search_sync, country, number_type)

    def _purchase_sync(
        self, e164: str, country: str, number_type: str, requirement_group_id: int | None
    ) -> PurchasedNumber:
        upfront, monthly = COSTS[number_type]
        with self._locked(exclusive=True):
            data = self._read()
            if requirement_group_id is not None:
                group = next((g for g in data["requirement_groups"] if g["id"] == requirement_group_id), None)
                if group and group["country"] != country:
                    raise ProviderError(
                        f"Requirement group {requirement_group_id} is for {group['country']}, not {country}"
                    )
            if e164 in data["numbers"]:
                raise ProviderError(NUMBER_NOT_AVAILABLE)
            number = PurchasedNumber(
                phone_number=e164,
                country_code=country,
                number_type=number_type,  # type: ignore[arg-type]
                provider=self.name,
                provider_ref="SB" + secrets.token_hex(16),
                upfront_cost=upfront,
                monthly_cost=monthly,
            )
            data["numbers"][e164] = number.model_dump()
            self._write(data)
        return number

    async def _purchase(
        self,
        phone_number: str,
        parsed: phonenumbers.PhoneNumber,
        country: str,
        number_type: str,
        requirement_group_id: int | None,
    ) -> PurchasedNumber:
        if not phonenumbers.is_valid_number_for_region(parsed, country):
            raise ProviderError(f"Phone number {phone_number} is not a valid number in {country}")
        if phonenumbers.number_type(parsed) not in _accepted_types(number_type):
            raise ProviderError(f"Phone number {phone_number} is not a {number_type} number")
        return await asyncio.to_thread(self._purchase_sync, phone_number, country, number_type, requirement_group_id)

    def _release_sync(self, provider_ref: str) -> None:
        with self._locked(exclusive=True):
            data = self._read()
            for e164, number in data["numbers"].items():
                if number["provider_ref"] == provider_ref:
                    del data["numbers"][e164]
                    self._write(data)
                    return
        raise ProviderError("Phone number not found at the provider")

    async def release(self, provider_ref: str) -> None:
        await asyncio.to_thread(self._release_sync, provider_ref)
