"""A project with a webhook and its deliveries, for the Settings → Webhooks tests: written through the services and
the outbox queries as the service itself would, the secret under the ref `HOOKS_REF`."""

from __future__ import annotations

import socket
import uuid

from callscope.catalog import outbox
from callscope.catalog.outbox import Outcome
from callscope.catalog.tables import Recording
from callscope.resources import Project, ProjectSpec
from callscope.resources.kinds import SecretKeyRef, Webhook
from callscope.services.objects import create_with_id

HOOKS_REF = SecretKeyRef(name="hooks")


async def hooked_project(runtime, account: str, name: str, labels: dict | None = None) -> Project:
    webhook = Webhook(url=f"https://hooks.example.com/{name}", sections=["metadata"], signing_secret_ref=HOOKS_REF)
    return await create_with_id(runtime.ctx, Project, account, name,
                                ProjectSpec(name=name, language="en", webhook=webhook), labels=labels)


async def add_recording(runtime, project: Project, name: str) -> int:
    """A recording row of `project` named `name` (its id): what a delivery list names."""
    now = runtime.ctx.clock()
    row = Recording(public_id=str(uuid.uuid4()), account=project.namespace, project_id=project.status.id, name=name,
                    language="en", duration_ms=1000, audio_format="wav", size_bytes=1,
                    conversation_id=str(uuid.uuid4()), created_at=now, updated_at=now)

    def add(session) -> int:
        session.add(row)
        session.flush()
        return row.id
    return await runtime.ctx.catalog.write(add)


async def add_event(runtime, project: Project, state: str = "failed", recording_id: int = 7) -> int:
    """An event of `project` (about recording `recording_id`) after one attempt that ended in `state`."""
    ctx = runtime.ctx

    def add(session) -> int:
        event = outbox.add(session, project.namespace, project.status.id, recording_id, "recording.analyzed",
                           project.spec.webhook.url, {"type": "recording.analyzed"}, ctx.clock())
        session.flush()
        return event.id
    event_id = await ctx.catalog.write(add)
    [claimed] = await ctx.catalog.write(outbox.claim, 1, "test", 60, ctx.clock(), 12)
    code = 200 if state == "delivered" else 400
    await ctx.catalog.write(outbox.record, claimed, Outcome(state, ctx.clock(), 42, code, None, "answer"), ctx.clock())
    return event_id


PUBLIC = "93.184.215.14"  # a global address, as example.com's names resolve to here
NAMES = {"intranet.example.com": "10.1.2.3", "later.example.com": None}  # None: no DNS record (yet)


def fake_dns(monkeypatch) -> None:
    """Names under example.com resolve without a network: to PUBLIC, or as NAMES says; others as they do."""
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if not isinstance(host, str) or not host.endswith(".example.com"):
            return real(host, port, *args, **kwargs)
        address = NAMES.get(host, PUBLIC)
        if address is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(address, port, *args, **kwargs)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

