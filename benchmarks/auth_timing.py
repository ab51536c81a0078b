"""Time of refused API keys: an unknown key beside known but revoked or expired ones, and a valid key.

What it measures
----------------
An embedded runtime (SQLite store, the cache that `callscope serve` reads through) in a temporary data directory,
with three keys made through the key service: one valid, one revoked, one expired; the unknown key is a fresh,
well-formed key never stored. The script authenticates each ``--rounds`` times with
``callscope.services.keys.authenticate`` (what the API middleware calls on every request), the four kinds
interleaved round by round in a random order so that drift (frequency scaling, other load) hits them alike, after
``--warmup``
unmeasured rounds. It prints the median, p90 and mean per kind in milliseconds, and the unknown key's median
beside the known refused ones': the ratio should be about 1, or the answer's time tells whether a key exists.

How to run
----------
From the repository root::

    .venv/bin/python -P benchmarks/auth_timing.py
    .venv/bin/python -P benchmarks/auth_timing.py --rounds 20000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from callscope import logs
from callscope.config import Settings
from callscope.errors import Unauthorized
from callscope.runtime import opened
from callscope.services import keys


async def timings(data_dir: Path, rounds: int, warmup: int) -> dict[str, list[float]]:
    settings = Settings(data_dir=data_dir, log_level="WARNING")
    logs.configure(settings)
    async with opened(settings) as rt:
        _, valid = await keys.create_key(rt.ctx, "default", "valid", ["read"])
        _, revoked = await keys.create_key(rt.ctx, "default", "revoked", ["read"])
        await keys.revoke_key(rt.ctx, "default", "revoked")
        _, expired = await keys.create_key(rt.ctx, "default", "expired", ["read"],
                                           expires_at=datetime.now(UTC) - timedelta(seconds=1))
        headers = {kind: f"Bearer {key}" for kind, key in (
            ("unknown", keys.generate_key(settings.api_key_prefix)), ("revoked", revoked), ("expired", expired),
            ("valid", valid))}
        spent: dict[str, list[float]] = {kind: [] for kind in headers}
        order = list(headers)
        for i in range(warmup + rounds):
            random.shuffle(order)  # no kind always follows the same one
            for kind in order:
                header = headers[kind]
                start = time.perf_counter()
                try:
                    await keys.authenticate(rt.ctx, header)
                except Unauthorized:
                    if kind == "valid":
                        raise
                if i >= warmup:
                    spent[kind].append((time.perf_counter() - start) * 1000)
        return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5000, help="measured authentications per kind of key")
    parser.add_argument("--warmup", type=int, default=500, help="unmeasured rounds first")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"{args.rounds} rounds after {args.warmup} warm-up")
    with tempfile.TemporaryDirectory(prefix="callscope-auth-") as tmp:
        spent = asyncio.run(timings(Path(tmp) / "data", args.rounds, args.warmup))
    print(f"{'key':<8} {'median ms':>10} {'p90 ms':>8} {'mean ms':>8}")
    for kind, values in spent.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"{kind:<8} {statistics.median(values):10.4f} {p90:8.4f} {statistics.fmean(values):8.4f}")
    unknown = statistics.median(spent["unknown"])
    known = statistics.median(spent["revoked"] + spent["expired"])
    print(f"\nrefused: unknown {unknown:.4f} ms | known (revoked, expired) {known:.4f} ms | "
          f"ratio {unknown / known:.2f}")


if __name__ == "__main__":
    sys.exit(main())
