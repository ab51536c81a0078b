"""The controller: Kopf's handlers for a cluster (`callscope controller`, which passes `controller_memo(...)` to
`kopf.run`). They run what `callscope serve` runs embedded (operator/embedded.py, workers/loops.py), driven by
Kopf, each delegating to the module that does the work:

- startup: opens the Runtime that the composition root hands in (`memo.open_runtime`, callscope/runtime.py's
  `opened`; the store back end is CALLSCOPE_STORE, `kubernetes` in a cluster), the Secret store, and
  `start_loops` without the per-project jobs: the orphan-blob sweep, the analysis dispatcher
  (CALLSCOPE_DISPATCHER_ENABLED) and webhook delivery (CALLSCOPE_WEBHOOK_DELIVERY_ENABLED: the controller reads
  the signing Secrets the API cannot); cleanup closes them in reverse;
- login: the cluster the store talks to (operator/kopf_support.py);
- create/update/resume per kind (group callscope.io, version v1alpha1): `handlers.reconcile`, which writes
  status (and the id label), never spec. ApiKeys applied without key material get a key written to the
  Secret `<apikey-name>-key` (key `api-key`, owned by the ApiKey so it goes with it) in the account's
  namespace; only the hash goes into the ApiKey's status;
- every event of an object, its deletion included, re-runs that reconcile on the objects that depend on it: those
  naming it in their spec and those claiming one of its unique values (a conflict the deletion of the older object
  resolved, a reference that now resolves or dangles);
- a timer per object re-runs the same reconcile now and then (a value freed by a change of the older object's
  spec, a missed event); a no-op when nothing changed;
- delete of a Project, behind the finalizer `callscope.io/project-cleanup`: `cascade_project_delete`,
  exactly the REST delete (recordings and their blobs, numbers, tags, links, scoped keys);
- timers on Projects: retention (workers/retention.py) and the quality baseline (workers/baseline.py);
- the annotation `analysis.callscope.io/reanalyze: "<any new value>"` on a Project queues a re-analysis of its
  completed recordings once per value (the value handled is kept in the annotation
  `callscope.io/reanalyze-handled`: status fields outside the CRD schema would be pruned);
- Kubernetes Events on transitions only: Warning `Conflict` when an object becomes conflicted, Warning
  `UnresolvedReferences` when a name in its spec stops resolving, Normal `Ready` when it becomes ready, Warning
  `RetentionFailed`, Normal `RetentionApplied`.

References between objects are names in the object's own namespace (its account): a VirtualNumber's project and
operators, an Operator's projects, a Tag's project, an ApiKey's project, a Project's webhook signing Secret. A name
that does not resolve there is the condition `ReferencesResolved=False` (reason NotFound, message naming what is
missing) and `Ready=False`; the object acts on nothing it names that is not there (a number routes to its own
account's operators only, a key bound to a missing project authenticates nobody), and the condition turns True on
the reconcile after the object appears (a Secret is not watched: the timer sees it).

Uniqueness rules (operators' E.164 phone numbers and external ids per account, a VirtualNumber's E.164 in all
accounts, tag names per project): a status condition, NOT an admission webhook. The E.164 format itself is enforced
by the CRD's OpenAPI pattern, which the API server checks without any webhook. For uniqueness, an admission webhook
needs a TLS certificate, an in-cluster Service and a (Validating|Mutating)WebhookConfiguration that points at the
controller; while the controller is down it either blocks every write to the kinds (failurePolicy Fail) or lets
everything through (Ignore), and it would reject the second object of a `kubectl apply -f dir/` or a GitOps sync
half-way, leaving the applier retrying forever. A condition keeps appliers unblocked and tells the engineer what is
wrong: the object created later gets `Conflict=True` (reason NotUnique, message naming the value) and `Ready=False`,
plus a Warning Event; the earlier object keeps the value (calls to an E.164 reach the earlier number, whichever
account the later one is in).

GitOps: the controller writes status, the `callscope.io/id` label, its finalizer and Kopf's bookkeeping
annotations (`callscope.io/last-handled-configuration`), never spec, so objects applied from git do not
drift, and re-applying the same YAML changes nothing and triggers no further write.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import kopf

from callscope.config import Settings
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
