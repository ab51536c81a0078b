"""Object builders and async helpers shared by the store tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from callscope.resources import Account, AccountSpec, ObjectMeta, Operator, OperatorSpec, Project, ProjectSpec


def project(name: str, ns: str, *, labels: dict[str, str] | None = None, title: str = "Support") -> Project:
    return Project(
        metadata=ObjectMeta(name=name, namespace=ns, labels=labels or {}),
        spec=ProjectSpec(name=title, language="en"),
    )


def operator(name: str, ns: str, *, labels: dict[str, str] | None = None) -> Operator:
    return Operator(
        metadata=ObjectMeta(name=name, namespace=ns, labels=labels or {}),
        spec=OperatorSpec(name=name.title()),
    )


def account(name: str) -> Account:
    return Account(metadata=ObjectMeta(name=name, namespace=name), spec=AccountSpec(display_name=name))


async def next_event(it, timeout: float = 2.0):
    return await asyncio.wait_for(anext(it), timeout)


async def eventually(check: Callable[[], bool], timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)
