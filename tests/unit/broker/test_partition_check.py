"""The one partition check (``_partition_check.partition_or_error``): each error in Kafka's
precedence (unknown id, authorisation, existence, leader epoch, leadership), and no handler
checking leadership or epochs on its own.

The table runs on a three-node in-process cluster with a StandardAuthorizer: ``User:alice`` may
describe topic ``t`` (2 partitions, partition 0 moved to node 2 at leader epoch 1) and nothing
else; ``User:admin`` is a super user.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import kwire.broker
from kwire.broker import BrokerState, ManualClock, RequestContext, implemented_versions, personality
from kwire.broker._acl import ALLOW, LITERAL, OPERATIONS, TOPIC
from kwire.broker._apis import handler
from kwire.broker._partition_check import partition_or_error
from kwire.protocol import ErrorCode, message_class, struct_class

SECURED = {"authorizer.class.name": "StandardAuthorizer", "super.users": "User:admin"}
ALICE, BOB = "User:alice", "User:bob"


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Any:
    s = BrokerState(
        tmp_path_factory.mktemp("data"),
        personality=personality("4.3", implemented_versions()),
        static_config=SECURED,
        clock=ManualClock(1_700_000_000_000),
        nodes=[1, 2, 3],
    )
    for node in s.nodes:
        s.broker_started(node, {"PLAINTEXT": ("127.0.0.1", 9100 + node)})
    s.create_topic("t", 2, leaders=[1, 2])  # epoch 0
    s.create_topic("secret", 1, leaders=[1])
    p0 = s.partition("t", 0)
    assert p0 is not None and p0.leader_id == 1
    s.move_leader(p0, 2)  # leader epoch 1, on node 2
    creations = message_class("CreateAclsRequest")
    creation = struct_class(creations, "creations")
    ctx = RequestContext(30, 3, 1, "t", principal="User:admin")
    acl = creation(
        resource_type=TOPIC,
        resource_name="t",
        resource_pattern_type=LITERAL,
        principal=ALICE,
        host="*",
        operation=OPERATIONS["DESCRIBE"],
        permission_type=ALLOW,
    )
    created = handler(30)(s, ctx, creations(creations=[acl]))
    assert [r.error_code for r in created.results] == [0]
    yield s
    s.close()


def check(
    state: BrokerState, principal: str, node: int, topic: str | None, index: int, **kw: Any
) -> tuple[ErrorCode, tuple[str, int] | None]:
    ctx = RequestContext(2, 9, 1, "t", principal=principal, node_id=node)
    kw.setdefault("operation", "DESCRIBE")
    error, partition = partition_or_error(state, ctx, topic, index, **kw)
    return error, None if partition is None else (partition.topic.name, partition.index)


E = ErrorCode
# (case, principal, node, topic, index, keywords, error, partition returned), in Kafka's order:
# an unknown topic id first, then authorisation, existence, the leader epoch, leadership.
CASES: list[tuple[str, str, int, str | None, int, dict[str, Any], ErrorCode, Any]] = [
    ("unknown id, even unauthorised", BOB, 2, None, 0, {"by_id": True}, E.UNKNOWN_TOPIC_ID, None),
    ("no name, by name", ALICE, 2, None, 0, {}, E.UNKNOWN_TOPIC_OR_PARTITION, None),
    ("unauthorised before unknown", BOB, 2, "ghost", 0, {}, E.TOPIC_AUTHORIZATION_FAILED, None),
    ("unauthorised before epoch and leader", BOB, 1, "t", 0, {"current_leader_epoch": 0},
     E.TOPIC_AUTHORIZATION_FAILED, None),
    ("other operation unauthorised", ALICE, 2, "t", 0, {"operation": "READ"},
     E.TOPIC_AUTHORIZATION_FAILED, None),
    ("unknown topic", ALICE, 2, "ghost", 0, {"operation": None}, E.UNKNOWN_TOPIC_OR_PARTITION, None),
    ("unknown partition", ALICE, 2, "t", 2, {}, E.UNKNOWN_TOPIC_OR_PARTITION, None),
    ("negative partition", ALICE, 2, "t", -1, {}, E.UNKNOWN_TOPIC_OR_PARTITION, None),
    ("fenced epoch before leadership", ALICE, 1, "t", 0, {"current_leader_epoch": 0},
     E.FENCED_LEADER_EPOCH, ("t", 0)),
    ("newer epoch before leadership", ALICE, 1, "t", 0, {"current_leader_epoch": 2},
     E.UNKNOWN_LEADER_EPOCH, ("t", 0)),
    ("fenced epoch on the leader", ALICE, 2, "t", 0, {"current_leader_epoch": 0},
     E.FENCED_LEADER_EPOCH, ("t", 0)),
    ("current epoch, not the leader", ALICE, 1, "t", 0, {"current_leader_epoch": 1},
     E.NOT_LEADER_OR_FOLLOWER, ("t", 0)),
    ("no epoch, not the leader", ALICE, 3, "t", 0, {}, E.NOT_LEADER_OR_FOLLOWER, ("t", 0)),
    ("leader, current epoch", ALICE, 2, "t", 0, {"current_leader_epoch": 1}, E.NONE, ("t", 0)),
    ("leader, no epoch", ALICE, 2, "t", 1, {}, E.NONE, ("t", 1)),
    ("authorised otherwise", BOB, 1, "secret", 0, {"operation": None}, E.NONE, ("secret", 0)),
    ("leader not required", ALICE, 1, "t", 0,
     {"current_leader_epoch": 0, "require_leader": False}, E.NONE, ("t", 0)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("principal", "node", "topic", "index", "kw", "error", "found"),
    [pytest.param(*c[1:], id=c[0]) for c in CASES],
)
def test_partition_or_error_in_kafkas_order(
    state: BrokerState,
    principal: str,
    node: int,
    topic: str | None,
    index: int,
    kw: dict[str, Any],
    error: ErrorCode,
    found: Any,
) -> None:
    assert check(state, principal, node, topic, index, **kw) == (error, found)


# --- one home for the rule --------------------------------------------------------------------

RULES = {"leader_error", "check_leader_epoch"}
#: (module, function) allowed to call them: the check itself, and nothing else.
ALLOWED = {
    ("_partition_check.py", "partition_or_error"),
}


def rule_calls(package: Path) -> set[tuple[str, str]]:
    """(module, enclosing function) of every call of a leadership or epoch rule."""
    out: set[tuple[str, str]] = set()
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for top in ast.walk(tree):
            if not isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(top):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if name in RULES:
                    out.add((str(path.relative_to(package)), top.name))
    return out


def test_leadership_and_epochs_are_checked_in_one_place() -> None:
    package = Path(kwire.broker.__file__).parent
    calls = rule_calls(package)
    assert ("_partition_check.py", "partition_or_error") in calls
    assert calls == ALLOWED, sorted(calls ^ ALLOWED)


def test_alter_replica_log_dirs_keeps_replica_not_available(state: BrokerState) -> None:
    """A node not hosting (leading) the replica answers REPLICA_NOT_AVAILABLE, not
    NOT_LEADER_OR_FOLLOWER (``ReplicaManager.alterReplicaLogDirs``, kept for compatibility)."""
    from kwire.broker._alter_replica_log_dirs import log_dirs

    cls = message_class("AlterReplicaLogDirsRequest")
    directory, topic = struct_class(cls, "dirs"), struct_class(cls, "dirs", "topics")
    request = cls(
        dirs=[directory(path=log_dirs(state)[0], topics=[topic(name="t", partitions=[0, 2])])]
    )

    def errors(node: int) -> list[int]:
        ctx = RequestContext(34, 2, 1, "t", principal="User:admin", node_id=node)
        response = handler(34)(state, ctx, request)
        return [p.error_code for r in response.results for p in r.partitions]

    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert errors(1) == [ErrorCode.REPLICA_NOT_AVAILABLE, unknown]
    assert errors(2) == [ErrorCode.NONE, unknown]
