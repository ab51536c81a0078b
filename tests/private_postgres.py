"""A PostgreSQL server of a test's own (initdb, pg_ctl), which the test may stop and restart at will: the shared
server of CALLSCOPE_TEST_POSTGRES_URL serves other tests and must never go down.

PostgreSQL refuses to run as root, so as root its programs run as the `postgres` user (runuser) in a folder of its
own under the system's temporary directory (pytest's tmp_path is closed to other users). It listens on 127.0.0.1 and
a free port, its socket in that folder; trust authentication, fsync off (the WAL still outlives a killed server).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.live import free_port

_BINARIES = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))


def unavailable_reason() -> str | None:
    """Why a private server cannot run here, or None when it can."""
    if not _BINARIES:
        return "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin"
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            return "running as root without runuser: PostgreSQL will not run as root"
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root without a postgres user: PostgreSQL will not run as root"
    return None


class PrivatePostgres:
    """`start()` a fresh cluster; `restart()`, `stop()`, `start()` it again; `remove()` it with its files."""

    def __init__(self) -> None:
        self.bin = Path(_BINARIES[-1])
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="callscope-pg-"))
        self.data = self.folder / "data"
        self._as_owner: list[str] = []
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
            self._as_owner = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, program: str, *args: str) -> None:
        subprocess.run([*self._as_owner, str(self.bin / program), *args], check=True, capture_output=True,
                       timeout=60, cwd=self.folder)

    def _pg_ctl(self, *args: str) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "server.log"), "-w", "-t", "30", *args)

    def start(self) -> None:
        self._pg_ctl("-o", f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off", "start")

    def restart(self, mode: str = "fast") -> None:
        self._pg_ctl("-m", mode, "restart")  # the options of the last start stay (postmaster.opts)

    def stop(self, mode: str = "fast") -> None:
        self._pg_ctl("-m", mode, "stop")

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)
