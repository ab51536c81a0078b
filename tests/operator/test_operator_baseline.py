"""Quality baseline (workers/baseline.py): one test per rule, on an embedded Runtime."""

from __future__ import annotations

import asyncio

import pytest
from operator_support import ACCOUNT

from callscope.config import Settings
from callscope.resources import Project, ProjectSpec
from callscope.runtime import Runtime
from callscope.services.objects import change_spec, create_with_id
from callscope.workers.baseline import percentile, update_baselines


def baseline_condition(ctx, project: Project):
    current = ctx.store.cached_get(Project, project.namespace, project.name)
    return next((c for c in current.status.conditions if c.type == "BaselineReady"), None)


async def test_without_completed_recordings_the_baseline_is_null(ctx, make_project):
    project = await make_project(quality_baseline_enabled=True, quality_baseline_pct=80)

    assert await update_baselines(ctx) == 1

    cond = baseline_condition(ctx, project)
    assert (cond.status, cond.reason) == ("False", "NoCompletedRecordings")
    assert "baseline: null" in cond.message


async def test_the_baseline_is_the_configured_percentile_of_goal_scores(ctx, make_project, seed_recording):
    project = await make_project(quality_baseline_enabled=True, quality_baseline_pct=75)
    other = await make_project("Other")
    for score in (0.1, 0.2, 0.3, 0.4, 0.5):
        await seed_recording(project, 1, quality_score=score)
    await seed_recording(project, 1, quality_score=0.9, status="failed")  # only completed recordings count
    await seed_recording(project, 1)  # goals not evaluated: no score
    await seed_recording(other, 1, quality_score=0.99)  # another project

    await update_baselines(ctx)

    cond = baseline_condition(ctx, project)
    assert (cond.status, cond.reason, cond.message) == ("True", "Computed", "baseline=0.4 percentile=75 samples=5")


def test_percentile_interpolates_between_closest_ranks():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5], 90) == 5
    assert percentile([3, 1, 2], 0) == 1 and percentile([3, 1, 2], 100) == 3
    with pytest.raises(ValueError):
        percentile([], 50)


async def test_the_median_when_no_percentile_is_set(ctx, make_project, seed_recording):
    project = await make_project(quality_baseline_enabled=True)
    for score in (0.25, 0.75, 0.5):
        await seed_recording(project, 1, quality_score=score)

    await update_baselines(ctx)
    assert baseline_condition(ctx, project).message == "baseline=0.5 percentile=50 samples=3"


async def test_projects_without_the_baseline_get_no_condition_and_lose_it_when_disabled(ctx, make_project):
    off = await make_project("Off")
    on = await make_project("On", quality_baseline_enabled=True)
    await update_baselines(ctx)
    assert baseline_condition(ctx, off) is None
    assert baseline_condition(ctx, on) is not None

    def disable(draft):
        draft.spec.quality_baseline_enabled = False
    await change_spec(ctx, ctx.store.cached_get(Project, ACCOUNT, on.name), disable)
    await update_baselines(ctx)
    assert baseline_condition(ctx, on) is None


async def test_a_second_pass_writes_nothing(ctx, make_project):
    project = await make_project(quality_baseline_enabled=True)
    await update_baselines(ctx)
    version = ctx.store.cached_get(Project, ACCOUNT, project.name).metadata.resource_version

    assert await update_baselines(ctx) == 0
    assert ctx.store.cached_get(Project, ACCOUNT, project.name).metadata.resource_version == version


async def test_the_baseline_keeps_the_other_conditions(ctx, make_project):
    from callscope.operator.handlers import reconcile

    project = await make_project(quality_baseline_enabled=True)
    await reconcile(ctx, ctx.store.cached_get(Project, ACCOUNT, project.name))
    await update_baselines(ctx)
    types = {c.type for c in ctx.store.cached_get(Project, ACCOUNT, project.name).status.conditions}
    assert {"Ready", "Conflict", "BaselineReady"} <= types


async def test_callscope_serve_runs_the_baseline_in_the_background(tmp_path, monkeypatch):
    monkeypatch.setenv("CALLSCOPE_BASELINE_INTERVAL_SECONDS", "0.1")
    rt = Runtime(Settings(data_dir=tmp_path / "serve", store_poll_interval=0.05, log_level="WARNING",
                          dispatcher_enabled=False))
    await rt.start(background=True)
    try:
        project = await create_with_id(rt.ctx, Project, ACCOUNT, "P",
                                       ProjectSpec(name="P", language="en", quality_baseline_enabled=True))
        for _ in range(100):
            if baseline_condition(rt.ctx, project) is not None:
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the background baseline loop did not report the project's baseline")
        assert baseline_condition(rt.ctx, project).reason == "NoCompletedRecordings"
    finally:
        await rt.stop()

