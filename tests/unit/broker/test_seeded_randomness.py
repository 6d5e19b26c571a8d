"""Everything random a broker state decides (topic ids, the cluster id, fetch session ids) comes
from its injected ``random.Random``: two states given the same seed decide the same, so a
property test replays from its seed."""

from __future__ import annotations

import random
from pathlib import Path

from kwire.broker import testing


def decisions(path: Path, seed: int) -> tuple[object, ...]:
    state = testing.make_state(path, rng=random.Random(seed))
    try:
        topic = state.create_topic("t", 1)
        fetch = testing.call(
            state,
            "Fetch",
            12,
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            session_id=0,
            session_epoch=0,  # open a session
            topics=[],
        )
        return state.cluster_id, topic.topic_id, fetch.session_id
    finally:
        state.close()


def test_the_same_seed_decides_the_same(tmp_path: Path) -> None:
    first = decisions(tmp_path / "a", 7)
    assert first == decisions(tmp_path / "b", 7)
    assert first[2] != 0  # a session was opened
    assert first != decisions(tmp_path / "c", 8)
