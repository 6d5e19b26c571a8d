"""ACLs: StandardAuthorizer's matching (literal, wildcard, prefixed; deny wins; implied DESCRIBE;
super users; allow.everyone.if.no.acl.found), the ACL APIs, persistence, and handlers answering
with Kafka's authorization errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwire.broker import RequestContext, implemented_versions, personality
from kwire.broker._acl import (
    ALLOW,
    CLUSTER,
    DENY,
    GROUP,
    LITERAL,
    OPERATIONS,
    PREFIXED,
    TOPIC,
    AclBinding,
    AclStore,
    Authorizer,
)
from kwire.broker._apis import handler
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode, message_class, struct_class

OP = OPERATIONS


def acl(
    name: str,
    op: str,
    permission: int = ALLOW,
    principal: str = "User:alice",
    pattern: int = LITERAL,
    resource: int = TOPIC,
    host: str = "*",
) -> AclBinding:
    return AclBinding(resource, name, pattern, principal, host, OP[op], permission)


def authorizer(tmp_path: Path, *acls: AclBinding, **kw: Any) -> Authorizer:
    return Authorizer(AclStore.of(acls), kw.pop("supers", ()), **kw)


def test_literal_prefixed_and_wildcard(tmp_path: Path) -> None:
    auth = authorizer(
        tmp_path,
        acl("orders", "READ"),
        acl("logs-", "WRITE", pattern=PREFIXED),
        acl("*", "DESCRIBE", principal="User:bob"),
    )
    check = auth.authorize
    assert check("User:alice", "1.2.3.4", OP["READ"], TOPIC, "orders")
    assert not check("User:alice", "1.2.3.4", OP["WRITE"], TOPIC, "orders")
    assert not check("User:alice", "1.2.3.4", OP["READ"], TOPIC, "orders2")
    assert check("User:alice", "1.2.3.4", OP["WRITE"], TOPIC, "logs-app")
    assert not check("User:alice", "1.2.3.4", OP["WRITE"], TOPIC, "log")
    assert check("User:bob", "1.2.3.4", OP["DESCRIBE"], TOPIC, "anything")
    assert not check("User:bob", "1.2.3.4", OP["DESCRIBE"], GROUP, "anything")


def test_deny_wins_and_implied_describe(tmp_path: Path) -> None:
    auth = authorizer(
        tmp_path,
        acl("t", "ALL", principal="User:*"),
        acl("t", "WRITE", DENY),
        acl("u", "READ"),
        acl("c", "ALTER_CONFIGS"),
    )
    check = auth.authorize
    assert check("User:alice", "h", OP["READ"], TOPIC, "t")
    assert not check("User:alice", "h", OP["WRITE"], TOPIC, "t")  # deny wins over ALL
    assert check("User:carol", "h", OP["WRITE"], TOPIC, "t")
    assert check("User:alice", "h", OP["DESCRIBE"], TOPIC, "u")  # READ implies DESCRIBE
    assert not check("User:alice", "h", OP["WRITE"], TOPIC, "u")
    assert check("User:alice", "h", OP["DESCRIBE_CONFIGS"], TOPIC, "c")
    denied_describe = authorizer(tmp_path, acl("v", "READ"), acl("v", "DESCRIBE", DENY))
    assert not denied_describe.authorize("User:alice", "h", OP["DESCRIBE"], TOPIC, "v")
    assert denied_describe.authorize("User:alice", "h", OP["READ"], TOPIC, "v")


def test_hosts_super_users_and_no_acl_found(tmp_path: Path) -> None:
    auth = authorizer(tmp_path, acl("t", "READ", host="10.0.0.1"), supers=["User:admin"])
    assert auth.authorize("User:alice", "10.0.0.1", OP["READ"], TOPIC, "t")
    assert not auth.authorize("User:alice", "10.0.0.2", OP["READ"], TOPIC, "t")
    assert auth.authorize("User:admin", "10.0.0.2", OP["ALTER"], CLUSTER, "kafka-cluster")
    assert not auth.authorize("User:alice", "h", OP["READ"], TOPIC, "no-acls")
    everyone = authorizer(tmp_path, acl("t", "READ"), allow_if_no_acl=True)
    assert everyone.authorize("User:alice", "h", OP["READ"], TOPIC, "no-acls")
    assert not everyone.authorize("User:bob", "h", OP["READ"], TOPIC, "t")  # t has ACLs


def test_authorize_by_resource_type(tmp_path: Path) -> None:
    auth = authorizer(tmp_path, acl("a", "WRITE"), acl("a", "WRITE", DENY, principal="User:bob"))
    assert auth.authorize_any("User:alice", "h", OP["WRITE"], TOPIC)
    assert not auth.authorize_any("User:bob", "h", OP["WRITE"], TOPIC)
    assert not auth.authorize_any("User:carol", "h", OP["WRITE"], TOPIC)


# --- the APIs and handlers ---------------------------------------------------------------------


def make_state(tmp_path: Path, **config: str) -> BrokerState:
    return BrokerState(
        tmp_path,
        personality=personality("4.3", implemented_versions()),
        static_config=config,
    )


def call(state: BrokerState, api: str, version: int, principal: str, **fields: Any) -> Any:
    cls = message_class(f"{api}Request")
    assert cls.API_KEY is not None
    ctx = RequestContext(
        api_key=cls.API_KEY,
        api_version=version,
        correlation_id=1,
        client_id="t",
        client_address="127.0.0.1:5555",
        principal=principal,
    )
    return handler(cls.API_KEY)(state, ctx, cls(**fields))


SECURED = {"authorizer.class.name": "StandardAuthorizer", "super.users": "User:admin"}


def create_acls(state: BrokerState, principal: str, *acls: AclBinding) -> Any:
    creation = struct_class(message_class("CreateAclsRequest"), "creations")
    return call(
        state,
        "CreateAcls",
        3,
        principal,
        creations=[
            creation(
                resource_type=a.resource_type,
                resource_name=a.resource_name,
                resource_pattern_type=a.pattern_type,
                principal=a.principal,
                host=a.host,
                operation=a.operation,
                permission_type=a.permission_type,
            )
            for a in acls
        ],
    )


def test_acl_apis_without_authorizer(tmp_path: Path) -> None:
    state = make_state(tmp_path)
    response = create_acls(state, "User:ANONYMOUS", acl("t", "READ"))
    assert response.results[0].error_code == ErrorCode.SECURITY_DISABLED
    described = call(
        state,
        "DescribeAcls",
        3,
        "User:ANONYMOUS",
        resource_type_filter=1,
        pattern_type_filter=1,
        operation=1,
        permission_type=1,
    )
    assert described.error_code == ErrorCode.SECURITY_DISABLED
    state.close()


def test_acl_apis_persist_and_need_cluster_rights(tmp_path: Path) -> None:
    state = make_state(tmp_path, **SECURED)
    denied = create_acls(state, "User:alice", acl("t", "READ"))
    assert denied.results[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    created = create_acls(
        state,
        "User:admin",
        acl("t", "READ"),
        acl("p-", "WRITE", pattern=PREFIXED),
        acl("x", "READ", resource=CLUSTER),  # CLUSTER must be kafka-cluster
    )
    assert [r.error_code for r in created.results] == [0, 0, ErrorCode.INVALID_REQUEST]
    state.close()
    state = make_state(tmp_path, **SECURED)  # a restart: the ACLs are still there
    described = call(
        state,
        "DescribeAcls",
        3,
        "User:admin",
        resource_type_filter=TOPIC,
        resource_name_filter="p-orders",
        pattern_type_filter=2,  # MATCH
        principal_filter=None,
        host_filter=None,
        operation=1,
        permission_type=1,
    )
    assert [(r.resource_name, r.pattern_type) for r in described.resources] == [("p-", PREFIXED)]
    delete_filter = struct_class(message_class("DeleteAclsRequest"), "filters")
    deleted = call(
        state,
        "DeleteAcls",
        3,
        "User:admin",
        filters=[
            delete_filter(
                resource_type_filter=TOPIC,
                resource_name_filter="t",
                pattern_type_filter=LITERAL,
                principal_filter=None,
                host_filter=None,
                operation=1,
                permission_type=1,
            )
        ],
    )
    assert [m.resource_name for m in deleted.filter_results[0].matching_acls] == ["t"]
    state.close()


def metadata_topic(name: str) -> Any:
    return struct_class(message_class("MetadataRequest"), "topics")(name=name)


def test_handlers_answer_with_authorization_errors(tmp_path: Path) -> None:
    state = make_state(tmp_path, **SECURED, **{"auto.create.topics.enable": "false"})
    state.create_topic("visible", 1)
    state.create_topic("secret", 1)
    create_acls(state, "User:admin", acl("visible", "READ"), acl("g", "READ", resource=GROUP))
    everything = call(
        state, "Metadata", 12, "User:alice", topics=None, include_topic_authorized_operations=True
    )
    assert [t.name for t in everything.topics] == ["visible"]  # secret stays hidden
    assert everything.topics[0].topic_authorized_operations == (1 << OP["READ"]) | (
        1 << OP["DESCRIBE"]
    )
    named = call(
        state,
        "Metadata",
        12,
        "User:alice",
        topics=[metadata_topic("secret"), metadata_topic("missing")],
    )
    assert [t.error_code for t in named.topics] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED] * 2
    admin = call(state, "Metadata", 12, "User:admin", topics=None)
    assert sorted(t.name for t in admin.topics) == ["secret", "visible"]
    # Produce without WRITE, a group without READ, the cluster without DESCRIBE.
    produce_topic = struct_class(message_class("ProduceRequest"), "topic_data")
    produce_partition = struct_class(
        message_class("ProduceRequest"), "topic_data", "partition_data"
    )
    produced = call(
        state,
        "Produce",
        9,
        "User:alice",
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            produce_topic(name="visible", partition_data=[produce_partition(index=0, records=b"")])
        ],
    )
    assert (
        produced.responses[0].partition_responses[0].error_code
        == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    )
    heartbeat = call(
        state, "Heartbeat", 4, "User:alice", group_id="other", generation_id=1, member_id="m"
    )
    assert heartbeat.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    log_dirs = call(state, "DescribeLogDirs", 4, "User:alice", topics=None)
    assert log_dirs.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    txn = call(
        state, "InitProducerId", 4, "User:alice", transactional_id="tx", transaction_timeout_ms=1000
    )
    assert txn.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    idempotent = call(
        state, "InitProducerId", 4, "User:alice", transactional_id=None, transaction_timeout_ms=1000
    )
    assert idempotent.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    state.close()


@pytest.mark.parametrize("principal", ["User:ANONYMOUS", "User:alice"])
def test_without_authorizer_everything_is_allowed(tmp_path: Path, principal: str) -> None:
    state = make_state(tmp_path)
    state.create_topic("t", 1)
    response = call(
        state, "Metadata", 12, principal, topics=None, include_topic_authorized_operations=True
    )
    assert [t.name for t in response.topics] == ["t"]
    assert response.topics[0].topic_authorized_operations == sum(
        1 << OP[o]
        for o in (
            "READ",
            "WRITE",
            "CREATE",
            "DELETE",
            "ALTER",
            "DESCRIBE",
            "DESCRIBE_CONFIGS",
            "ALTER_CONFIGS",
        )
    )
    state.close()
