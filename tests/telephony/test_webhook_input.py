"""What the carrier's webhooks take: a correctly signed request whose parameters the catalog, a URL or a log could
not take is refused with 400 `{error}` and a logged warning, and writes nothing; what Twilio really sends is taken.
On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from structlog.testing import capture_logs

from callscope.catalog.tables import Call
from tests.telephony.webhook_world import CALLER, carrier, catalog_settings, new_sid, provider_settings, settings  # noqa: F401 - fixtures

NUL = "\x00"
HUGE = "9" * 40


def _voice(carrier, **changes: str) -> dict[str, str]:
    return {"CallSid": new_sid("CA"), "From": CALLER, "To": carrier.number("desk"), "CallerName": "Jane Doe",
            **changes}


# (webhook, its form with the bad value, its query) for a call in progress, `{call}` its CallSid
REFUSED = {
    "NUL in CallSid": ("voice", {"CallSid": "CA" + NUL + "0" * 31}, None),
    "NUL in From": ("voice", {"From": "+1415" + NUL}, None),
    "NUL in CallerName": ("voice", {"CallerName": "Jane" + NUL}, None),
    "CallSid over 64 characters": ("voice", {"CallSid": "CA" + "0" * 70}, None),
    "CallerName longer than its column": ("voice", {"CallerName": "J" * 256}, None),
    "To not E.164": ("voice", {"To": "14155550110"}, None),
    "40-digit DialCallDuration": ("dial", {"DialCallStatus": "completed", "DialCallDuration": HUGE}, {"attempt": "0"}),
    "40-digit CallDuration": ("status", {"CallStatus": "completed", "CallDuration": HUGE}, None),
    "23-digit dial attempt": ("dial", {"DialCallStatus": "no-answer"}, {"attempt": "9" * 23}),
    "23-digit answered operator": ("answered", {}, {"call": "{call}", "operator": "9" * 23}),
    "NUL in the answered call": ("answered", {}, {"call": NUL, "operator": "1"}),
    "NUL in the recording's call": ("recording", {"RecordingSid": new_sid("RE")}, {"call": "CA" + NUL}),
    "RecordingSid not Twilio's": ("recording", {"RecordingSid": "../RE1"}, {"call": "{call}"}),
    "unknown DialCallStatus": ("dial", {"DialCallStatus": "exploded"}, {"attempt": "0"}),
    "form not UTF-8": ("status", "CallStatus=completed&CallSid={call}&CallerName=%FF%FE", None),
}


@pytest.mark.parametrize("case", REFUSED)
async def test_signed_webhooks_the_catalog_cannot_take_are_400_and_write_nothing(carrier, case):
    webhook, form, query = REFUSED[case]
    call_sid = await carrier.call()
    query = {k: v.format(call=call_sid) for k, v in query.items()} if query else None
    if isinstance(form, str):
        body = form.format(call=call_sid)
        signed = [("CallStatus", "completed"), ("CallSid", call_sid), ("CallerName", "\ufffd\ufffd")]
    else:
        body = _voice(carrier, **form) if webhook == "voice" else {"CallSid": call_sid, **form}
        signed = None
    before = carrier.rows()
    with capture_logs() as logs:
        resp = await carrier.post(f"/telephony/twilio/{webhook}", body, query, signed)
    assert resp.status_code == 400, resp.text
    assert set(resp.json()) == {"error"} and resp.json()["error"].startswith("Invalid webhook parameters")
    assert NUL not in resp.text
    assert carrier.rows() == before
    [warning] = [e for e in logs if e["event"] == "telephony_webhook_refused"]
    assert warning["log_level"] == "warning" and warning["path"] == f"/telephony/twilio/{webhook}"
    assert all(NUL not in problem and HUGE not in problem for problem in warning["problems"])


async def test_what_the_carrier_really_sends_is_taken(carrier):
    """The lenient side: Twilio's withheld and client callers, blank values, unknown statuses and extra fields."""
    for caller in ("anonymous", "RESTRICTED", "+266696687", "client:support_desk", ""):
        resp = await carrier.post("/telephony/twilio/voice", _voice(carrier, From=caller, CallerName="",
                                                                    ApiVersion="2010-04-01"))
        assert resp.status_code == 200, (caller, resp.text)
    call_sid = await carrier.call()
    for status in ("ringing", "in-progress", "queued-for-something-new"):
        resp = await carrier.post("/telephony/twilio/status", {"CallSid": call_sid, "CallStatus": status,
                                                               "CallDuration": ""})
        assert resp.status_code == 204, resp.text
    resp = await carrier.post("/telephony/twilio/dial", {"CallSid": call_sid, "DialCallStatus": "busy",
                                                         "DialCallDuration": ""}, {"attempt": "0"})
    assert resp.status_code == 200 and "<Dial" in resp.text
    with carrier.runtime.catalog.session() as session:
        callers = set(session.scalars(select(Call.phone_number)))
    assert {"anonymous", "RESTRICTED", "+266696687", "client:support_desk", CALLER} <= callers
