"""The ``quorum-state`` file of a KRaft metadata partition (``__cluster_metadata-0/quorum-state``).

Kafka's ``FileQuorumStateStore`` keeps the quorum's election state in one JSON line
(``QuorumStateData``): the leader, its epoch, the vote and the voters. kwire writes it at
``data_version`` 0 (static ``controller.quorum.voters``) as Jackson does, one compact line, and
reads back versions 0 and 1; a missing or unreadable file reads as ``None`` (a fresh election).
The broker's metadata log (``kwire.broker._metadata_log``) writes it atomically at each start.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["quorum_state_json", "read_quorum_state"]


def quorum_state_json(leader_id: int, epoch: int, voters: Iterable[int]) -> str:
    """``FileQuorumStateStore``'s file at ``data_version`` 0 (``QuorumStateData`` v0, static
    ``controller.quorum.voters``), as Jackson writes it: one compact line."""
    # Every value is an int (or the empty cluster id), so the line is formatted here rather
    # than by ``json``, which a broker's start would otherwise import for this line alone.
    current = ",".join(f'{{"voterId":{int(v)}}}' for v in voters)
    return (
        f'{{"clusterId":"","leaderId":{int(leader_id)},"leaderEpoch":{int(epoch)},'
        f'"votedId":-1,"appliedOffset":0,"currentVoters":[{current}],"data_version":0}}'
    )


def read_quorum_state(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            line = f.readline()
    except FileNotFoundError:
        return None
    import json  # here: a fresh data directory has no quorum-state to read

    try:
        doc = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(doc, dict) or doc.get("data_version") not in (0, 1):
        return None
    return doc
