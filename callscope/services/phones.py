"""Phone numbers: parsed, validated and normalised to E.164 with Google's libphonenumber rules."""

from __future__ import annotations

import phonenumbers


def normalize_e164(raw: str, default_region: str | None = "US") -> str | None:
    """E.164 form of a valid number, or None when it is not a valid phone number."""
    try:
        parsed = phonenumbers.parse(raw, default_region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(parsed):
        return None
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)


def region_of(e164: str) -> str | None:
    try:
        return phonenumbers.region_code_for_number(phonenumbers.parse(e164, None))
    except phonenumbers.NumberParseException:
        return None
