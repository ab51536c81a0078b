"""The cluster shape on one machine, as the Kubernetes manifests lay it out, to try before the real one.

    .venv/bin/python -P scripts/cluster.py up [--workers 2] [--replicas 2]    # or: make cluster-up
    .venv/bin/python -P scripts/cluster.py status
    .venv/bin/python -P scripts/cluster.py down                               # or: make cluster-down

What runs, each a process group of its own under one folder (CALLSCOPE_CLUSTER_DIR, default
/tmp/cs-cluster-<uid>: Ray's socket paths must stay under 107 bytes):

* a Ray head (``ray start --head --num-cpus 0``: it schedules, runs no work) with the Ray client server on a port,
  as KubeRay's head service offers it on 10001;
* ``--workers`` Ray worker nodes (``ray start --address``), each with ``--cpus`` CPUs and the custom resource
  ``callscope-worker`` that every analysis task and model actor asks for (CALLSCOPE_RAY_WORKER_RESOURCE), so the
  work lands on workers and never on the head;
* S3: moto's server (a real S3 protocol endpoint; a dev dependency) with a bucket ``callscope``;
* the catalog: a database ``callscope_cluster`` on the PostgreSQL at CALLSCOPE_CLUSTER_POSTGRES (default
  postgresql+psycopg://postgres@127.0.0.1:5432), dropped and created anew by ``up``;
* rate limits in Redis (CALLSCOPE_CLUSTER_REDIS, default redis://127.0.0.1:6379/5);
* ``--replicas`` ``callscope serve`` API replicas on consecutive ports from ``--port`` (8080), each with its
  dispatcher joining the Ray cluster through ``CALLSCOPE_RAY_ADDRESS=ray://127.0.0.1:<client port>``, the form the
  manifests use. They share the data directory (the configuration store of the custom resources, SQLite, which
  the Kopf controller replaces in a cluster; each replica's embedded reconcilers play its part).

``up`` writes ``cluster.env``: ``set -a; . /tmp/cs-cluster-<uid>/cluster.env`` points the ``callscope`` CLI (keys,
members, apply) at the cluster; and ``prometheus.yml``, what the manifests' monitors scrape, laid out for this
machine (every replica's /metrics) with the PrometheusRule's rules (``rules.yml``): ``prometheus
--config.file=/tmp/cs-cluster-<uid>/prometheus.yml`` (Debian's package) shows the dashboard's queries on this
cluster. ``down`` ends every process group and removes the folder. Tests and benchmarks use
``LocalCluster`` directly, to kill one piece and watch the rest.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

BIN = Path(sys.executable).parent
WORKER_RESOURCE = "callscope-worker"
BUCKET = "callscope"
DATABASE = "callscope_cluster"
LOOPBACK = "127.0.0.1"


def default_dir() -> Path:
    return Path(os.environ.get("CALLSCOPE_CLUSTER_DIR") or f"/tmp/cs-cluster-{os.getuid()}")


@dataclass
class Piece:
    """One process group of the cluster: its leader's pid and its log."""

    name: str
    pid: int
    log: str

    def alive(self) -> bool:
        """Its leader has not exited (an exited child of ours is reaped here: a zombie would still take signals)."""
        try:
            if os.waitpid(self.pid, os.WNOHANG)[0] == self.pid:
                return False
        except ChildProcessError:
            pass  # not our child (started by another `up`): its group is the answer
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(Path(self.log).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def signal(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM (``ray start --block`` then ends its node's processes; serve drains), SIGKILL after ``grace``."""
        self.signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while self.alive() and time.monotonic() < deadline:
            _reap(self.pid)
            time.sleep(0.2)
        self.signal(signal.SIGKILL)
        _reap(self.pid)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not our child (started by another `up`)


@dataclass
class Ports:
    gcs: int = 26380
    client: int = 20002
    s3: int = 29000
    api: int = 8080  # the first replica's; the others follow. 0: each replica a free port of its own


@dataclass
class LocalCluster:
    root: Path = field(default_factory=default_dir)
    ports: Ports = field(default_factory=Ports)
    cpus_per_worker: int = 2  # the transcription actor reserves 1, each analysis task 0.5 (CALLSCOPE_RAY_*_NUM_CPUS)
    postgres: str = field(default_factory=lambda: os.environ.get(
        "CALLSCOPE_CLUSTER_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432"))
    redis: str = field(default_factory=lambda: os.environ.get("CALLSCOPE_CLUSTER_REDIS", "redis://127.0.0.1:6379/5"))
    database: str = DATABASE
    ray: bool = True  # False: the replicas start their own local Ray (the embedded shape, a benchmark's baseline)
    settings: dict[str, str] = field(default_factory=dict)  # more CALLSCOPE_* settings of the replicas
    ray_token: str = field(default_factory=lambda: secrets.token_hex(32))  # Ray's token authentication, as in a cluster
    pieces: dict[str, Piece] = field(default_factory=dict)
    replica_ports: dict[int, int] = field(default_factory=dict)  # the port each replica serves on, once started

    # ----- layout ------------------------------------------------------------------------------------------

    @property
    def ray_address(self) -> str:
        return f"ray://{LOOPBACK}:{self.ports.client}"

    @property
    def catalog_url(self) -> str:
        return f"{self.postgres}/{self.database}"

    def ray_env(self) -> dict[str, str]:
        """Ray's token authentication, explicitly on (its default depends on a ~/.ray/auth_token file)."""
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.ray_token}

    def env(self) -> dict[str, str]:
        """The settings every replica (and the CLI) shares."""
        return {
            **self.ray_env(),
            "CALLSCOPE_DATA_DIR": str(self.root / "data"),
            "CALLSCOPE_DATABASE_URL": self.catalog_url,
            "CALLSCOPE_BLOB_STORE": "s3", "CALLSCOPE_S3_BUCKET": BUCKET,
            "CALLSCOPE_S3_ENDPOINT_URL": f"http://{LOOPBACK}:{self.ports.s3}", "CALLSCOPE_S3_REGION": "us-east-1",
            "CALLSCOPE_S3_ACCESS_KEY_ID": "cluster", "CALLSCOPE_S3_SECRET_ACCESS_KEY": "cluster",
            "CALLSCOPE_RATE_LIMIT_BACKEND": "redis", "CALLSCOPE_REDIS_URL": self.redis,
            **({"CALLSCOPE_RAY_ADDRESS": self.ray_address, "CALLSCOPE_RAY_WORKER_RESOURCE": WORKER_RESOURCE}
               if self.ray else {}),
            **{f"CALLSCOPE_{k.upper()}": v for k, v in self.settings.items()},
        }

    def api_url(self, replica: int) -> str:
        return f"http://{LOOPBACK}:{self.replica_ports[replica]}"

    def _replica_port(self, index: int) -> int:
        """Fixed for the replica's life (a restarted replica serves where it did). Where ports.api is 0, a free one
        each: Ray's nodes take ephemeral ports of their own, so the neighbour of a free port may be taken."""
        if index not in self.replica_ports:
            self.replica_ports[index] = self.ports.api + index if self.ports.api else _free_port()
        return self.replica_ports[index]

    # ----- pieces ------------------------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Piece:
        log = self.root / "logs" / f"{name}.log"
        with log.open("ab") as out:  # the child keeps its own descriptor
            process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                       env={**os.environ, **(env or {})}, cwd=self.root)
        piece = Piece(name, process.pid, str(log))
        self.pieces[name] = piece
        self.save()
        return piece

    def _ray(self, name: str, *args: str, env: dict[str, str] | None = None) -> Piece:
        temp = self.root / name  # a temp dir per node: a lost node's files go with it
        temp.mkdir(exist_ok=True)
        return self._spawn(name, [str(BIN / "ray"), "start", "--block", "--disable-usage-stats",
                                  "--node-ip-address", LOOPBACK, "--temp-dir", str(temp), *args],
                           {**self.ray_env(), **(env or {})})

    def start_head(self) -> None:
        _wait_port_free(self.ports.gcs)  # a head killed a moment ago may still hold it
        self._ray("ray-head", "--head", "--num-cpus", "0", "--port", str(self.ports.gcs),
                  "--ray-client-server-port", str(self.ports.client), "--include-dashboard", "false",
                  # the client server starts a Python process per client, which a busy laptop may take more than
                  # Ray's 30 s to import
                  env={"RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S": "120"})
        _wait_port(self.ports.client, "the Ray head's client server", self.pieces["ray-head"])

    def add_worker(self, index: int) -> None:
        self._ray(f"ray-worker-{index}", "--address", f"{LOOPBACK}:{self.ports.gcs}",
                  "--num-cpus", str(self.cpus_per_worker), "--resources", json.dumps({WORKER_RESOURCE: 1000}))

    def start_s3(self) -> None:
        piece = self._spawn("s3", [str(BIN / "moto_server"), "-H", LOOPBACK, "-p", str(self.ports.s3)])
        _wait_port(self.ports.s3, "moto's S3 server", piece)
        import boto3  # with the project (the blob store's client)

        boto3.client("s3", endpoint_url=f"http://{LOOPBACK}:{self.ports.s3}", region_name="us-east-1",
                     aws_access_key_id="cluster", aws_secret_access_key="cluster").create_bucket(Bucket=BUCKET)

    def fresh_database(self) -> None:
        from sqlalchemy import create_engine, text

        engine = create_engine(f"{self.postgres}/postgres", isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)'))
            connection.execute(text(f'CREATE DATABASE "{self.database}"'))
        engine.dispose()

    def start_replica(self, index: int) -> None:
        port = self._replica_port(index)
        _wait_port_free(port)  # a replica killed a moment ago may still hold it
        if _listening(port):  # another process's health answers would pass for the replica's
            raise RuntimeError(f"replica {index}: port {port} is taken by another process")
        piece = self._spawn(f"api-{index}", [str(BIN / "callscope"), "serve", "--host", LOOPBACK, "--port", str(port)],
                            self.env())
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if not piece.alive():
                raise RuntimeError(f"replica {index} exited; the end of {piece.log}:\n{piece.tail()}")
            try:
                if httpx.get(f"{self.api_url(index)}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"replica {index} did not become healthy in 90 s; the end of {piece.log}:\n{piece.tail()}")

    def up(self, workers: int, replicas: int) -> None:
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        (self.root / "data").mkdir(mode=0o700, exist_ok=True)
        self.fresh_database()
        self.start_s3()
        self.start_head()
        for i in range(1, workers + 1):
            self.add_worker(i)
        # the first replica migrates the catalog before the others open it
        for i in range(replicas):
            self.start_replica(i)
        (self.root / "cluster.env").write_text("".join(f"{k}={v}\n" for k, v in self.env().items()))
        self.write_prometheus_config()

    def write_prometheus_config(self, interval: str = "15s") -> Path:
        """prometheus.yml (and rules.yml beside it): every replica scraped as the ServiceMonitor scrapes the API
        Service's pods, under the job name it gives them, with the PrometheusRule's groups as a rule file."""
        import yaml  # with the project (its YAML resources)

        monitoring = Path(__file__).resolve().parent.parent / "manifests" / "monitoring"
        rule = yaml.safe_load((monitoring / "prometheusrule.yaml").read_text())
        (self.root / "rules.yml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False))
        targets = [f"{LOOPBACK}:{port}" for _, port in sorted(self.replica_ports.items())]
        config = {"global": {"scrape_interval": interval, "evaluation_interval": interval},
                  "rule_files": [str(self.root / "rules.yml")],
                  "scrape_configs": [{"job_name": "callscope-api", "metrics_path": "/metrics",
                                      "static_configs": [{"targets": targets}]}]}
        path = self.root / "prometheus.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def down(self) -> None:
        for name in sorted(self.pieces, key=_stop_order):
            self.pieces[name].stop()
        self.pieces.clear()

    def restart_ray(self, workers: int) -> None:
        """The Ray head and its workers anew, as KubeRay restarts them after the head is lost (without GCS fault
        tolerance a worker's raylet cannot outlive its head, and `ray start --head` refuses to start beside one)."""
        for name in [n for n in self.pieces if n.startswith("ray-")]:
            self.pieces.pop(name).stop()
        self.start_head()
        for i in range(1, workers + 1):
            self.add_worker(i)

    def raylet_pid(self, worker: int) -> int:
        """The raylet of a worker node: killing it loses the node, as a lost Kubernetes pod does."""
        group = self.pieces[f"ray-worker-{worker}"].pid
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                if os.getpgid(int(proc.name)) == group and (proc / "comm").read_text().strip() == "raylet":
                    return int(proc.name)
            except (OSError, ValueError):
                continue
        raise LookupError(f"no raylet in ray-worker-{worker}")

    # ----- state between `up` and `down` ------------------------------------------------------------------

    def save(self) -> None:
        state = {"ports": asdict(self.ports), "ray_token": self.ray_token, "replica_ports": self.replica_ports,
                 "pieces": {k: asdict(v) for k, v in self.pieces.items()}}
        (self.root / "state.json").write_text(json.dumps(state, indent=1))

    @classmethod
    def load(cls, root: Path) -> LocalCluster:
        state = json.loads((root / "state.json").read_text())
        return cls(root=root, ports=Ports(**state["ports"]), ray_token=state["ray_token"],
                   replica_ports={int(k): v for k, v in state.get("replica_ports", {}).items()},
                   pieces={k: Piece(**v) for k, v in state["pieces"].items()})


def _stop_order(name: str) -> tuple[int, str]:
    """Replicas first (their dispatchers leave Ray cleanly), then workers, the head, S3."""
    return ({"api": 0, "ray-worker": 1, "ray-head": 2}.get(name.rsplit("-", 1)[0], 3), name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex((LOOPBACK, port)) == 0


def _wait_port_free(port: int, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while _listening(port) and time.monotonic() < deadline:
        time.sleep(0.2)


def _wait_port(port: int, what: str, piece: Piece, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not piece.alive():
            raise RuntimeError(f"{what} exited; the end of {piece.log}:\n{piece.tail()}")
        if _listening(port):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on {port} in {within:.0f} s; see {piece.log}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument("--dir", type=Path, default=default_dir(), help="the cluster's folder")
    parser.add_argument("--workers", type=int, default=2, help="Ray worker nodes")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of each Ray worker node")
    parser.add_argument("--replicas", type=int, default=2, help="`callscope serve` API replicas")
    parser.add_argument("--port", type=int, default=8080, help="port of the first replica; the others follow")
    args = parser.parse_args()
    if args.command == "up":
        if (args.dir / "state.json").exists():
            print(f"a cluster is up in {args.dir}: `scripts/cluster.py down` first", file=sys.stderr)
            return 1
        cluster = LocalCluster(root=args.dir, ports=Ports(api=args.port), cpus_per_worker=args.cpus)
        try:
            cluster.up(args.workers, args.replicas)
        except BaseException:
            cluster.down()
            raise
        for i in range(args.replicas):
            print(f"replica {i}: {cluster.api_url(i)}")
        print(f"Ray: {cluster.ray_address}; logs: {args.dir / 'logs'}")
        print(f"the CLI: set -a; . {args.dir / 'cluster.env'}; set +a; callscope keys create --name me")
        return 0
    if not (args.dir / "state.json").exists():
        print(f"no cluster in {args.dir}", file=sys.stderr)
        return 0 if args.command == "down" else 1
    cluster = LocalCluster.load(args.dir)
    if args.command == "status":
        for name, piece in sorted(cluster.pieces.items(), key=lambda kv: _stop_order(kv[0])):
            print(f"{name:14} pid {piece.pid:<8} {'up' if piece.alive() else 'DOWN'}  {piece.log}")
        return 0
    cluster.down()
    import shutil

    shutil.rmtree(args.dir, ignore_errors=True)
    print(f"cluster in {args.dir} is down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
