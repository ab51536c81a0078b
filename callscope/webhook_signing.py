"""Standard Webhooks signatures (https://www.standardwebhooks.com): what Callscope puts on every delivery and
what a receiver checks.

Headers: ``webhook-id`` (the event's id, the same on every retry so receivers can deduplicate),
``webhook-timestamp`` (seconds since the epoch of this attempt) and ``webhook-signature``:
``v1,<base64 of HMAC-SHA256(key, "<id>.<timestamp>.<body>")>``, one space-separated entry per secret while a
rotated-out secret still signs (callscope/signing_secrets.py). The signing secret is written ``whsec_<base64 key>``
(the form the Standard Webhooks libraries take); a secret without that prefix is used as raw UTF-8 bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

PREFIX = "whsec_"
TOLERANCE_SECONDS = 300  # receivers reject timestamps further than this from their clock (replay protection)


class InvalidSignature(Exception):
    pass


def new_secret() -> str:
    """A fresh ``whsec_`` secret with a 32-byte key."""
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def secret_key(secret: str) -> bytes:
    secret = secret.strip()
    if secret.startswith(PREFIX):
        try:
            return base64.b64decode(secret[len(PREFIX):], validate=True)
        except binascii.Error:
            raise ValueError("the signing secret is not valid base64 after 'whsec_'") from None
    if not secret:
        raise ValueError("empty signing secret")
    return secret.encode()


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header value for one delivery attempt."""
    mac = hmac.new(secret_key(secret), f"{message_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def headers(secrets: list[str], message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The Standard Webhooks headers of one attempt, signed with each of `secrets` (the current one first, then one
    rotated out whose overlap has not ended); no signature header when no secret is configured."""
    out = {"webhook-id": message_id, "webhook-timestamp": str(timestamp), "content-type": "application/json"}
    if secrets:
        out["webhook-signature"] = " ".join(signature(s, message_id, timestamp, body) for s in secrets)
    return out


def verify(secret: str, received: dict[str, str], body: bytes, now: float) -> None:
    """Raise InvalidSignature unless ``received`` (header name -> value, any case) signs ``body`` for ``secret``
    within TOLERANCE_SECONDS of ``now``; any of several space-separated ``v1,`` signatures may match."""
    lower = {k.lower(): v for k, v in received.items()}
    try:
        message_id, timestamp = lower["webhook-id"], int(lower["webhook-timestamp"])
        offered = lower["webhook-signature"].split()
    except (KeyError, ValueError):
        raise InvalidSignature("missing or malformed webhook headers") from None
    if abs(now - timestamp) > TOLERANCE_SECONDS:
        raise InvalidSignature("timestamp outside the tolerance")
    expected = signature(secret, message_id, timestamp, body)
    if not any(hmac.compare_digest(expected, candidate) for candidate in offered):
        raise InvalidSignature("no signature matches")
