"""Cut a large file (a model, a wheel) into parts small enough to carry, and join them back, checked.

A machine lent for a GPU run (benchmarks/gpu.py) reaches no registry or model hub and takes at most 64 MiB per
call, the working tree included (42 MiB of it today: `git ls-files -z | du -ch --files0-from=- | tail -1`): a
larger file goes over in parts, one or a few per call, and is joined there.

* `split FILE OUTDIR --size 20M` writes FILE's parts (NAME.part001, ...) and NAME.parts.json (the whole file's
  name, size and sha256; each part's name and size) into OUTDIR;
* `join OUTDIR FILE` checks that every part of the manifest in OUTDIR (the one named after FILE, or the only one)
  is there with its size (a part still to be carried is named), then joins them with
  analysis/models/joined_file.join_parts: FILE appears only once its size and sha256 are the manifest's.

How to run (repository root)::

    .venv/bin/python -P scripts/model_parts.py split ~/.cache/callscope/models/whisper-base/model.bin /tmp/parts
    python3 -P scripts/model_parts.py join /root/parts /root/models/whisper-base/model.bin
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

from callscope.analysis.models.joined_file import join_parts

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_BLOCK = 1 << 20  # copied (and hashed) 1 MiB at a time: bounded memory whatever the part size


def parse_size(text: str) -> int:
    """Bytes of "20M", "512K", "1G" or a plain number (binary units: 20M = 20 MiB)."""
    match = re.fullmatch(r"(\d+)([KMG]?)I?B?", text.strip().upper())
    if not match or int(match.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size such as 20M")
    return int(match.group(1)) * _UNITS[match.group(2)]


def split(file: Path, outdir: Path, part_size: int) -> Path:
    """FILE cut into parts of at most `part_size` bytes in `outdir`, and their manifest; its path."""
    outdir.mkdir(parents=True, exist_ok=True)
    total, digest, parts = file.stat().st_size, hashlib.sha256(), []
    with file.open("rb") as src:
        for number, start in enumerate(range(0, total, part_size), start=1):
            part, size = outdir / f"{file.name}.part{number:03d}", min(part_size, total - start)
            with part.open("wb") as out:
                left = size
                while left:
                    block = src.read(min(_BLOCK, left))
                    if not block:
                        raise ValueError(f"{file} shrank while it was split")
                    digest.update(block)
                    out.write(block)
                    left -= len(block)
            parts.append({"name": part.name, "size": size})
    manifest = outdir / f"{file.name}.parts.json"
    manifest.write_text(json.dumps({"name": file.name, "size": total, "sha256": digest.hexdigest(),
                                    "parts": parts}, indent=1))
    return manifest


def join(outdir: Path, target: Path) -> None:
    """The file whose parts and manifest are in `outdir` (the manifest named after `target`, or the only one),
    joined into `target` and checked: ValueError when a part is missing or of another size, FileNotFoundError
    when the whole is not the manifest's file."""
    named = outdir / f"{target.name}.parts.json"
    manifests = [named] if named.is_file() else sorted(outdir.glob("*.parts.json"))
    if len(manifests) != 1:
        raise ValueError(f"{outdir} holds {len(manifests)} manifests (*.parts.json) and none named {named.name}")
    manifest = json.loads(manifests[0].read_text())
    paths = [outdir / p["name"] for p in manifest["parts"]]
    wrong = [f"{path.name} ({'missing' if not path.is_file() else 'another size'})"
             for path, p in zip(paths, manifest["parts"], strict=True)
             if not path.is_file() or path.stat().st_size != p["size"]]
    if wrong:
        raise ValueError(f"parts of {manifest['name']} not there yet: {', '.join(wrong)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    join_parts(paths, target, manifest["size"], manifest["sha256"], f"carry the parts of {manifest['name']} again")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cut = commands.add_parser("split", help="cut FILE into parts with a manifest in OUTDIR")
    cut.add_argument("file", type=Path)
    cut.add_argument("outdir", type=Path)
    cut.add_argument("--size", type=parse_size, default=parse_size("20M"),
                     help="largest part (default 20M: what the 64 MiB of a call leaves beside the tree)")
    glue = commands.add_parser("join", help="join the parts in OUTDIR into FILE, checked against the manifest")
    glue.add_argument("outdir", type=Path)
    glue.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "split":
            manifest = split(args.file, args.outdir, args.size)
            print(f"{len(json.loads(manifest.read_text())['parts'])} part(s) and {manifest.name} in {args.outdir}")
        else:
            join(args.outdir, args.file)
            print(f"joined and checked: {args.file}")
    except (OSError, ValueError) as exc:  # FileNotFoundError is an OSError: a refused join
        print(f"model_parts: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
