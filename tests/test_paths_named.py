"""Every path of the repository that its text names exists: the README, docs/, benchmarks/RESULTS.md, docstrings
and comments say `analysis/stages/asr.py` or `docs/operations.md`, and a move or a rename that leaves one behind
fails here. Nothing names a place outside the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).parent.parent
TOP = ("analysis", "api", "benchmarks", "callscope", "crds", "docs", "examples", "kustomize", "manifests",
       "operator", "scripts", "tests", "workers")
# a repository path: a top-level folder, then names; a file ends in an extension, a folder in "/"
NAMED = re.compile(rf"(?<![\w/.~$-])((?:{'|'.join(TOP)})/(?:[\w./-]*[\w/])?)")
TEXT = (".md", ".py", ".toml", ".yaml", ".yml", ".cfg", ".txt", ".sh", "")
FILES = {".py", ".md", ".toml", ".yaml", ".yml", ".json", ".onnx", ".txt", ".sh", ".html", ".css", ".js", ".cfg",
         ".wav", ".mp3", ".flac", ".ini", ".mako", ".tsv", ".csv", ".npy", ".Dockerfile"}


def tracked() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / name for name in names.split() if Path(name).suffix in TEXT and (ROOT / name).is_file()]


def named_paths(text: str) -> set[str]:
    """The files (with their extension) and folders (ending in "/") named; `analysis/stages/fields.extract_fields`
    names a function of analysis/stages/fields.py."""
    found = set()
    for match in NAMED.finditer(text):
        path = match.group(1).rstrip(".")
        name = Path(path).name
        if path.endswith("/") or Path(path).suffix in FILES:
            found.add(path)
        elif "." in name:
            found.add(str(Path(path).parent / f"{name.partition('.')[0]}.py"))
    return found


def test_every_repository_path_named_in_the_text_exists():
    missing = []
    for file in tracked():
        text = file.read_text(errors="replace")
        missing += [f"{file.relative_to(ROOT)}: {path}" for path in sorted(named_paths(text))
                    if not any(ch in path for ch in "*{<") and not (ROOT / path).exists()]
    assert missing == []


def test_nothing_points_outside_the_repository():
    outside = [str(file.relative_to(ROOT)) for file in tracked() if file != Path(__file__)
               and "../shared" in file.read_text(errors="replace")]
    assert outside == []


def test_the_path_finder_finds_files_and_folders_only():
    text = ("see analysis/stages/asr.py, docs/, tests/analysis/ and analysis/stages/fields.extract_fields but not "
            "analysis/stages or x/analysis/y.py")
    assert named_paths(text) == {"analysis/stages/asr.py", "docs/", "tests/analysis/", "analysis/stages/fields.py"}
