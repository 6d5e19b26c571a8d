"""The KIP-932 share-partition state machine (``_share_partition``) and the share-group
membership (``_share_group``), driven by hand with the time passed in."""

from __future__ import annotations

import uuid

from kwire.broker._share_group import ShareCoordinator, spread_assign
from kwire.broker._share_partition import (
    ACCEPT,
    GAP,
    REJECT,
    RELEASE,
    AcquiredRange,
    RecordState,
    SharePartition,
)
from kwire.protocol import ErrorCode

T0 = 1_000_000


def fresh(**kw: int) -> SharePartition:
    sp = SharePartition(**kw)
    sp.initialize(0)
    return sp


def test_acquire_whole_batches_and_accept_moves_the_start_offset() -> None:
    sp = fresh()
    got = sp.acquire("m1", [(0, 4, False), (5, 9, False)], max_records=3, now_ms=T0)
    assert got == [AcquiredRange(0, 4, 1)]  # the limit is passed at a batch boundary
    assert sp.end_offset == 5
    # another member gets the rest, not the acquired ones
    assert sp.acquire("m2", [(0, 4, False), (5, 9, False)], 100, T0) == [AcquiredRange(5, 9, 1)]
    assert sp.acknowledge("m2", 5, 9, [ACCEPT], T0) is ErrorCode.NONE
    assert sp.start_offset == 0  # 0-4 still acquired
    assert sp.acknowledge("m1", 0, 4, [ACCEPT], T0) is ErrorCode.NONE
    assert (sp.start_offset, sp.end_offset, sp.records) == (10, 10, {})


def test_release_redelivers_with_a_higher_delivery_count_reject_never() -> None:
    sp = fresh()
    sp.acquire("m1", [(0, 2, False)], 10, T0)
    assert sp.acknowledge("m1", 0, 2, [RELEASE, REJECT, ACCEPT], T0) is ErrorCode.NONE
    assert [sp.state_of(o) for o in range(3)] == [
        RecordState.AVAILABLE,
        RecordState.ARCHIVED,
        RecordState.ACKNOWLEDGED,
    ]
    assert sp.next_fetch_offset() == 0
    assert sp.acquire("m2", [(0, 2, False)], 10, T0) == [AcquiredRange(0, 0, 2)]


def test_only_the_holder_may_acknowledge_and_a_bad_batch_changes_nothing() -> None:
    sp = fresh()
    sp.acquire("m1", [(0, 1, False)], 10, T0)
    assert sp.acknowledge("m2", 0, 1, [ACCEPT], T0) is ErrorCode.INVALID_RECORD_STATE
    assert sp.acknowledge("m1", 0, 2, [ACCEPT], T0) is ErrorCode.INVALID_RECORD_STATE
    assert sp.acknowledge("m1", 0, 1, [ACCEPT, 9], T0) is ErrorCode.INVALID_REQUEST
    assert sp.state_of(0) is RecordState.ACQUIRED
    assert sp.acknowledge("m1", 0, 1, [ACCEPT], T0) is ErrorCode.NONE
    assert sp.acknowledge("m1", 0, 0, [ACCEPT], T0) is ErrorCode.INVALID_RECORD_STATE


def test_lock_timeout_releases_and_the_delivery_limit_archives() -> None:
    sp = fresh(lock_duration_ms=100, delivery_limit=2)
    assert sp.acquire("m1", [(0, 0, False)], 10, T0) == [AcquiredRange(0, 0, 1)]
    assert not sp.expire_locks(T0 + 99)
    assert sp.expire_locks(T0 + 100)
    assert sp.acquire("m2", [(0, 0, False)], 10, T0 + 100) == [AcquiredRange(0, 0, 2)]
    assert sp.expire_locks(T0 + 200)  # the second delivery was the last
    assert (sp.start_offset, sp.records) == (1, {})


def test_control_batches_and_gaps_are_never_delivered() -> None:
    sp = fresh()
    got = sp.acquire("m1", [(0, 1, False), (2, 2, True), (7, 8, False)], 10, T0)
    assert got == [AcquiredRange(0, 1, 1), AcquiredRange(7, 8, 1)]
    assert (
        sp.acknowledge("m1", 0, 8, [ACCEPT, ACCEPT, GAP, GAP, GAP, GAP, GAP, ACCEPT, ACCEPT], T0)
        is ErrorCode.NONE
    )
    assert sp.start_offset == 9


def test_in_flight_window_is_bounded() -> None:
    sp = fresh(max_in_flight=4)
    assert sp.acquire("m1", [(0, 9, False)], 100, T0) == [AcquiredRange(0, 3, 1)]
    assert not sp.can_acquire()
    sp.acknowledge("m1", 0, 1, [ACCEPT], T0)
    assert sp.acquire("m1", [(4, 9, False)], 100, T0) == [AcquiredRange(4, 5, 1)]


def test_release_member_frees_only_its_records() -> None:
    sp = fresh()
    sp.acquire("m1", [(0, 1, False)], 1, T0)
    sp.acquire("m2", [(2, 3, False)], 1, T0)
    assert sp.release_member("m1")
    assert [sp.state_of(o) for o in range(4)] == [RecordState.AVAILABLE] * 2 + [
        RecordState.ACQUIRED
    ] * 2


def test_spread_assign_gives_every_partition_out() -> None:
    t = uuid.uuid4()
    parts = [(t, i) for i in range(3)]
    assert spread_assign(["b", "a"], parts) == {"a": {t: {0, 2}}, "b": {t: {1}}}
    many = spread_assign(["a", "b", "c", "d"], parts[:2])
    assert many == {"a": {t: {0}}, "b": {t: {1}}, "c": {t: {0}}, "d": {t: {1}}}


def test_heartbeat_join_epochs_fencing_leave_and_expiry() -> None:
    t = uuid.uuid4()
    topics = {"q": (t, 2)}
    co = ShareCoordinator({"group.share.session.timeout.ms": "1000"})
    a = co.heartbeat("g", "a", 0, None, ["q"], topics, "c", "/h", T0)
    assert (a.error, a.member_epoch, a.assignment) == (ErrorCode.NONE, 1, {t: {0, 1}})
    b = co.heartbeat("g", "b", 0, None, ["q"], topics, "c", "/h", T0)
    assert (b.member_epoch, b.assignment) == (2, {t: {1}})
    again = co.heartbeat("g", "a", 1, None, None, topics, "c", "/h", T0)
    assert (again.member_epoch, again.assignment) == (2, {t: {0}})  # the new epoch, told once
    assert co.heartbeat("g", "a", 2, None, None, topics, "c", "/h", T0).assignment is None
    fenced = co.heartbeat("g", "a", 1, None, None, topics, "c", "/h", T0)
    assert fenced.error is ErrorCode.FENCED_MEMBER_EPOCH
    left = co.heartbeat("g", "b", -1, None, None, topics, "c", "/h", T0)
    assert (left.error, left.member_epoch) == (ErrorCode.NONE, -1)
    assert co.expire(T0 + 1000, topics) == ["a"]
    assert co.groups["g"].state == "Empty"
    unknown = co.heartbeat("g", "a", 3, None, None, topics, "c", "/h", T0)
    assert unknown.error is ErrorCode.UNKNOWN_MEMBER_ID


def test_skip_to_drops_only_what_the_log_no_longer_has() -> None:
    sp = fresh()
    sp.acquire("m1", [(0, 5, False)], 100, T0)
    sp.acknowledge("m1", 4, 4, [ACCEPT], T0)
    sp.skip_to(3)  # the log start moved to 3 (retention)
    assert (sp.start_offset, sp.end_offset) == (3, 6)
    assert [sp.state_of(o) for o in range(3, 6)] == [
        RecordState.ACQUIRED,
        RecordState.ACKNOWLEDGED,
        RecordState.ACQUIRED,
    ]
    assert sp.acknowledge("m1", 3, 3, [ACCEPT], T0) is ErrorCode.NONE
    assert sp.start_offset == 5
