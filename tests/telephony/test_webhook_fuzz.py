"""A table-driven fuzz of every carrier webhook's form fields and query parameters, each request correctly signed,
on SQLite and PostgreSQL: NUL and other control characters, percent-escapes of bytes that are not UTF-8, values
longer than their columns, huge and negative integers, numbers of the wrong kind, missing, blank and repeated fields.
Every answer is below 500 and in the `{error}` (or `{errors}`) shape; a refused request writes nothing, and what an
accepted one writes holds only what its columns take (PostgreSQL itself would refuse the rest; on SQLite the test
checks). The number of inputs tried is printed (run with -s)."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, urlencode

import pytest
from sqlalchemy import String

from tests.audio_samples import make_audio
from tests.telephony.webhook_world import CALLER, carrier, catalog_settings, new_sid, provider_settings, settings  # noqa: F401 - fixtures

NASTY = [
    "", " ", "\x00", "CA\x00", "a\x00b", "\x1b[31m", "\r\nX-Injected: 1", "\t", "\x7f", "\x85", "\u2028", "\ufffd",
    "😀" * 3, "é" * 40, "x" * 33, "x" * 65, "x" * 256, "9" * 5000, "9" * 40, "-1", "-0", "+5", " 5 ", "1.5", "1e3",
    "0x10", "１２", "NaN", "true", "null", "[]", "{}", "'; DROP TABLE calls; --", "../../etc/passwd",
    "http://127.0.0.1:9/x", "%00", "2147483648", "9223372036854775808", "CA" + "f" * 32, "RE" + "0" * 32,
    "CA" + "g" * 32, "+14155550110", "anonymous", "client:" + "x" * 40, "completed", "no-answer", "2",
]
NOT_UTF8 = ["%FF", "%C3", "%C3%28", "%ED%A0%80", "%F4%90%80%80", "abc%80"]
BODIES = ["", "&&&", "=", "%", "%%41", "a=%", '{"CallSid": "CA00000000000000000000000000000000"}', "x" * 70_000,
          "CallSid=" + "%00" * 1000]


def _valid(carrier, webhook: str, call_sid: str) -> tuple[dict[str, str], dict[str, str]]:
    """A form and a query string the webhook takes, for the ringing call `call_sid`."""
    recording = {"CallSid": call_sid, "RecordingSid": new_sid("RE"), "RecordingStatus": "completed",
                 "RecordingChannels": "2", "RecordingDuration": "3", "RecordingUrl": "https://api.twilio.com/x"}
    return {
        "voice": ({"CallSid": new_sid("CA"), "From": CALLER, "To": carrier.number("desk"), "CallerName": "Jane"}, {}),
        "dial": ({"CallSid": call_sid, "DialCallStatus": "no-answer", "DialCallDuration": "0"}, {"attempt": "0"}),
        "answered": ({"CallSid": new_sid("CA"), "CallStatus": "in-progress"},
                     {"call": call_sid, "operator": str(carrier.operator_id("bob"))}),
        "recording": (recording, {"call": call_sid}),
        "status": ({"CallSid": call_sid, "CallStatus": "completed", "CallDuration": "7"}, {}),
        "hangup": ({"CallSid": call_sid}, {}),
    }[webhook]


def _inputs(form: dict[str, str], query: dict[str, str]) -> list[tuple[str, str, str, list[tuple[str, str]]]]:
    """(what, encoded form, encoded query, the form as signed) for every change of one field."""
    out = []
    for where, fields in (("form", form), ("query", query)):
        for name in fields:
            variants = [(repr(v), {**fields, name: v}) for v in NASTY]
            variants.append(("missing", {k: v for k, v in fields.items() if k != name}))
            for what, changed in variants:
                f, q = (changed, query) if where == "form" else (form, changed)
                out.append((f"{where} {name}={what}", urlencode(f), urlencode(q), list(f.items())))
            for escape in NOT_UTF8:
                raw = quote(name) + "=" + escape
                f_text = urlencode({k: v for k, v in form.items() if k != name})
                if where == "form":
                    out.append((f"form {name}={escape}", f_text + "&" + raw, urlencode(query), list(form.items())))
                else:
                    q_text = urlencode({k: v for k, v in query.items() if k != name})
                    out.append((f"query {name}={escape}", urlencode(form), q_text + "&" + raw, list(form.items())))
        if fields:
            repeated = list(fields.items()) + [(name, "\x00") for name in fields]
            out.append((f"{where} every field twice", urlencode(repeated if where == "form" else form),
                        urlencode(repeated if where == "query" else query), repeated if where == "form" else
                        list(form.items())))
    out += [(f"body {body[:20]!r}", body, urlencode(query), parse_qsl(body, keep_blank_values=True))
            for body in BODIES]
    return out


def _column_violations(rows: list[tuple]) -> list[str]:
    from callscope.catalog.tables import Call, Recording, RoutingCursor

    columns = {c.key: c for table in (Call, RoutingCursor, Recording) for c in table.__table__.columns}
    out = []
    for row in rows:
        for key, value in row:
            if isinstance(value, str):
                column = columns[key]
                if "\x00" in value:
                    out.append(f"{key} holds NUL")
                if isinstance(column.type, String) and column.type.length and len(value) > column.type.length:
                    out.append(f"{key} is {len(value)} characters, its column {column.type.length}")
            elif isinstance(value, int) and not -2**63 <= value < 2**63:
                out.append(f"{key} is {value}")
    return out


@pytest.mark.parametrize("webhook", ["voice", "dial", "answered", "recording", "status", "hangup"])
async def test_no_webhook_input_gives_a_5xx_or_writes_half(carrier, webhook, httpserver, tmp_path):
    wav = make_audio(tmp_path / "call.wav", "wav", seconds=0.5, channels=2).read_bytes()
    httpserver.expect_request(re.compile(r".*/Recordings/RE[0-9a-f]{32}\.wav")).respond_with_data(wav)
    tried, ringing = 0, await carrier.call()
    before = carrier.rows()
    for what, form, query, signed in _inputs(*_valid(carrier, webhook, "{call}")):
        resp = await carrier.post(f"/telephony/twilio/{webhook}", form.replace("%7Bcall%7D", ringing),
                                  query.replace("%7Bcall%7D", ringing),
                                  [(k, v.replace("{call}", ringing)) for k, v in signed])
        tried += 1
        assert resp.status_code < 500, (what, resp.status_code, resp.text)
        if resp.status_code >= 400:
            body = resp.json()
            assert set(body) == ({"errors"} if resp.status_code == 422 else {"error"}), (what, body)
            assert carrier.rows() == before, what
        else:  # taken: the next input gets a call still ringing, to go all the way too
            ringing = await carrier.call() if webhook != "voice" else ringing
            before = carrier.rows()
    assert _column_violations(carrier.rows()) == []
    print(f"\n{webhook}: {tried} inputs, 0 5xx")
