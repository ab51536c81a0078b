"""Load benchmark of the public API's list endpoints against a real `callscope serve`.

What it measures
----------------
The script starts the embedded server (`callscope serve`, uvicorn + Falcon ASGI) on a free port of
127.0.0.1 with a fresh temporary data directory, creates an API key with the CLI, then creates
``--objects`` projects and ``--objects`` operators through the REST API. For each of

* ``GET /api/v1/public/projects``
* ``GET /api/v1/public/operators``

it sends ``--warmup`` unmeasured requests, then ``--requests`` measured requests from
``--concurrency`` concurrent workers sharing one ``httpx.AsyncClient`` (keep-alive connections,
one per worker). Every response must be 200 and list exactly ``--objects`` items. It reports per
endpoint: throughput (requests/s over the measured phase), latency percentiles (p50/p90/p99/max,
measured from sending the request to having read the whole body, before the client parses it), the
response body size, and the CPU time the server and the load generator spent per request. It also
reports the server's peak resident memory (VmHWM of /proc/<pid>/status) and the machine.

The load generator runs on the same machine as the server and competes with it for CPU, so compare
numbers only between runs on the same machine; the client CPU column shows how much of it the
generator itself used (it parses every JSON response to count the items).

How to run
----------
From the repository root::

    .venv/bin/python benchmarks/api_load.py
    .venv/bin/python benchmarks/api_load.py --objects 5000 --requests 500 --concurrency 8 --keep

The server inherits the environment, except CALLSCOPE_DATA_DIR (the temporary directory),
CALLSCOPE_LOG_LEVEL (WARNING) and CALLSCOPE_RATE_LIMIT_ENABLED (false); set CALLSCOPE_DATABASE_URL to
benchmark another catalog database (the default is a SQLite file in the data directory). The
server's output goes to ``server.log`` in the temporary directory; ``--keep`` keeps that directory.
Linux only (reads /proc).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import httpx

API = "/api/v1/public"
ENDPOINTS = ("/projects", "/operators")
STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
LIST_SETTLE_TIMEOUT_S = 30.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class BenchmarkError(RuntimeError):
    """The server misbehaved (bad status, wrong item count, crash) or could not be started."""


@dataclass(frozen=True)
class Result:
    endpoint: str
    objects: int
    requests: int
    concurrency: int
    wall_s: float
    latencies_ms: list[float]
    body_bytes: int
    server_cpu_s: float
    client_cpu_s: float

    @property
    def rps(self) -> float:
        return self.requests / self.wall_s

    def percentile(self, pct: float) -> float:
        return percentile(self.latencies_ms, pct)


def percentile(values: list[float], pct: float) -> float:
    """Linear-interpolated percentile (0-100) of values."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = (len(ordered) - 1) * pct / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


# ----- the server process ---------------------------------------------------------------------

def callscope_command() -> list[str]:
    """The `callscope` console script of the running interpreter's environment (else the one on PATH)."""
    beside = Path(sys.executable).parent / "callscope"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("callscope")
    if found is None:
        raise BenchmarkError("the callscope console script is not installed (pip install -e .)")
    return [found]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(data_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "CALLSCOPE_DATA_DIR": str(data_dir),
        "CALLSCOPE_LOG_LEVEL": "WARNING",
        "CALLSCOPE_RATE_LIMIT_ENABLED": "false",
    })
    return env


def proc_status_kib(pid: int, field: str) -> int | None:
    """A `kB` field (VmHWM, VmRSS) of /proc/<pid>/status, or None when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc/<pid>/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may contain spaces
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14, 15)


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


class Server:
    """`callscope serve` as a subprocess; its stdout and stderr go to a log file."""

    def __init__(self, data_dir: Path, log_path: Path):
        self.data_dir = data_dir
        self.log_path = log_path
        self.env = server_env(data_dir)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self._log: TextIO | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> None:
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [*callscope_command(), "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            env=self.env, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )

    def check_alive(self) -> None:
        assert self.process is not None
        code = self.process.poll()
        if code is not None:
            raise BenchmarkError(f"the server exited with code {code}; last lines of {self.log_path}:\n"
                                 f"{tail(self.log_path)}")

    async def wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        last = "no answer"
        async with httpx.AsyncClient(base_url=self.base_url, timeout=5.0) as client:
            while time.monotonic() < deadline:
                self.check_alive()
                try:
                    response = await client.get("/healthz")
                    if response.status_code == 200:
                        return
                    last = f"{response.status_code} {response.text[:200]}"
                except httpx.TransportError as exc:
                    last = repr(exc)
                await asyncio.sleep(0.1)
        raise BenchmarkError(f"/healthz not ready after {STARTUP_TIMEOUT_S:.0f} s (last: {last})")

    def create_key(self) -> str:
        done = subprocess.run(
            [*callscope_command(), "keys", "create", "--account", "default", "--name", "bench",
             "--permissions", "read,write,delete"],
            env=self.env, capture_output=True, text=True, timeout=60,
        )
        if done.returncode != 0:
            raise BenchmarkError(f"callscope keys create failed ({done.returncode}): {done.stderr.strip()}")
        lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
        if not lines:
            raise BenchmarkError("callscope keys create printed no key")
        return lines[-1]

    def stop(self) -> int | None:
        """SIGINT (uvicorn's graceful shutdown), then SIGKILL after STOP_TIMEOUT_S; returns the exit code."""
        if self.process is None:
            return None
        try:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGINT)
                try:
                    self.process.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    print(f"server did not stop in {STOP_TIMEOUT_S:.0f} s after SIGINT; killing it", file=sys.stderr)
                    self.process.kill()
                    self.process.wait()
            return self.process.returncode
        finally:
            if self._log is not None:
                self._log.close()


# ----- load -----------------------------------------------------------------------------------

class Progress:
    """A single counter line on stderr, redrawn at most ten times a second."""

    def __init__(self, label: str, total: int):
        self.label, self.total, self.done = label, total, 0
        self._drawn = 0.0

    def advance(self) -> None:
        self.done += 1
        now = time.monotonic()
        if self.done == self.total or now - self._drawn >= 0.1:
            self._drawn = now
            print(f"\r{self.label}: {self.done}/{self.total}", end="", file=sys.stderr, flush=True)
            if self.done == self.total:
                print(file=sys.stderr)


async def run_pool(count: int, concurrency: int, task: Callable[[int], Awaitable[None]]) -> None:
    """Run task(0..count-1) with `concurrency` workers; the first failure cancels the rest."""
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < count:
            index = next_index
            next_index += 1
            await task(index)

    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, count)):
            group.create_task(worker())


def make_client(server: Server, key: str, concurrency: int) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.base_url + API,
        headers={"Authorization": f"Bearer {key}"},
        limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        timeout=httpx.Timeout(120.0),
    )


def expect(response: httpx.Response, status: int, what: str) -> Any:
    if response.status_code != status:
        raise BenchmarkError(f"{what}: expected {status}, got {response.status_code}: {response.text[:500]}")
    return response.json()


async def create_objects(server: Server, key: str, objects: int, concurrency: int) -> None:
    width = len(str(objects))
    async with make_client(server, key, concurrency) as client:
        progress = Progress("creating projects", objects)

        async def project(i: int) -> None:
            response = await client.post("/projects", json={"name": f"Bench project {i:0{width}d}", "language": "en"})
            expect(response, 201, f"POST /projects #{i}")
            progress.advance()

        await run_pool(objects, concurrency, project)
        progress = Progress("creating operators", objects)

        async def operator(i: int) -> None:
            response = await client.post(
                "/operators", json={"name": f"Bench Operator {i:0{width}d}", "external_id": f"bench-{i:0{width}d}"})
            expect(response, 200, f"POST /operators #{i}")
            progress.advance()

        await run_pool(objects, concurrency, operator)


def check_list(response: httpx.Response, endpoint: str, objects: int) -> None:
    items = expect(response, 200, f"GET {endpoint}")["data"]
    if len(items) != objects:
        raise BenchmarkError(f"GET {endpoint}: expected {objects} items, got {len(items)}")


async def wait_listed(client: httpx.AsyncClient, endpoint: str, objects: int) -> None:
    """Wait until the list shows every object (the server's object cache may trail the writes)."""
    deadline = time.monotonic() + LIST_SETTLE_TIMEOUT_S
    while True:
        response = await client.get(endpoint)
        count = len(expect(response, 200, f"GET {endpoint}")["data"])
        if count == objects:
            return
        if time.monotonic() > deadline:
            raise BenchmarkError(
                f"GET {endpoint}: {count} items after {LIST_SETTLE_TIMEOUT_S:.0f} s, expected {objects}")
        await asyncio.sleep(0.1)


async def measure(server: Server, key: str, endpoint: str, args: argparse.Namespace) -> Result:
    async with make_client(server, key, args.concurrency) as client:
        await wait_listed(client, endpoint, args.objects)

        async def warm(_: int) -> None:
            check_list(await client.get(endpoint), endpoint, args.objects)

        await run_pool(args.warmup, args.concurrency, warm)

        latencies: list[float] = [0.0] * args.requests
        sizes: set[int] = set()
        progress = Progress(f"GET {endpoint}", args.requests)

        async def one(i: int) -> None:
            start = time.perf_counter()
            response = await client.get(endpoint)  # reads the whole body
            latencies[i] = (time.perf_counter() - start) * 1000
            check_list(response, endpoint, args.objects)
            sizes.add(len(response.content))
            progress.advance()

        server_cpu, client_cpu = proc_cpu_seconds(server.pid), time.process_time()
        started = time.perf_counter()
        await run_pool(args.requests, args.concurrency, one)
        wall = time.perf_counter() - started
        server_cpu, client_cpu = proc_cpu_seconds(server.pid) - server_cpu, time.process_time() - client_cpu
    return Result(endpoint=endpoint, objects=args.objects, requests=args.requests, concurrency=args.concurrency,
                  wall_s=wall, latencies_ms=latencies, body_bytes=max(sizes), server_cpu_s=server_cpu,
                  client_cpu_s=client_cpu)


# ----- report ---------------------------------------------------------------------------------

def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def report(results: list[Result], peak_rss_kib: int | None, setup_s: float) -> str:
    header = ("endpoint", "objects", "requests", "conc", "req/s", "p50 ms", "p90 ms", "p99 ms", "max ms",
              "resp KB", "srv CPU ms/req", "cli CPU ms/req")
    rows = [header] + [(
        f"GET {API}{r.endpoint}", str(r.objects), str(r.requests), str(r.concurrency), f"{r.rps:.1f}",
        f"{r.percentile(50):.1f}", f"{r.percentile(90):.1f}", f"{r.percentile(99):.1f}", f"{max(r.latencies_ms):.1f}",
        f"{r.body_bytes / 1024:.1f}", f"{r.server_cpu_s * 1000 / r.requests:.2f}",
        f"{r.client_cpu_s * 1000 / r.requests:.2f}",
    ) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    rss = f"{peak_rss_kib / 1024:.1f} MiB" if peak_rss_kib is not None else "unknown"
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines += [
        "",
        f"server peak RSS (VmHWM): {rss}",
        f"setup (start + key + create {2 * results[0].objects if results else 0} objects): {setup_s:.1f} s",
        f"machine: {os.cpu_count()} CPUs ({affinity} usable), {cpu_model()}; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; client and server on the same machine",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--objects", type=int, default=1000, help="projects and operators to create (each)")
    parser.add_argument("--requests", type=int, default=2000, help="measured requests per endpoint")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent workers (= keep-alive connections)")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured requests per endpoint before measuring")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data directory and server log")
    args = parser.parse_args(argv)
    for name in ("objects", "requests", "concurrency"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must not be negative")
    return args


async def benchmark(server: Server, args: argparse.Namespace) -> tuple[list[Result], int | None, float]:
    started = time.perf_counter()
    server.start()
    await server.wait_ready()
    key = server.create_key()
    await create_objects(server, key, args.objects, args.concurrency)
    setup = time.perf_counter() - started
    results = []
    for endpoint in ENDPOINTS:
        results.append(await measure(server, key, endpoint, args))
        server.check_alive()
    return results, proc_status_kib(server.pid, "VmHWM"), setup


def run_against(server: Server, work: Callable[[], None], cleanup: Callable[[], None]) -> int:
    """Run `work` against the server, then stop it and `cleanup` whatever happened: the exit code (0 ok,
    1 failed, 130 interrupted), with the end of the server's log on stderr when something went wrong."""
    code = 0
    try:
        work()
    except BenchmarkError as exc:
        print(f"\nbenchmark failed: {exc}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        code = 130
    finally:
        exit_code = server.stop()
        if exit_code not in (None, 0):
            print(f"server exited with code {exit_code}", file=sys.stderr)
        log = tail(server.log_path, 10) if server.log_path.exists() else ""
        if log.strip() and (code or exit_code not in (None, 0)):
            print(f"server log ({server.log_path}), last lines:\n{log}", file=sys.stderr)
        cleanup()
    return code


def keep_or_remove(workdir: Path, keep: bool) -> None:
    if keep:
        print(f"kept {workdir}", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="callscope-bench-"))
    server = Server(workdir / "data", workdir / "server.log")

    def work() -> None:
        results, peak_rss, setup = asyncio.run(benchmark(server, args))
        print(report(results, peak_rss, setup))

    return run_against(server, work, lambda: keep_or_remove(workdir, args.keep))


if __name__ == "__main__":
    sys.exit(main())
