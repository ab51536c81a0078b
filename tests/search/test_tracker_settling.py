"""The tracker pass's settling against a call stamped meanwhile (PostgreSQL, whose transactions run side by side;
SQLite runs one writer at a time): a project is never noted as settled while a call of it keeps other trackers'
matches."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy.orm import Session

from callscope.catalog import tracker_stamps, trackers
from callscope.catalog.tables import Analysis
from tests.queue.rows import T0, add_recording

pytestmark = pytest.mark.postgres


@pytest.fixture
def postgres_catalog(catalog):
    if catalog.dialect != "postgresql":
        pytest.skip("SQLite runs one writer at a time")
    return catalog


def analysed(catalog) -> int:
    rid = add_recording(catalog, status="completed", job=False)
    with catalog.session() as session:
        session.add(Analysis(recording_id=rid, version=1, transcript_key=f"t-{rid}", results="{}", completed_at=T0))
    return rid


def test_a_call_stamped_while_its_project_settles_keeps_it_unsettled(postgres_catalog) -> None:
    catalog = postgres_catalog
    rid = analysed(catalog)
    settling: list[bool] = []
    with Session(catalog.engine) as analysis:  # a call analysed against the old trackers, not yet committed
        trackers.record_call(analysis, rid, "acme", 1, [], "old", 0.5)
        # the pass, done with its batches, settles the project at the new trackers meanwhile
        pass_ = threading.Thread(target=lambda: settling.append(catalog.change(tracker_stamps.settle, "acme", 1,
                                                                                "new")))
        pass_.start()
        pass_.join(timeout=1)
        assert pass_.is_alive(), "settling waits for the call being stamped"
        analysis.commit()
    pass_.join(timeout=10)
    assert settling == [False]
    with catalog.session() as session:
        assert tracker_stamps.settled(session) == {}
        assert tracker_stamps.stale(session, "acme", 1, "new", None, 10) == [(T0, rid)]


def test_a_call_stamped_after_its_project_settled_unsettles_it(postgres_catalog) -> None:
    catalog = postgres_catalog
    rid = analysed(catalog)
    assert catalog.change(tracker_stamps.settle, "acme", 1, None)  # no tracker yet: nothing to match
    catalog.change(trackers.record_call, rid, "acme", 1, [], "old", 0.5)
    with catalog.session() as session:
        assert tracker_stamps.settled(session) == {}
