"""Signed URLs of the filesystem blob store (callscope.blobs.signing)."""

from __future__ import annotations

import base64
import re
import stat
from concurrent.futures import ThreadPoolExecutor

import pytest
from pydantic import ValidationError

from callscope.blobs.signing import (
    SECRET_FILE_NAME,
    ExpiredSignedToken,
    InvalidSignedToken,
    load_or_create_secret,
    sign,
    signing_secret,
    verify,
)
from callscope.config import Settings
from callscope.errors import Forbidden

SECRET = b"s" * 32
KEY = "accounts/a/recordings/0190a4b2-7c1e-7000-8000-000000000001/audio.mp3"
NOW = 1_800_000_000


def test_round_trip():
    token = sign(SECRET, KEY, NOW + 60)
    assert re.fullmatch(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+", token)  # URL-safe as it is
    assert verify(SECRET, token, NOW) == KEY
    assert verify(SECRET, token, NOW + 59.9) == KEY


def test_keys_with_colons_and_unicode():
    key = "accounts/é/x:y/audio.mp3"
    assert verify(SECRET, sign(SECRET, key, NOW + 1), NOW) == key


def test_expired_token():
    token = sign(SECRET, KEY, NOW + 60)
    with pytest.raises(ExpiredSignedToken) as info:
        verify(SECRET, token, NOW + 60)
    assert info.value.expires_at == NOW + 60
    assert isinstance(info.value, Forbidden) and info.value.status == 403
    with pytest.raises(ExpiredSignedToken):
        verify(SECRET, token, NOW + 3600)


def test_wrong_secret():
    token = sign(SECRET, KEY, NOW + 60)
    with pytest.raises(InvalidSignedToken):
        verify(b"t" * 32, token, NOW)


def test_tampered_tokens():
    token = sign(SECRET, KEY, NOW + 60)
    payload, mac = token.split(".")
    # Another key, or a later expiry, with the original MAC.
    for forged in (f"{NOW + 60}:accounts/b/recordings/x/audio.mp3", f"{NOW + 10**6}:{KEY}"):
        forged_payload = base64.urlsafe_b64encode(forged.encode()).rstrip(b"=").decode()
        with pytest.raises(InvalidSignedToken):
            verify(SECRET, f"{forged_payload}.{mac}", NOW)
    # A flipped character anywhere.
    for i in range(0, len(token), 7):
        if token[i] == ".":
            continue
        flipped = token[:i] + ("A" if token[i] != "A" else "B") + token[i + 1 :]
        with pytest.raises(InvalidSignedToken):
            verify(SECRET, flipped, NOW)
    with pytest.raises(InvalidSignedToken):
        verify(SECRET, payload + "." + mac[:-2], NOW)


@pytest.mark.parametrize("token", ["", ".", "abc", "a.b.c", "@@@.###", "é.é", "x" * 5000])
def test_malformed_tokens(token):
    with pytest.raises(InvalidSignedToken):
        verify(SECRET, token, NOW)


def test_load_or_create_secret(tmp_path):
    path = tmp_path / "data" / SECRET_FILE_NAME
    secret = load_or_create_secret(path)
    assert len(secret) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_secret(path) == secret
    assert sorted(p.name for p in path.parent.iterdir()) == [SECRET_FILE_NAME]  # no temp file left


def test_concurrent_creators_agree(tmp_path):
    path = tmp_path / SECRET_FILE_NAME
    with ThreadPoolExecutor(16) as pool:
        secrets = set(pool.map(lambda _: load_or_create_secret(path), range(64)))
    assert secrets == {path.read_bytes()}


def test_signing_secret_from_settings(tmp_path):
    from_file = signing_secret(Settings(data_dir=tmp_path))
    assert from_file == (tmp_path / SECRET_FILE_NAME).read_bytes()
    configured = "c" * 40
    assert signing_secret(Settings(data_dir=tmp_path, url_signing_secret=configured)) == configured.encode()
    with pytest.raises(ValidationError):
        Settings(url_signing_secret="too short")
