"""scripts/model_parts.py: a file cut into parts is joined back only when every part is there and the whole checks."""

from __future__ import annotations

import json

import pytest

from scripts.model_parts import join, main, parse_size, split


@pytest.fixture
def model(tmp_path):
    """A 2.5 MiB file of varied bytes: three parts of 1 MiB, the last one half full."""
    path = tmp_path / "model.bin"
    path.write_bytes(bytes(range(256)) * (10 * 1024))
    return path


def test_split_then_join_gives_the_same_file(model, tmp_path):
    manifest = json.loads(split(model, tmp_path / "parts", parse_size("1M")).read_text())
    assert [p["size"] for p in manifest["parts"]] == [1 << 20, 1 << 20, 1 << 19]
    assert main(["join", str(tmp_path / "parts"), str(tmp_path / "there" / "model.bin")]) == 0
    assert (tmp_path / "there" / "model.bin").read_bytes() == model.read_bytes()


def test_a_missing_part_is_named_and_nothing_is_written(model, tmp_path, capsys):
    split(model, tmp_path / "parts", parse_size("1M"))
    (tmp_path / "parts" / "model.bin.part002").unlink()
    assert main(["join", str(tmp_path / "parts"), str(tmp_path / "model-joined.bin")]) == 1
    assert "model.bin.part002 (missing)" in capsys.readouterr().err
    assert not (tmp_path / "model-joined.bin").exists()


def test_a_damaged_part_fails_the_checksum_and_leaves_nothing(model, tmp_path):
    split(model, tmp_path / "parts", parse_size("1M"))
    part = tmp_path / "parts" / "model.bin.part003"
    part.write_bytes(b"\0" * part.stat().st_size)  # the right size, the wrong bytes
    with pytest.raises(FileNotFoundError, match=r"sha256 .*carry the parts of model\.bin again"):
        join(tmp_path / "parts", tmp_path / "out" / "model.bin")
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize(("text", "size"), [("20M", 20 << 20), ("512K", 512 << 10), ("1G", 1 << 30),
                                             ("60MiB", 60 << 20), ("1000", 1000)])
def test_sizes(text, size):
    assert parse_size(text) == size
