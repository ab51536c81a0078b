"""Kubernetes label selectors: parsing and matching.

The grammar `kubectl get -l` accepts, requirements joined by commas, all of which must hold: ``key=value``,
``key==value``, ``key!=value`` (also when absent), ``key in (v1,v2)``, ``key notin (v1,v2)`` (also when absent),
``key``, ``!key``, ``key>3``, ``key<3`` (an integer label). Keys are qualified names; values are empty or up to 63
of ``[A-Za-z0-9._-]``, alphanumeric at both ends. An empty selector matches everything; bad syntax raises
`callscope.errors.ValidationFailed`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from callscope.errors import ValidationFailed

Operator = Literal["=", "!=", "in", "notin", "exists", "!", ">", "<"]

_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INT_RE = re.compile(r"^-?[0-9]+$")
_SPECIAL = set("!=(),<>")


def _bad(text: str, reason: str) -> ValidationFailed:
    return ValidationFailed(f"invalid label selector {text!r}: {reason}")


def _check_key(text: str, key: str) -> None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN_RE.match(prefix)):
        raise _bad(text, f"key {key!r} has an invalid prefix (must be a DNS subdomain)")
    if not name or len(name) > 63 or not _NAME_RE.match(name):
        raise _bad(
            text,
            f"key {key!r} is invalid (a name of up to 63 alphanumerics, '-', '_' or '.', "
            "starting and ending alphanumerically, optionally prefixed by a DNS subdomain and '/')",
        )


def _check_value(text: str, value: str) -> None:
    if value and (len(value) > 63 or not _NAME_RE.match(value)):
        raise _bad(
            text,
            f"value {value!r} is invalid (empty or up to 63 alphanumerics, '-', '_' or '.', "
            "starting and ending alphanumerically)",
        )


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        match self.operator:
            case "=":
                return present and value == self.values[0]
            case "!=":
                return not present or value != self.values[0]
            case "in":
                return present and value in self.values
            case "notin":
                return not present or value not in self.values
            case "exists":
                return present
            case "!":
                return not present
            case ">" | "<":
                if not present or value is None or not _INT_RE.match(value):
                    return False
                bound = int(self.values[0])
                return int(value) > bound if self.operator == ">" else int(value) < bound
        raise AssertionError(self.operator)  # pragma: no cover

    def __str__(self) -> str:
        match self.operator:
            case "exists":
                return self.key
            case "!":
                return f"!{self.key}"
            case "in" | "notin":
                return f"{self.key} {self.operator} ({','.join(self.values)})"
            case _:
                return f"{self.key}{self.operator}{self.values[0]}"


@dataclass(frozen=True)
class Selector:
    """A parsed label selector: a conjunction of requirements (none: matches everything)."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "=!":
            if text.startswith("==", i) or text.startswith("!=", i):
                tokens.append(text[i : i + 2])
                i += 2
            else:
                tokens.append(c)
                i += 1
        elif c in _SPECIAL:
            tokens.append(c)
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in _SPECIAL:
                j += 1
            tokens.append(text[i:j])
            i = j
    return tokens


def _is_ident(tok: str | None) -> bool:
    return tok is not None and tok not in _SPECIAL and tok not in ("==", "!=")


def parse_selector(text: str | None) -> Selector:
    """Parse a Kubernetes label selector; ValidationFailed on bad syntax."""
    if text is None or not text.strip():
        return Selector()
    return _Parser(text).selector()


class _Parser:
    """A recursive-descent parser over the tokens of one selector: requirements separated by commas."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | None:
        tok = self.peek()
        self.pos += 1
        return tok

    def bad(self, reason: str) -> ValidationFailed:
        return _bad(self.text, reason)

    def selector(self) -> Selector:
        requirements = [self.requirement()]
        while (sep := self.take()) is not None:
            if sep != ",":
                raise self.bad(f"expected ',' between requirements, found {sep!r}")
            requirements.append(self.requirement())
        return Selector(tuple(requirements))

    def requirement(self) -> Requirement:
        tok = self.take()
        if tok == "!":
            key = self.take()
            if not _is_ident(key) or key in ("in", "notin"):
                raise self.bad("expected a key after '!'")
            assert key is not None
            _check_key(self.text, key)
            return Requirement(key, "!")
        if tok is None:
            raise self.bad("expected a requirement (empty requirement or trailing comma)")
        if not _is_ident(tok) or tok in ("in", "notin"):
            raise self.bad(f"unexpected {tok!r} where a key was expected")
        _check_key(self.text, tok)
        op = self.peek()
        if op is None or op == ",":
            return Requirement(tok, "exists")
        if op in ("=", "==", "!="):
            return self.equality(tok, op)
        if op in ("in", "notin"):
            return self.membership(tok, op)
        if op in (">", "<"):
            return self.comparison(tok, op)
        raise self.bad(f"unexpected {op!r} after key {tok!r}")

    def equality(self, key: str, op: str) -> Requirement:
        self.take()
        nxt = self.peek()
        if nxt is None or nxt == ",":
            value = ""
        elif _is_ident(nxt):
            value = self.take() or ""
        else:
            raise self.bad(f"expected a value after {key}{op}, found {nxt!r}")
        _check_value(self.text, value)
        return Requirement(key, "!=" if op == "!=" else "=", (value,))

    def membership(self, key: str, op: str) -> Requirement:
        self.take()
        if self.take() != "(":
            raise self.bad(f"expected '(' after '{key} {op}'")
        values: list[str] = []
        expect_value = True
        while (t := self.take()) != ")":
            if t is None:
                raise self.bad(f"missing ')' in '{key} {op} (...'")
            if t == ",":
                if expect_value:
                    values.append("")
                expect_value = True
            elif _is_ident(t) and expect_value:
                values.append(t)
                expect_value = False
            else:
                raise self.bad(f"unexpected {t!r} in the value list of '{key} {op}'")
        if expect_value:  # an empty value before ')': "key in ()", "key in (a,)"
            values.append("")
        for v in values:
            _check_value(self.text, v)
        return Requirement(key, op, tuple(dict.fromkeys(values)))  # type: ignore[arg-type]

    def comparison(self, key: str, op: str) -> Requirement:
        self.take()
        value = self.take()
        if value is None or not _INT_RE.match(value):
            raise self.bad(f"'{key}{op}' needs an integer value")
        return Requirement(key, op, (value,))  # type: ignore[arg-type]
