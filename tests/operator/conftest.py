"""Fixtures of the operator tests: an embedded Runtime (SQLite store and catalog in tmp_path, filesystem
blobs) and helpers that seed projects and recordings; the emulated Kubernetes API server for the Kopf
end-to-end tests (tests/kube)."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

import pytest
from kube.fixtures import kube_api, kube_api_server  # noqa: F401
from operator_support import ACCOUNT, NOW

from callscope.catalog.tables import Recording
from callscope.config import Settings
from callscope.identifiers import uuid7
from callscope.resources import Account, AccountSpec, ObjectMeta, Project, ProjectSpec
from callscope.services.objects import create_with_id
from callscope.services.recordings import audio_key, blob_prefix


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path / "data", store_poll_interval=0.05, log_level="WARNING",
                    default_audio_retention_days=90)


@pytest.fixture
def ctx(runtime):
    return runtime.ctx


@pytest.fixture
def make_project(ctx):
    async def make(name: str = "Support", account: str = ACCOUNT, **spec) -> Project:
        return await create_with_id(ctx, Project, account, name, ProjectSpec(name=name, language="en", **spec))
    return make


@pytest.fixture
def set_account_audio_retention(ctx):
    async def set_days(days: int | None, account: str = ACCOUNT) -> None:
        await ctx.store.create(Account(metadata=ObjectMeta(name=account, namespace=account),
                                       spec=AccountSpec(display_name=account, audio_retention_days=days)))
    return set_days


_external = itertools.count(1)


@pytest.fixture
def seed_recording(ctx):
    """A recording row inserted straight into the catalog, with real audio (and a transcript blob) written
    through ctx.blobs; created `age_days` before NOW."""
    async def seed(project: Project, age_days: float, *, status: str = "completed", now: datetime = NOW,
                   quality_score: float | None = None) -> Recording:
        public_id = str(uuid7())
        key = audio_key(project.namespace, public_id)
        async with ctx.blobs.writer(key) as writer:
            await writer.write(b"RIFF" + b"\0" * 2048)
            await writer.commit()
        async with ctx.blobs.writer(blob_prefix(project.namespace, public_id) + "transcript.json") as writer:
            await writer.write(b'{"segments": []}')
            await writer.commit()
        created = now - timedelta(days=age_days)
        row = Recording(
            public_id=public_id, account=project.namespace, project_id=project.status.id,
            name=f"call {next(_external)}", language="en", status=status, progress=100, duration_ms=60_000,
            audio_format="wav", size_bytes=2052, blob_key=key, conversation_id=str(uuid7()),
            quality_score=quality_score,
            created_at=created, updated_at=created,
        )

        def insert(catalog):
            with catalog.session(write=True) as session:
                session.add(row)
                session.flush()
                session.expunge(row)
            return row
        return await ctx.catalog.run(insert, ctx.catalog)
    return seed


@pytest.fixture
def recording_row(ctx):
    """The catalog row of a recording now (None when deleted)."""
    async def load(recording_id: int) -> Recording | None:
        def get(catalog):
            with catalog.session() as session:
                row = session.get(Recording, recording_id)
                if row is not None:
                    session.expunge(row)
                return row
        return await ctx.catalog.run(get, ctx.catalog)
    return load
