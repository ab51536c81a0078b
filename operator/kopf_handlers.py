"""The Kopf wiring of the operator for a cluster: the same reconcile handlers, retention and baseline jobs
that `callscope serve` runs embedded (operator/embedded.py, operator/loops.py), driven by Kopf.

`register(registry)` adds every handler to a Kopf registry (operator/main.py registers them into Kopf's
default registry for `kopf run -m callscope.operator.main`; tests use a registry of their own):

- startup: builds the Runtime from Settings (the store back end is CALLSCOPE_STORE, `kubernetes` in a
  cluster) with `start(background=False)`, keeps it in `memo.runtime`, and starts the store-wide loops
  that are not per object (the orphan-blob sweep); cleanup stops them;
- login: CALLSCOPE_KUBECONFIG when set, else the in-cluster service account, else KUBECONFIG/~/.kube/config;
- create/update/resume per kind (group callscope.io, version v1alpha1): `handlers.reconcile`, which writes
  status (and the id label), never spec. ApiKeys applied without key material get a key written to the
  Secret `<apikey-name>-key` (key `api-key`, owned by the ApiKey so it goes with it) in the account's
  namespace; only the hash goes into the ApiKey's status;
- a timer per object re-runs the same reconcile now and then (a conflict that the deletion of the older
  object resolved, a missed event); a no-op when nothing changed;
- delete of a Project, behind the finalizer `callscope.io/project-cleanup`: `cascade_project_delete`,
  exactly the REST delete (recordings and their blobs, numbers, tags, links, scoped keys);
- timers on Projects: retention (operator/retention.py) and the quality baseline (operator/baseline.py);
- the webhook delivery loop (operator/webhooks.py) as a startup task, when CALLSCOPE_WEBHOOK_DELIVERY_ENABLED;
- the analysis dispatcher (operator/dispatch.py) as a startup task, when CALLSCOPE_DISPATCHER_ENABLED; and the
  annotation `analysis.callscope.io/reanalyze: "<any new value>"` on a Project, which queues a re-analysis of its completed
  recordings once per value (the value handled is kept in the annotation `callscope.io/reanalyze-handled`: status
  fields outside the CRD schema would be pruned);
- Kubernetes Events on transitions only: Warning `Conflict` when an object becomes conflicted, Normal
  `Ready` when it becomes ready, Warning `RetentionFailed`, Normal `RetentionApplied`.

Uniqueness rules (E.164 phone numbers and external ids per account, tag names per project): a status
condition, NOT an admission webhook. The E.164 format itself is enforced by the CRD's OpenAPI pattern,
which the API server checks without any webhook. For uniqueness, an admission webhook needs a TLS
certificate, an in-cluster Service and a (Validating|Mutating)WebhookConfiguration that points at the
operator; while the operator is down it either blocks every write to the kinds (failurePolicy Fail) or
lets everything through (Ignore), and it would reject the second object of a `kubectl apply -f dir/` or a
GitOps sync half-way, leaving the applier retrying forever. A condition keeps appliers unblocked and tells
the engineer what is wrong: the object created later gets `Conflict=True` (reason NotUnique, message
naming the value) and `Ready=False`, plus a Warning Event; the earlier object keeps the value, and the REST
API only ever sees the objects that are Ready.

GitOps: the operator writes status, the `callscope.io/id` label, its finalizer and Kopf's bookkeeping
annotations (`callscope.io/last-handled-configuration`), never spec, so objects applied from git do not
drift, and re-applying the same YAML changes nothing and triggers no further write.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import ssl
from collections.abc import Callable
from typing import Any

import httpx
import kopf
import structlog
from callscope.operator.baseline import update_project_baseline
from callscope.operator.handlers import reconcile
from callscope.operator.loops import every, run_dispatcher, sweep_orphan_blobs
from callscope.operator.retention import mark_degraded, purge_project
from callscope.operator.webhooks import run_webhook_delivery

from callscope.config import Settings
from callscope.resources import KINDS, ApiKey, Project, Resource
from callscope.resources.meta import GROUP, VERSION
from callscope.services.analyses import reanalyze_project
from callscope.services.projects import cascade_project_delete
from callscope.store.cache import is_newer
from callscope.store.interface import ObjectNotFound, StaleResourceVersion

log = structlog.get_logger()

PEERING_NAME = "callscope"
FINALIZER = f"{GROUP}/project-cleanup"
# Not under GROUP: Kopf leaves the annotations of its own storage prefix (GROUP) out of the diffs it reacts to.
REANALYZE_ANNOTATION = f"analysis.{GROUP}/reanalyze"
REANALYZE_HANDLED = f"{GROUP}/reanalyze-handled"
SECRET_KEY = "api-key"
CACHE_WAIT_SECONDS = 3.0


def secret_name(api_key_name: str) -> str:
    return f"{api_key_name}-key"


# --- connection to the API server (Kopf's login and our own Secret writes) -----------------------------

def connection_info(app: Settings, settings: kopf.OperatorSettings) -> kopf.ConnectionInfo | None:
    kubeconfig = getattr(app, "kubeconfig", None)
    if kubeconfig:
        saved = os.environ.get("KUBECONFIG")
        os.environ["KUBECONFIG"] = str(kubeconfig)
        try:
            return kopf.login_with_kubeconfig(settings=settings)
        finally:
            if saved is None:
                os.environ.pop("KUBECONFIG", None)
            else:
                os.environ["KUBECONFIG"] = saved
    return kopf.login_with_service_account(settings=settings) or kopf.login_with_kubeconfig(settings=settings)


def _file(data: str | bytes | None, path, memo_dir: list) -> str | None:
    """A path for a PEM given inline (base64, as kubeconfigs carry it) or as a path."""
    if path:
        return os.fspath(path)
    if not data:
        return None
    import tempfile

    raw = base64.b64decode(data) if isinstance(data, str) else data
    fh = tempfile.NamedTemporaryFile(delete=False, suffix=".pem")
    fh.write(raw)
    fh.close()
    memo_dir.append(fh.name)
    return fh.name


class SecretWriter:
    """Writes ApiKey key material into Secrets through the Kubernetes API (create, or replace)."""

    def __init__(self, info: kopf.ConnectionInfo):
        self._temp: list[str] = []
        verify: Any = True
        if info.insecure:
            verify = False
        elif info.ca_path or info.ca_data:
            verify = ssl.create_default_context(cafile=_file(info.ca_data, info.ca_path, self._temp))
        cert = None
        certificate = _file(info.certificate_data, info.certificate_path, self._temp)
        if certificate:
            cert = (certificate, _file(info.private_key_data, info.private_key_path, self._temp))
        headers = {"Authorization": f"{info.scheme or 'Bearer'} {info.token}"} if info.token else {}
        auth = (info.username, info.password or "") if info.username else None
        self.client = httpx.AsyncClient(base_url=info.server.rstrip("/"), verify=verify, cert=cert,
                                        headers=headers, auth=auth, timeout=30)

    async def write(self, obj: ApiKey, key: str) -> None:
        ns, name = obj.namespace, secret_name(obj.name)
        body: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {f"{GROUP}/apikey": obj.name},
                         "ownerReferences": [{"apiVersion": obj.api_version, "kind": obj.KIND, "name": obj.name,
                                              "uid": obj.metadata.uid, "controller": True,
                                              "blockOwnerDeletion": False}] if obj.metadata.uid else []},
            "data": {SECRET_KEY: base64.b64encode(key.encode()).decode()},
        }
        path = f"/api/v1/namespaces/{ns}/secrets"
        for _ in range(5):
            response = await self.client.post(path, json=body)
            if response.status_code != 409:
                break
            current = await self.client.get(f"{path}/{name}")
            if current.status_code == 404:
                continue
            current.raise_for_status()
            body["metadata"]["resourceVersion"] = current.json()["metadata"].get("resourceVersion")
            response = await self.client.put(f"{path}/{name}", json=body)
            if response.status_code != 409:
                break
        response.raise_for_status()
        log.info("api_key_secret_written", account=ns, apikey=obj.name, secret=name)

    async def close(self) -> None:
        await self.client.aclose()
        for path in self._temp:
            with contextlib.suppress(OSError):
                os.unlink(path)


# --- helpers ------------------------------------------------------------------------------------------

async def current_object(ctx, cls: type[Resource], body: kopf.Body) -> Resource | None:
    """The freshest copy of the object Kopf reports: the cache's once it has caught up with the event (its
    indexes answer the uniqueness checks), or a newer one it already holds (our own write), else the body."""
    ns, name = body["metadata"].get("namespace"), body["metadata"]["name"]
    rv = body["metadata"].get("resourceVersion")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CACHE_WAIT_SECONDS
    while True:
        cached = ctx.store.cached_get(cls, ns, name)
        if cached is not None and (cached.metadata.resource_version == rv
                                   or is_newer(cached.metadata.resource_version, rv)):
            return cached  # caught up with the event, or ahead of it (our own write)
        if loop.time() >= deadline:
            break
        await asyncio.sleep(0.05)
    raw = {k: body.get(k) for k in ("apiVersion", "kind", "metadata", "spec", "status") if body.get(k) is not None}
    return cls.from_dict(dict(raw))


async def project_with_id(ctx, body: kopf.Body) -> Project:
    """The project for a timer; a project the reconciler has not numbered yet is tried again in a second
    (rather than at the next interval): its recordings and baseline are keyed by that id."""
    project = await current_object(ctx, Project, body)
    if project.status.id is None and project.metadata.deletion_timestamp is None:
        raise kopf.TemporaryError(f"project {project.name} has no id yet", delay=1)
    return project


def _condition(obj: Resource, kind: str) -> tuple[str, str, str] | None:
    found = next((c for c in obj.status.conditions if c.type == kind), None)
    return (found.status, found.reason, found.message) if found else None


def post_transitions(body: kopf.Body, before: Resource, after: Resource) -> None:
    """Kubernetes Events for what changed: a new conflict, or the object becoming Ready."""
    old_conflict, new_conflict = _condition(before, "Conflict"), _condition(after, "Conflict")
    if new_conflict and new_conflict[0] == "True" and new_conflict != old_conflict:
        kopf.warn(body, reason="Conflict", message=new_conflict[2])
    old_ready, new_ready = _condition(before, "Ready"), _condition(after, "Ready")
    if new_ready and new_ready[0] == "True" and (old_ready is None or old_ready[0] != "True"):
        kopf.info(body, reason="Ready", message=f"{after.KIND} {after.name} reconciled (id {after.status.id})"
                  if after.status.id is not None else f"{after.KIND} {after.name} reconciled")


# --- registration -------------------------------------------------------------------------------------

def register(registry: kopf.OperatorRegistry, settings_factory: Callable[[], Settings] = Settings
             ) -> kopf.OperatorRegistry:
    """Add the operator's handlers to `registry` and return it."""
    app_settings: dict[str, Settings] = {}

    def app() -> Settings:
        if "settings" not in app_settings:
            app_settings["settings"] = settings_factory()
        return app_settings["settings"]

    @kopf.on.startup(registry=registry)
    async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_):
        from callscope.runtime import Runtime

        settings.persistence.finalizer = FINALIZER
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
            prefix=GROUP, key="last-handled-configuration")
        settings.posting.level = logging.INFO
        settings.posting.loggers = False  # Events only for the transitions posted below
        settings.peering.name = PEERING_NAME
        runtime = Runtime(app())
        await runtime.start(background=False)
        memo.runtime = runtime
        info = connection_info(app(), settings)
        memo.secrets = SecretWriter(info) if info is not None else None
        ctx = runtime.ctx
        memo.tasks = [asyncio.create_task(every(ctx.settings.blob_sweep_interval_seconds,
                                                lambda: sweep_orphan_blobs(ctx), "blob-sweep"), name="blob-sweep")]
        if ctx.settings.dispatcher_enabled:  # operator replicas dispatch analysis jobs to the RayCluster
            memo.tasks.append(asyncio.create_task(run_dispatcher(ctx), name="dispatcher"))
        if ctx.settings.webhook_delivery_enabled:  # the operator reads the signing Secrets the API cannot
            memo.tasks.append(asyncio.create_task(run_webhook_delivery(ctx), name="webhooks"))

    @kopf.on.cleanup(registry=registry)
    async def cleanup(memo: kopf.Memo, **_):
        for task in getattr(memo, "tasks", []):
            task.cancel()
        await asyncio.gather(*getattr(memo, "tasks", []), return_exceptions=True)
        if getattr(memo, "secrets", None) is not None:
            await memo.secrets.close()
        if getattr(memo, "runtime", None) is not None:
            await memo.runtime.stop()

    @kopf.on.login(registry=registry)
    def login(settings: kopf.OperatorSettings, **_):
        return connection_info(app(), settings)

    def reconcile_handler(cls: type[Resource]):
        async def handler(body: kopf.Body, memo: kopf.Memo, **_):
            ctx = memo.runtime.ctx
            obj = await current_object(ctx, cls, body)
            if obj is None or obj.metadata.deletion_timestamp is not None:
                return
            write_key = memo.secrets.write if memo.secrets is not None and cls is ApiKey else None
            try:
                updated = await reconcile(ctx, obj, write_key)
            except StaleResourceVersion:
                raise kopf.TemporaryError(f"{cls.KIND} {obj.name} changed meanwhile; reconciling again",
                                          delay=1) from None
            except ObjectNotFound:
                return
            post_transitions(body, obj, updated)
        return handler

    def recheck_handler(cls: type[Resource]):
        inner = reconcile_handler(cls)

        async def handler(body: kopf.Body, memo: kopf.Memo, **kwargs):
            with contextlib.suppress(kopf.TemporaryError):  # the next tick tries again
                await inner(body=body, memo=memo, **kwargs)
        return handler

    for cls in KINDS.values():
        handler = reconcile_handler(cls)
        for decorator in (kopf.on.create, kopf.on.update, kopf.on.resume):
            decorator(GROUP, VERSION, cls.PLURAL, registry=registry,
                      id=f"reconcile-{cls.KIND}")(handler)
        kopf.timer(GROUP, VERSION, cls.PLURAL, registry=registry, id=f"recheck-{cls.KIND}",
                   interval=app().reconcile_interval_seconds,
                   initial_delay=app().reconcile_interval_seconds)(recheck_handler(cls))

    @kopf.on.delete(GROUP, VERSION, Project.PLURAL, registry=registry, id="cascade-project-delete")
    async def project_deleted(body: kopf.Body, memo: kopf.Memo, **_):
        ctx = memo.runtime.ctx
        project = await current_object(ctx, Project, body)
        try:
            await cascade_project_delete(ctx, project)
        except ObjectNotFound:
            pass  # already gone (a dependant or the project itself): nothing left to cascade
        except StaleResourceVersion:
            raise kopf.TemporaryError("a dependant changed meanwhile; cascading again", delay=1) from None

    @kopf.on.resume(GROUP, VERSION, Project.PLURAL, registry=registry, id="reanalyze-on-resume")
    @kopf.on.field(GROUP, VERSION, Project.PLURAL, field="metadata.annotations", registry=registry, id="reanalyze")
    async def reanalyze(body: kopf.Body, memo: kopf.Memo, patch: kopf.Patch, **_):
        """A new value of the annotation analysis.callscope.io/reanalyze queues a re-analysis of the project's completed
        recordings, once: the value handled is remembered in callscope.io/reanalyze-handled."""
        annotations = body["metadata"].get("annotations") or {}
        wanted = annotations.get(REANALYZE_ANNOTATION)
        if not wanted or wanted == annotations.get(REANALYZE_HANDLED):
            return
        ctx = memo.runtime.ctx
        project = await project_with_id(ctx, body)
        queued = await reanalyze_project(ctx, project.namespace, project.status.id)
        patch.metadata.annotations[REANALYZE_HANDLED] = wanted
        kopf.info(body, reason="ReanalysisQueued", message=f"{len(queued)} recordings queued for re-analysis")

    @kopf.timer(GROUP, VERSION, Project.PLURAL, registry=registry, id="retention",
                interval=app().retention_interval_seconds)
    async def retention(body: kopf.Body, memo: kopf.Memo, **_):
        ctx = memo.runtime.ctx
        project = await project_with_id(ctx, body)
        try:
            deleted, audio_removed = await purge_project(ctx, project, ctx.clock())
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            kopf.warn(body, reason="RetentionFailed", message=error[:1000])
            await mark_degraded(ctx, project, error)
            return
        await mark_degraded(ctx, project, None)
        if deleted or audio_removed:
            kopf.info(body, reason="RetentionApplied",
                      message=f"{deleted} recordings deleted, audio of {audio_removed} recordings removed")

    @kopf.timer(GROUP, VERSION, Project.PLURAL, registry=registry, id="quality-baseline",
                interval=app().baseline_interval_seconds)
    async def baseline(body: kopf.Body, memo: kopf.Memo, **_):
        ctx = memo.runtime.ctx
        project = await project_with_id(ctx, body)
        with contextlib.suppress(StaleResourceVersion, ObjectNotFound):  # the next tick writes it
            await update_project_baseline(ctx, project)

    return registry
