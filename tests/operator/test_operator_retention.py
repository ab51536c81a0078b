"""Retention (workers/retention.py): one test per rule, on an embedded Runtime."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from operator_support import ACCOUNT, NOW

from callscope.config import Settings
from callscope.resources import Project
from callscope.runtime import Runtime
from callscope.services.recordings import blob_prefix
from callscope.workers import retention
from callscope.workers.retention import purge_expired


async def blobs_of(ctx, recording) -> list[str]:
    return await ctx.blobs.list_keys(blob_prefix(recording.account, recording.public_id))


async def test_project_retention_deletes_older_recordings_with_their_blobs(ctx, make_project, seed_recording,
                                                                          recording_row):
    project = await make_project(retention_days=30)
    old = await seed_recording(project, age_days=31)
    young = await seed_recording(project, age_days=29)

    result = await purge_expired(ctx, NOW)

    assert (result.deleted, result.audio_removed) == (1, 0)
    assert await recording_row(old.id) is None
    assert await blobs_of(ctx, old) == []  # audio and results
    kept = await recording_row(young.id)
    assert kept is not None and kept.blob_key == young.blob_key
    assert len(await blobs_of(ctx, young)) == 2


async def test_project_without_retention_loses_only_old_audio_and_keeps_the_row(ctx, make_project, seed_recording,
                                                                              recording_row):
    project = await make_project()  # no retention_days: default audio retention, 90 days here
    old = await seed_recording(project, age_days=91)
    young = await seed_recording(project, age_days=89)

    result = await purge_expired(ctx, NOW)

    assert (result.deleted, result.audio_removed) == (0, 1)
    row = await recording_row(old.id)
    assert row is not None and row.blob_key is None  # audio_attached: false
    assert row.updated_at == NOW
    assert await ctx.blobs.size(old.blob_key) is None
    assert await blobs_of(ctx, old) == [blob_prefix(ACCOUNT, old.public_id) + "transcript.json"]
    assert (await recording_row(young.id)).blob_key == young.blob_key
    assert await ctx.blobs.size(young.blob_key) is not None


async def test_old_audio_goes_with_its_kept_unredacted_original(ctx, make_project, seed_recording, recording_row):
    project = await make_project()
    old = await seed_recording(project, age_days=91)
    original = blob_prefix(ACCOUNT, old.public_id) + "audio-unredacted"  # CALLSCOPE_REDACTION_KEEP_ORIGINAL_AUDIO
    async with ctx.blobs.writer(original) as writer:
        await writer.write(b"RIFF")
        await writer.commit()
    with ctx.catalog.session(write=True) as session:
        session.get(type(old), old.id).original_blob_key = original

    assert (await purge_expired(ctx, NOW)).audio_removed == 1

    row = await recording_row(old.id)
    assert (row.blob_key, row.original_blob_key) == (None, None)
    assert await ctx.blobs.size(old.blob_key) is None and await ctx.blobs.size(original) is None


async def test_account_audio_retention_overrides_the_default(ctx, make_project, seed_recording, recording_row,
                                                           set_account_audio_retention):
    await set_account_audio_retention(10)
    project = await make_project()
    old = await seed_recording(project, age_days=11)
    young = await seed_recording(project, age_days=9)

    await purge_expired(ctx, NOW)

    assert (await recording_row(old.id)).blob_key is None
    assert (await recording_row(young.id)).blob_key == young.blob_key


async def test_project_retention_days_takes_precedence_over_audio_retention(ctx, make_project, seed_recording,
                                                                           recording_row):
    project = await make_project(retention_days=365)  # keeps recordings a year, audio included
    recording = await seed_recording(project, age_days=200)

    assert (await purge_expired(ctx, NOW)).audio_removed == 0
    assert (await recording_row(recording.id)).blob_key == recording.blob_key


async def test_retention_is_scoped_to_each_project(ctx, make_project, seed_recording, recording_row):
    strict = await make_project("Strict", retention_days=1)
    relaxed = await make_project("Relaxed", retention_days=100)
    other_account = await make_project("Strict", account="globex", retention_days=1000)
    gone = await seed_recording(strict, age_days=2)
    kept = await seed_recording(relaxed, age_days=2)
    elsewhere = await seed_recording(other_account, age_days=2)

    await purge_expired(ctx, NOW)

    assert await recording_row(gone.id) is None
    assert await recording_row(kept.id) is not None
    assert await recording_row(elsewhere.id) is not None


async def test_a_second_pass_changes_nothing(ctx, make_project, seed_recording, recording_row):
    with_days = await make_project("A", retention_days=30)
    without = await make_project("B")
    await seed_recording(with_days, age_days=40)
    audio = await seed_recording(without, age_days=100)
    await purge_expired(ctx, NOW)
    after_first = await recording_row(audio.id)

    result = await purge_expired(ctx, NOW)

    assert (result.deleted, result.audio_removed, result.failed) == (0, 0, {})
    assert (await recording_row(audio.id)).updated_at == after_first.updated_at


async def test_a_backlog_larger_than_one_batch_is_worked_off(ctx, make_project, seed_recording, recording_row,
                                                           monkeypatch):
    monkeypatch.setattr(retention, "BATCH", 2)
    project = await make_project(retention_days=1)
    rows = [await seed_recording(project, age_days=5) for _ in range(5)]

    assert (await purge_expired(ctx, NOW)).deleted == 5
    assert [await recording_row(r.id) for r in rows] == [None] * 5


async def test_a_failing_project_is_degraded_until_a_pass_succeeds(ctx, make_project, seed_recording,
                                                                  monkeypatch):
    broken = await make_project("Broken", retention_days=1)
    fine = await make_project("Fine", retention_days=1)
    fine_recording = await seed_recording(fine, age_days=2)
    real = retention.purge

    async def failing(c, account, recordings):
        if recordings and recordings[0].project_id == broken.status.id:
            raise RuntimeError("blob store unreachable")
        await real(c, account, recordings)

    monkeypatch.setattr(retention, "purge", failing)
    await seed_recording(broken, age_days=2)

    result = await purge_expired(ctx, NOW)

    assert result.deleted == 1 and fine_recording  # the other project was still handled
    assert result.failed == {(ACCOUNT, broken.name): "blob store unreachable"}
    degraded = next(c for c in ctx.store.cached_get(Project, ACCOUNT, broken.name).status.conditions
                    if c.type == "Degraded")
    assert (degraded.status, degraded.reason, degraded.message) == ("True", "RetentionFailed", "blob store unreachable")
    assert not [c for c in ctx.store.cached_get(Project, ACCOUNT, fine.name).status.conditions if c.type == "Degraded"]

    monkeypatch.setattr(retention, "purge", real)
    await purge_expired(ctx, NOW)
    degraded = next(c for c in ctx.store.cached_get(Project, ACCOUNT, broken.name).status.conditions
                    if c.type == "Degraded")
    assert (degraded.status, degraded.reason) == ("False", "RetentionSucceeded")


async def test_callscope_serve_runs_retention_in_the_background(tmp_path, monkeypatch):
    """Runtime.start(background=True), what `callscope serve` runs, starts the retention loop."""
    monkeypatch.setenv("CALLSCOPE_RETENTION_INTERVAL_SECONDS", "0.1")
    settings = Settings(data_dir=tmp_path / "serve", store_poll_interval=0.05, log_level="WARNING",
                        dispatcher_enabled=False)
    rt = Runtime(settings)
    await rt.start(background=True)
    try:
        from callscope.catalog.tables import Recording
        from callscope.identifiers import uuid7
        from callscope.resources import ProjectSpec
        from callscope.services.objects import create_with_id

        project = await create_with_id(rt.ctx, Project, ACCOUNT, "P", ProjectSpec(name="P", language="en",
                                                                                     retention_days=1))
        old = datetime.now(UTC) - timedelta(days=3)

        def insert(catalog):
            with catalog.session(write=True) as session:
                row = Recording(public_id=str(uuid7()), account=ACCOUNT, project_id=project.status.id, name="x",
                                language="en", duration_ms=1, audio_format="wav", size_bytes=1, blob_key=None,
                                conversation_id=str(uuid7()), created_at=old, updated_at=old)
                session.add(row)
                session.flush()
                return row.id

        def exists(catalog, rid):
            with catalog.session() as session:
                return session.get(Recording, rid) is not None

        rid = await rt.ctx.catalog.run(insert, rt.ctx.catalog)
        for _ in range(100):
            if not await rt.ctx.catalog.run(exists, rt.ctx.catalog, rid):
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the background retention loop did not delete the expired recording")
    finally:
        await rt.stop()
