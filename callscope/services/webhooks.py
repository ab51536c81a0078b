"""The webhook's events, each sent where the project's webhook lists its type in ``events``:

* ``recording.analyzed``, written to the outbox in the caller's transaction (the one that completes or fails the
  recording): the recording's ids, ``status`` and ``status_reason`` always, and the sections
  ``spec.webhook.sections`` lists, the analysis ones being the REST read-outs (analysis/readouts.py; null for a
  failed recording);
* ``recording.live_alert``, one per alert of a live call as it happens (callscope/live/calls.py): the call's ids and
  the alert as its live events tell it.

A payload is stored once and sent unchanged on every retry. Shapes: docs/operations.md. Delivery:
workers/webhooks.py.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from callscope.catalog import outbox
from callscope.catalog.tables import Recording, WebhookEvent
from callscope.resources import Project
from callscope.services.context import Context

EVENT_TYPE = "recording.analyzed"
LIVE_ALERT = "recording.live_alert"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def metadata(recording: Recording) -> dict[str, Any]:
    return {
        "name": recording.name, "language": recording.language, "duration_ms": recording.duration_ms,
        "operator_id": recording.operator_id, "called_at": _iso(recording.called_at),
        "recording_source": recording.recording_source, "created_at": _iso(recording.created_at),
        "updated_at": _iso(recording.updated_at), "dialogues_count": recording.dialogues_count,
        "goals_evaluated": recording.goals_evaluated, "pauses_detected": recording.pauses_detected,
    }


def payload(recording: Recording, sections: list[str], readouts: dict[str, Any] | None,
            now: datetime) -> dict[str, Any]:
    """The event body for ``recording`` with the chosen ``sections``: completed, with its analysis sections
    (``readouts``), or failed, with None."""
    data: dict[str, Any] = {
        "recording_id": recording.id, "public_id": recording.public_id, "project_id": recording.project_id,
        "external_id": recording.external_id, "status": recording.status, "status_reason": recording.status_reason,
    }
    for section in sections:
        data[section] = metadata(recording) if section == "metadata" else (readouts or {}).get(section)
    return {"type": EVENT_TYPE, "timestamp": _iso(now), "data": data}


def enqueue_recording_analyzed(session, *, recording: Recording, project: Any, readouts: dict[str, Any] | None,
                               now: datetime) -> WebhookEvent | None:
    """Write the event into the outbox in the caller's transaction; None when the project has no webhook.
    ``readouts``: the analysis sections of a completed recording, None for a failed one."""
    webhook = getattr(project, "webhook", None)
    if webhook is None or EVENT_TYPE not in webhook.events:
        return None
    body = payload(recording, list(webhook.sections), readouts, now)
    return outbox.add(session, recording.account, recording.project_id, recording.id, EVENT_TYPE, webhook.url,
                      body, now)


async def live_alert(ctx: Context, account: str, project: Project, public_id: str, external_id: str | None,
                     alert: dict[str, Any]) -> WebhookEvent | None:
    """Put a live call's alert (the event as the call's readers get it) into the outbox, where the project's webhook
    takes them; None where it does not. The call has no recording row yet: the event has no recording_id."""
    webhook = project.spec.webhook
    if webhook is None or LIVE_ALERT not in webhook.events or project.status.id is None:
        return None
    now = ctx.clock()
    body = {"type": LIVE_ALERT, "timestamp": _iso(now), "data": {
        "public_id": public_id, "project_id": project.status.id, "external_id": external_id, "alert": alert}}
    return await ctx.catalog.write(outbox.add, account, project.status.id, None, LIVE_ALERT, webhook.url, body, now)
