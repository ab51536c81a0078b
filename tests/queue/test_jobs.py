"""The job queue on SQLite and PostgreSQL: claim, lease, heartbeat, reclaim, retries with backoff, the recording
status machine, and racing dispatchers that never process a job twice."""

from __future__ import annotations

import random
import threading
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from callscope.catalog import jobs
from callscope.catalog.db import Catalog
from callscope.catalog.jobs import RetryPolicy
from callscope.catalog.tables import Job
from tests.queue.rows import T0, add_recording, job_of, recording

LEASE = 30.0
MAX = 3


def claim(catalog, owner: str = "a", n: int = 10, now=T0):
    return catalog.change(jobs.claim, n, owner, LEASE, now, MAX)


def test_claim_leases_due_jobs_and_moves_the_recording_to_processing(catalog: Catalog) -> None:
    rid = add_recording(catalog)
    later = add_recording(catalog, now=T0 + timedelta(minutes=5))  # not yet available

    [claimed] = claim(catalog)

    assert (claimed.recording_id, claimed.kind, claimed.attempts, claimed.owner) == (rid, "analyze", 1, "a")
    job = job_of(catalog, rid)
    assert (job.state, job.lease_owner, job.lease_expires_at) == ("running", "a", T0 + timedelta(seconds=LEASE))
    assert (recording(catalog, rid).status, recording(catalog, rid).stage) == ("processing", "queued")
    assert recording(catalog, later).status == "pending"
    assert claim(catalog, "b") == []  # leased: nobody else gets it


def test_claim_takes_no_more_than_the_free_slots(catalog: Catalog) -> None:
    for _ in range(5):
        add_recording(catalog)
    assert len(claim(catalog, n=2)) == 2
    assert len(claim(catalog, n=0)) == 0
    assert len(claim(catalog, n=10)) == 3


def test_heartbeat_extends_only_the_owners_lease(catalog: Catalog) -> None:
    rid = add_recording(catalog)
    [claimed] = claim(catalog)
    assert catalog.change(jobs.heartbeat, claimed.id, "a", LEASE, T0 + timedelta(seconds=20))
    assert job_of(catalog, rid).lease_expires_at == T0 + timedelta(seconds=20 + LEASE)
    assert not catalog.change(jobs.heartbeat, claimed.id, "intruder", LEASE, T0 + timedelta(seconds=21))
    # still leased at the old expiry: the heartbeat counted
    assert claim(catalog, "b", now=T0 + timedelta(seconds=LEASE + 1)) == []


def test_an_expired_lease_is_reclaimed_and_the_old_owner_can_no_longer_write(catalog: Catalog) -> None:
    rid = add_recording(catalog)
    [first] = claim(catalog, "a")
    after = T0 + timedelta(seconds=LEASE + 1)

    [second] = claim(catalog, "b", now=after)

    assert (second.id, second.attempts, second.owner) == (first.id, 2, "b")
    assert recording(catalog, rid).status == "processing"
    assert not catalog.change(jobs.heartbeat, first.id, "a", LEASE, after)
    assert not catalog.change(jobs.report_progress, first, "asr", 50, after)
    with catalog.session(write=True) as session:
        assert not jobs.finish(session, first, "done", after)
    assert catalog.change(jobs.report_progress, second, "asr", 40, after)
    assert (recording(catalog, rid).stage, recording(catalog, rid).progress) == ("asr", 40)


def test_retry_puts_the_job_back_after_its_backoff(catalog: Catalog) -> None:
    rid = add_recording(catalog)
    [claimed] = claim(catalog)
    assert catalog.change(jobs.retry_later, claimed, "worker died", 12.0, T0)
    job = job_of(catalog, rid)
    assert (job.state, job.lease_owner, job.last_error, job.attempts) == ("queued", None, "worker died", 1)
    assert recording(catalog, rid).status == "processing"  # still on its way; no step back to pending
    assert claim(catalog, now=T0 + timedelta(seconds=11)) == []
    [again] = claim(catalog, now=T0 + timedelta(seconds=12))
    assert again.attempts == 2


def test_a_job_out_of_attempts_is_not_reclaimed_but_reported_exhausted(catalog: Catalog) -> None:
    add_recording(catalog)
    t = T0
    for attempt in range(1, MAX + 1):
        [claimed] = claim(catalog, f"d{attempt}", now=t)
        assert claimed.attempts == attempt
        t += timedelta(seconds=LEASE + 1)  # each owner dies without a word
    assert claim(catalog, "late", now=t) == []
    [dead] = catalog.query(jobs.exhausted, t, MAX)
    assert (dead.id, dead.owner, dead.attempts) == (claimed.id, f"d{MAX}", MAX)


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    policy = RetryPolicy(max_attempts=5, base_seconds=10, max_seconds=60)
    rng = random.Random(1)
    delays = [[policy.delay(n, rng) for _ in range(200)] for n in (1, 2, 3, 4)]
    assert all(5 <= d <= 15 for d in delays[0])
    assert all(10 <= d <= 30 for d in delays[1])
    assert all(30 <= d <= 90 for d in delays[3])  # capped at 60 before jitter
    assert len({round(d, 6) for d in delays[0]}) > 100  # jittered, not one value


def test_one_active_job_per_recording(catalog: Catalog) -> None:
    rid = add_recording(catalog, status="completed", job=False)
    with catalog.session(write=True) as session:
        assert jobs.enqueue(session, rid, jobs.REANALYZE, T0)
        assert not jobs.enqueue(session, rid, jobs.REANALYZE, T0)  # already queued: no second job
    assert catalog.change(jobs.enqueue_many, [rid], jobs.REANALYZE, T0) == []


def test_reanalysis_is_only_queued_for_finished_recordings_and_keeps_the_status(catalog: Catalog) -> None:
    pending = add_recording(catalog)
    done = add_recording(catalog, status="completed", job=False)
    failed = add_recording(catalog, status="failed", job=False)
    assert catalog.change(jobs.enqueue_many, [pending, done, failed], jobs.REANALYZE, T0) == [done, failed]
    claimed = {c.recording_id: c for c in claim(catalog)}
    assert claimed[done].kind == claimed[failed].kind == "reanalyze"
    assert (recording(catalog, done).status, recording(catalog, done).stage) == ("completed", "reanalyzing")
    assert recording(catalog, failed).status == "failed"


@pytest.mark.parametrize(("kind", "status", "target"), [
    ("analyze", "completed", "completed"),   # completed twice
    ("analyze", "pending", "completed"),     # skipping processing
    ("analyze", "failed", "processing"),     # backwards
    ("reanalyze", "processing", "completed"),
])
def test_illegal_status_transitions_are_rejected(catalog: Catalog, kind: str, status: str, target: str) -> None:
    rid = add_recording(catalog, status=status, job=False)
    with pytest.raises(jobs.IllegalTransition), catalog.session(write=True) as session:
        jobs.move_recording(session, rid, kind, {"status": target})
    assert recording(catalog, rid).status == status


def test_a_claim_whose_recording_cannot_start_fails_the_job_instead(catalog: Catalog) -> None:
    rid = add_recording(catalog, status="completed")  # an analyze job for a completed recording
    assert claim(catalog) == []
    job = job_of(catalog, rid)
    assert job.state == "failed" and "cannot be analyzed" in job.last_error
    assert recording(catalog, rid).status == "completed"


def test_racing_dispatchers_never_claim_a_job_twice(catalog_url: str) -> None:
    setup = Catalog(catalog_url)
    setup.migrate()
    ids = [add_recording(setup) for _ in range(40)]
    catalogs = [Catalog(catalog_url) for _ in range(4)]  # as four processes would have
    got: dict[str, list[int]] = {}
    barrier = threading.Barrier(len(catalogs))

    def dispatcher(index: int) -> None:
        owner = f"dispatcher-{index}"
        got[owner] = []
        barrier.wait()
        while batch := catalogs[index].change(jobs.claim, 3, owner, LEASE, T0, MAX):
            got[owner] += [c.recording_id for c in batch]

    threads = [threading.Thread(target=dispatcher, args=(i,)) for i in range(len(catalogs))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        claimed = [rid for batch in got.values() for rid in batch]
        assert sorted(claimed) == sorted(ids)  # every job once, none twice
        with setup.session() as session:
            owners = dict(session.execute(select(Job.recording_id, Job.lease_owner)).all())
        assert all(rid in got[owners[rid]] for rid in ids)
    finally:
        for cat in [setup, *catalogs]:
            cat.dispose()


def test_a_done_job_is_never_claimed_again(catalog: Catalog) -> None:
    rid = add_recording(catalog)
    [claimed] = claim(catalog)
    with catalog.session(write=True) as session:
        assert jobs.finish(session, claimed, "done", T0)
        session.execute(update(Job).where(Job.id == claimed.id).values(lease_expires_at=T0))
    assert claim(catalog, now=T0 + timedelta(hours=1)) == []
    assert job_of(catalog, rid).finished_at == T0
