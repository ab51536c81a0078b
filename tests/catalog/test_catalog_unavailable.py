"""A lost catalog database is ServiceUnavailable (503 with Retry-After), logged once per outage, and nothing needs a
restart when it is back: which driver errors mean "lost", the API's and the pages' answers, and the background
loops that wait the outage out. (tests/test_catalog_outage.py restarts a real PostgreSQL under a real server.)"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import sqlite3

import httpx
import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from structlog.testing import capture_logs

from callscope.api.app import create_app
from callscope.catalog.db import database_lost
from callscope.config import Settings
from callscope.errors import ServiceUnavailable
from callscope.runtime import Runtime
from callscope.services import keys as key_service
from callscope.workers.periodic import every


@pytest.mark.parametrize(("orig", "lost"), [
    (psycopg.OperationalError("connection failed: connection to server at \"127.0.0.1\", port 5432 failed: "
                              "Connection refused"), True),
    (psycopg.OperationalError("server closed the connection unexpectedly"), True),
    (psycopg.errors.AdminShutdown("terminating connection due to administrator command"), True),
    (psycopg.errors.CannotConnectNow("the database system is starting up"), True),
    (psycopg.errors.CannotConnectNow("the database system is shutting down"), True),
    (psycopg.InterfaceError("the connection is closed"), True),
    (psycopg.errors.UniqueViolation("duplicate key value violates unique constraint"), False),
    (psycopg.errors.DeadlockDetected("deadlock detected"), False),  # an OperationalError, but the server is there
    (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"), False),
    (sqlite3.OperationalError("unable to open database file"), True),
    (sqlite3.OperationalError("database is locked"), False),
])
def test_which_driver_errors_mean_the_database_is_lost(orig: Exception, lost: bool) -> None:
    base = sqlite3.Error if isinstance(orig, sqlite3.Error) else psycopg.Error
    assert database_lost(DBAPIError.instance("SELECT 1", {}, orig, base)) is lost


@pytest.fixture
async def runtime(tmp_path):
    """A runtime whose SQLite catalog lies in a folder of its own (removed to lose the database)."""
    settings = Settings(data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'catalog' / 'c.db'}",
                        catalog_retry_after_seconds=7, log_level="WARNING")
    (tmp_path / "catalog").mkdir()
    rt = Runtime(settings)
    await rt.start(background=False)
    yield rt
    await rt.stop()


async def test_a_lost_catalog_answers_503_with_retry_after_logs_once_and_recovers(runtime, tmp_path) -> None:
    _, key = await key_service.create_key(runtime.ctx, "default", "k", ["read", "write"], None, None, None)
    app = create_app(runtime.ctx, runtime.usage, runtime.limiter)
    api = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://callscope.test",
                            headers={"Authorization": f"Bearer {key}"},
                            cookies={"callscope_session": secrets.token_urlsafe(32)})  # looked up in the catalog
    catalog = runtime.catalog
    catalog.engine.dispose()
    shutil.rmtree(tmp_path / "catalog")

    with capture_logs() as logs:
        for _ in range(3):
            created = await api.post("/api/v1/public/projects", json={"name": "Support", "language": "en"})
            assert (created.status_code, created.headers["Retry-After"]) == (503, "7")
            assert list(created.json()) == ["error"] and "try again" in created.json()["error"]
            page = await api.get("/sign-in")
            assert (page.status_code, page.headers["Retry-After"]) == (503, "7")
            assert page.headers["Content-Type"].startswith("text/html") and "try again" in page.text
        assert not await catalog.run(catalog.ping)

        (tmp_path / "catalog").mkdir()  # back (empty): the same process serves again, nothing restarted
        await asyncio.to_thread(catalog.migrate)
        created = await api.post("/api/v1/public/projects", json={"name": "Support", "language": "en"})
        assert created.status_code == 201
        assert (await api.get("/sign-in")).status_code == 200
    await api.aclose()

    events = [e["event"] for e in logs if e["log_level"] in ("warning", "error", "critical")]
    assert events == ["catalog_unavailable"]  # not one per request, no traceback
    assert [e["event"] for e in logs if e["event"] == "catalog_available"] == ["catalog_available"]
    assert not any("exc_info" in e for e in logs)


async def test_a_session_of_the_catalog_raises_service_unavailable_with_its_retry_after(runtime, tmp_path) -> None:
    runtime.catalog.engine.dispose()
    shutil.rmtree(tmp_path / "catalog")
    with pytest.raises(ServiceUnavailable) as raised:
        runtime.catalog.query(lambda s: s.execute(text("SELECT 1")).scalar())
    assert (raised.value.status, raised.value.retry_after) == (503, 7)
    assert isinstance(raised.value.__cause__, DBAPIError)  # the driver's error stays reachable for debugging


async def test_a_background_loop_waits_out_an_outage_logging_it_once() -> None:
    outcomes = [ServiceUnavailable("away", 5)] * 3 + [None, RuntimeError("a bug"), None]
    ran = asyncio.Event()

    async def job() -> None:
        if not outcomes:  # all played: park until cancelled
            ran.set()
            await asyncio.Event().wait()
        if (outcome := outcomes.pop(0)) is not None:
            raise outcome

    with capture_logs() as logs:
        loop = asyncio.create_task(every(0, job, "tick"))
        await asyncio.wait_for(ran.wait(), 5)
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
    assert [(e["event"], e["log_level"]) for e in logs] == [
        ("background_job_waiting", "warning"), ("background_job_resumed", "info"), ("background_job_failed", "error")]
    assert "exc_info" not in logs[0]
