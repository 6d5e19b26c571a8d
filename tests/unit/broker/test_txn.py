"""The transaction coordinator through the wire, with a clock the test moves.

Every request is encoded by kwire's protocol at a version, decoded as the server decodes it,
handled, and the response encoded and decoded again, as a client would (the style of
test_data_path.py). The data partitions, ``__transaction_state`` and the ``.txnindex`` files are
real files in ``tmp_path``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from kwire._wire import java_string_hash
from kwire.broker import BrokerState, ManualClock, personality, testing
from kwire.broker._apis import implemented_versions
from kwire.broker._state import partition_for
from kwire.broker._txn import (
    TRANSACTION_TOPIC,
    TransactionState,
    coordinator_for,
)
from kwire.log import ReadCommittedFilter
from kwire.protocol import (
    ErrorCode,
    message_class,
    struct_class,
)
from kwire.records import (
    ControlRecordType,
    build_batch,
    decode_control_record,
    read_batches,
)

NOW = 1_700_000_000_000
TXN = "txn-1"
SMALL = {"transaction.state.log.num.partitions": "3"}


def make_state(path: Path, release: str = "4.3", **config: str) -> BrokerState:
    return testing.make_state(path, release=release, config={**SMALL, **config})


@pytest.fixture
def state(tmp_path: Path) -> Any:
    s = make_state(tmp_path / "data")
    s.create_topic("t", 2)
    yield s
    s.close()


def clock(state: BrokerState) -> ManualClock:
    assert isinstance(state.clock, ManualClock)
    return state.clock


def call(state: BrokerState, name: str, version: int, **fields: Any) -> Any:
    """Send one request through the wire and the handler; the decoded response."""
    return testing.call(state, name, version, **fields)


def init(state: BrokerState, txn: str = TXN, version: int = 4, **fields: Any) -> Any:
    fields.setdefault("transaction_timeout_ms", 60_000)
    return call(state, "InitProducerId", version, transactional_id=txn, **fields)


def add_partitions(
    state: BrokerState,
    pid: int,
    epoch: int,
    partitions: dict[str, list[int]],
    txn: str = TXN,
    version: int = 3,
) -> dict[tuple[str, int], int]:
    cls = message_class("AddPartitionsToTxnRequest")
    topic = struct_class(cls, "v3_and_below_topics")
    response = call(
        state,
        "AddPartitionsToTxn",
        version,
        v3_and_below_transactional_id=txn,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[topic(name=t, partitions=ps) for t, ps in partitions.items()],
    )
    return {
        (t.name, p.partition_index): p.partition_error_code
        for t in response.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


def end_txn(
    state: BrokerState, pid: int, epoch: int, commit: bool, txn: str = TXN, version: int = 3
) -> int:
    response = call(
        state,
        "EndTxn",
        version,
        transactional_id=txn,
        producer_id=pid,
        producer_epoch=epoch,
        committed=commit,
    )
    return int(response.error_code)


def end_txn_v5(
    state: BrokerState, pid: int, epoch: int, commit: bool, txn: str = TXN
) -> tuple[int, int, int]:
    """EndTxn v5: (error, producer id, producer epoch) of the answer."""
    r = call(
        state,
        "EndTxn",
        5,
        transactional_id=txn,
        producer_id=pid,
        producer_epoch=epoch,
        committed=commit,
    )
    return int(r.error_code), r.producer_id, r.producer_epoch


def set_transaction_version(state: BrokerState, level: int) -> None:
    """UpdateFeatures (a safe downgrade or an upgrade) of transaction.version."""
    cls = message_class("UpdateFeaturesRequest")
    update = struct_class(cls, "feature_updates")
    current = state.feature_level("transaction.version")
    kind = 1 if level >= current else 2
    r = call(
        state,
        "UpdateFeatures",
        1,
        timeout_ms=1000,
        feature_updates=[
            update(feature="transaction.version", max_version_level=level, upgrade_type=kind)
        ],
    )
    assert r.error_code == 0, r.error_message


def produce(
    state: BrokerState,
    pid: int,
    epoch: int,
    seq: int,
    values: list[bytes],
    partition: int = 0,
    version: int = 9,
    txn: str = TXN,
) -> Any:
    records = build_batch(
        [(None, NOW, b"k", v) for v in values],
        2,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )
    cls = message_class("ProduceRequest")
    tcls = struct_class(cls, "topic_data")
    pcls = struct_class(cls, "topic_data", "partition_data")
    response = call(
        state,
        "Produce",
        version,
        transactional_id=txn,
        acks=-1,
        timeout_ms=1000,
        topic_data=[tcls(name="t", partition_data=[pcls(index=partition, records=records)])],
    )
    return response.responses[0].partition_responses[0]


def fetch(state: BrokerState, offset: int = 0, isolation: int = 1, version: int = 12) -> Any:
    cls = message_class("FetchRequest")
    tcls = struct_class(cls, "topics")
    pcls = struct_class(cls, "topics", "partitions")
    response = call(
        state,
        "Fetch",
        version,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 24,
        isolation_level=isolation,
        session_id=0,
        session_epoch=-1,
        topics=[
            tcls(
                topic="t",
                partitions=[pcls(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)],
            )
        ],
    )
    return response.responses[0].partitions[0]


def describe(state: BrokerState, txn: str = TXN) -> Any:
    response = call(state, "DescribeTransactions", 0, transactional_ids=[txn])
    return response.transaction_states[0]


def stored(state: BrokerState, topic: str = "t", partition: int = 0) -> list[Any]:
    p = state.partition(topic, partition)
    assert p is not None
    data = p.log.read(p.log.log_start_offset, 1 << 24).read_bytes()
    return list(read_batches(data))


def begin(state: BrokerState, values: list[bytes], txn: str = TXN) -> tuple[int, int]:
    """Init, add t-0, produce ``values``: an ongoing transaction."""
    r = init(state, txn)
    assert r.error_code == 0
    pid, epoch = r.producer_id, r.producer_epoch
    assert add_partitions(state, pid, epoch, {"t": [0]}, txn) == {("t", 0): 0}
    assert produce(state, pid, epoch, 0, values).error_code == 0
    return pid, epoch


# --- InitProducerId ---------------------------------------------------------------------------


def test_init_new_id_then_re_init_bumps_the_epoch_and_fences(state: BrokerState) -> None:
    first = init(state)
    assert (first.error_code, first.producer_epoch) == (0, 0)
    assert first.producer_id >= 0
    second = init(state)
    assert (second.error_code, second.producer_id, second.producer_epoch) == (
        0,
        first.producer_id,
        1,
    )
    # The old producer is fenced: PRODUCER_FENCED from v2, INVALID_PRODUCER_EPOCH before.
    fenced = add_partitions(state, first.producer_id, 0, {"t": [0]}, version=2)
    assert fenced == {("t", 0): ErrorCode.PRODUCER_FENCED}
    old = add_partitions(state, first.producer_id, 0, {"t": [0]}, version=1)
    assert old == {("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
    assert end_txn(state, first.producer_id, 0, True, version=1) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert end_txn(state, first.producer_id, 0, True) == ErrorCode.PRODUCER_FENCED
    assert end_txn(state, first.producer_id + 1, 1, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    # Another id gets another producer id.
    other = init(state, "txn-2")
    assert other.error_code == 0 and other.producer_id != first.producer_id


def test_init_timeout_validation_and_empty_id(state: BrokerState) -> None:
    assert init(state, transaction_timeout_ms=900_001).error_code == (
        ErrorCode.INVALID_TRANSACTION_TIMEOUT
    )
    assert init(state, transaction_timeout_ms=0).error_code == (
        ErrorCode.INVALID_TRANSACTION_TIMEOUT
    )
    assert init(state, transaction_timeout_ms=900_000).error_code == 0
    assert init(state, "").error_code == ErrorCode.INVALID_REQUEST


def test_init_kip_360_expected_producer_id_and_epoch(state: BrokerState) -> None:
    first = init(state)
    pid = first.producer_id
    bumped = init(state, producer_id=pid, producer_epoch=0)
    assert (bumped.error_code, bumped.producer_id, bumped.producer_epoch) == (0, pid, 1)
    # The retry of a bump whose answer was lost gets the same epoch back (the last epoch).
    retry = init(state, producer_id=pid, producer_epoch=0)
    assert (retry.error_code, retry.producer_epoch) == (0, 1)
    # A fresh InitProducerId (no expected epoch) fences that; the old epoch is now stale.
    assert init(state).producer_epoch == 2
    stale = init(state, producer_id=pid, producer_epoch=0)
    assert stale.error_code == ErrorCode.PRODUCER_FENCED
    assert init(state, version=3, producer_id=pid, producer_epoch=0).error_code == (
        ErrorCode.INVALID_PRODUCER_EPOCH
    )
    assert init(state, producer_id=pid, producer_epoch=-1).error_code == ErrorCode.INVALID_REQUEST


def test_epoch_exhaustion_rotates_the_producer_id(state: BrokerState) -> None:
    first = init(state)
    coordinator = coordinator_for(state)
    meta = coordinator.transactions[TXN]
    coordinator.transactions[TXN] = meta.transit(producer_epoch=2**15 - 2)
    exhausted = 2**15 - 2
    rotated = init(state, producer_id=first.producer_id, producer_epoch=exhausted)
    assert rotated.error_code == 0
    assert rotated.producer_id != first.producer_id and rotated.producer_epoch == 0
    # The previous id with the exhausted epoch is still accepted (a lost answer retried).
    again = init(state, producer_id=first.producer_id, producer_epoch=exhausted)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (
        0,
        rotated.producer_id,
        0,
    )
    # Without an expected epoch (a new producer instance) the epoch is bumped as usual.
    assert init(state).producer_epoch == 1
    assert init(state, producer_id=first.producer_id, producer_epoch=exhausted).error_code == (
        ErrorCode.PRODUCER_FENCED
    )


def test_init_v6_two_phase_commit_is_refused_as_kafka_does_with_it_off(state: BrokerState) -> None:
    # The served range stops at v5 today, so the handler is called as the router would call it
    # at v6: KIP-939's enable2Pc needs transaction.two.phase.commit.enable (off here).
    from kwire.broker._context import RequestContext
    from kwire.broker._txn_apis import init_transactional_producer_id
    from kwire.protocol.messages import InitProducerIdRequest

    ctx = RequestContext(api_key=22, api_version=6, correlation_id=1, client_id="t")
    two_pc = InitProducerIdRequest(TXN, 60_000, enable2_pc=True)
    refused = init_transactional_producer_id(state, ctx, two_pc)
    assert refused.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    plain = init_transactional_producer_id(state, ctx, InitProducerIdRequest(TXN, 60_000))
    assert (plain.error_code, plain.producer_epoch) == (0, 0)


# --- AddPartitionsToTxn / EndTxn --------------------------------------------------------------


def test_add_partitions_errors(state: BrokerState) -> None:
    r = init(state)
    pid, epoch = r.producer_id, r.producer_epoch
    errors = add_partitions(state, pid, epoch, {"t": [0, 5], "nope": [0]})
    assert errors == {
        ("t", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("t", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert add_partitions(state, pid, epoch, {"t": [0]}, txn="unknown") == {
        ("t", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING
    }
    internal = add_partitions(state, pid, epoch, {TRANSACTION_TOPIC: [0]})
    assert internal == {(TRANSACTION_TOPIC, 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert describe(state).transaction_state == "Empty"
    assert add_partitions(state, pid, epoch, {"t": [0, 1]}) == {("t", 0): 0, ("t", 1): 0}
    assert describe(state).transaction_state == "Ongoing"
    assert end_txn(state, pid, epoch, True, txn="unknown") == ErrorCode.INVALID_PRODUCER_ID_MAPPING


def test_end_txn_state_rules(state: BrokerState) -> None:
    r = init(state)
    pid, epoch = r.producer_id, r.producer_epoch
    assert end_txn(state, pid, epoch, True) == ErrorCode.INVALID_TXN_STATE  # Empty
    add_partitions(state, pid, epoch, {"t": [1]})
    assert end_txn(state, pid, epoch, True) == 0
    assert end_txn(state, pid, epoch, True) == 0  # a retry of a completed commit
    assert end_txn(state, pid, epoch, False) == ErrorCode.INVALID_TXN_STATE
    # EndTxn v5 with transaction.version 2 (4.3's default): the epoch was not bumped by a v5
    # EndTxn, so this is no retry but a commit with nothing open.
    assert end_txn_v5(state, pid, epoch, True)[0] == ErrorCode.INVALID_TXN_STATE
    # With transaction.version 1 finalized, v5 has v1 semantics: a retry, the epoch kept.
    set_transaction_version(state, 1)
    assert end_txn_v5(state, pid, epoch, True) == (0, pid, epoch)


def test_commit_writes_commit_markers_and_moves_the_lso(state: BrokerState) -> None:
    pid, epoch = begin(state, [b"a", b"b", b"c"])
    open_fetch = fetch(state)
    assert (open_fetch.high_watermark, open_fetch.last_stable_offset) == (3, 0)
    assert open_fetch.records in (b"", None) or len(open_fetch.records) == 0
    described = describe(state)
    assert described.transaction_state == "Ongoing"
    assert [(t.topic, list(t.partitions)) for t in described.topics] == [("t", [0])]
    assert described.transaction_start_time_ms == NOW
    clock(state).advance(5)
    assert end_txn(state, pid, epoch, True) == 0
    done = fetch(state)
    assert (done.high_watermark, done.last_stable_offset) == (4, 4)
    batches = list(read_batches(done.records))
    assert [b.is_control for b in batches] == [False, True]
    marker = decode_control_record(next(iter(batches[1])))
    assert marker.type is ControlRecordType.COMMIT
    assert marker.value.coordinator_epoch == 0  # type: ignore[attr-defined]
    assert (batches[1].producer_id, batches[1].producer_epoch) == (pid, epoch)
    assert batches[1].is_transactional and batches[1].base_offset == 3
    assert done.aborted_transactions == []
    assert describe(state).transaction_state == "CompleteCommit"
    assert list(describe(state).topics) == []
    # Partition 1 was not in the transaction: no marker there.
    assert stored(state, "t", 1) == []


def test_end_txn_completes_after_a_partition_s_topic_was_deleted(state: BrokerState) -> None:
    """A transaction that added a partition of a topic deleted since commits: its marker is
    skipped (Kafka's TransactionMarkerChannelManager drops the markers of a partition the
    metadata no longer has) and the other partitions get theirs."""
    state.create_topic("u", 1)
    pid, epoch = begin(state, [b"a"])
    assert add_partitions(state, pid, epoch, {"u": [0]}) == {("u", 0): 0}
    state.delete_topic("t")
    assert end_txn(state, pid, epoch, True) == 0
    assert describe(state).transaction_state == "CompleteCommit"
    [marker_batch] = stored(state, "u", 0)
    assert marker_batch.is_control and marker_batch.producer_id == pid
    assert decode_control_record(next(iter(marker_batch))).type is ControlRecordType.COMMIT
    # the id goes on: the next transaction starts at once
    assert add_partitions(state, pid, epoch, {"u": [0]}) == {("u", 0): 0}


def test_abort_writes_abort_markers_txnindex_and_read_committed_hides_it(
    state: BrokerState,
) -> None:
    pid, epoch = begin(state, [b"x1", b"x2"])
    assert end_txn(state, pid, epoch, False) == 0
    # A committed transaction after it (a new transaction of the same producer).
    assert add_partitions(state, pid, epoch, {"t": [0]}) == {("t", 0): 0}
    assert produce(state, pid, epoch, 2, [b"ok"]).error_code == 0
    assert end_txn(state, pid, epoch, True) == 0
    partition = state.partition("t", 0)
    assert partition is not None
    txnindex = [f for f in os.listdir(partition.log.path) if f.endswith(".txnindex")]
    assert txnindex and os.path.getsize(os.path.join(partition.log.path, txnindex[0])) > 0
    got = fetch(state)
    # x1 x2 (0-1), ABORT (2), ok (3), COMMIT (4)
    assert (got.high_watermark, got.last_stable_offset) == (5, 5)
    assert [(a.producer_id, a.first_offset) for a in got.aborted_transactions] == [(pid, 0)]
    batches = list(read_batches(got.records))
    markers = [decode_control_record(next(iter(b))).type for b in batches if b.is_control]
    assert markers == [ControlRecordType.ABORT, ControlRecordType.COMMIT]
    # What a read_committed consumer shows: the committed record only.
    keep = ReadCommittedFilter(
        [(a.producer_id, a.first_offset, 2**63 - 1) for a in got.aborted_transactions]
    )
    visible = [bytes(r.value) for b in batches if keep.keep(b) for r in b if r.value is not None]
    assert visible == [b"ok"]
    # read_uncommitted sees everything and gets no aborted list.
    everything = fetch(state, isolation=0)
    assert everything.aborted_transactions is None
    values = [
        bytes(r.value or b"")
        for b in read_batches(everything.records)
        if not b.is_control
        for r in b
    ]
    assert values == [b"x1", b"x2", b"ok"]


def test_re_init_during_an_ongoing_transaction_aborts_it_first(state: BrokerState) -> None:
    pid, epoch = begin(state, [b"zombie"])
    assert init(state).error_code == ErrorCode.CONCURRENT_TRANSACTIONS
    # The abort is complete (markers are written synchronously), with the fenced epoch.
    batches = stored(state)
    assert batches[-1].is_control and batches[-1].producer_epoch == epoch + 1
    assert decode_control_record(next(iter(batches[-1]))).type is ControlRecordType.ABORT
    assert describe(state).transaction_state == "CompleteAbort"
    retry = init(state)
    assert (retry.error_code, retry.producer_id, retry.producer_epoch) == (0, pid, epoch + 2)
    # The zombie can neither write nor end anything.
    assert produce(state, pid, epoch, 1, [b"late"]).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert end_txn(state, pid, epoch, True) == ErrorCode.PRODUCER_FENCED
    assert fetch(state).last_stable_offset == 2


def test_timeout_aborts(state: BrokerState) -> None:
    r = init(state, transaction_timeout_ms=1000)
    pid, epoch = r.producer_id, r.producer_epoch
    add_partitions(state, pid, epoch, {"t": [0]})
    produce(state, pid, epoch, 0, [b"slow"])
    clock(state).advance(1000)
    state.run_tickers()
    assert describe(state).transaction_state == "Ongoing"  # start + timeout not passed yet
    clock(state).advance(10_000)  # the abort check runs every 10 s
    state.run_tickers()
    described = describe(state)
    assert described.transaction_state == "CompleteAbort"
    assert described.producer_epoch == epoch + 1
    got = fetch(state)
    assert got.last_stable_offset == got.high_watermark == 2
    assert [(a.producer_id, a.first_offset) for a in got.aborted_transactions] == [(pid, 0)]
    assert end_txn(state, pid, epoch, True) == ErrorCode.PRODUCER_FENCED


def test_transactional_id_expiration(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d", **{"transactional.id.expiration.ms": "5000"})
    try:
        state.create_topic("t", 1)
        assert init(state).error_code == 0
        clock(state).advance(3_600_000)
        state.run_tickers()
        assert describe(state).error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    finally:
        state.close()


def test_add_offsets_to_txn_and_the_group_coordinator_is_told(state: BrokerState) -> None:
    calls: list[tuple[int, bool]] = []

    class Group:
        def complete_txn(self, producer_id: int, commit: bool) -> None:
            calls.append((producer_id, commit))

    state.services.group = Group()
    r = init(state)
    pid, epoch = r.producer_id, r.producer_epoch
    response = call(
        state,
        "AddOffsetsToTxn",
        3,
        transactional_id=TXN,
        producer_id=pid,
        producer_epoch=epoch,
        group_id="my-group",
    )
    assert response.error_code == 0
    offsets_partition = partition_for("my-group", 50)
    assert [(t.topic, list(t.partitions)) for t in describe(state).topics] == [
        ("__consumer_offsets", [offsets_partition])
    ]
    assert end_txn(state, pid, epoch, True) == 0
    assert calls == [(pid, True)]
    fenced = call(
        state,
        "AddOffsetsToTxn",
        1,
        transactional_id=TXN,
        producer_id=pid,
        producer_epoch=epoch - 1,
        group_id="my-group",
    )
    assert fenced.error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_verify_only_batched_form(state: BrokerState) -> None:
    pid, epoch = begin(state, [b"v"])
    cls = message_class("AddPartitionsToTxnRequest")
    txn_cls = struct_class(cls, "transactions")
    topic_cls = struct_class(cls, "transactions", "topics")
    response = call(
        state,
        "AddPartitionsToTxn",
        4,
        transactions=[
            txn_cls(
                transactional_id=TXN,
                producer_id=pid,
                producer_epoch=epoch,
                verify_only=True,
                topics=[topic_cls(name="t", partitions=[0, 1])],
            ),
            txn_cls(
                transactional_id="other",
                producer_id=pid,
                producer_epoch=epoch,
                verify_only=True,
                topics=[topic_cls(name="t", partitions=[0])],
            ),
        ],
    )
    results = {
        r.transactional_id: {
            (t.name, p.partition_index): p.partition_error_code
            for t in r.topic_results
            for p in t.results_by_partition
        }
        for r in response.results_by_transaction
    }
    assert results == {
        TXN: {("t", 0): 0, ("t", 1): ErrorCode.TRANSACTION_ABORTABLE},
        "other": {("t", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING},
    }
    assert [(t.topic, list(t.partitions)) for t in describe(state).topics] == [("t", [0])]


# --- Describe / List --------------------------------------------------------------------------


def test_describe_and_list_transactions(state: BrokerState) -> None:
    pid, _ = begin(state, [b"a"])
    other = init(state, "txn-2")
    clock(state).advance(2000)
    assert describe(state, "missing").error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND

    def listed(version: int = 1, **filters: Any) -> tuple[list[tuple[str, str]], list[str]]:
        filters.setdefault("state_filters", [])
        filters.setdefault("producer_id_filters", [])
        r = call(state, "ListTransactions", version, **filters)
        assert r.error_code == 0
        return [(s.transactional_id, s.transaction_state) for s in r.transaction_states], list(
            r.unknown_state_filters
        )

    assert listed() == ([(TXN, "Ongoing"), ("txn-2", "Empty")], [])
    assert listed(state_filters=["Ongoing", "Bogus"]) == ([(TXN, "Ongoing")], ["Bogus"])
    assert listed(producer_id_filters=[other.producer_id]) == ([("txn-2", "Empty")], [])
    # Running for longer than the duration: the Ongoing one started 2 s ago; an Empty one has
    # no start time (-1), which Kafka's filter (now - start > duration) always lets through.
    assert listed(duration_filter=1000)[0] == [(TXN, "Ongoing"), ("txn-2", "Empty")]
    assert listed(duration_filter=5000)[0] == [("txn-2", "Empty")]
    assert listed(version=0)[0] == [(TXN, "Ongoing"), ("txn-2", "Empty")]
    assert listed(version=2, transactional_id_pattern="txn-[0-9]")[0] == [
        (TXN, "Ongoing"),
        ("txn-2", "Empty"),
    ]
    assert listed(version=2, transactional_id_pattern="txn-2")[0] == [("txn-2", "Empty")]
    bad = call(
        state,
        "ListTransactions",
        2,
        state_filters=[],
        producer_id_filters=[],
        transactional_id_pattern="(",
    )
    assert bad.error_code == ErrorCode.INVALID_REQUEST
    assert pid != other.producer_id


def test_describe_producers(state: BrokerState) -> None:
    pid, epoch = begin(state, [b"a", b"b"])
    cls = message_class("DescribeProducersRequest")
    topic = struct_class(cls, "topics")
    response = call(
        state,
        "DescribeProducers",
        0,
        topics=[
            topic(name="t", partition_indexes=[0, 1, 9]),
            topic(name="nope", partition_indexes=[0]),
        ],
    )
    t, nope = response.topics
    p0, p1, p9 = t.partitions
    assert [
        (p.producer_id, p.producer_epoch, p.last_sequence, p.current_txn_start_offset)
        for p in p0.active_producers
    ] == [(pid, epoch, 1, 0)]
    assert p0.active_producers[0].last_timestamp == NOW
    assert (p1.error_code, list(p1.active_producers)) == (0, [])
    assert p9.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert nope.partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# --- the transaction log ----------------------------------------------------------------------


def test_java_string_hash_and_partition() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)  # Utils.abs gives 0
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("my-txn", 50) == abs(java_string_hash("my-txn")) % 50


def test_transaction_state_topic_is_created_as_kafka_does(tmp_path: Path) -> None:
    state = BrokerState(
        tmp_path / "d",
        personality=personality("4.3", implemented_versions()),
        clock=ManualClock(NOW),
    )
    try:
        # transaction.version 1: the value is v0, Kafka 3.9's bytes (TransactionLog.valueToBytes)
        set_transaction_version(state, 1)
        assert init(state, "my-txn").error_code == 0
        topic = state.topic(TRANSACTION_TOPIC)
        assert topic is not None and topic.internal and len(topic.partitions) == 50
        assert topic.configs["cleanup.policy"] == "compact"
        assert topic.configs["segment.bytes"] == "104857600"
        index = partition_for("my-txn", 50)
        records = [r for b in stored(state, TRANSACTION_TOPIC, index) for r in b]
        assert len(records) == 1
        key, value = bytes(records[0].key), bytes(records[0].value)
        assert key[:2] == b"\x00\x00" and value[:2] == b"\x00\x00"
        decoded_key = message_class("TransactionLogKey").decode(key[2:], 0)
        assert decoded_key.transactional_id == "my-txn"
        decoded = message_class("TransactionLogValue").decode(value[2:], 0)
        assert decoded.transaction_status == TransactionState.EMPTY
        assert decoded.transaction_partitions is None  # Kafka writes null for Empty
        assert (decoded.producer_epoch, decoded.transaction_timeout_ms) == (0, 60_000)
        assert decoded.transaction_start_timestamp_ms == -1
    finally:
        state.close()


def test_every_state_change_is_logged(state: BrokerState) -> None:
    pid, epoch = begin(state, [b"a"])
    assert end_txn(state, pid, epoch, True) == 0
    index = coordinator_for(state).partition_for(TXN)
    value_cls = message_class("TransactionLogValue")
    statuses = [
        TransactionState(
            value_cls.decode(
                bytes(r.value)[2:], int.from_bytes(bytes(r.value)[:2], "big")
            ).transaction_status
        ).kafka_name
        for b in stored(state, TRANSACTION_TOPIC, index)
        for r in b
    ]
    assert statuses == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]


def test_restart_keeps_transactional_state(tmp_path: Path) -> None:
    path = tmp_path / "data"
    state = make_state(path)
    state.create_topic("t", 1)
    pid, epoch = begin(state, [b"a", b"b"])
    done = init(state, "done")
    add_partitions(state, done.producer_id, 0, {"t": [0]}, txn="done")
    assert end_txn(state, done.producer_id, 0, True, txn="done") == 0
    state.close()

    state = make_state(path)
    try:
        described = describe(state)
        assert described.transaction_state == "Ongoing"
        assert (described.producer_id, described.producer_epoch) == (pid, epoch)
        assert [(t.topic, list(t.partitions)) for t in described.topics] == [("t", [0])]
        assert describe(state, "done").transaction_state == "CompleteCommit"
        # The open transaction still holds the LSO, and ends normally after the restart.
        assert fetch(state).last_stable_offset == 0
        assert end_txn(state, pid, epoch, True) == 0
        assert fetch(state).last_stable_offset == fetch(state).high_watermark
        again = init(state, "done")
        assert (again.producer_id, again.producer_epoch) == (done.producer_id, 1)
        # New producer ids never repeat the old ones.
        assert init(state, "fresh").producer_id not in (pid, done.producer_id)
    finally:
        state.close()


def test_restart_completes_a_prepared_transaction(tmp_path: Path) -> None:
    """A crash between PrepareCommit and the markers: loading writes them and completes."""
    path = tmp_path / "data"
    state = make_state(path)
    state.create_topic("t", 1)
    pid, epoch = begin(state, [b"a"])
    coordinator = coordinator_for(state)
    meta = coordinator.transactions[TXN]
    coordinator._apply(meta.transit(state=TransactionState.PREPARE_COMMIT), NOW)
    state.close()

    state = make_state(path)
    try:
        assert describe(state).transaction_state == "CompleteCommit"
        batches = stored(state)
        assert batches[-1].is_control
        assert decode_control_record(next(iter(batches[-1]))).type is ControlRecordType.COMMIT
        assert fetch(state).last_stable_offset == 2
        assert pid >= 0 and epoch == 0
    finally:
        state.close()


# --- KIP-890 part 2: transaction.version 2 ----------------------------------------------------


def test_tv2_produce_adds_the_partition_and_end_txn_bumps_the_epoch(state: BrokerState) -> None:
    assert state.feature_level("transaction.version") == 2  # 4.3's default on a new cluster
    r = init(state, version=5)
    pid, epoch = r.producer_id, r.producer_epoch
    # Produce v12: no AddPartitionsToTxn, the broker adds t-0 itself.
    assert produce(state, pid, epoch, 0, [b"a", b"b"], version=12).error_code == 0
    found = describe(state)
    assert found.transaction_state == "Ongoing"
    assert [(t.topic, list(t.partitions)) for t in found.topics] == [("t", [0])]
    # EndTxn v5: committed, the answer carries the bumped epoch, the marker was written with it.
    assert end_txn_v5(state, pid, epoch, True) == (0, pid, epoch + 1)
    marker = stored(state)[-1]
    assert marker.is_control and marker.producer_epoch == epoch + 1
    assert decode_control_record(next(iter(marker))).type is ControlRecordType.COMMIT
    assert describe(state).transaction_state == "CompleteCommit"
    # A retry of that EndTxn (the old epoch) gets the same answer; nothing is written again.
    count = len(stored(state))
    assert end_txn_v5(state, pid, epoch, True) == (0, pid, epoch + 1)
    assert len(stored(state)) == count
    # The next transaction runs at the new epoch, sequences from 0; abort bumps again.
    assert produce(state, pid, epoch + 1, 0, [b"c"], version=12).error_code == 0
    assert end_txn_v5(state, pid, epoch + 1, False) == (0, pid, epoch + 2)
    # read_committed sees exactly the committed records.
    part = fetch(state, isolation=1)
    keep = ReadCommittedFilter(
        [(a.producer_id, a.first_offset, 2**63 - 1) for a in part.aborted_transactions]
    )
    batches = list(read_batches(part.records))
    visible = [bytes(r.value) for b in batches if keep.keep(b) for r in b if r.value is not None]
    assert visible == [b"a", b"b"]


def test_tv2_fences_a_zombie_write_of_the_previous_epoch(state: BrokerState) -> None:
    r = init(state, version=5)
    pid, epoch = r.producer_id, r.producer_epoch
    assert produce(state, pid, epoch, 0, [b"a"], version=12).error_code == 0
    assert end_txn_v5(state, pid, epoch, True) == (0, pid, epoch + 1)
    before = len(stored(state))
    # A late write of the ended transaction's epoch (a zombie) is refused, nothing appended,
    # and no transaction is opened for it.
    late = produce(state, pid, epoch, 1, [b"zombie"], version=12)
    assert late.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert len(stored(state)) == before
    assert describe(state).transaction_state == "CompleteCommit"
    # The stale epoch cannot end a transaction either.
    assert end_txn_v5(state, pid, epoch - 1, True)[0] == ErrorCode.PRODUCER_FENCED


def test_tv2_abort_with_nothing_open_bumps_the_epoch(state: BrokerState) -> None:
    r = init(state, version=5)
    pid, epoch = r.producer_id, r.producer_epoch
    assert end_txn_v5(state, pid, epoch, False) == (0, pid, epoch + 1)
    assert end_txn_v5(state, pid, epoch + 1, True)[0] == ErrorCode.INVALID_TXN_STATE


def test_tv1_clients_keep_their_epoch_with_tv2_finalized(state: BrokerState) -> None:
    """Kafka's Java producer 3.9 (EndTxn v4, Produce v11, AddPartitionsToTxn v3) is unchanged."""
    pid, epoch = begin(state, [b"a"])
    assert end_txn(state, pid, epoch, True, version=4) == 0
    assert stored(state)[-1].producer_epoch == epoch
    assert describe(state).producer_epoch == epoch


def test_tv2_needs_transaction_version_2_finalized(state: BrokerState) -> None:
    set_transaction_version(state, 1)
    r = init(state, version=5)
    pid, epoch = r.producer_id, r.producer_epoch
    # Produce v12 under TV1: no implicit add; EndTxn v5 keeps the epoch.
    assert add_partitions(state, pid, epoch, {"t": [0]}) == {("t", 0): 0}
    assert produce(state, pid, epoch, 0, [b"a"], version=12).error_code == 0
    assert end_txn_v5(state, pid, epoch, True) == (0, pid, epoch)


def test_tv2_epoch_exhaustion_rotates_the_producer_id(state: BrokerState) -> None:
    r = init(state, version=5)
    pid = r.producer_id
    coordinator = coordinator_for(state)
    meta = coordinator.transactions[TXN]
    coordinator.transactions[TXN] = meta.transit(producer_epoch=32765)
    assert produce(state, pid, 32765, 0, [b"a"], version=12).error_code == 0
    assert end_txn_v5(state, pid, 32765, True) == (0, pid, 32766)  # not exhausted yet
    assert produce(state, pid, 32766, 0, [b"b"], version=12).error_code == 0
    error, new_pid, new_epoch = end_txn_v5(state, pid, 32766, True)
    assert (error, new_epoch) == (0, 0) and new_pid != pid
    assert stored(state)[-1].producer_epoch == 32767  # the markers: one more bump
    # The retry with the old id is answered with the new one.
    assert end_txn_v5(state, pid, 32766, True) == (0, new_pid, 0)


def test_tv2_txn_offset_commit_adds_the_group_partition(state: BrokerState) -> None:
    """TxnOffsetCommit v5 with TV2: no AddOffsetsToTxn; the offsets commit with the EndTxn."""
    r = init(state, version=5)
    pid, epoch = r.producer_id, r.producer_epoch
    assert produce(state, pid, epoch, 0, [b"a"], version=12).error_code == 0
    cls = message_class("TxnOffsetCommitRequest")
    tcls = struct_class(cls, "topics")
    pcls = struct_class(cls, "topics", "partitions")

    def commit_offsets(producer_epoch: int) -> int:
        response = call(
            state,
            "TxnOffsetCommit",
            5,
            transactional_id=TXN,
            group_id="g-tv2",
            producer_id=pid,
            producer_epoch=producer_epoch,
            generation_id=-1,
            member_id="",
            topics=[tcls(name="t", partitions=[pcls(partition_index=0, committed_offset=1)])],
        )
        return int(response.topics[0].partitions[0].error_code)

    assert commit_offsets(epoch) == 0
    offsets = ("__consumer_offsets", coordinator_for(state).group_partition("g-tv2")[1])
    assert offsets in coordinator_for(state).transactions[TXN].partitions
    assert end_txn_v5(state, pid, epoch, True) == (0, pid, epoch + 1)
    fetched = call(
        state,
        "OffsetFetch",
        7,
        group_id="g-tv2",
        topics=[
            struct_class(message_class("OffsetFetchRequest"), "topics")(
                name="t", partition_indexes=[0]
            )
        ],
        require_stable=True,
    )
    assert fetched.topics[0].partitions[0].committed_offset == 1
    # A zombie of the old epoch cannot commit offsets any more.
    assert commit_offsets(epoch) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_tv2_across_a_restart(tmp_path: Path) -> None:
    """The bumped epoch is in __transaction_state and the partitions' producer state: after a
    restart a retry of the EndTxn is answered, a zombie write is still fenced, and a Prepare
    record left by a crash is completed with its (bumped) epoch."""
    path = tmp_path / "data"
    state = make_state(path)
    state.create_topic("t", 1)
    r = init(state, version=5)
    pid, epoch = r.producer_id, r.producer_epoch
    assert produce(state, pid, epoch, 0, [b"a"], version=12).error_code == 0
    assert end_txn_v5(state, pid, epoch, True) == (0, pid, epoch + 1)
    assert produce(state, pid, epoch + 1, 0, [b"b"], version=12).error_code == 0
    # A crash after the Prepare record of the next EndTxn v5 (its epoch already bumped).
    coordinator = coordinator_for(state)
    meta = coordinator.transactions[TXN]
    prepared = meta.transit(state=TransactionState.PREPARE_ABORT, producer_epoch=epoch + 2)
    coordinator._apply(prepared, NOW)
    state.close()

    state = make_state(path)
    try:
        found = describe(state)
        assert (found.transaction_state, found.producer_epoch) == ("CompleteAbort", epoch + 2)
        marker = stored(state)[-1]
        assert marker.is_control and marker.producer_epoch == epoch + 2
        assert decode_control_record(next(iter(marker))).type is ControlRecordType.ABORT
        assert end_txn_v5(state, pid, epoch + 1, False) == (0, pid, epoch + 2)
        late = produce(state, pid, epoch + 1, 1, [b"zombie"], version=12)
        assert late.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        assert produce(state, pid, epoch + 2, 0, [b"c"], version=12).error_code == 0
        assert end_txn_v5(state, pid, epoch + 2, True) == (0, pid, epoch + 3)
    finally:
        state.close()
