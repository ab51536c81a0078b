"""Derived names: metadata.name of REST-created objects, and operator initials."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_NOT_NAME = re.compile(r"[^a-z0-9]+")


def object_name(display_name: str, suffix: str | int, fallback: str) -> str:
    """A DNS-1123 name that reads like the display name and is unique through its suffix."""
    ascii_text = unicodedata.normalize("NFKD", display_name).encode("ascii", "ignore").decode()
    slug = _NOT_NAME.sub("-", ascii_text.lower()).strip("-")[:40].strip("-")
    return f"{slug or fallback}-{suffix}"


def unique_suffix(*parts: str) -> str:
    """A name suffix determined by the values that must be unique: two creators of the same value
    get the same name, so the store itself refuses the second (AlreadyExists) in every process."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def initials(name: str) -> str:
    """Two letters: first and last word's first letters, or the first two letters of a single word."""
    words = [w for w in re.split(r"[\s\-_.]+", name.strip()) if w]
    if not words:
        return ""
    if len(words) == 1:
        letters = [c for c in words[0] if c.isalnum()]
        return "".join(letters[:2]).upper()
    return (words[0][0] + words[-1][0]).upper()
