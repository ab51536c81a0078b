"""The previous release's code, for tests/upgrade: PREVIOUS_RELEASE names it (a release tag from now on; the commit
before the upgrade test was written while there was none). `python3 tests/upgrade/previous.py` (CI, .ci/run) or the
test itself extracts it once with `git archive` into build/previous-release/<name>/tree and lays it out as the
installed package is (api/, operator/, workers/, analysis/ as callscope.api, .operator, .workers, .analysis) in
build/previous-release/<name>/site: with that folder first on PYTHONPATH, the venv's Python runs the old code with
the venv's libraries. Standard library only: CI runs it before the venv exists."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RELEASE_FILE = Path(__file__).resolve().parent / "PREVIOUS_RELEASE"
PACKAGE_DIRS = ("callscope", "api", "operator", "workers", "analysis")
MAPPED = ("api", "operator", "workers", "analysis")  # [tool.setuptools.package-dir] of pyproject.toml


def release() -> str:
    return RELEASE_FILE.read_text().split()[0]


def prepare() -> Path:
    """The site folder of the previous release (made once)."""
    name = release()
    folder = ROOT / "build" / "previous-release" / name[:40].replace("/", "_")
    site = folder / "site"
    if (site / "callscope" / "__init__.py").exists():
        return site
    shutil.rmtree(folder, ignore_errors=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", name, *PACKAGE_DIRS],
                             capture_output=True, timeout=120)
    if archive.returncode != 0:
        raise RuntimeError(f"git archive {name} failed ({archive.stderr.decode().strip()}); a shallow clone lacks "
                           f"it: git fetch origin {name}")
    tree = folder / "tree"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        try:
            tar.extractall(tree, filter="data")
        except TypeError:  # a Python before 3.11.4: git's own archive of this repository, trusted
            tar.extractall(tree)
    package = site / "callscope"
    package.mkdir(parents=True)
    for entry in (tree / "callscope").iterdir():
        (package / entry.name).symlink_to(entry)
    for mapped in MAPPED:
        (package / mapped).symlink_to(tree / mapped)
    return site


if __name__ == "__main__":
    sys.stdout.write(f"{prepare()}\n")
