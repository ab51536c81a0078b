"""Starting or joining Ray for the analysis dispatcher.

Embedded (`callscope serve`, no address configured): this process starts a private local Ray with
``address="local"`` (never a stale cluster that a ``ray_current_cluster`` file points at), sized by settings
(CPUs, object store: Ray's default of 30% of RAM is far too much beside the API), no dashboard, and a short temp
dir of its own, ``/tmp/cs-ray-<uid>/<pid>`` (Ray's socket paths must stay under the 107-byte limit). When the
process ends, Ray's reaper stops that cluster; temp dirs left by killed processes are removed at the next start.
Several such processes on one machine each have their own Ray (they share only the catalog and the blobs).

Cluster: ``CALLSCOPE_RAY_ADDRESS`` or ``RAY_ADDRESS`` names the RayCluster (the KubeRay head); the dispatcher
joins it as a driver. With Ray's token authentication on (``RAY_AUTH_MODE=token``, Ray's default), give the
token the cluster uses in ``RAY_AUTH_TOKEN``. Same code either way: only ``connect`` differs.

Never ``ray stop``: it kills every Ray process of the user, other servers' included. ``disconnect`` ends only
this process's driver (and the local cluster it started).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import structlog

log = structlog.get_logger()

NAMESPACE = "callscope"
MiB = 1024 * 1024


def temp_root() -> Path:
    return Path(f"/tmp/cs-ray-{os.getuid()}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(root: Path) -> None:
    """Temp dirs of local Rays whose process is gone (killed without a chance to clean up)."""
    if not root.is_dir():
        return
    for child in root.iterdir():
        if child.name.isdigit() and not _alive(int(child.name)):
            shutil.rmtree(child, ignore_errors=True)


def address(settings) -> str | None:
    return settings.ray_address or os.environ.get("RAY_ADDRESS") or None


def connect(settings) -> None:
    """Join the configured Ray cluster, or start this process's own local Ray. Idempotent."""
    import ray

    if ray.is_initialized():
        return
    remote = address(settings)
    if remote:
        ray.init(address=remote, namespace=NAMESPACE, log_to_driver=False)
        log.info("ray_connected", address=remote)
        return
    root = temp_root()
    _remove_stale(root)
    temp_dir = root / str(os.getpid())
    temp_dir.mkdir(parents=True, exist_ok=True)
    ray.init(address="local", num_cpus=settings.ray_num_cpus or os.cpu_count(), include_dashboard=False,
             object_store_memory=settings.ray_object_store_mb * MiB, _temp_dir=str(temp_dir), namespace=NAMESPACE,
             log_to_driver=False, configure_logging=False)
    log.info("ray_started", temp_dir=str(temp_dir), resources=ray.cluster_resources())


def disconnect() -> None:
    """Leave Ray; a local Ray this process started stops with it, and its temp dir goes."""
    import ray

    if not ray.is_initialized():
        return
    ray.shutdown()
    shutil.rmtree(temp_root() / str(os.getpid()), ignore_errors=True)
