"""UUIDv7 (RFC 9562): time-ordered public ids, so new recordings sort after old ones in indexes."""

from __future__ import annotations

import os
import time
import uuid


def uuid7() -> uuid.UUID:
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80            # 48-bit Unix time in milliseconds
    value |= 0x7 << 76                               # version 7
    value |= ((rand >> 62) & 0xFFF) << 64            # 12 random bits
    value |= 0b10 << 62                              # RFC 4122 variant
    value |= rand & ((1 << 62) - 1)                  # 62 random bits
    return uuid.UUID(int=value)


def parse_uuid(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None
