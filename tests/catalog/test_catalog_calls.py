"""Call records: per-number statistics in one query, recent calls newest first, per account."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from sqlalchemy import event

from callscope.catalog.calls import (
    delete_calls_of_numbers,
    dial_order,
    finish_call,
    next_attempt,
    number_stats,
    recent_calls,
    start_call,
)
from callscope.catalog.db import Catalog
from callscope.catalog.tables import Call

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def add_calls(catalog: Catalog, account: str, number_id: int, statuses: list[str], durations: list[int] | None = None,
              start: datetime = T0) -> None:
    durations = durations or [0] * len(statuses)
    with catalog.session() as s:
        for i, (status, duration) in enumerate(zip(statuses, durations, strict=True)):
            s.add(Call(
                account=account, virtual_number_id=number_id,
                phone_number="+14155550100", caller_name=f"Caller {i}", call_status=status,
                call_duration=duration, direction="inbound", ai_handled=i % 2 == 0,
                transcript_summary=None if i % 3 else f"summary {i}", created_at=start + timedelta(minutes=i),
            ))


def test_number_stats_counts_answered_missed_and_average(catalog: Catalog) -> None:
    add_calls(catalog, "acme", 1, ["completed", "answered", "missed", "no-answer", "busy", "failed", "canceled",
                                   "in-progress"], [60, 31, 0, 0, 0, 0, 0, 5])
    stats = catalog.query(number_stats, "acme", [1])[1]
    assert stats.total_calls == 8
    assert stats.answered_calls == 2
    assert stats.missed_calls == 5
    assert stats.average_duration_seconds == 46  # (60 + 31) / 2 = 45.5, rounded; other statuses ignored


def test_number_stats_zero_for_numbers_without_calls_or_answers(catalog: Catalog) -> None:
    add_calls(catalog, "acme", 2, ["missed"])
    stats = catalog.query(number_stats, "acme", [2, 3])
    assert stats[2].model_dump() == {"total_calls": 1, "answered_calls": 0, "missed_calls": 1,
                                     "average_duration_seconds": 0}
    assert stats[3].model_dump() == {"total_calls": 0, "answered_calls": 0, "missed_calls": 0,
                                     "average_duration_seconds": 0}


def test_number_stats_is_one_query_for_many_numbers(catalog: Catalog) -> None:
    for nid in range(1, 6):
        add_calls(catalog, "acme", nid, ["completed"] * nid, [10] * nid)
    statements: list[str] = []
    listener = lambda *args: statements.append(args[2])  # noqa: E731 - before_cursor_execute(conn, cur, stmt, ...)
    event.listen(catalog.engine, "before_cursor_execute", listener)
    try:
        stats = catalog.query(number_stats, "acme", [1, 2, 3, 4, 5])
    finally:
        event.remove(catalog.engine, "before_cursor_execute", listener)
    assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) == 1
    assert {nid: st.total_calls for nid, st in stats.items()} == {1: 1, 2: 2, 3: 3, 4: 4, 5: 5}


def test_other_accounts_are_invisible(catalog: Catalog) -> None:
    add_calls(catalog, "acme", 1, ["completed"], [10])
    add_calls(catalog, "other", 1, ["completed", "missed"], [99, 0])
    assert catalog.query(number_stats, "acme", [1])[1].total_calls == 1
    assert len(catalog.query(recent_calls, "acme", 1)) == 1
    assert catalog.query(recent_calls, "nobody", 1) == []


def test_recent_calls_newest_first_limited_to_10(catalog: Catalog) -> None:
    add_calls(catalog, "acme", 7, ["completed"] * 15, list(range(15)))
    calls = catalog.query(recent_calls, "acme", 7)
    assert len(calls) == 10
    assert [c.created_at for c in calls] == [T0 + timedelta(minutes=i) for i in range(14, 4, -1)]
    newest = calls[0]
    assert newest.created_at.tzinfo is not None
    assert (newest.call_duration, newest.caller_name, newest.direction, newest.ai_handled) == (14, "Caller 14",
                                                                                               "inbound", True)
    assert len(catalog.query(recent_calls, "acme", 7, limit=3)) == 3


def test_delete_calls_of_numbers(catalog: Catalog) -> None:
    add_calls(catalog, "acme", 1, ["completed"] * 2)
    add_calls(catalog, "acme", 2, ["completed"])
    add_calls(catalog, "other", 1, ["completed"])
    assert catalog.change(delete_calls_of_numbers, "acme", [1]) == 2
    assert catalog.query(number_stats, "acme", [1, 2])[1].total_calls == 0
    assert catalog.query(number_stats, "acme", [2])[2].total_calls == 1
    assert catalog.query(number_stats, "other", [1])[1].total_calls == 1


def _ringing(account: str, number_id: int, call_id: str) -> Call:
    return Call(account=account, virtual_number_id=number_id, phone_number="+14155550100", caller_name="",
                call_status="ringing", call_duration=0, direction="inbound", ai_handled=False, created_at=T0,
                provider_call_id=call_id)


def test_round_robin_cursor_is_shared_by_concurrent_writers(catalog: Catalog) -> None:
    """Several API replicas (threads with their own connections here) starting calls on one number at once: each
    call starts with the next operator, so each operator comes first equally often, and a replayed call id moves
    nothing."""
    rounds = [[(1, "+14155550101")], [(2, "+14155550102")], [(3, "+14155550103")]]

    def start(i: int) -> int:
        call, created = catalog.change(start_call, _ringing("acme", 7, f"CA{i}"), rounds, True)
        assert created
        return dial_order(call)[0][0][0]

    with ThreadPoolExecutor(max_workers=6) as pool:
        firsts = list(pool.map(start, range(12)))
    assert sorted(firsts) == [1] * 4 + [2] * 4 + [3] * 4
    again, created = catalog.change(start_call, _ringing("acme", 7, "CA0"), rounds, True)
    assert not created and again.provider_call_id == "CA0"
    other, _ = catalog.change(start_call, _ringing("other", 7, "CA0"), rounds, True)  # another account's cursor
    assert dial_order(other)[0][0][0] == 1


def test_a_call_moves_through_its_rounds_once(catalog: Catalog) -> None:
    rounds = [[(1, "+14155550101")], [(2, "+14155550102")]]
    call, _ = catalog.change(start_call, _ringing("acme", 8, "CA1"), rounds, False)
    assert catalog.change(next_attempt, call.id, 0).dial_attempt == 1
    assert catalog.change(next_attempt, call.id, 0) is None  # a replayed callback
    assert catalog.change(finish_call, call.id, "completed", 30, 2)
    assert not catalog.change(finish_call, call.id, "missed")  # ended already
    assert catalog.change(next_attempt, call.id, 1) is None
    [record] = catalog.query(recent_calls, "acme", 8)
    assert (record.call_status, record.call_duration) == ("completed", 30)
