"""The controller: Kopf's handlers for a cluster (`callscope controller`, which passes `controller_memo(...)` to
`kopf.run`). They run what `callscope serve` runs embedded (operator/embedded.py, workers/loops.py), driven by
Kopf, each delegating to the module that does the work: startup and login, `handlers.reconcile` on every change of
an object and of the objects it depends on, a recheck timer, the Project finalizer's cascade, the retention and
baseline timers, the re-analysis annotation, and Events on transitions. It writes status, the id label, its
finalizer and Kopf's annotations, never spec. Every handler: docs/operations.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import kopf

from callscope.config import Settings
from callscope.metrics_catalog import serve as serve_metrics
from callscope.operator.handlers import dependents, reconcile
from callscope.operator.kopf_support import (
    FINALIZER,
    PEERING_NAME,
    configure,
    connection_info,
    current_object,
    forgotten,
    post_transitions,
    project_with_id,
)
from callscope.resources import KINDS, Project
from callscope.resources.meta import GROUP, VERSION
from callscope.services.analyses import reanalyze_project
from callscope.services.projects import cascade_project_delete
from callscope.store.factory import build_secret_store
from callscope.store.interface import ObjectNotFound, StaleResourceVersion
from callscope.workers.baseline import update_project_baseline
from callscope.workers.loops import start_loops, stop_loops
from callscope.workers.retention import mark_degraded, purge_project

__all__ = ["FINALIZER", "PEERING_NAME", "controller_memo", "registry"]

# Not under GROUP: Kopf leaves the annotations of its own storage prefix (GROUP) out of the diffs it reacts to.
REANALYZE_ANNOTATION = f"analysis.{GROUP}/reanalyze"
REANALYZE_HANDLED = f"{GROUP}/reanalyze-handled"
# Kopf fixes a timer's interval when the timer registers, at import; the rest is read when the controller starts.
INTERVALS = Settings()

registry = kopf.get_default_registry()


def controller_memo(open_runtime: Callable[[Settings], AbstractAsyncContextManager[Any]]) -> kopf.Memo:
    """The memo `kopf.run` gives every handler: how to open the Runtime (callscope.runtime.opened), handed in by
    the composition root, which the controller never imports."""
    return kopf.Memo(open_runtime=open_runtime)


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_) -> None:
    configure(settings)
    app = Settings()
    memo.resources = contextlib.AsyncExitStack()
    memo.ctx = (await memo.resources.enter_async_context(memo.open_runtime(app))).ctx
    memo.secrets = build_secret_store(app)
    memo.resources.push_async_callback(memo.secrets.aclose)
    memo.resources.push_async_callback(stop_loops, start_loops(memo.ctx, project_jobs=False))
    if app.metrics_port is not None:  # in a cluster the dispatcher and webhook delivery run here: their metrics
        memo.resources.callback(serve_metrics(memo.ctx.catalog, memo.ctx.clock, app.metrics_port))


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_) -> None:
    if "resources" in memo:  # not when startup failed before opening anything
        await memo.resources.aclose()


@kopf.on.login()
def login(settings: kopf.OperatorSettings, **_) -> kopf.ConnectionInfo:
    return connection_info(Settings(), settings)


async def reconcile_object(body: kopf.Body, memo: kopf.Memo, **_) -> None:
    kind = KINDS[body["kind"]]
    obj = await current_object(memo.ctx, kind, body)
    if obj.metadata.deletion_timestamp is not None:
        return
    try:
        updated = await reconcile(memo.ctx, obj, memo.secrets)
    except StaleResourceVersion:
        raise kopf.TemporaryError(f"{kind.KIND} {obj.name} changed meanwhile; reconciling again", delay=1) from None
    except ObjectNotFound:
        return
    post_transitions(body, obj, updated)


async def recheck_object(**kwargs) -> None:
    with contextlib.suppress(kopf.TemporaryError):  # the next tick tries again
        await reconcile_object(**kwargs)


async def recheck_dependents(body: kopf.Body, event: kopf.RawEvent, memo: kopf.Memo, **_) -> None:
    """Every change of an object, its deletion included, re-checks the objects that depend on it: those naming it
    (ReferencesResolved) and those claiming one of its unique values (Conflict)."""
    if event["type"] is None:  # the initial listing: the resume handlers reconcile everything
        return
    kind = KINDS[body["kind"]]
    deleted = event["type"] == "DELETED"
    obj = await (forgotten if deleted else current_object)(memo.ctx, kind, body)
    for dependent in dependents(memo.ctx, obj):
        try:
            updated = await reconcile(memo.ctx, dependent, memo.secrets)
        except (StaleResourceVersion, ObjectNotFound):
            continue  # changed or gone meanwhile: its own handlers and timer take it from there
        post_transitions(dependent.to_dict(), dependent, updated)


for _kind in KINDS.values():
    for _on in (kopf.on.create, kopf.on.update, kopf.on.resume):
        _on(GROUP, VERSION, _kind.PLURAL, id=f"reconcile-{_kind.KIND}")(reconcile_object)
    kopf.timer(GROUP, VERSION, _kind.PLURAL, id=f"recheck-{_kind.KIND}", interval=INTERVALS.reconcile_interval_seconds,
               initial_delay=INTERVALS.reconcile_interval_seconds)(recheck_object)
    kopf.on.event(GROUP, VERSION, _kind.PLURAL, id=f"dependents-{_kind.KIND}")(recheck_dependents)


@kopf.on.delete(GROUP, VERSION, Project.PLURAL, id="cascade-project-delete")
async def project_deleted(body: kopf.Body, memo: kopf.Memo, **_) -> None:
    project = await current_object(memo.ctx, Project, body)
    try:
        await cascade_project_delete(memo.ctx, project)
    except ObjectNotFound:
        pass  # already gone (a dependant or the project itself): nothing left to cascade
    except StaleResourceVersion:
        raise kopf.TemporaryError("a dependant changed meanwhile; cascading again", delay=1) from None


@kopf.on.resume(GROUP, VERSION, Project.PLURAL, id="reanalyze-on-resume")
@kopf.on.field(GROUP, VERSION, Project.PLURAL, field="metadata.annotations", id="reanalyze")
async def reanalyze(body: kopf.Body, memo: kopf.Memo, patch: kopf.Patch, **_) -> None:
    annotations = body["metadata"].get("annotations") or {}
    wanted = annotations.get(REANALYZE_ANNOTATION)
    if not wanted or wanted == annotations.get(REANALYZE_HANDLED):
        return
    project = await project_with_id(memo.ctx, body)
    queued = await reanalyze_project(memo.ctx, project.namespace, project.status.id)
    patch.metadata.annotations[REANALYZE_HANDLED] = wanted
    kopf.info(body, reason="ReanalysisQueued", message=f"{len(queued)} recordings queued for re-analysis")


@kopf.timer(GROUP, VERSION, Project.PLURAL, id="retention", interval=INTERVALS.retention_interval_seconds)
async def retention(body: kopf.Body, memo: kopf.Memo, **_) -> None:
    project = await project_with_id(memo.ctx, body)
    try:
        deleted, audio_removed = await purge_project(memo.ctx, project, memo.ctx.clock())
    except Exception as exc:  # noqa: BLE001 - reported on the Project (event, Degraded)
        error = str(exc) or type(exc).__name__
        kopf.warn(body, reason="RetentionFailed", message=error[:1000])
        await mark_degraded(memo.ctx, project, error)
        return
    await mark_degraded(memo.ctx, project, None)
    if deleted or audio_removed:
        kopf.info(body, reason="RetentionApplied",
                  message=f"{deleted} recordings deleted, audio of {audio_removed} recordings removed")


@kopf.timer(GROUP, VERSION, Project.PLURAL, id="quality-baseline", interval=INTERVALS.baseline_interval_seconds)
async def baseline(body: kopf.Body, memo: kopf.Memo, **_) -> None:
    with contextlib.suppress(StaleResourceVersion, ObjectNotFound):  # the next tick writes it
        await update_project_baseline(memo.ctx, await project_with_id(memo.ctx, body))
