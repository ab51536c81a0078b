"""The quality baseline of projects with `qualityBaselineEnabled`: the `qualityBaselinePct` percentile
(default 50, the median) of the goal scores (`quality_score`) of the project's completed recordings.

Run by `callscope serve` (an `every()` loop) and by the Kopf operator (a timer on Projects) from this one
implementation, idempotent: the Project's condition `BaselineReady` is written only when the outcome changed (True,
reason `Computed`, with the value; False, reason `NoCompletedRecordings`; removed when disabled). Details:
docs/operations.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import structlog

from callscope.catalog import recordings as recording_rows
from callscope.resources import Condition, Project
from callscope.services.context import Context
from callscope.store.interface import ObjectNotFound, StaleResourceVersion

log = structlog.get_logger()

CONDITION = "BaselineReady"
DEFAULT_PERCENTILE = 50.0

async def goal_scores(ctx: Context, project: Project) -> list[float]:
    """Quality scores (0 to 1) of the project's completed, goal-evaluated recordings."""
    return await ctx.catalog.read(recording_rows.quality_scores, project.namespace, project.status.id)


def percentile(values: list[float], pct: float) -> float:
    """The `pct` percentile (0 to 100) with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of nothing")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class Baseline:
    value: float | None
    percentile: float
    samples: int

    def condition(self) -> Condition:
        if self.value is None:
            return Condition(type=CONDITION, status="False", reason="NoCompletedRecordings",
                             message="no completed recording has goal scores yet; baseline: null")
        return Condition(type=CONDITION, status="True", reason="Computed",
                         message=f"baseline={round(self.value, 2)} percentile={self.percentile:g} "
                                 f"samples={self.samples}")


async def compute(ctx: Context, project: Project) -> Baseline:
    scores = await goal_scores(ctx, project)
    pct = project.spec.quality_baseline_pct if project.spec.quality_baseline_pct is not None else DEFAULT_PERCENTILE
    return Baseline(percentile(scores, pct) if scores else None, pct, len(scores))


def _with_condition(conditions: list[Condition], new: Condition | None, now) -> list[Condition]:
    old = next((c for c in conditions if c.type == CONDITION), None)
    kept = [c for c in conditions if c.type != CONDITION]
    if new is None:
        return kept if old is not None else conditions
    if old is not None and (old.status, old.reason, old.message) == (new.status, new.reason, new.message):
        return conditions
    transition = old.last_transition_time if old is not None and old.status == new.status else now
    return [*kept, new.model_copy(update={"last_transition_time": transition})]


async def update_project_baseline(ctx: Context, project: Project) -> Project:
    """Compute one project's baseline and write it to its status when it changed; returns the project."""
    if project.status.id is None or project.metadata.deletion_timestamp is not None:
        return project
    wanted = (await compute(ctx, project)).condition() if project.spec.quality_baseline_enabled else None
    conditions = _with_condition(project.status.conditions, wanted, ctx.clock())
    if conditions == project.status.conditions:
        return project
    draft = project.model_copy(deep=True)
    draft.status.conditions = conditions
    updated = await ctx.store.update_status(draft)
    log.info("baseline_updated", account=project.namespace, project=project.name,
             condition=wanted.model_dump() if wanted else None)
    return updated


async def update_baselines(ctx: Context) -> int:
    """One pass over every project; returns how many statuses were written. Lost races are left to the next
    pass (the other writer's change is newer)."""
    written = 0
    for project in list(ctx.store.cached_list(Project)):
        try:
            if await update_project_baseline(ctx, project) is not project:
                written += 1
        except (StaleResourceVersion, ObjectNotFound):
            continue
        except Exception:
            log.exception("baseline_failed", account=project.namespace, project=project.name)
    return written
