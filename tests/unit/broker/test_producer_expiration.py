"""Producer-id expiration in the broker (``producer.id.expiration.ms``, checked every
``producer.id.expiration.check.interval.ms``), with a clock the test moves."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwire.broker import BrokerState, ManualClock, personality
from kwire.broker._apis import implemented_versions
from kwire.broker._config import ConfigError
from kwire.records import BatchBuilder

NOW = 1_700_000_000_000
CONFIG = {
    "producer.id.expiration.ms": "60000",
    "producer.id.expiration.check.interval.ms": "10000",
}


def make_state(path: Path, now: int = NOW, **config: str) -> BrokerState:
    return BrokerState(
        path,
        personality=personality("4.3", implemented_versions()),
        clock=ManualClock(now),
        static_config={**CONFIG, **config},
    )


def batch(ts: int, pid: int, seq: int, *, txn: bool = False) -> bytes:
    b = BatchBuilder(producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=txn)
    b.append(timestamp=ts, key=None, value=b"v")
    return b.build()


def test_expired_producers_are_dropped_every_check_interval(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d")
    clock = state.clock
    assert isinstance(clock, ManualClock)
    log = state.create_topic("t", 1).partitions[0].log
    log.append_as_leader(batch(NOW, 1000, 0), now_ms=NOW)
    log.append_as_leader(batch(NOW, 1001, 0, txn=True), now_ms=NOW)  # stays open
    log.append_as_leader(batch(NOW + 5000, 1002, 0), now_ms=NOW)
    clock.advance(60_000)  # 1000 is idle for 60 s: expired at this (the first due) check
    state.run_tickers()
    assert sorted(log.producer_state()) == [1001, 1002]  # 1000 gone at the first check
    clock.advance(4_999)
    state.run_tickers()  # no check before the next interval
    assert sorted(log.producer_state()) == [1001, 1002]
    clock.advance(5_001)
    state.run_tickers()
    assert sorted(log.producer_state()) == [1001]
    # an expired producer id writing again is an unknown producer: any sequence is accepted
    info = log.append_as_leader(batch(NOW + 70_000, 1000, 7), now_ms=NOW + 70_000)
    assert not info.duplicate
    assert log.producer_state()[1000].last_seq == 7
    state.close()
    # restart (later): the expired ids stay gone, the open transaction stays
    state = make_state(tmp_path / "d", NOW + 200_000)
    assert sorted(state.topics["t"].partitions[0].log.producer_state()) == [1001]
    state.close()


def test_defaults_and_validation(tmp_path: Path) -> None:
    state = make_state(tmp_path / "d")
    assert state.broker_int("producer.id.expiration.ms") == 60000
    state.close()
    state = BrokerState(
        tmp_path / "e", personality=personality("4.3", implemented_versions()), clock=ManualClock()
    )
    assert state.broker_int("producer.id.expiration.ms") == 86_400_000
    assert state.broker_int("producer.id.expiration.check.interval.ms") == 600_000
    state.close()
    with pytest.raises(ConfigError):
        make_state(tmp_path / "f", **{"producer.id.expiration.ms": "0"})
