"""The local Ray of `callscope serve`: its processes listen on loopback only, and a `kill -9` of the server leaves
none of them behind (callscope/ray_reaper.py). Linux: reads /proc."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from callscope.ray_cluster import temp_root
from callscope.ray_reaper import reap_stale
from tests.live import LiveServer, start_server

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc (Linux)")

PROC = Path("/proc")
RAY_STARTED_WITHIN_S = 90


# ----- /proc ------------------------------------------------------------------------------------------------

def start_time(pid: int) -> int | None:
    """Start time of the process (clock ticks after boot), None when there is none: with the pid, it names one
    process even if the pid is reused."""
    try:
        return int((PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError):
        return None


def descendants(root: int) -> dict[int, str]:
    """Every process below ``root``: pid → command line."""
    parents: dict[int, int] = {}
    for proc in PROC.glob("[0-9]*"):
        try:
            parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError):
            continue
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                try:
                    found[pid] = " ".join(
                        (PROC / str(pid) / "cmdline").read_bytes().decode().replace("\0", " ").split())
                except OSError:
                    continue
                frontier.append(pid)
    return found


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_address)
    # /proc/net/tcp*: each 32-bit word in the machine's (little-endian) order
    return ipaddress.ip_address(b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4)))


def listening(pids: list[int]) -> dict[str, int]:
    """Listening TCP sockets of ``pids``: "address:port" → pid."""
    sockets = {}
    for table in (PROC / "net" / "tcp", PROC / "net" / "tcp6"):
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                address, port = fields[1].split(":")
                sockets[fields[9]] = f"{_address(address)}:{int(port, 16)}"
    found = {}
    for pid in pids:
        try:
            links = [os.readlink(fd) for fd in (PROC / str(pid) / "fd").iterdir()]
        except OSError:
            continue
        for link in links:
            inode = link.removeprefix("socket:[").removesuffix("]")
            if inode in sockets:
                found[sockets[inode]] = pid
    return found


def is_loopback(endpoint: str) -> bool:
    ip = ipaddress.ip_address(endpoint.rsplit(":", 1)[0])
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


# ----- the reaper -------------------------------------------------------------------------------------------

def holder(folder: Path) -> subprocess.Popen:
    """A process holding a file open under ``folder``, as Ray's agents hold their logs."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "agent.out", "w") as log:
        return subprocess.Popen(["sleep", "120"], stdout=log, stderr=subprocess.STDOUT)


def ended(process: subprocess.Popen, within: float = 10.0) -> bool:
    try:
        process.wait(within)
    except subprocess.TimeoutExpired:
        process.kill()
        return False
    return True


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_dead_owners_temp_dir_is_reaped_at_the_next_start(tmp_path):
    stale, live = tmp_path / str(dead_pid()), tmp_path / str(os.getpid())
    orphan, kept = holder(stale), holder(live)
    try:
        reap_stale(tmp_path)
        assert ended(orphan) and not stale.exists()
        assert kept.poll() is None and live.exists()  # its owner runs: not touched
    finally:
        kept.kill()
        kept.wait()


def test_the_watch_reaps_when_its_owner_is_killed(tmp_path):
    folder = tmp_path / "ray"
    owner = subprocess.Popen([sys.executable, "-P", "-c", (
        "import sys, time; from pathlib import Path; from callscope.ray_reaper import Watch; "
        "Watch(Path(sys.argv[1])); print('watching', flush=True); time.sleep(120)"), str(folder)],
        stdout=subprocess.PIPE, text=True)
    orphan = holder(folder)
    try:
        assert owner.stdout.readline().strip() == "watching"
        owner.kill()
        owner.wait()
        assert ended(orphan) and not folder.exists()
    finally:
        owner.kill()
        orphan.kill()


def test_stopping_the_watch_reaps_at_once_and_spares_its_owner(tmp_path):
    folder = tmp_path / "ray"
    orphan = holder(folder)
    owner = subprocess.run([sys.executable, "-P", "-c", (
        "import sys; from pathlib import Path; from callscope.ray_reaper import Watch; "
        "watch = Watch(Path(sys.argv[1])); log = open(Path(sys.argv[1]) / 'driver.log', 'w'); watch.stop(); "
        "print('alive')"), str(folder)], capture_output=True, text=True, timeout=60)
    assert owner.stdout.strip() == "alive", owner  # its own driver log there did not make it a victim
    assert ended(orphan, within=0) and not folder.exists()


# ----- callscope serve ----------------------------------------------------------------------------------------

def ray_processes(server: LiveServer) -> dict[int, str]:
    """The server's processes once its Ray is up: raylet, both agents and a worker."""
    deadline = time.monotonic() + RAY_STARTED_WITHIN_S
    while time.monotonic() < deadline:
        found = descendants(server.process.pid)
        lines = " | ".join(found.values())
        workers = [c for c in found.values() if c.startswith("ray::") and "Agent" not in c]
        if "raylet" in lines and "ray::DashboardAgent" in lines and "ray::RuntimeEnvAgent" in lines and workers:
            return found
        time.sleep(0.5)
    raise AssertionError(f"Ray did not start in {RAY_STARTED_WITHIN_S} s: {descendants(server.process.pid)}")


@pytest.fixture
def servers() -> Iterator[list[LiveServer]]:
    started: list[LiveServer] = []
    yield started
    for server in started:
        server.stop()


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
@pytest.mark.timeout(300)
def test_serve_runs_ray_on_loopback_and_a_kill_9_leaves_no_orphans(tmp_path, servers):
    data = tmp_path / "data"
    settings = {"llm_enabled": "false", "ray_num_cpus": "1", "ray_object_store_mb": "128"}
    servers.append(start_server(data, **settings))
    first = servers[0]
    processes = ray_processes(first)
    sockets = listening([first.process.pid, *processes])
    assert sockets and [s for s in sockets if not is_loopback(s)] == [], {
        s: processes.get(pid, "callscope serve") for s, pid in sockets.items()}

    before = {pid: start_time(pid) for pid in processes}
    first.process.kill()  # SIGKILL: no shutdown, no atexit
    first.process.wait()
    servers.append(start_server(data, **settings))
    ray_processes(servers[1])
    left = {pid: cmd for pid, cmd in processes.items() if start_time(pid) == before[pid]}
    assert left == {}
    assert not (temp_root() / str(first.process.pid)).exists()

    second = servers[1]
    processes = ray_processes(second)
    second.stop()
    assert second.process.returncode == 0  # a clean stop: Ray shut down, the watch spared the server
    assert [pid for pid in processes if start_time(pid) is not None] == []
    assert not (temp_root() / str(second.process.pid)).exists()
