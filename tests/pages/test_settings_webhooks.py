"""Settings → Webhooks over plain HTTP, in process, on SQLite and PostgreSQL: only admins reach it (404 to members on
every page and form); every form refuses a missing or wrong CSRF token; the endpoint form writes the Project as the
REST API does and refuses a bad URL, an unknown section or an endpoint delivery would refuse (naming the setting that
allows it for development), saving one whose name does not resolve yet with a warning; the tenant boundary (another
account's project or delivery is not found); a GitOps-owned project is read-only; *Send test event* POSTs a signed
webhook.test and shows the answer or the refusal; the delivery list names the recording and counts every attempt
(as `callscope webhooks list` does), a delivery's page links to its recording by name;
redelivery queues any finished delivery again; rotating the secret shows the new one once and keeps the old one
signing for the overlap window, which is bounded. Names under example.com resolve without a network (fake_dns)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from datetime import timedelta

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import select

from callscope import signing_secrets, webhook_signing
from callscope.catalog import outbox
from callscope.catalog.outbox import Outcome
from callscope.catalog.tables import Recording, WebhookEvent
from callscope.cli import main
from callscope.resources import Project
from callscope.resources.kinds import SecretKeyRef
from callscope.secret_store import FileSecretStore
from callscope.services import accounts, projects
from callscope.services.context import Principal
from tests.live import WebhookReceiver
from tests.pages.conftest import csrf_of, email_link
from tests.pages.webhook_world import add_event, add_recording, fake_dns, hooked_project

ADMIN = "ada@example.com"
HOOKS = "/settings/webhooks"
OLD_SECRET = webhook_signing.new_secret()
ADMIN_KEY = Principal(account="default", key_name="test", key_uid="test", permissions=frozenset({"read", "write"}))


@pytest.fixture(autouse=True)
def dns(monkeypatch) -> None:
    fake_dns(monkeypatch)


def allow(runtime, **settings: bool) -> None:
    """The development settings (webhook_allow_http, webhook_allow_private_addresses) as `callscope serve` has them."""
    runtime.ctx.settings = runtime.ctx.settings.model_copy(update=settings)


async def signed_in(runtime, client: httpx.AsyncClient, address: str) -> httpx.AsyncClient:
    token = await email_link(runtime, address)
    confirm = await client.get("/sign-in/link", params={"token": token})
    resp = await client.post("/sign-in/link", data={"token": token, "csrf": csrf_of(confirm.text)})
    assert resp.status_code == 303, resp.text
    return client


@pytest.fixture
async def site(runtime, pages):
    """The admin of `default` signed in; `default` has Support (with a failed and a delivered delivery), `other` has
    Theirs with one of its own."""
    await accounts.add_member(runtime.ctx, "default", ADMIN, "Ada", "admin")
    FileSecretStore(runtime.ctx.settings.secrets_dir).write("default", "hooks", "signing-secret", OLD_SECRET)
    ours = await hooked_project(runtime, "default", "Support")
    theirs = await hooked_project(runtime, "other", "Theirs")
    failed, delivered = await add_event(runtime, ours), await add_event(runtime, ours, "delivered")
    their_event = await add_event(runtime, theirs)
    await signed_in(runtime, pages, ADMIN)
    return {"client": pages, "ours": ours.status.id, "theirs": theirs.status.id, "failed": failed,
            "delivered": delivered, "their_event": their_event}


def paths(project_id: int, event_id: int) -> tuple[list[str], list[str]]:
    """Every page and every form of one project's webhook."""
    project = f"{HOOKS}/{project_id}"
    delivery = f"{project}/deliveries/{event_id}"
    return [HOOKS, project, f"{project}/rotate", delivery], [project, f"{project}/rotate", f"{delivery}/redeliver"]


def project_of(runtime, account: str, project_id: int) -> Project:
    return runtime.ctx.store.get_by_id(Project, account, project_id)


async def event_state(runtime, event_id: int) -> tuple[str, int]:
    def read(session):
        row = session.scalar(select(WebhookEvent).where(WebhookEvent.id == event_id))
        return row.state, row.attempts
    return await runtime.ctx.catalog.read(read)


# ----- who reaches it -------------------------------------------------------------------------------------------


async def test_a_member_gets_not_found_on_every_webhooks_page_and_form(runtime, site, member):
    # `member` signs the same client in as a plain member of `default`
    gets, posts = paths(site["ours"], site["failed"])
    token = csrf_of((await member.get("/recordings")).text)
    for path in gets:
        assert (await member.get(path)).status_code == 404, path
    for path in posts:
        resp = await member.post(path, data={"csrf": token, "url": "https://evil.example.com", "overlap_hours": "1"})
        assert resp.status_code == 404, path
    assert project_of(runtime, "default", site["ours"]).spec.webhook.url == "https://hooks.example.com/Support"
    assert await event_state(runtime, site["failed"]) == ("failed", 1)


async def test_a_signed_out_visitor_is_sent_to_sign_in(runtime, pages):
    for path in paths(1, 1)[0]:
        resp = await pages.get(path)
        assert resp.status_code == 303 and resp.headers["location"].startswith("/sign-in?next="), path


async def test_the_admin_sees_each_projects_endpoint_sections_and_delivery_log(site):
    admin = site["client"]
    listing = await admin.get(HOOKS)
    assert listing.status_code == 200 and 'aria-current="page">Webhooks' in listing.text
    assert "https://hooks.example.com/Support" in listing.text and "Theirs" not in listing.text
    page = await admin.get(f"{HOOKS}/{site['ours']}")
    assert page.status_code == 200
    assert 'name="metadata" id="w-metadata" checked' in page.text
    assert "kept as <code>signing-secret</code> of the Secret <code>hooks</code>" in page.text
    assert f"/deliveries/{site['failed']}\">#{site['failed']}" in page.text and ">400<" in page.text
    delivery = await admin.get(f"{HOOKS}/{site['ours']}/deliveries/{site['failed']}")
    assert "42 ms" in delivery.text and ">400<" in delivery.text and 'id="redeliver"' in delivery.text
    delivered = await admin.get(f"{HOOKS}/{site['ours']}/deliveries/{site['delivered']}")
    assert ">200<" in delivered.text and 'id="redeliver"' in delivered.text  # a delivered one may be asked for again


# ----- CSRF and the tenant boundary -------------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "", "wrong", "é" * 10])
async def test_every_form_refuses_a_missing_or_wrong_csrf_token(runtime, site, token):
    admin = site["client"]
    for path in paths(site["ours"], site["failed"])[1]:
        data = {"url": "https://new.example.com/x", "metadata": "on", "overlap_hours": "1"}
        resp = await admin.post(path, data=data if token is None else {**data, "csrf": token})
        assert resp.status_code == 400 and "form has expired" in resp.text, path
    assert project_of(runtime, "default", site["ours"]).spec.webhook.url == "https://hooks.example.com/Support"
    assert await event_state(runtime, site["failed"]) == ("failed", 1)
    assert await FileSecretStore(runtime.ctx.settings.secrets_dir).read("default", "hooks",
                                                                        "signing-secret") == OLD_SECRET


async def test_another_accounts_project_or_delivery_is_not_found(runtime, site):
    admin = site["client"]
    token = csrf_of((await admin.get(HOOKS)).text)
    cases = [(site["theirs"], site["their_event"]),  # their project and delivery
             (site["ours"], site["their_event"]),  # their delivery under our project
             (site["theirs"], site["failed"]),  # our delivery under their project
             (9_223_372_036_854_775_807, site["failed"]), (site["ours"], 9_223_372_036_854_775_808)]
    for project_id, event_id in cases:
        gets, posts = paths(project_id, event_id)
        for path in gets[1:] if project_id == site["theirs"] or project_id > 10**9 else gets[3:]:
            assert (await admin.get(path)).status_code == 404, path
        for path in posts if project_id == site["theirs"] or project_id > 10**9 else posts[2:]:
            resp = await admin.post(path, data={"csrf": token, "url": "https://evil.example.com/x",
                                                "overlap_hours": "1"})
            assert resp.status_code == 404, path
    theirs = project_of(runtime, "other", site["theirs"])
    assert theirs.spec.webhook.url == "https://hooks.example.com/Theirs"
    assert await event_state(runtime, site["their_event"]) == ("failed", 1)


# ----- the endpoint form -----------------------------------------------------------------------------------------


async def test_the_endpoint_form_writes_the_project_as_the_api_does(runtime, site):
    admin = site["client"]
    path = f"{HOOKS}/{site['ours']}"
    token = csrf_of((await admin.get(path)).text)
    resp = await admin.post(path, data={"csrf": token, "url": "https://crm.example.com/hooks", "summary": "on",
                                        "goals": "on"})
    assert resp.status_code == 303 and resp.headers["location"] == path
    webhook = project_of(runtime, "default", site["ours"]).spec.webhook
    assert (webhook.url, webhook.sections) == ("https://crm.example.com/hooks", ["summary", "goals"])
    assert webhook.signing_secret_ref == SecretKeyRef(name="hooks")  # the secret stays
    resp = await admin.post(path, data={"csrf": token, "url": "", "metadata": "on"})  # no URL: no webhook
    assert resp.status_code == 303 and project_of(runtime, "default", site["ours"]).spec.webhook is None


async def test_live_alerts_are_an_event_the_endpoint_form_subscribes_to(runtime, site):
    admin = site["client"]
    path = f"{HOOKS}/{site['ours']}"
    token = csrf_of((await admin.get(path)).text)
    fields = {"csrf": token, "url": "https://crm.example.com/hooks", "metadata": "on"}
    assert (await admin.post(path, data={**fields, "live_alerts": "on"})).status_code == 303
    events = project_of(runtime, "default", site["ours"]).spec.webhook.events
    assert events == ["recording.analyzed", "recording.live_alert"]
    assert re.search(r'<input type="checkbox" name="live_alerts" id="w-live-alerts"[^>]* checked>',
                     (await admin.get(path)).text)
    assert (await admin.post(path, data=fields)).status_code == 303  # unticked: recording.analyzed only
    assert project_of(runtime, "default", site["ours"]).spec.webhook.events == ["recording.analyzed"]


@pytest.mark.parametrize("fields, message", [
    ({"url": "ftp://files.example.com/x"}, "url must be an http or https URL"),
    ({"url": "https://a.example.com/ x"}, "url must be an http or https URL"),
    ({"url": "https://a.example.com/" + "x" * 3000}, "url is too long"),
    # what delivery could not parse (it parses with the function the form checks with)
    ({"url": "https://[::1"}, "url must be an http or https URL"),
    ({"url": "https://a.example.com:99999/"}, "url must be an http or https URL"),
    ({"url": "https://a.example.com:-1/"}, "url must be an http or https URL"),
    ({"url": "https://a..example.com/"}, "url must be an http or https URL"),
    ({"url": "https://-a.example.com/"}, "url is not a URL that can be delivered to: -a.example.com is not a host"),
    ({"url": f"https://{'a' * 64}.example.com/"}, "url is not a URL that can be delivered to:"),
    ({"url": "https://[1:2]/"}, "url is not a URL that can be delivered to: it cannot be parsed"),
    ({"url": "https://a.example.com/x", "sentiment": "on"}, "sentiment"),
    ({"url": "https://a.example.com/x", "metadata": "maybe"}, "metadata"),
])
async def test_the_endpoint_form_refuses_a_bad_url_or_an_unknown_section(runtime, site, fields, message):
    admin = site["client"]
    path = f"{HOOKS}/{site['ours']}"
    token = csrf_of((await admin.get(path)).text)
    resp = await admin.post(path, data={"csrf": token, **fields})
    assert resp.status_code == 422 and message in resp.text, resp.text
    assert 'role="alert"' in resp.text
    assert project_of(runtime, "default", site["ours"]).spec.webhook.url == "https://hooks.example.com/Support"


@pytest.mark.parametrize("url, setting", [
    ("http://crm.example.com/hooks", "CALLSCOPE_WEBHOOK_ALLOW_HTTP"),
    ("https://127.0.0.1/hooks", "CALLSCOPE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES"),
    ("https://[::1]:8443/hooks", "CALLSCOPE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES"),
    ("https://169.254.169.254/latest", "CALLSCOPE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES"),  # link-local: cloud metadata
    ("https://intranet.example.com/hooks", "CALLSCOPE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES"),  # a name resolving to 10/8
    ("https://240.0.0.1/hooks", "CALLSCOPE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES"),  # reserved
])
async def test_an_endpoint_delivery_would_refuse_is_not_saved_and_the_setting_is_named(runtime, site, url, setting):
    admin = site["client"]
    path = f"{HOOKS}/{site['ours']}"
    token = csrf_of((await admin.get(path)).text)
    resp = await admin.post(path, data={"csrf": token, "url": url, "metadata": "on"})
    assert resp.status_code == 422 and 'role="alert"' in resp.text and setting in resp.text, resp.text
    assert f'value="{url}"' in resp.text  # the form keeps what was typed
    assert project_of(runtime, "default", site["ours"]).spec.webhook.url == "https://hooks.example.com/Support"


async def test_the_development_settings_allow_an_http_loopback_endpoint(runtime, site):
    admin = site["client"]
    path = f"{HOOKS}/{site['ours']}"
    token = csrf_of((await admin.get(path)).text)
    allow(runtime, webhook_allow_http=True)  # http:// alone: loopback still refused
    resp = await admin.post(path, data={"csrf": token, "url": "http://127.0.0.1:9000/hooks"})
    assert resp.status_code == 422 and "CALLSCOPE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES" in resp.text
    allow(runtime, webhook_allow_http=True, webhook_allow_private_addresses=True)
    resp = await admin.post(path, data={"csrf": token, "url": "http://127.0.0.1:9000/hooks"})
    assert resp.status_code == 303
    assert project_of(runtime, "default", site["ours"]).spec.webhook.url == "http://127.0.0.1:9000/hooks"


async def test_a_name_that_does_not_resolve_yet_is_saved_with_a_warning(runtime, site):
    admin = site["client"]
    path = f"{HOOKS}/{site['ours']}"
    token = csrf_of((await admin.get(path)).text)
    resp = await admin.post(path, data={"csrf": token, "url": "https://later.example.com/hooks", "metadata": "on"})
    assert resp.status_code == 200 and 'id="endpoint-warning"' in resp.text
    assert "cannot resolve later.example.com" in resp.text and "retried until it resolves" in resp.text
    assert project_of(runtime, "default", site["ours"]).spec.webhook.url == "https://later.example.com/hooks"


# ----- the test event --------------------------------------------------------------------------------------------


async def test_send_test_event_posts_a_signed_event_and_shows_the_answer(runtime, site):
    admin = site["client"]
    path = f"{HOOKS}/{site['ours']}"
    receiver = WebhookReceiver()
    receiver.status, receiver.answer = 202, b'{"thanks":"received"}'
    try:
        allow(runtime, webhook_allow_http=True, webhook_allow_private_addresses=True)
        token = csrf_of((await admin.get(path)).text)
        assert (await admin.post(path, data={"csrf": token, "url": receiver.url, "metadata": "on"})).status_code == 303
        page = await admin.get(path)
        assert 'id="send-test"' in page.text
        resp = await admin.post(f"{path}/test", data={"csrf": token})
    finally:
        receiver.stop()
    assert resp.status_code == 200 and 'id="test-result"' in resp.text
    assert "HTTP 202" in resp.text and "{&#34;thanks&#34;:&#34;received&#34;}" in resp.text and " ms" in resp.text
    [(headers, body)] = receiver.deliveries
    webhook_signing.verify(OLD_SECRET, headers, body, time.time())  # signed with the project's secret
    assert json.loads(body)["type"] == "webhook.test" and json.loads(body)["data"]["project_id"] == site["ours"]
    queued = await runtime.ctx.catalog.read(outbox.list_events, "default")
    assert all(e.event_type != "webhook.test" for e in queued)  # sent once, not queued


async def test_send_test_event_shows_why_an_endpoint_is_refused(runtime, site):
    admin = site["client"]
    path = f"{HOOKS}/{site['ours']}"
    # saved before the check existed, or applied as YAML
    hook = project_of(runtime, "default", site["ours"]).spec.webhook.model_copy(update={"url": "https://10.0.0.5/h"})
    await projects.update_project(runtime.ctx, ADMIN_KEY, site["ours"], {"webhook": hook})
    resp = await admin.post(f"{path}/test", data={"csrf": csrf_of((await admin.get(path)).text)})
    assert resp.status_code == 200 and 'id="test-result"' in resp.text and "Not delivered" in resp.text
    assert "not sent: 10.0.0.5 resolves to a loopback, link-local, private or reserved address" in resp.text
    assert "CALLSCOPE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES" in resp.text


async def test_send_test_event_needs_the_csrf_token_and_the_accounts_own_project(runtime, site):
    admin = site["client"]
    resp = await admin.post(f"{HOOKS}/{site['ours']}/test", data={"csrf": "wrong"})
    assert resp.status_code == 400 and "form has expired" in resp.text
    token = csrf_of((await admin.get(HOOKS)).text)
    assert (await admin.post(f"{HOOKS}/{site['theirs']}/test", data={"csrf": token})).status_code == 404


async def test_send_test_event_is_not_found_by_a_member_or_for_another_account(runtime, site, member):
    # `member` signs the same client in as a plain member of `default`
    token = csrf_of((await member.get("/recordings")).text)
    assert (await member.post(f"{HOOKS}/{site['ours']}/test", data={"csrf": token})).status_code == 404
    assert (await member.post(f"{HOOKS}/{site['theirs']}/test", data={"csrf": token})).status_code == 404


# ----- the delivery list -----------------------------------------------------------------------------------------


async def test_the_delivery_list_names_the_recording_and_counts_every_attempt(runtime, site):
    admin, ctx = site["client"], runtime.ctx
    project = project_of(runtime, "default", site["ours"])
    recording = await add_recording(runtime, project, "Refund call with Ana")
    event_id = await add_event(runtime, project, recording_id=recording)
    base = f"{HOOKS}/{site['ours']}"
    token = csrf_of((await admin.get(base)).text)
    for _ in range(2):  # redelivered twice, failing once more each time: three attempts in all
        assert (await admin.post(f"{base}/deliveries/{event_id}/redeliver", data={"csrf": token})).status_code == 303
        [claimed] = await ctx.catalog.write(outbox.claim, 1, "test", 60, ctx.clock(), 12)
        await ctx.catalog.write(outbox.record, claimed, Outcome("failed", ctx.clock(), 5, 500, "HTTP 500"),
                                ctx.clock())
    assert (await event_state(runtime, event_id)) == ("failed", 1)  # the round's count
    page = await admin.get(base)
    row = re.search(rf'deliveries/{event_id}">#{event_id}</a></td>(.*?)</tr>', page.text, re.S).group(1)
    assert '<td data-label="Recording" class="delivery-recording">Refund call with Ana</td>' in row
    assert '<td class="num delivery-attempts" data-label="Attempts">3</td>' in row
    detail = await admin.get(f"{base}/deliveries/{event_id}")
    assert detail.text.count('class="num status-code"') == 3
    public_id = await ctx.catalog.read(lambda session: session.get(Recording, recording).public_id)
    assert f'<dd id="delivery-recording"><a href="/recordings/{public_id}">Refund call with Ana</a></dd>' in detail.text
    # the command line counts them alike
    listed = json.loads((await cli(runtime, "webhooks", "list", "-o", "json")).stdout)
    [row] = [e for e in listed if e["id"] == event_id]
    assert (row["attempts"], row["attempts_total"]) == (1, 3)
    table = (await cli(runtime, "webhooks", "list")).stdout.splitlines()
    assert table[0].split()[3] == "ATTEMPTS"
    assert [line.split()[3] for line in table if line.split()[0] == str(event_id)] == ["3"]


async def test_a_deleted_recordings_delivery_says_so(runtime, site):
    admin = site["client"]
    page = await admin.get(f"{HOOKS}/{site['ours']}/deliveries/{site['failed']}")  # of recording 7: none such
    assert '<dd id="delivery-recording">deleted since</dd>' in page.text


async def cli(runtime, *args: str):
    """A `callscope` command on the runtime's data directory and catalog, as an operator runs it beside the server
    (in a thread: a command runs its own event loop)."""
    settings = runtime.ctx.settings
    env = {"CALLSCOPE_DATA_DIR": str(settings.data_dir), "CALLSCOPE_LOG_LEVEL": "WARNING"}
    if settings.database_url is not None:
        env["CALLSCOPE_DATABASE_URL"] = settings.database_url
    result = await asyncio.to_thread(CliRunner().invoke, main, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result


async def test_a_project_managed_by_gitops_is_read_only(runtime, site):
    admin = site["client"]
    synced = await hooked_project(runtime, "default", "Synced", labels={"app.kubernetes.io/managed-by": "argocd"})
    path = f"{HOOKS}/{synced.status.id}"
    page = await admin.get(path)
    assert "Read-only here" in page.text and "argocd" in page.text
    assert 'name="url"' not in page.text and "/rotate" not in page.text
    token = csrf_of(page.text)
    assert (await admin.post(path, data={"csrf": token, "url": "https://x.example.com/"})).status_code == 409
    assert (await admin.get(f"{path}/rotate")).status_code == 409
    assert (await admin.post(f"{path}/rotate", data={"csrf": token, "overlap_hours": "1"})).status_code == 409
    assert project_of(runtime, "default", synced.status.id).spec.webhook.url == "https://hooks.example.com/Synced"


# ----- redelivery ------------------------------------------------------------------------------------------------


async def test_redeliver_queues_a_failed_or_delivered_delivery_again_and_refuses_one_on_its_way(runtime, site):
    admin = site["client"]
    base = f"{HOOKS}/{site['ours']}/deliveries"
    token = csrf_of((await admin.get(f"{base}/{site['failed']}")).text)
    resp = await admin.post(f"{base}/{site['failed']}/redeliver", data={"csrf": token})
    assert resp.status_code == 303 and resp.headers["location"] == f"{base}/{site['failed']}"
    assert await event_state(runtime, site["failed"]) == ("pending", 0)
    # an endpoint that lost what it received asks for it again
    resp = await admin.post(f"{base}/{site['delivered']}/redeliver", data={"csrf": token})
    assert resp.status_code == 303 and await event_state(runtime, site["delivered"]) == ("pending", 0)
    resp = await admin.post(f"{base}/{site['delivered']}/redeliver", data={"csrf": token})  # pending: on its way
    assert resp.status_code == 409 and "on its way" in resp.text
    assert 'id="redeliver"' not in (await admin.get(f"{base}/{site['delivered']}")).text


# ----- the signing secret ----------------------------------------------------------------------------------------


def _shown_secret(html: str) -> str:
    return re.search(r'id="new-secret" class="secret" readonly value="([^"]+)"', html).group(1)


async def test_rotation_shows_the_new_secret_once_and_both_sign_during_the_overlap(runtime, site):
    admin, ctx = site["client"], runtime.ctx
    path = f"{HOOKS}/{site['ours']}/rotate"
    ask = await admin.get(path)
    assert 'name="overlap_hours"' in ask.text and 'value="24"' in ask.text
    resp = await admin.post(path, data={"csrf": csrf_of(ask.text), "overlap_hours": "24"})
    assert resp.status_code == 200
    new = _shown_secret(resp.text)
    assert new.startswith("whsec_") and new != OLD_SECRET
    page = await admin.get(f"{HOOKS}/{site['ours']}")
    assert new not in page.text and 'id="overlap"' in page.text  # shown once; the window is said

    store, ref = FileSecretStore(ctx.settings.secrets_dir), SecretKeyRef(name="hooks")
    now, body = ctx.clock(), b'{"type":"recording.analyzed"}'

    async def headers_at(when) -> dict[str, str]:  # a delivery's headers at `when`
        signing = await signing_secrets.signing(store, "default", ref, when)
        return webhook_signing.headers(signing, "msg_1", int(time.time()), body)
    during = await headers_at(now + timedelta(hours=23))
    assert len(during["webhook-signature"].split()) == 2
    for secret in (new, OLD_SECRET):  # a receiver verifying with either accepts
        webhook_signing.verify(secret, during, body, time.time())
    after = await headers_at(now + timedelta(hours=24, seconds=1))
    webhook_signing.verify(new, after, body, time.time())
    with pytest.raises(webhook_signing.InvalidSignature):
        webhook_signing.verify(OLD_SECRET, after, body, time.time())


@pytest.mark.parametrize("hours, message", [("-1", "greater than or equal to 0"), ("169", "less than or equal to 168"),
                                            ("a day", "overlap_hours must be"), ("1.5", "overlap_hours must be")])
async def test_a_bad_overlap_window_is_refused(runtime, site, hours, message):
    admin = site["client"]
    path = f"{HOOKS}/{site['ours']}/rotate"
    resp = await admin.post(path, data={"csrf": csrf_of((await admin.get(path)).text), "overlap_hours": hours})
    assert resp.status_code == 422 and message in resp.text, resp.text
    assert await FileSecretStore(runtime.ctx.settings.secrets_dir).read("default", "hooks",
                                                                        "signing-secret") == OLD_SECRET


async def test_a_webhook_without_a_secret_gets_its_first(runtime, site):
    admin = site["client"]
    path = f"{HOOKS}/{site['ours']}"
    unsigned = project_of(runtime, "default", site["ours"]).spec.webhook.model_copy(update={"signing_secret_ref": None})
    await projects.update_project(runtime.ctx, ADMIN_KEY, site["ours"], {"webhook": unsigned})
    assert "Create a secret" in (await admin.get(path)).text
    asked = await admin.get(f"{path}/rotate")  # a first secret: nothing is rotated, nothing overlaps
    assert "Sign the deliveries of Support?" in asked.text and 'id="overlap"' not in asked.text
    assert "old" not in re.search(r'<section class="panel">(.*?)</section>', asked.text, re.S)[1]
    resp = await admin.post(f"{path}/rotate", data={"csrf": csrf_of(asked.text), "overlap_hours": "0"})
    secret = _shown_secret(resp.text)
    ref = project_of(runtime, "default", site["ours"]).spec.webhook.signing_secret_ref
    name = project_of(runtime, "default", site["ours"]).name
    assert ref == SecretKeyRef(name=f"{name}-webhook", key="signing-secret")
    store = FileSecretStore(runtime.ctx.settings.secrets_dir)
    assert await signing_secrets.signing(store, "default", ref, runtime.ctx.clock()) == [secret]

