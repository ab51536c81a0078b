"""Time-limited signed URLs for the filesystem blob store, served by the embedded server.

A token carries the blob key and its expiry, authenticated with HMAC-SHA256::

    token = sign(secret, "accounts/a/recordings/<uuid>/audio.mp3", expires_at=int(time.time()) + 3600)
    key = verify(secret, token, now=time.time())    # InvalidSignedToken / ExpiredSignedToken

The token is URL-safe (base64url without padding, and one ``.``): ``<payload>.<mac>``.
The secret comes from ``Settings.url_signing_secret`` when set (every API replica must share it), else
from a file in the data directory created once and shared by every process using that directory
(:func:`signing_secret`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import os
import secrets
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from callscope.errors import Forbidden
from callscope.private_files import narrow, open_private, private_dir

if TYPE_CHECKING:
    from callscope.config import Settings

SECRET_BYTES = 32
SECRET_FILE_NAME = "url-signing.key"
_DOMAIN = b"callscope-blob-url-v1\x00"  # binds the MAC to this use of the secret


class InvalidSignedToken(Forbidden):
    """The token is malformed or its signature does not match (HTTP 403)."""

    def __init__(self, message: str = "Invalid or tampered URL signature"):
        super().__init__(message)


class ExpiredSignedToken(InvalidSignedToken):
    """The token was valid but its expiry has passed (HTTP 403)."""

    def __init__(self, expires_at: int):
        super().__init__("This URL has expired")
        self.expires_at = expires_at


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    if not text or not all(c.isalnum() or c in "-_" for c in text) or not text.isascii():
        raise InvalidSignedToken()
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise InvalidSignedToken() from None


def _mac(secret: bytes, payload: bytes) -> bytes:
    return hmac.new(secret, _DOMAIN + payload, hashlib.sha256).digest()


def sign(secret: bytes, key: str, expires_at: int) -> str:
    """A token granting access to `key` until `expires_at` (Unix seconds, exclusive)."""
    if not secret:
        raise ValueError("empty signing secret")
    payload = f"{int(expires_at)}:{key}".encode()
    return f"{_b64encode(payload)}.{_b64encode(_mac(secret, payload))}"


def verify(secret: bytes, token: str, now: float | None = None) -> str:
    """The key a token grants; raises InvalidSignedToken (bad token) or ExpiredSignedToken (now >= expiry)."""
    if not isinstance(token, str) or token.count(".") != 1 or len(token) > 4096:
        raise InvalidSignedToken()
    payload_text, mac_text = token.split(".")
    payload, mac = _b64decode(payload_text), _b64decode(mac_text)
    if not hmac.compare_digest(mac, _mac(secret, payload)):
        raise InvalidSignedToken()
    expires_text, sep, key = payload.decode("utf-8", "replace").partition(":")
    if not sep or not expires_text.isdigit() or not key:
        raise InvalidSignedToken()
    expires_at = int(expires_text)
    if (time.time() if now is None else now) >= expires_at:
        raise ExpiredSignedToken(expires_at)
    return key


def load_or_create_secret(path: Path) -> bytes:
    """The secret in `path`, created (32 random bytes, mode 0600) if absent, narrowed to 0600 if wider.

    Creation is atomic and happens once: the file is written in full under a temporary name, then
    hard-linked to `path`, which fails if another process got there first (its secret is then used).
    """
    path = Path(path)
    for _ in range(50):
        with contextlib.suppress(FileNotFoundError):
            secret = path.read_bytes()
            if len(secret) >= SECRET_BYTES:
                narrow(path)  # widened by hand: anyone who reads it can sign URLs
                return secret
            if secret:
                raise ValueError(f"{path}: signing secret shorter than {SECRET_BYTES} bytes")
            # Empty: a fallback creator (no hard links) is writing it right now.
            time.sleep(0.01)
            continue
        private_dir(path.parent)
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
        try:
            os.write(fd, secrets.token_bytes(SECRET_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp_name, path)
        except FileExistsError:
            pass
        except OSError:  # a filesystem without hard links: exclusive create
            with contextlib.suppress(FileExistsError):
                fd = open_private(path, os.O_WRONLY | os.O_EXCL)
                try:
                    os.write(fd, Path(tmp_name).read_bytes())
                    os.fsync(fd)
                finally:
                    os.close(fd)
        finally:
            os.unlink(tmp_name)
    raise OSError(f"{path}: could not read the URL signing secret")


def signing_secret(settings: Settings) -> bytes:
    """``settings.url_signing_secret`` (UTF-8) when set, else the secret file in the data directory."""
    if settings.url_signing_secret:
        return settings.url_signing_secret.encode("utf-8")
    return load_or_create_secret(settings.data_dir / SECRET_FILE_NAME)
