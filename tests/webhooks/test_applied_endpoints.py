"""A Project applied as YAML (`callscope apply`, kubectl) whose webhook delivery would refuse gets the condition
WebhookEndpoint False, naming the setting that allows it for development, and is not Ready; a name that does not
resolve yet is Unknown (the DNS record may come later) and leaves Ready alone; the condition goes with the webhook.
The catalog holds nothing of it (status is the store's), so SQLite alone."""

from __future__ import annotations

import pytest

from callscope.config import Settings
from callscope.operator.handlers import reconcile
from callscope.resources import Project, Resource
from callscope.services.apply import apply_documents
from tests.pages.webhook_world import fake_dns


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path / "data", store_poll_interval=0.05, log_level="WARNING")


@pytest.fixture(autouse=True)
def dns(monkeypatch) -> None:
    fake_dns(monkeypatch)


async def applied(runtime, webhook: dict | None) -> Project:
    """`callscope apply` of the project, then the reconcile the operator runs on it."""
    spec = {"name": "Support", "language": "en", **({"webhook": webhook} if webhook else {})}
    document = {"apiVersion": "callscope.io/v1alpha1", "kind": "Project",
                "metadata": {"name": "support", "namespace": "acme"}, "spec": spec}
    await apply_documents(runtime.ctx, [document], "acme")
    await runtime.store.sync()
    return await reconcile(runtime.ctx, runtime.store.cached_get(Project, "acme", "support"))


def condition(obj: Resource, kind: str) -> tuple[str, str, str] | None:
    found = next((c for c in obj.status.conditions if c.type == kind), None)
    return (found.status, found.reason, found.message) if found is not None else None


@pytest.mark.parametrize("url, setting", [
    ("http://crm.example.com/hooks", "CALLSCOPE_WEBHOOK_ALLOW_HTTP"),
    ("https://127.0.0.1:8443/hooks", "CALLSCOPE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES"),
    ("https://intranet.example.com/hooks", "CALLSCOPE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES"),
])
async def test_an_applied_endpoint_delivery_would_refuse_is_a_false_condition(runtime, url, setting):
    made = await applied(runtime, {"url": url})
    status, reason, message = condition(made, "WebhookEndpoint")
    assert (status, reason) == ("False", "Refused") and setting in message
    assert condition(made, "Ready")[:2] == ("False", "WebhookRefused")


async def test_a_deliverable_endpoint_is_ready_and_one_not_resolving_yet_is_unknown(runtime):
    made = await applied(runtime, {"url": "https://crm.example.com/hooks"})
    assert condition(made, "WebhookEndpoint")[:2] == ("True", "Deliverable")
    assert condition(made, "Ready")[0] == "True"
    made = await applied(runtime, {"url": "https://later.example.com/hooks"})
    status, reason, message = condition(made, "WebhookEndpoint")
    assert (status, reason) == ("Unknown", "Unresolved") and "cannot resolve later.example.com" in message
    assert condition(made, "Ready")[0] == "True"
    assert condition(await applied(runtime, None), "WebhookEndpoint") is None  # no webhook: nothing to say


async def test_the_development_settings_make_a_loopback_endpoint_deliverable(runtime):
    runtime.ctx.settings = runtime.ctx.settings.model_copy(update={"webhook_allow_http": True,
                                                                   "webhook_allow_private_addresses": True})
    made = await applied(runtime, {"url": "http://127.0.0.1:9000/hooks"})
    assert condition(made, "WebhookEndpoint")[:2] == ("True", "Deliverable")
