"""The settings table (docs/configuration.md) and the README's quick start stay true to the code."""

from __future__ import annotations

import re
from pathlib import Path

from callscope.config import Settings

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text()


def test_every_setting_is_documented_in_the_settings_table():
    documented = set(re.findall(r"`(CALLSCOPE_[A-Z0-9_]+)`", CONFIGURATION))
    missing = {f"CALLSCOPE_{name.upper()}" for name in Settings.model_fields} - documented
    assert not missing, f"settings missing from docs/configuration.md's table: {sorted(missing)}"


def test_quick_start_is_two_make_commands_and_ci_runs_the_test_one():
    block = README.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make serve", "make test"]
    ci = (Path(__file__).parent.parent / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M)


def test_the_first_calls_files_ship_with_the_repository():
    """Every file of the repository the README's first call names is there (a newcomer has no `call.mp3`), and the
    sample recording's licence is beside it."""
    first_call = README.split("## A first call, end to end", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"\bexamples/[\w./-]+\w", first_call))
    assert "examples/call.flac" in named
    assert [path for path in sorted(named) if not (ROOT / path).is_file()] == []
    assert "MIT License" in (ROOT / "examples" / "NOTICE").read_text()
