"""Delegation tokens (KIP-48) with real clients: Kafka's Java Admin (3.9.1) creates, describes,
renews and expires a token over SASL_PLAINTEXT SCRAM-SHA-256; Java producers and consumers then
log in with the token (``tokenauth=true``, the token id as user name and the base64 HMAC as
password) and act as its owner under the ACLs (set up with confluent-kafka's AdminClient); the
token survives a restart; a token-authenticated connection may not ask for tokens; an expired
token no longer logs in.

Neither confluent-kafka/librdkafka nor kafka-python has the delegation-token admin calls or
SCRAM's ``tokenauth`` extension: they take part here as the ACL admin and as a SCRAM consumer of
what the token-authenticated producer wrote, and librdkafka's Admin answers its own errors.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from interop_helpers import (
    ck_consume,
    expected_record,
    from_java,
    java_admin,
    java_clients,
    kp_consume,
)

pytestmark = pytest.mark.interop

N = 12
SECRET = "kwire-token-secret"
PASSWORDS = {"alice": "alice-pw", "bob": "bob-pw"}
TOPIC = "tok"


def start(start_broker: Any, data_dir: Any = None) -> Any:
    broker = start_broker(
        data_dir=data_dir,
        config={
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "delegation.token.secret.key": SECRET,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",  # PLAINTEXT sets the test up
        },
    )
    return broker


def scram(user: str, password: str, token: bool = False) -> list[str]:
    extra = ' tokenauth="true"' if token else ""
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}"{extra};'
    )
    return [
        "security.protocol=SASL_PLAINTEXT",
        "sasl.mechanism=SCRAM-SHA-256",
        f"sasl.jaas.config={jaas}",
    ]


def grant_alice(bootstrap: str) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    acls = [
        AclBinding(
            ResourceType.TOPIC,
            TOPIC,
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            op,
            AclPermissionType.ALLOW,
        )
        for op in (AclOperation.WRITE, AclOperation.READ)
    ]
    for future in admin.create_acls(acls).values():
        future.result(10)


def test_java_admin_tokens_and_token_logins(start_broker: Any) -> None:
    broker = start(start_broker)
    for user, password in PASSWORDS.items():
        broker.set_scram_password(user, password, "SCRAM-SHA-256")
    broker.create_topic(TOPIC, 1)
    grant_alice(broker.bootstrap)
    sasl = broker.bootstrap_for("SASL_PLAINTEXT")
    as_alice = scram("alice", PASSWORDS["alice"])
    created, described, over_plaintext = java_admin(
        sasl,
        {"op": "createDelegationToken", "renewers": ["bob"]},
        {"op": "describeDelegationToken"},
        settings=as_alice,
    ) + java_admin(broker.bootstrap, {"op": "createDelegationToken"})
    assert created["error"] is None, created
    token = created["result"]
    assert (token["owner"], token["requester"], token["renewers"]) == (
        "User:alice",
        "User:alice",
        ["User:bob"],
    )
    assert token["max"] - token["issue"] == 7 * 24 * 3600 * 1000  # the default max lifetime
    assert token["expiry"] - token["issue"] == 24 * 3600 * 1000  # the default renew interval
    assert [t["tokenId"] for t in described["result"]] == [token["tokenId"]]
    assert described["result"][0]["hmac"] == token["hmac"]
    # Kafka refuses token requests over PLAINTEXT (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).
    assert "UnsupportedByAuthenticationException" in over_plaintext["error"]

    # A Java producer and consumer log in with the token and act as alice (the ACLs allow
    # only her).
    with_token = scram(token["tokenId"], token["hmac"], token=True)
    acks = java_clients("produce", sasl, TOPIC, "lz4", str(N), *with_token)["acks"]
    assert [a["offset"] for a in acks] == list(range(N))
    records = [expected_record(i) for i in range(N)]
    got = java_clients("consume", sasl, TOPIC, str(N), "30000", *with_token)["records"]
    assert [from_java(r).content() for r in got] == [r.content() for r in records]
    # A token-authenticated connection may not create tokens; a wrong HMAC does not log in.
    (nested,) = java_admin(sasl, {"op": "createDelegationToken"}, settings=with_token)
    assert "UnsupportedByAuthenticationException" in nested["error"]
    wrong = scram(token["tokenId"], "AAAA" + token["hmac"][4:], token=True)
    (refused,) = java_admin(sasl, {"op": "describeCluster"}, settings=wrong)
    assert "SaslAuthenticationException" in refused["error"]

    # The Python clients read what the token's producer wrote, as alice over SCRAM-SHA-256.
    ck = ck_consume(
        sasl,
        TOPIC,
        N,
        **{
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": PASSWORDS["alice"],
        },
    )
    assert [r.content() for r in ck] == [r.content() for r in records]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        kp = kp_consume(
            sasl,
            TOPIC,
            N,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="alice",
            sasl_plain_password=PASSWORDS["alice"],
        )
    assert len(kp) == N

    # The token is in __cluster_metadata: after a restart it still logs in.
    data_dir = broker.data_dir
    broker.stop()
    broker = start(start_broker, data_dir)
    sasl = broker.bootstrap_for("SASL_PLAINTEXT")
    acks = java_clients("produce", sasl, TOPIC, "none", "1", *with_token)["acks"]
    assert [a["offset"] for a in acks] == [N]

    # bob (a renewer) renews it, then expires it at once; then the token no longer logs in.
    as_bob = scram("bob", PASSWORDS["bob"])
    renewed, expired = java_admin(
        sasl,
        {"op": "renewDelegationToken", "hmac": token["hmac"], "periodMs": 60_000},
        {"op": "expireDelegationToken", "hmac": token["hmac"], "periodMs": -1},
        settings=as_bob,
    )
    assert renewed["error"] is None and renewed["result"] > token["issue"]
    assert expired["error"] is None
    (after,) = java_admin(sasl, {"op": "describeCluster"}, settings=with_token)
    assert "SaslAuthenticationException" in after["error"]
    (listed,) = java_admin(sasl, {"op": "describeDelegationToken"}, settings=as_alice)
    assert listed["result"] == []
