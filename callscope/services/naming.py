"""Derived names: metadata.name of REST-created objects, and operator initials."""

from __future__ import annotations

import re
import unicodedata

_NOT_NAME = re.compile(r"[^a-z0-9]+")


def object_name(display_name: str, object_id: int, fallback: str) -> str:
    """A DNS-1123 name that reads like the display name and is unique through the id suffix."""
    ascii_text = unicodedata.normalize("NFKD", display_name).encode("ascii", "ignore").decode()
    slug = _NOT_NAME.sub("-", ascii_text.lower()).strip("-")[:40].strip("-")
    return f"{slug or fallback}-{object_id}"


def initials(name: str) -> str:
    """Two letters: first and last word's first letters, or the first two letters of a single word."""
    words = [w for w in re.split(r"[\s\-_.]+", name.strip()) if w]
    if not words:
        return ""
    if len(words) == 1:
        letters = [c for c in words[0] if c.isalnum()]
        return "".join(letters[:2]).upper()
    return (words[0][0] + words[-1][0]).upper()
