"""What the controller's Kopf handlers (operator/main.py) lean on: Kopf's settings, its login (the same
cluster and credentials as the store's, callscope/kube.py), the freshest copy of the object an event is about
(or the cache without it, after a deletion), and the Kubernetes Events posted on transitions."""

from __future__ import annotations

import asyncio
import logging

import kopf
from lightkube.config.models import User

from callscope.config import Settings
from callscope.kube import kube_config
from callscope.resources import Project, Resource
from callscope.resources.meta import GROUP
from callscope.services.context import Context
from callscope.store.cache import is_newer

PEERING_NAME = "callscope"
FINALIZER = f"{GROUP}/project-cleanup"
CACHE_WAIT_SECONDS = 3.0


def configure(settings: kopf.OperatorSettings) -> None:
    """Kopf's state under the callscope.io prefix, Events only for the transitions posted below, peering."""
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=GROUP, key="last-handled-configuration")
    settings.posting.level = logging.INFO
    settings.posting.loggers = False
    settings.peering.name = PEERING_NAME


def connection_info(app: Settings, settings: kopf.OperatorSettings) -> kopf.ConnectionInfo:
    """Kopf's credentials, from lightkube's reading of CALLSCOPE_KUBECONFIG / CALLSCOPE_KUBE_CONTEXT (else the
    in-cluster service account, else $KUBECONFIG or ~/.kube/config): the cluster the store talks to."""
    config = kube_config(app.kubeconfig, app.kube_context)
    cluster, user = config.cluster, config.user or User()
    provider_token = (user.auth_provider or {}).get("config", {}).get("access-token")

    def path(name: str | None) -> str | None:  # relative to the kubeconfig, as kubectl reads them
        return str(config.abs_file(name)) if name else None

    return kopf.ConnectionInfo(
        server=cluster.server, ca_path=path(cluster.certificate_auth), ca_data=cluster.certificate_auth_data,
        insecure=cluster.insecure, token=user.token or provider_token, username=user.username,
        password=user.password, certificate_path=path(user.client_cert), certificate_data=user.client_cert_data,
        private_key_path=path(user.client_key), private_key_data=user.client_key_data,
        default_namespace=config.context.namespace, trust_env=settings.networking.trust_env,
    )


def _from_body(cls: type[Resource], body: kopf.Body) -> Resource:
    raw = {k: body.get(k) for k in ("apiVersion", "kind", "metadata", "spec", "status") if body.get(k) is not None}
    return cls.from_dict(dict(raw))


async def current_object(ctx: Context, cls: type[Resource], body: kopf.Body) -> Resource:
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
    return _from_body(cls, body)


async def forgotten(ctx: Context, cls: type[Resource], body: kopf.Body) -> Resource:
    """The object the API server reports deleted, once the cache has dropped it too (what depends on it is then
    checked against a cache without it), or after CACHE_WAIT_SECONDS."""
    ns, name = body["metadata"].get("namespace"), body["metadata"]["name"]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CACHE_WAIT_SECONDS
    while ctx.store.cached_get(cls, ns, name) is not None and loop.time() < deadline:
        await asyncio.sleep(0.05)
    return _from_body(cls, body)


async def project_with_id(ctx: Context, body: kopf.Body) -> Project:
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
    """Kubernetes Events for what changed: a new conflict or dangling reference, or the object becoming Ready."""
    old_conflict, new_conflict = _condition(before, "Conflict"), _condition(after, "Conflict")
    if new_conflict and new_conflict[0] == "True" and new_conflict != old_conflict:
        kopf.warn(body, reason="Conflict", message=new_conflict[2])
    old_refs, new_refs = _condition(before, "ReferencesResolved"), _condition(after, "ReferencesResolved")
    if new_refs and new_refs[0] == "False" and new_refs != old_refs:
        kopf.warn(body, reason="UnresolvedReferences", message=new_refs[2])
    old_ready, new_ready = _condition(before, "Ready"), _condition(after, "Ready")
    if new_ready and new_ready[0] == "True" and (old_ready is None or old_ready[0] != "True"):
        kopf.info(body, reason="Ready", message=f"{after.KIND} {after.name} reconciled (id {after.status.id})"
                  if after.status.id is not None else f"{after.KIND} {after.name} reconciled")
