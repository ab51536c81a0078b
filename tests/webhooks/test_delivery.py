"""The recording.analyzed outbox and its delivery (workers/webhooks.py) against a real HTTP endpoint on loopback,
on SQLite and PostgreSQL catalogs: signatures a receiver verifies, retries with backoff and Retry-After, permanent
refusals, 410 disabling the endpoint, leases between two deliverers, and the address rules."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from werkzeug import Response

from callscope import signing_secrets, webhook_signing
from callscope.catalog import outbox
from callscope.catalog.tables import Recording, WebhookAttempt, WebhookEvent
from callscope.config import Settings
from callscope.resources import Project, ProjectSpec
from callscope.resources.kinds import SecretKeyRef, Webhook
from callscope.runtime import Runtime
from callscope.secret_store import FileSecretStore
from callscope.services import webhooks
from callscope.services.objects import create_with_id
from callscope.validation import endpoint
from callscope.webhook_endpoints import Refused, address_allowed, resolve_checked
from callscope.workers.webhooks import WebhookDeliverer, retry_after
from tests.queue.rows import add_recording

ACCOUNT = "acme"
SECRET = webhook_signing.new_secret()


@pytest.fixture
async def ctx(tmp_path, catalog_url):
    settings = Settings(data_dir=tmp_path / "data", database_url=catalog_url, log_level="WARNING",
                        webhook_allow_http=True, webhook_allow_private_addresses=True, webhook_max_attempts=3,
                        webhook_retry_base_seconds=10, webhook_timeout_seconds=1)
    runtime = Runtime(settings)
    await runtime.start(background=False)
    FileSecretStore(settings.data_dir / "secrets").write(ACCOUNT, "hooks", "signing-secret", SECRET)
    yield runtime.ctx
    await runtime.stop()


async def make_project(ctx, url: str, sections=("metadata", "summary", "goals"), secret: bool = True) -> Project:
    webhook = Webhook(url=url, sections=list(sections),
                      signing_secret_ref=SecretKeyRef(name="hooks") if secret else None)
    return await create_with_id(ctx, Project, ACCOUNT, "support",
                                ProjectSpec(name="Support", language="en", webhook=webhook))


def add_event(ctx, project: Project, readouts: dict | None = None) -> int:
    rid = add_recording(ctx.catalog, account=ACCOUNT, project_id=project.status.id, status="completed", job=False)
    with ctx.catalog.session(write=True) as session:
        event = webhooks.enqueue_recording_analyzed(session, recording=session.get(Recording, rid),
                                                    project=project.spec, readouts=readouts, now=ctx.clock())
        session.flush()
        return event.id


def event_row(ctx, event_id: int) -> WebhookEvent:
    with ctx.catalog.session() as session:
        return session.get(WebhookEvent, event_id)


def attempts(ctx, event_id: int) -> list[WebhookAttempt]:
    with ctx.catalog.session() as session:
        return list(session.scalars(select(WebhookAttempt).where(WebhookAttempt.event_id == event_id)))


def receiving(httpserver) -> list[tuple[dict, bytes]]:
    """What `/hook` receives (headers, body), answered 200."""
    received: list[tuple[dict, bytes]] = []

    def handler(request):
        received.append((dict(request.headers), request.get_data()))
        return Response("ok", 200)
    httpserver.expect_request("/hook", method="POST").respond_with_handler(handler)
    return received


async def deliver_due(deliverer: WebhookDeliverer) -> list[outbox.Outcome]:
    claimed = await deliverer.ctx.catalog.write(outbox.claim, 10, deliverer.owner, 60,
                                              deliverer.ctx.clock(), deliverer.settings.webhook_max_attempts)
    return [await deliverer.deliver(event) for event in claimed]


@pytest.fixture
async def deliverer(ctx):
    d = WebhookDeliverer(ctx)
    yield d
    await d.close()


async def test_delivery_is_signed_and_the_receiver_verifies_it(ctx, deliverer, httpserver) -> None:
    received = receiving(httpserver)
    project = await make_project(ctx, httpserver.url_for("/hook"))
    event_id = add_event(ctx, project, {"summary": {"summary": "They agreed."},
                                        "goals": [{"goal_id": 1, "met": True}]})

    [outcome] = await deliver_due(deliverer)

    assert outcome.state == "delivered"
    [(headers, body)] = received
    webhook_signing.verify(SECRET, headers, body, now=time.time())  # raises when the signature is wrong
    with pytest.raises(webhook_signing.InvalidSignature):
        webhook_signing.verify(SECRET, headers, body + b" ", now=time.time())
    with pytest.raises(webhook_signing.InvalidSignature):
        webhook_signing.verify(webhook_signing.new_secret(), headers, body, now=time.time())
    doc = json.loads(body)
    assert doc["type"] == "recording.analyzed"
    assert doc["data"]["status"] == "completed" and doc["data"]["summary"] == {"summary": "They agreed."}
    assert doc["data"]["goals"] == [{"goal_id": 1, "met": True}]
    assert "transcription" not in doc["data"] and "categories" not in doc["data"]  # sections not chosen
    assert doc["data"]["metadata"]["name"] == "call"
    row = event_row(ctx, event_id)
    assert (row.state, row.attempts, row.last_status_code) == ("delivered", 1, 200)
    assert headers["Webhook-Id"] == row.message_id
    assert [a.status_code for a in attempts(ctx, event_id)] == [200]


async def test_a_rotated_secret_signs_beside_the_new_one_until_its_overlap_ends(ctx, deliverer, httpserver) -> None:
    received = receiving(httpserver)
    project = await make_project(ctx, httpserver.url_for("/hook"))
    store = FileSecretStore(ctx.settings.data_dir / "secrets")
    new = await signing_secrets.rotate(store, ACCOUNT, SecretKeyRef(name="hooks"), timedelta(hours=1), ctx.clock())

    add_event(ctx, project)
    await deliver_due(deliverer)
    ctx.clock = lambda: datetime.now(UTC) + timedelta(hours=1, seconds=1)  # the overlap is over
    add_event(ctx, project)
    await deliver_due(deliverer)

    (during, body), (after, later_body) = received
    assert len(during["Webhook-Signature"].split()) == 2
    for secret in (SECRET, new):  # a receiver on either secret accepts
        webhook_signing.verify(secret, during, body, now=time.time())
    webhook_signing.verify(new, after, later_body, now=time.time())
    with pytest.raises(webhook_signing.InvalidSignature):
        webhook_signing.verify(SECRET, after, later_body, now=time.time())


async def test_no_signing_secret_configured_sends_unsigned(ctx, deliverer, httpserver) -> None:
    httpserver.expect_request("/hook").respond_with_data("ok")
    project = await make_project(ctx, httpserver.url_for("/hook"), secret=False)
    add_event(ctx, project)
    [outcome] = await deliver_due(deliverer)
    assert outcome.state == "delivered"
    [(request, _)] = httpserver.log
    # .keys(): iterating werkzeug's Headers gives (name, value) pairs
    assert "webhook-signature" not in {k.lower() for k in request.headers.keys()}  # noqa: SIM118
    assert request.headers["webhook-id"].startswith("msg_")


async def test_a_missing_secret_is_retried_not_sent_unsigned(ctx, deliverer, httpserver) -> None:
    project = await make_project(ctx, httpserver.url_for("/hook"))
    (ctx.settings.data_dir / "secrets" / ACCOUNT / "hooks" / "signing-secret").unlink()
    event_id = add_event(ctx, project)
    [outcome] = await deliver_due(deliverer)
    assert outcome.state == "pending" and "signing secret hooks/signing-secret not found" in outcome.error
    assert httpserver.log == []
    assert event_row(ctx, event_id).state == "pending"


async def test_server_errors_are_retried_with_backoff_then_delivered_with_the_same_id(ctx, deliverer,
                                                                                        httpserver) -> None:
    httpserver.expect_ordered_request("/hook").respond_with_data("busy", status=503)
    httpserver.expect_ordered_request("/hook").respond_with_data("ok", status=204)
    project = await make_project(ctx, httpserver.url_for("/hook"))
    event_id = add_event(ctx, project)

    [first] = await deliver_due(deliverer)
    assert first.state == "pending" and first.status_code == 503
    row = event_row(ctx, event_id)
    delay = (row.next_attempt_at - ctx.clock()).total_seconds()
    assert 4 <= delay <= 15  # base 10 s, jitter 0.5x..1.5x
    assert await deliver_due(deliverer) == []  # not due yet

    ctx.clock = lambda: datetime.now(UTC) + timedelta(seconds=16)
    [second] = await deliver_due(deliverer)
    assert second.state == "delivered"
    ids = {request.headers["webhook-id"] for request, _ in httpserver.log}
    assert len(ids) == 1  # receivers deduplicate on it
    assert [a.status_code for a in attempts(ctx, event_id)] == [503, 204]


async def test_retry_after_is_honoured(ctx, deliverer, httpserver) -> None:
    httpserver.expect_request("/hook").respond_with_data("slow down", status=429, headers={"Retry-After": "120"})
    project = await make_project(ctx, httpserver.url_for("/hook"))
    event_id = add_event(ctx, project)
    before = ctx.clock()  # the attempt is made after this: its retry is due 120 s after it, however slow the run
    [outcome] = await deliver_due(deliverer)
    assert outcome.state == "pending"
    assert (event_row(ctx, event_id).next_attempt_at - before).total_seconds() >= 119


@pytest.mark.parametrize("status", [400, 401, 404, 422, 301])
async def test_client_errors_and_redirects_stop_at_once(ctx, deliverer, httpserver, status) -> None:
    httpserver.expect_request("/hook").respond_with_data("no", status=status, headers={"Location": "/elsewhere"})
    project = await make_project(ctx, httpserver.url_for("/hook"))
    event_id = add_event(ctx, project)
    [outcome] = await deliver_due(deliverer)
    assert outcome.state == "failed" and outcome.status_code == status
    assert event_row(ctx, event_id).state == "failed"
    assert len(httpserver.log) == 1


async def test_408_and_timeouts_are_retried_until_attempts_run_out(ctx, deliverer, httpserver) -> None:
    def slow(request):
        time.sleep(1.5)  # past webhook_timeout_seconds=1
        return Response("late")
    httpserver.expect_ordered_request("/hook").respond_with_data("timeout", status=408)
    httpserver.expect_request("/hook").respond_with_handler(slow)
    project = await make_project(ctx, httpserver.url_for("/hook"))
    event_id = add_event(ctx, project)
    states = []
    for n in range(3):
        ctx.clock = lambda n=n: datetime.now(UTC) + timedelta(hours=n)  # each retry due
        states += [(o.state, o.status_code) for o in await deliver_due(deliverer)]
    assert states[0] == ("pending", 408)
    assert states[1] == ("pending", None)
    assert states[2][0] == "failed"  # webhook_max_attempts = 3
    row = event_row(ctx, event_id)
    assert row.state == "failed" and "timed out" in row.last_error and "after 3 attempts" in row.last_error
    deadline = time.monotonic() + 5
    while len(httpserver.log) < 3 and time.monotonic() < deadline:  # let the slow handlers finish: the server is
        time.sleep(0.05)                                                # shared with the next test


async def test_410_disables_the_endpoint_until_enabled(ctx, deliverer, httpserver) -> None:
    httpserver.expect_ordered_request("/hook").respond_with_data("gone", status=410)
    httpserver.expect_ordered_request("/hook").respond_with_data("back")
    url = httpserver.url_for("/hook")
    project = await make_project(ctx, url)
    first, second = add_event(ctx, project), add_event(ctx, project)

    outcomes = await deliver_due(deliverer)
    assert [o.state for o in outcomes] == ["disabled", "disabled"]
    assert len(httpserver.log) == 1  # the second event was not sent to the disabled endpoint
    assert "endpoint disabled" in event_row(ctx, second).last_error

    assert ctx.catalog.change(outbox.enable_endpoint, ACCOUNT, url) == 1
    assert ctx.catalog.change(outbox.redeliver, ACCOUNT, [first], ctx.clock()) == [first]
    [outcome] = await deliver_due(deliverer)
    assert outcome.state == "delivered"
    assert event_row(ctx, second).state == "disabled"


async def test_an_event_is_leased_by_one_deliverer_and_taken_over_when_its_lease_expires(ctx, httpserver) -> None:
    httpserver.expect_request("/hook").respond_with_data("ok")
    project = await make_project(ctx, httpserver.url_for("/hook"))
    event_id = add_event(ctx, project)
    a, b = WebhookDeliverer(ctx, owner="a"), WebhookDeliverer(ctx, owner="b")
    try:
        now = ctx.clock()
        [claimed] = ctx.catalog.change(outbox.claim, 10, "a", 60, now, 5)
        assert ctx.catalog.change(outbox.claim, 10, "b", 60, now, 5) == []  # leased by a
        [taken] = ctx.catalog.change(outbox.claim, 10, "b", 60, now + timedelta(seconds=61), 5)  # a died
        assert taken.attempt == 2
        outcome = await b.attempt(taken)
        assert ctx.catalog.change(outbox.record, taken, outcome, now) is True
        late = await a.attempt(claimed)
        assert ctx.catalog.change(outbox.record, claimed, late, now) is False  # a's lease was taken: nothing written
        assert event_row(ctx, event_id).state == "delivered"
        assert len(attempts(ctx, event_id)) == 1
    finally:
        await a.close()
        await b.close()


async def test_abandoned_last_attempt_fails_the_event(ctx) -> None:
    project = await make_project(ctx, "https://hooks.example.com/x")
    event_id = add_event(ctx, project)
    now = ctx.clock()
    ctx.catalog.change(outbox.claim, 10, "a", 60, now, 1)
    assert ctx.catalog.change(outbox.claim, 10, "b", 60, now + timedelta(seconds=61), 1) == []
    row = event_row(ctx, event_id)
    assert row.state == "failed" and "stopped during the last attempt" in row.last_error


async def test_private_addresses_and_plain_http_are_refused_by_default(ctx, httpserver) -> None:
    strict = WebhookDeliverer(dataclasses.replace(ctx, settings=Settings(
        data_dir=ctx.settings.data_dir, database_url=ctx.settings.database_url)))
    try:
        project = await make_project(ctx, httpserver.url_for("/hook"))
        add_event(ctx, project)
        [outcome] = await deliver_due(strict)
        assert outcome.state == "failed" and "only https://" in outcome.error
        assert httpserver.log == []
    finally:
        await strict.close()


@pytest.mark.parametrize("address,allowed", [
    ("127.0.0.1", False), ("10.1.2.3", False), ("172.16.0.1", False), ("192.168.1.1", False),
    ("169.254.169.254", False), ("::1", False), ("fe80::1", False), ("fd00::1", False), ("::ffff:127.0.0.1", False),
    ("0.0.0.0", False), ("224.0.0.1", False), ("100.64.0.1", False), ("8.8.8.8", True),
    ("2606:4700:4700::1111", True)])
def test_address_rules(address, allowed) -> None:
    assert address_allowed(address, allow_private=False) is allowed


def test_private_addresses_allowed_for_development() -> None:
    assert address_allowed("127.0.0.1", allow_private=True) and address_allowed("10.0.0.1", allow_private=True)
    assert not address_allowed("0.0.0.0", allow_private=True)


async def test_the_resolved_address_is_checked_not_the_name() -> None:
    settings = Settings(webhook_allow_http=True)
    with pytest.raises(Refused, match="resolves to a loopback"):
        await resolve_checked("http://localhost:9/hook", settings)  # a public-looking name is no pass either
    target, host = await resolve_checked("http://127.0.0.1:9/x?a=1",
                                         Settings(webhook_allow_http=True, webhook_allow_private_addresses=True))
    assert (target, host) == ("http://127.0.0.1:9/x?a=1", "127.0.0.1")
    with pytest.raises(Refused, match="only https://"):
        await resolve_checked("http://8.8.8.8/hook", Settings())
    with pytest.raises(Refused, match="not an http"):
        await resolve_checked("ftp://8.8.8.8/hook", Settings())


# URLs an older version saved (its pattern took them), each the delivery attempt's reason in a few words
UNPARSEABLE = {"https://[::1": "Invalid IPv6 URL", "https://a.example.com:99999/": "Port out of range",
               "https://a.example.com:-1/": "Port could not be cast", "https://a.example.com:0/": "port must be",
               f"https://{'a' * 64}.example.com/": "is not a host name",
               "https://a..example.com/": "is not a host name", "https://user:pw@a.example.com/": "user name or",
               "https://[1:2]/": "cannot be parsed", "https://a!b.example.com/": "is not a host name"}


@pytest.mark.parametrize("url", sorted(UNPARSEABLE))
async def test_a_stored_unparseable_url_fails_the_event_with_its_reason(ctx, deliverer, url) -> None:
    # the event as an older version enqueued it: the outbox keeps each event's URL
    project = await make_project(ctx, "https://hooks.example.com/x")
    rid = add_recording(ctx.catalog, account=ACCOUNT, project_id=project.status.id, status="completed", job=False)

    def add(session) -> int:
        event = outbox.add(session, ACCOUNT, project.status.id, rid, "recording.analyzed", url,
                           {"type": "recording.analyzed"}, ctx.clock())
        session.flush()
        return event.id
    event_id = ctx.catalog.change(add)
    loop, escaped = asyncio.get_running_loop(), []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: escaped.append(context))
    try:
        [claimed] = await deliverer.tick()  # the loop's own path: a task per event
        await asyncio.gather(*deliverer.running)  # raises what a task let out
    finally:
        loop.set_exception_handler(previous)
    assert claimed.id == event_id and escaped == []
    row = event_row(ctx, event_id)
    assert (row.state, row.attempts, row.lease_owner) == ("failed", 1, None)  # at once, not when the lease ran out
    [attempt] = attempts(ctx, event_id)
    assert UNPARSEABLE[url] in attempt.error and "not an http(s) URL that can be delivered to" in attempt.error
    assert attempt.error == row.last_error and url in attempt.error


async def test_an_unexpected_error_in_an_attempt_is_recorded_and_retried(ctx, deliverer, httpserver,
                                                                         monkeypatch) -> None:
    project = await make_project(ctx, httpserver.url_for("/hook"))
    event_id = add_event(ctx, project)

    async def broken(event):
        raise RuntimeError("something of ours broke")
    monkeypatch.setattr(deliverer, "_secrets", broken)
    assert len(await deliverer.tick()) == 1
    await asyncio.gather(*deliverer.running)
    row = event_row(ctx, event_id)
    assert (row.state, row.attempts, row.lease_owner) == ("pending", 1, None)
    [attempt] = attempts(ctx, event_id)
    assert attempt.error == "error in delivery: RuntimeError: something of ours broke" == row.last_error
    assert httpserver.log == []


def test_every_webhook_url_is_saved_only_if_delivery_can_parse_it() -> None:
    """The models (Settings page, `callscope apply`, the stores) and delivery take a URL apart with one function."""
    for url in UNPARSEABLE:
        with pytest.raises(ValueError):
            endpoint(url)
        with pytest.raises(ValueError):
            Webhook(url=url)
    for url, (host, port, path, authority) in {
            "https://hooks.example.com/x?a=1#f": ("hooks.example.com", 443, "/x?a=1", "hooks.example.com"),
            "http://127.0.0.1:9": ("127.0.0.1", 9, "/", "127.0.0.1:9"),
            "https://[2001:db8::1]:8443/p": ("2001:db8::1", 8443, "/p", "[2001:db8::1]:8443"),
            "https://Bücher.example/hook": ("xn--bcher-kva.example", 443, "/hook", "xn--bcher-kva.example")}.items():
        parts = endpoint(url)
        assert (parts.host, parts.connect_port, parts.path, parts.authority) == (host, port, path, authority)
        assert Webhook(url=url).url == url


def test_retry_after_parsing() -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    assert retry_after("120", now) == timedelta(seconds=120)
    assert retry_after("Tue, 01 Jan 2030 00:05:00 GMT", now) == timedelta(minutes=5)
    assert retry_after("99999999", now) == timedelta(days=1)  # capped
    assert retry_after("soon", now) is None and retry_after(None, now) is None


def test_failed_recording_payload_carries_status_and_reason(ctx) -> None:
    with ctx.catalog.session() as session:
        rid = add_recording(ctx.catalog, account=ACCOUNT, status="failed", job=False)
        recording = session.get(Recording, rid)
        recording.status_reason = "cannot decode audio"
        body = webhooks.payload(recording, ["metadata", "summary", "transcription", "goals", "categories",
                                            "extracted_data"], None, datetime(2030, 1, 1, tzinfo=UTC))
    assert body["timestamp"] == "2030-01-01T00:00:00Z"
    data = body["data"]
    assert (data["status"], data["status_reason"]) == ("failed", "cannot decode audio")
    # a failed recording has no analysis: its analysis sections are null
    assert data["summary"] is data["transcription"] is data["goals"] is data["categories"] is None
    assert data["extracted_data"] is None and data["metadata"]["name"] == "call"


async def test_live_alerts_are_sent_signed_where_the_webhook_takes_them(ctx, deliverer, httpserver) -> None:
    received = receiving(httpserver)
    alert = {"type": "alert", "public_id": "0193-live", "seq": 7, "kind": "silence", "name": "Long silence"}
    analysed_only = await make_project(ctx, httpserver.url_for("/hook"))
    # a webhook without `events` gets recording.analyzed only
    assert await webhooks.live_alert(ctx, ACCOUNT, analysed_only, "0193-live", "pbx-1", alert) is None
    both = Webhook(url=httpserver.url_for("/hook"), events=["recording.analyzed", "recording.live_alert"],
                   signing_secret_ref=SecretKeyRef(name="hooks"))
    project = await create_with_id(ctx, Project, ACCOUNT, "live", ProjectSpec(name="Live", language="en", webhook=both))
    event = await webhooks.live_alert(ctx, ACCOUNT, project, "0193-live", "pbx-1", alert)

    [outcome] = await deliver_due(deliverer)

    assert outcome.state == "delivered" and event is not None
    [(headers, body)] = received
    webhook_signing.verify(SECRET, headers, body, now=time.time())
    assert json.loads(body)["type"] == "recording.live_alert"
    assert json.loads(body)["data"] == {"public_id": "0193-live", "project_id": project.status.id,
                                        "external_id": "pbx-1", "alert": alert}
    assert (event_row(ctx, event.id).recording_id, event_row(ctx, event.id).event_type) == (
        None, "recording.live_alert")


def test_a_webhook_taking_live_alerts_only_gets_no_recording_analyzed(ctx) -> None:
    webhook = Webhook(url="https://hooks.example.com/live", events=["recording.live_alert"])
    rid = add_recording(ctx.catalog, account=ACCOUNT, project_id=1, status="completed", job=False)
    spec = ProjectSpec(name="Live", language="en", webhook=webhook)
    with ctx.catalog.session(write=True) as session:
        assert webhooks.enqueue_recording_analyzed(session, recording=session.get(Recording, rid), project=spec,
                                                   readouts=None, now=ctx.clock()) is None
