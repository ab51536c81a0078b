"""A project with a webhook and its deliveries, for the Settings → Webhooks tests: written through the services and
the outbox queries as the service itself would, the secret under the ref `HOOKS_REF`."""

from __future__ import annotations

from callscope.catalog import outbox
from callscope.catalog.outbox import Outcome
from callscope.resources import Project, ProjectSpec
from callscope.resources.kinds import SecretKeyRef, Webhook
from callscope.services.objects import create_with_id

HOOKS_REF = SecretKeyRef(name="hooks")


async def hooked_project(runtime, account: str, name: str, labels: dict | None = None) -> Project:
    webhook = Webhook(url=f"https://hooks.example.com/{name}", sections=["metadata"], signing_secret_ref=HOOKS_REF)
    return await create_with_id(runtime.ctx, Project, account, name,
                                ProjectSpec(name=name, language="en", webhook=webhook), labels=labels)


async def add_event(runtime, project: Project, state: str = "failed") -> int:
    """An event of `project` after one attempt that ended in `state`."""
    ctx = runtime.ctx

    def add(session) -> int:
        event = outbox.add(session, project.namespace, project.status.id, 7, "recording.analyzed",
                           project.spec.webhook.url, {"type": "recording.analyzed"}, ctx.clock())
        session.flush()
        return event.id
    event_id = await ctx.catalog.write(add)
    [claimed] = await ctx.catalog.write(outbox.claim, 1, "test", 60, ctx.clock(), 12)
    code = 200 if state == "delivered" else 400
    await ctx.catalog.write(outbox.record, claimed, Outcome(state, ctx.clock(), 42, code, None, "answer"), ctx.clock())
    return event_id
