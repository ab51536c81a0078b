"""The carrier's webhooks in process: an embedded runtime (SQLite store; the catalog on SQLite or PostgreSQL) whose
provider is Twilio with its API on a local pytest-httpserver (or the sandbox, where `provider_settings` says so), an
ASGI client, one project, two operators and two numbers, and requests signed as the provider signs them. `rows()` is
every catalog row a webhook may write, to show that a refused request wrote nothing."""

from __future__ import annotations

import base64
import secrets
from urllib.parse import urlencode

import httpx
import pytest
from pytest_httpserver import HTTPServer
from sqlalchemy import select

from callscope.api.app import create_app
from callscope.catalog.tables import Call, Recording, RoutingCursor
from callscope.config import Settings
from callscope.operator.handlers import reconcile
from callscope.resources import Operator, VirtualNumber
from callscope.services.apply import apply_documents
from callscope.telephony.sandbox import SandboxProvider
from callscope.telephony.twilio_voice import SIGNATURE_HEADER, signature
from tests.api.conftest import catalog_on_both

BASE = "http://callscope.test"
SID = "AC" + "ab" * 16
TOKEN = "twilio-auth-token-of-the-test"
TWILIO_AUTH = "Basic " + base64.b64encode(f"{SID}:{TOKEN}".encode()).decode()
ACCOUNT_PATH = f"/2010-04-01/Accounts/{SID}"
CALLER = "+15105550199"
OPERATORS = {"alice": "+14155550101", "bob": "+14155550102"}
NUMBERS = {"desk": ("+14155550110", "priority"), "team": ("+14155550111", "simultaneous")}


def new_sid(prefix: str) -> str:
    return prefix + secrets.token_hex(16)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_settings(request) -> dict:
    return catalog_on_both(request)


@pytest.fixture
def provider_settings(httpserver: HTTPServer) -> dict:
    """Twilio, its API on `httpserver`; a module may override this with `{"number_provider": "sandbox"}`."""
    return {"number_provider": "twilio", "twilio_account_sid": SID, "twilio_auth_token": TOKEN,
            "twilio_base_url": httpserver.url_for("").rstrip("/")}


@pytest.fixture
def settings(tmp_path, catalog_settings, provider_settings) -> Settings:
    return Settings(data_dir=tmp_path / "data", store="sqlite", store_poll_interval=0.05, log_level="WARNING",
                    public_base_url=BASE, call_voicemail=True, **provider_settings, **catalog_settings)


def _documents() -> list[dict]:
    docs = [{"kind": "Project", "metadata": {"name": "support"}, "spec": {"name": "Support", "language": "en"}}]
    docs += [{"kind": "Operator", "metadata": {"name": name},
              "spec": {"name": name.title(), "phoneNumber": phone, "projects": ["support"]}}
             for name, phone in OPERATORS.items()]
    docs += [{"kind": "VirtualNumber", "metadata": {"name": name},
              "spec": {"name": name, "phoneNumber": phone, "countryCode": "US", "routingStrategy": strategy,
                       "project": "support", "operators": list(OPERATORS)}}
             for name, (phone, strategy) in NUMBERS.items()]
    return [{"apiVersion": "callscope.io/v1alpha1", **d} for d in docs]


class Carrier:
    """Twilio's side: signed form posts to the webhooks, and the catalog rows they may have written."""

    def __init__(self, http: httpx.AsyncClient, runtime) -> None:
        self.http, self.runtime = http, runtime
        provider = runtime.ctx.provider
        self.token = provider.voice_credentials()[1] if isinstance(provider, SandboxProvider) else TOKEN

    async def post(self, path: str, form: dict[str, str] | list[tuple[str, str]] | str,
                   query: dict[str, str] | str | None = None, signed: list[tuple[str, str]] | None = None,
                   ) -> httpx.Response:
        """POST `form` to the webhook `path` (with `query`), signed as Twilio signs: over the full URL and the
        parameters. A `form` given as text is the body as sent, signed over `signed`."""
        if query:
            path += "?" + (query if isinstance(query, str) else urlencode(query))
        if isinstance(form, str):
            body, pairs = form, signed or []
        else:
            pairs = list(form.items()) if isinstance(form, dict) else list(form)
            body, pairs = urlencode(pairs), signed if signed is not None else pairs
        return await self.http.post(path, content=body.encode(), headers={
            "Content-Type": "application/x-www-form-urlencoded",
            SIGNATURE_HEADER: signature(self.token, BASE + path, pairs)})

    async def call(self, number: str = "desk", **form: str) -> str:
        """A call to `number` as the carrier announces it; its CallSid."""
        call_sid = new_sid("CA")
        resp = await self.post("/telephony/twilio/voice", {"CallSid": call_sid, "From": CALLER,
                                                           "To": self.number(number), **form})
        assert resp.status_code == 200, resp.text
        return call_sid

    def rows(self) -> list[tuple]:
        with self.runtime.catalog.session() as session:
            return [tuple((c.key, getattr(row, c.key)) for c in type(row).__table__.columns)
                    for table in (Call, RoutingCursor, Recording) for row in session.scalars(select(table))]

    def operator_id(self, name: str) -> int:
        return self.runtime.store.cached_get(Operator, "default", name).status.id

    def number(self, name: str) -> str:
        return self.runtime.store.cached_get(VirtualNumber, "default", name).spec.phone_number


@pytest.fixture
async def carrier(runtime) -> Carrier:
    for document in _documents():
        [(obj, _)] = await apply_documents(runtime.ctx, [document], "default")
        await runtime.store.sync()
        await reconcile(runtime.ctx, runtime.store.cached_get(type(obj), obj.namespace, obj.name))
        await runtime.store.sync()
    app = create_app(runtime.ctx, runtime.usage, runtime.limiter)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as http:
        yield Carrier(http, runtime)
