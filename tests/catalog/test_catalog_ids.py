"""allocate_id: unique, increasing, never reused, across threads and processes, per kind."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ThreadPoolExecutor

from callscope.catalog.db import Catalog
from callscope.catalog.ids import allocate_id


def test_first_ids_count_up_from_one(catalog: Catalog) -> None:
    assert [catalog.change(allocate_id, "project") for _ in range(3)] == [1, 2, 3]


def test_kinds_have_separate_sequences(catalog: Catalog) -> None:
    assert catalog.change(allocate_id, "project") == 1
    assert catalog.change(allocate_id, "project") == 2
    assert catalog.change(allocate_id, "tag") == 1
    assert catalog.change(allocate_id, "virtual_number") == 1
    assert catalog.change(allocate_id, "project") == 3


async def test_async_allocation(catalog: Catalog) -> None:
    assert [await catalog.write(allocate_id, "operator") for _ in range(2)] == [1, 2]


def test_unique_and_increasing_under_8_threads(catalog: Catalog) -> None:
    def worker(_: int) -> list[int]:
        return [catalog.change(allocate_id, "project") for _ in range(50)]

    with ThreadPoolExecutor(8) as pool:
        per_thread = list(pool.map(worker, range(8)))
    for ids in per_thread:
        assert ids == sorted(ids) and len(set(ids)) == len(ids)  # increasing within each caller
    all_ids = [i for ids in per_thread for i in ids]
    assert sorted(all_ids) == list(range(1, 401))  # no duplicates, no gaps
    assert catalog.change(allocate_id, "project") == 401


def _allocate_in_process(url: str, n: int, barrier, results) -> None:  # multiprocessing objects
    cat = Catalog(url)
    try:
        barrier.wait(timeout=60)  # start both processes' loops together
        results.put([cat.change(allocate_id, "project") for _ in range(n)])
    finally:
        cat.dispose()


def test_unique_and_increasing_under_2_processes(catalog: Catalog, catalog_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_allocate_in_process, args=(catalog_url, 100, barrier, results)) for _ in range(2)]
    for p in procs:
        p.start()
    per_process = [results.get(timeout=90) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    for ids in per_process:
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert sorted(per_process[0] + per_process[1]) == list(range(1, 201))
    assert catalog.change(allocate_id, "project") == 201
