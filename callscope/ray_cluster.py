"""Starting or joining Ray for the analysis dispatcher.

Embedded (no address configured): a private local Ray (``address="local"``, sized by settings, no dashboard,
loopback only, its own temp dir ``/tmp/cs-ray-<uid>/<pid>``) whose processes end with this one
(callscope/ray_reaper.py). Cluster: ``CALLSCOPE_RAY_ADDRESS`` or ``RAY_ADDRESS`` names the RayCluster, joined as a
Ray client (``RAY_AUTH_TOKEN`` for token authentication); a cluster that went away is never replaced by a local Ray.
Never ``ray stop``: ``disconnect`` ends only this process's driver. Details: docs/operations.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

import structlog

from callscope.ray_reaper import Watch, reap_stale

log = structlog.get_logger()

NAMESPACE = "callscope"
MiB = 1024 * 1024
LOOPBACK = "127.0.0.1"

_watch: Watch | None = None  # of the local Ray this process started


def temp_root() -> Path:
    return Path(f"/tmp/cs-ray-{os.getuid()}")


def address(settings) -> str | None:
    return settings.ray_address or os.environ.get("RAY_ADDRESS") or None


def placement(settings) -> dict[str, Any]:
    """Ray options for the analysis's tasks and actors: a sliver of CALLSCOPE_RAY_WORKER_RESOURCE, so only the
    worker nodes that offer it take the work."""
    resource = settings.ray_worker_resource
    return {"resources": {resource: 0.001}} if resource else {}


def connect(settings) -> None:
    """Join the configured Ray cluster, or start this process's own local Ray. Idempotent."""
    import ray  # loads only where analysis runs on Ray (start-up time of everything else)
    from ray._private import auto_init_hook

    # Ray's calls start a local Ray by themselves where none is connected: a driver that lost its cluster would
    # start one inside the server (its CPUs, a second set of models) instead of failing and joining again.
    auto_init_hook.enable_auto_connect = False
    if ray.is_initialized():
        return
    remote = address(settings)
    if remote:
        ray.init(address=remote, namespace=NAMESPACE, log_to_driver=False)
        log.info("ray_connected", address=remote)
        return
    root = temp_root()
    reap_stale(root)
    temp_dir = root / str(os.getpid())
    temp_dir.mkdir(parents=True, exist_ok=True)
    watch = Watch(temp_dir)  # before Ray starts: a kill during ray.init leaves nothing either
    try:
        _init_on_loopback(ray, num_cpus=settings.ray_num_cpus or os.cpu_count(), include_dashboard=False,
                          object_store_memory=settings.ray_object_store_mb * MiB, _temp_dir=str(temp_dir),
                          namespace=NAMESPACE, log_to_driver=False, configure_logging=False)
    except BaseException:
        watch.stop()  # ends what the failed start left, before a retry reuses the folder
        raise
    global _watch
    _watch = watch
    log.info("ray_started", temp_dir=str(temp_dir), resources=ray.cluster_resources())


def _init_on_loopback(ray: ModuleType, **options: Any) -> None:
    """``ray.init`` of a local Ray whose processes (GCS, raylet, agents, workers) listen on loopback only.

    Ray turns a loopback node address into the machine's outward one unless it runs as a single-machine Ray, which
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` selects through a constant read when Ray is imported (already done):
    set for the start only, since a later ``connect`` to a cluster needs the outward address."""
    from ray._private import ray_constants  # with Ray, loaded by the caller

    saved = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        ray.init(address="local", _node_ip_address=LOOPBACK, dashboard_host=LOOPBACK, **options)
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved


def disconnect() -> None:
    """Leave Ray; a local Ray this process started stops with it, and its temp dir goes."""
    import ray  # see connect()

    ray.shutdown()  # also where the connection is already lost: Ray's client forgets it, and a later init joins anew
    global _watch
    if _watch is not None:
        _watch.stop()  # ends what is left of the local Ray and removes its temp dir
        _watch = None
