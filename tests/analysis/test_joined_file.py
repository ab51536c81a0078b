"""analysis.joined_file: a model file shipped in parts is joined once into the cache, checked, never half-written."""

from __future__ import annotations

import hashlib

import pytest

from callscope.analysis.models.joined_file import JoinedFile


@pytest.fixture
def parts(tmp_path, monkeypatch):
    """Three parts over the 4 MiB copy chunk, the file they join to, and the cache in tmp_path."""
    chunks = [bytes([n]) * (5_000_000 + n) for n in range(1, 4)]
    paths = []
    for n, chunk in enumerate(chunks, start=1):
        path = tmp_path / "site" / f"part{n:02d}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(chunk)
        paths.append(path)
    monkeypatch.setenv("CALLSCOPE_MODEL_CACHE", str(tmp_path / "cache"))
    joined = b"".join(chunks)
    spec = JoinedFile("models/joined.bin", len(joined), hashlib.sha256(joined).hexdigest(), "reinstall the parts")
    return spec, paths, joined


def test_the_parts_are_joined_once(parts, tmp_path, monkeypatch):
    spec, paths, joined = parts
    path = spec.join_once(paths)
    assert path == tmp_path / "cache" / "models" / "joined.bin" == spec.path
    assert path.read_bytes() == joined and spec.verified()
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".part")] == []

    def no_second_join(*args):
        raise AssertionError("joined again")

    monkeypatch.setattr(JoinedFile, "_assemble", no_second_join)
    assert spec.join_once(paths) == path  # the marker says it is checked: no re-hash, no re-join

    path.write_bytes(joined[:-1] + b"\0")  # changed after the check (size+mtime differ): joined again
    assert not spec.verified()
    with pytest.raises(AssertionError, match="joined again"):
        spec.join_once(paths)


def test_parts_that_do_not_join_to_the_file_are_refused(parts, tmp_path):
    spec, paths, _ = parts
    paths[1].write_bytes(b"\2" * 10)
    with pytest.raises(FileNotFoundError, match=r"expected .* bytes, sha256 .*: reinstall the parts"):
        spec.join_once(paths)
    left = [p.name for p in spec.path.parent.iterdir() if not p.name.endswith(".lock")]
    assert left == []  # nothing half-written is left to be found
