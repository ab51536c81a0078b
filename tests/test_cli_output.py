"""What a `callscope` command prints, run as a user runs it (the installed entry point, in a folder of its own): the
result alone on stdout and nothing on stderr, unless `--verbose`; the data directory found from a folder below it,
as `make serve` made it; and, where there is none, a new one named on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CALLSCOPE = Path(sys.executable).parent / "callscope"

pytestmark = pytest.mark.skipif(not CALLSCOPE.exists(), reason="the callscope entry point is not installed")


def callscope(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALLSCOPE_")}
    done = subprocess.run([str(CALLSCOPE), *args], cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def test_a_command_prints_its_result_alone_and_finds_the_data_directory_above(tmp_path: Path) -> None:
    project = tmp_path / "site"
    project.mkdir()
    (project / ".callscope").mkdir(mode=0o700)  # as `make serve` leaves it
    below = project / "calls" / "today"
    below.mkdir(parents=True)

    created = callscope(below, "keys", "create", "--name", "ops", "--permissions", "read")
    assert created.stderr == ""  # no migration lines, no log lines
    assert created.stdout.startswith("created key ops in account default (read)")
    listed = callscope(project, "keys", "list")
    assert listed.stderr == "" and "ops" in listed.stdout  # the same store, read from the folder above
    assert not (below / ".callscope").exists()

    verbose = callscope(project, "--verbose", "keys", "list")
    assert '"event": "runtime_started"' in verbose.stderr and str(project / ".callscope") in verbose.stderr


def test_without_a_data_directory_above_a_command_says_where_it_made_one(tmp_path: Path) -> None:
    done = callscope(tmp_path, "keys", "list")
    assert done.stderr.strip() == (f"callscope: no .callscope data directory here or above: using a new one, "
                                   f"{tmp_path / '.callscope'} (CALLSCOPE_DATA_DIR names another)")
    assert (tmp_path / ".callscope").is_dir()
    assert callscope(tmp_path, "keys", "list").stderr == ""  # found the next time
