"""An embedded runtime (SQLite store, catalog, sandbox provider) and an HTTP client on its ASGI app.

`make_key(...)` creates API keys through the same service the CLI uses and returns request headers.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import httpx
import pytest
from kube.fixtures import kube_api, kube_api_server  # noqa: F401 - the kubernetes store's API server
from sqlalchemy import func, select

from callscope.api.app import create_app
from callscope.config import Settings
from callscope.services import keys as key_service
from tests.audio_samples import make_audio

BASE = "http://callscope.test/api/v1/public"


@pytest.fixture
def settings_overrides() -> dict:
    """Override in a test module (or with `@pytest.mark.parametrize(indirect=...)`) to change settings."""
    return {}


@pytest.fixture(params=["sqlite", "kubernetes"])
def store_settings(request) -> dict:
    """Every API test runs on both stores of the configuration objects: the embedded SQLite file and
    the Kubernetes API (the emulated API server of tests/kube)."""
    if request.param == "kubernetes":
        api = request.getfixturevalue("kube_api")
        return {"store": "kubernetes", "kubeconfig": api.kubeconfig}
    return {"store": "sqlite"}


@pytest.fixture
def catalog_settings() -> dict:
    """The catalog database: SQLite in the data directory here; modules that must also run on
    PostgreSQL override this fixture with `catalog_on_both`."""
    return {}


@pytest.fixture
def settings(tmp_path, store_settings, catalog_settings, settings_overrides) -> Settings:
    values = {"data_dir": tmp_path / "data", "store_poll_interval": 0.05, "log_level": "WARNING", **store_settings,
              **catalog_settings, **settings_overrides}
    return Settings(**values)


@pytest.fixture
async def client(runtime):
    app = create_app(runtime.ctx, runtime.usage, runtime.limiter)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as http:
        yield http


@pytest.fixture
def make_key(runtime):
    counter = iter(range(1, 10_000))

    async def make(permissions: str = "read,write,delete", project_id: int | None = None, account: str = "default",
                   expires_at: datetime | None = None, rate_limit: int | None = None) -> dict[str, str]:
        _, key = await key_service.create_key(runtime.ctx, account, f"key-{next(counter)}", permissions.split(","),
                                              project_id, expires_at, rate_limit)
        return {"Authorization": f"Bearer {key}"}
    return make


@pytest.fixture
async def admin(make_key) -> dict[str, str]:
    """Headers of an account-wide key with every permission."""
    return await make_key()


@pytest.fixture
def create_project(client, admin):
    async def create(name: str = "Sales", language: str = "en", **fields) -> dict:
        resp = await client.post("/projects", json={"name": name, "language": language, **fields}, headers=admin)
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]
    return create


@pytest.fixture
def create_operator(client, admin):
    async def create(name: str = "Jane Doe", **fields) -> dict:
        resp = await client.post("/operators", json={"name": name, **fields}, headers=admin)
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]
    return create


def catalog_on_both(request) -> dict:
    """Body of a `catalog_settings` override parametrized over SQLite and PostgreSQL."""
    if request.param == "postgres":
        return {"database_url": request.getfixturevalue("emptied_postgres_url")}
    return {}


# ----- recordings ---------------------------------------------------------------------------------

@pytest.fixture
def wav(tmp_path) -> Path:
    return make_audio(tmp_path / "call.wav", "wav", seconds=2.0)


@pytest.fixture
def upload(client, admin):
    """POST /recordings with a file and form fields (lists for repeatable fields such as tag_ids[])."""
    async def post(path: Path, headers=None, filename: str | None = None, **fields):
        data = {k: (v if isinstance(v, list) else str(v)) for k, v in fields.items() if v is not None}
        with open(path, "rb") as fh:
            return await client.post("/recordings",
                                     files={"file": (filename or path.name, fh, "application/octet-stream")},
                                     data=data, headers=headers or admin)
    return post


@pytest.fixture
async def project(create_project):
    return await create_project("Calls", language="de")


def blob_files(settings) -> list[Path]:
    """Every file under the filesystem store's root, temp files in .tmp included."""
    root = settings.data_dir / "blobs"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def count_rows(runtime, table) -> int:
    with runtime.catalog.session() as session:
        return session.scalar(select(func.count()).select_from(table))
