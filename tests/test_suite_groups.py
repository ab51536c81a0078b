"""The suite's parallel layout holds: tests marked `xdist_group(NAME)` run on one worker (tests/conftest.py builds
its two chains on that), checked on a throwaway suite run on two real pytest-xdist workers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SUITE = r'''
import os, time, pytest

@pytest.mark.xdist_group("chain")
@pytest.mark.parametrize("i", range(4))
def test_chained(i):
    time.sleep(0.2)
    with open("chain.txt", "a") as seen:
        seen.write(os.environ["PYTEST_XDIST_WORKER"] + "\n")

@pytest.mark.parametrize("i", range(4))
def test_free(i):
    time.sleep(0.2)
'''


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_layout.py").write_text(SUITE)
    run = subprocess.run([sys.executable, "-P", "-m", "pytest", "-n", "2", "--dist", "loadgroup",
                          "--no-loadscope-reorder", "-q", "-p", "no:cacheprovider", "test_layout.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    workers = (tmp_path / "chain.txt").read_text().split()
    assert len(workers) == 4 and len(set(workers)) == 1, workers
