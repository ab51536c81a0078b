"""The members' pages in process: an embedded runtime on SQLite or PostgreSQL (the catalog the pages' input
reaches), its ASGI app behind an httpx client, and a member signed in through the real link flow. The live-server
tests of this folder (site.py) do not use these fixtures."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime, timedelta

import httpx
import pytest
from sqlalchemy import update

from callscope.api.app import create_app
from callscope.catalog import member_sessions
from callscope.catalog.tables import Recording, SignInLink
from callscope.config import Settings
from callscope.services import accounts, keys, projects
from callscope.services.context import Principal
from tests.api.conftest import catalog_on_both
from tests.audio_samples import make_audio
from tests.search.calls import analyse, result

BASE = "http://callscope.test"
API = "/api/v1/public"
MEMBER = "ana@example.com"


@pytest.fixture(scope="module")
def driver():
    """A headless Chromium (site.browser) for a module's browser tests, its own per module: cookies do not tell
    ports apart, and each module's server signs its sessions with a secret of its own."""
    from tests.pages.site import browser

    chromium = browser()
    try:
        yield chromium
    finally:
        chromium.quit()


@pytest.fixture
def settings_overrides() -> dict:
    """Override in a test module to change settings."""
    return {}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def settings(request, tmp_path, settings_overrides) -> Settings:
    return Settings(data_dir=tmp_path / "data", store_poll_interval=0.05, log_level="WARNING",
                    **catalog_on_both(request), **settings_overrides)


@pytest.fixture
async def pages(runtime):
    """An anonymous browser of the pages (it keeps cookies)."""
    app = create_app(runtime.ctx, runtime.usage, runtime.limiter)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as http:
        yield http


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


async def email_link(runtime, address: str, next_path: str = "/recordings") -> str:
    """The token of a sign-in link as if emailed to `address` (the outbox is written in the background)."""
    token, now = secrets.token_urlsafe(32), runtime.ctx.clock()
    await runtime.ctx.catalog.write(member_sessions.insert_link, SignInLink(
        token_hash=hashlib.sha256(token.encode()).hexdigest(), email=address, next_path=next_path, created_at=now,
        expires_at=now + timedelta(minutes=5)))
    return token


@pytest.fixture
async def replica(settings, runtime):
    """A second runtime on the same data directory, store and catalog: another replica of the service, with its own
    cache and in-process locks (for forms sent at the same instant to two replicas)."""
    from callscope.runtime import Runtime

    other = Runtime(settings)
    await other.start(background=False)
    yield other
    await other.stop()


async def browser_of(rt, address: str, **app_args) -> httpx.AsyncClient:
    """A browser of `rt`'s pages signed in as `address` through the link's confirmation form (close it after use);
    `app_args`: more of create_app's arguments."""
    await rt.ctx.store.sync()  # the member as another replica may have just written them
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(rt.ctx, rt.usage, rt.limiter, **app_args)),
                             base_url=BASE)
    token = await email_link(rt, address)
    confirm = await http.get("/sign-in/link", params={"token": token})
    resp = await http.post("/sign-in/link", data={"token": token, "csrf": csrf_of(confirm.text)})
    assert resp.status_code == 303, resp.text
    return http


@pytest.fixture
async def member(runtime, pages) -> httpx.AsyncClient:
    """`pages`, signed in as a member of one account, through the link's confirmation form."""
    await accounts.add_member(runtime.ctx, "default", MEMBER, "Ana")
    token = await email_link(runtime, MEMBER)
    confirm = await pages.get("/sign-in/link", params={"token": token})
    resp = await pages.post("/sign-in/link", data={"token": token, "csrf": csrf_of(confirm.text)})
    assert resp.status_code == 303, resp.text
    return pages


# --- analysed calls, uploaded through the API and completed with hand-written results -------------------

def admin(account: str) -> Principal:
    return Principal(account=account, key_name="test", key_uid="test", permissions=frozenset({"read", "write"}))


@pytest.fixture
async def api(runtime):
    app = create_app(runtime.ctx, runtime.usage, runtime.limiter)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE + API) as http:
        yield http


@pytest.fixture
def call(runtime, api, tmp_path):
    """An analysed call of `account`'s project `project_id` saying `lines`, added at `added`; its public_id."""
    wav = make_audio(tmp_path / "call.wav", "wav", seconds=2.0)
    made: dict[str, dict[str, str]] = {}

    async def make(lines, project_id: int, name: str = "Refund call", account: str = "default",
                   added: datetime | None = None, categories: tuple[str, ...] = (),
                   goals: dict[int, bool] | None = None) -> str:
        if account not in made:
            _, key = await keys.create_key(runtime.ctx, account, "pages", ["read", "write", "delete"], None, None,
                                           None)
            made[account] = {"Authorization": f"Bearer {key}"}
        resp = await api.post("/recordings", headers=made[account], files={"file": ("call.wav", wav.read_bytes())},
                              data={"project_id": str(project_id), "name": name})
        assert resp.status_code == 201, resp.text
        public_id = resp.json()["data"]["public_id"]
        await analyse(runtime, public_id, result(lines, categories=categories, goals=goals))
        if added is not None:
            await runtime.ctx.catalog.write(lambda s: s.execute(
                update(Recording).where(Recording.public_id == public_id).values(created_at=added)))
        return public_id
    make.keys = made  # type: ignore[attr-defined]  # each account's API key, for REST beside the page
    return make


@pytest.fixture
async def support(runtime) -> int:
    project = await projects.create_project(runtime.ctx, admin("default"), {
        "name": "Support", "language": "en", "goals": [{"id": 1, "name": "Greeting", "description": "Greets."}],
        "categories": [{"name": "billing"}]})
    return project.status.id
