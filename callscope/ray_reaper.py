"""Ending what a local Ray leaves behind when the process that started it is killed.

``reap(folder)`` kills the processes with a file open under a local Ray's temp dir (Linux: it reads /proc) and
removes the dir. ``Watch(folder)`` starts a child process (``python -m callscope.ray_reaper FOLDER OWNER_PID``) that
reaps the moment the owner exits, however it exits; ``reap_stale(root)`` reaps, at the next start, the dirs of
owners that are gone. Why it is needed: docs/operations.md.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

PROC = Path("/proc")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holders(folder: Path) -> list[int]:
    """Processes (this user's: others' fds are unreadable) other than this one with a file open under ``folder``."""
    inside = f"{folder.resolve()}/"
    found = []
    for proc in PROC.glob("[0-9]*") if PROC.is_dir() else ():
        if int(proc.name) == os.getpid():
            continue
        try:
            if any(os.readlink(fd).startswith(inside) for fd in (proc / "fd").iterdir()):
                found.append(int(proc.name))
        except OSError:  # ended meanwhile, or another user's
            continue
    return found


def reap(folder: Path, owner: int | None = None) -> None:
    """Kill the processes holding files under ``folder``, a Ray temp dir, then remove it. The ``owner`` that
    started the Ray is spared: after a clean shutdown it is alive and may still hold its driver's log there."""
    for pid in set(holders(folder)) - {owner}:
        try:
            os.kill(pid, signal.SIGKILL)  # they hang on a dead GCS: nothing gentler ends them
        except ProcessLookupError:
            continue
    shutil.rmtree(folder, ignore_errors=True)


def reap_stale(root: Path) -> None:
    """Reap the temp dirs under ``root`` of local Rays whose owner is gone (killed without a chance to clean up)."""
    if not root.is_dir():
        return
    for child in root.iterdir():
        if child.name.isdigit() and not _alive(int(child.name)):
            reap(child)


class Watch:
    """This module in a child process, reaping ``folder`` when this process ends or calls ``stop()``."""

    def __init__(self, folder: Path):
        # -P: the repository's top-level operator/ must not shadow the standard library's (see the Makefile)
        self.process = subprocess.Popen([sys.executable, "-P", "-m", __name__, str(folder), str(os.getpid())],
                                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)

    def stop(self, timeout: float = 30.0) -> None:
        """Reap now (the Ray was shut down) and wait until that is done: a later Ray may reuse the folder."""
        self.process.stdin.close()
        self.process.wait(timeout)


def main(folder: str, owner: str) -> None:
    sys.stdin.buffer.read()  # returns at end of file: the owner is gone, or stopped the watch
    reap(Path(folder), int(owner))


if __name__ == "__main__":
    main(*sys.argv[1:])
