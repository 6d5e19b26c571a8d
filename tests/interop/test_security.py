"""Security against real clients: SCRAM-SHA-512 over TLS (SASL_SSL) with confluent-kafka,
kafka-python and Kafka's Java client, client certificates (mTLS) mapped to principals, wrong
passwords failing as on Kafka, and ACL denials (TopicAuthorizationException in Java; a principal
without rights reads nothing). Certificates are made per test with trustme."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import (
    ck_conf,
    ck_consume,
    ck_produce,
    expected_record,
    from_java,
    java_clients,
    kp_consume,
    kp_produce,
)

pytestmark = pytest.mark.interop

N = 20
ADMIN, ALICE, BOB = "admin", "alice", "bob"
PASSWORDS = {ADMIN: "admin-secret", ALICE: "alice-secret", BOB: "bob-secret"}


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, str]:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    out = tmp_path / "pki"
    out.mkdir()
    paths = {"ca": str(out / "ca.pem"), "server": str(out / "server.pem")}
    ca.cert_pem.write_to_path(paths["ca"])
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        paths["server"]
    )
    client = ca.issue_cert("alice.example", common_name="alice")
    paths["client_key"] = str(out / "client.key")
    paths["client_cert"] = str(out / "client.pem")
    client.private_key_pem.write_to_path(paths["client_key"])
    client.cert_chain_pems[0].write_to_path(paths["client_cert"])
    return paths


def secure_broker(start_broker: Any, pki: dict[str, str], acls: bool = False) -> Any:
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
        "ssl.certfile": pki["server"],
        "ssl.cafile": pki["ca"],
        "listener.name.ssl.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/L,DEFAULT",
    }
    if acls:
        config["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        config["super.users"] = "User:admin;User:ANONYMOUS"  # PLAINTEXT sets up the test
    broker = start_broker(config=config)
    for user, password in PASSWORDS.items():
        broker.set_scram_password(user, password, "SCRAM-SHA-512")
    return broker


def ck_sasl(pki: dict[str, str], user: str, password: str | None = None) -> dict[str, Any]:
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": password or PASSWORDS[user],
        "ssl.ca.location": pki["ca"],
    }


def kp_sasl(pki: dict[str, str], user: str, password: str | None = None) -> dict[str, Any]:
    return {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": user,
        "sasl_plain_password": password or PASSWORDS[user],
        "ssl_cafile": pki["ca"],
    }


def java_sasl(pki: dict[str, str], user: str, password: str | None = None) -> list[str]:
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password or PASSWORDS[user]}";'
    )
    return [
        "security.protocol=SASL_SSL",
        "sasl.mechanism=SCRAM-SHA-512",
        f"sasl.jaas.config={jaas}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={pki['ca']}",
    ]


def test_scram_sha_512_over_tls_every_client(start_broker: Any, pki: dict[str, str]) -> None:
    broker = secure_broker(start_broker, pki)
    bootstrap = broker.bootstrap_for("SASL_SSL")
    broker.create_topic("secure", 1)
    records = [expected_record(i) for i in range(N)]
    plain = [expected_record(i, headers=False) for i in range(N)]  # kafka-python: no null headers
    ck_produce(bootstrap, "secure", records, **ck_sasl(pki, ALICE))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        kp_produce(bootstrap, "secure", plain, **kp_sasl(pki, ALICE))
    acks = java_clients("produce", bootstrap, "secure", "lz4", str(N), *java_sasl(pki, ALICE))[
        "acks"
    ]
    assert [a["offset"] for a in acks] == list(range(2 * N, 3 * N))
    expected = [r.content() for r in records + plain + records]
    # Fetch v10+ over TLS: sendfile cannot encrypt, so the broker's copy path serves these.
    got = ck_consume(bootstrap, "secure", 3 * N, **ck_sasl(pki, BOB))
    assert [r.content() for r in got] == expected
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        kp = kp_consume(bootstrap, "secure", 3 * N, **kp_sasl(pki, BOB))
    assert len(kp) == 3 * N
    java = java_clients("consume", bootstrap, "secure", str(3 * N), "30000", *java_sasl(pki, BOB))
    assert [from_java(r).content() for r in java["records"]] == expected
    # Metadata advertises the listener the client came in on.
    assert broker.listeners["SASL_SSL"] == bootstrap != broker.bootstrap


def test_wrong_password_fails_as_on_kafka(start_broker: Any, pki: dict[str, str]) -> None:
    import confluent_kafka as ck

    broker = secure_broker(start_broker, pki)
    bootstrap = broker.bootstrap_for("SASL_SSL")
    errors: list[Any] = []
    producer = ck.Producer(
        ck_conf(
            bootstrap,
            **ck_sasl(pki, ALICE, "wrong"),
            **{"message.timeout.ms": 3000, "error_cb": errors.append},
        )
    )
    producer.produce("t", b"x")
    producer.flush(5)
    auth = [e for e in errors if e.code() == ck.KafkaError._AUTHENTICATION]
    assert auth, errors
    assert (
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-512" in auth[0].str()
    )
    reply = java_clients(
        "produce",
        bootstrap,
        "t",
        "none",
        "1",
        *java_sasl(pki, "nobody", "wrong"),
        "max.block.ms=5000",
        timeout=120,
    )
    assert "SaslAuthenticationException" in str(reply["acks"][0].get("error")), reply


def test_mtls_principal_and_acls(start_broker: Any, pki: dict[str, str]) -> None:
    import confluent_kafka as ck
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    broker = secure_broker(start_broker, pki, acls=True)
    broker.create_topic("mine", 1)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # ANONYMOUS: a super user
    wanted = [
        AclBinding(
            ResourceType.TOPIC,
            "mine",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            op,
            AclPermissionType.ALLOW,
        )
        for op in (AclOperation.WRITE, AclOperation.READ)
    ]
    wanted.append(  # the consumers' group ids (librdkafka looks its coordinator up)
        AclBinding(
            ResourceType.GROUP,
            "kwire-interop-",
            ResourcePatternType.PREFIXED,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )
    )
    for future in admin.create_acls(wanted).values():
        future.result(10)
    found = admin.describe_acls(
        ck.admin.AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
    ).result(10)
    assert sorted(str(b.operation) for b in found) == sorted(str(b.operation) for b in wanted)
    ssl_conf = {
        "security.protocol": "SSL",
        "ssl.ca.location": pki["ca"],
        "ssl.certificate.location": pki["client_cert"],
        "ssl.key.location": pki["client_key"],
    }
    # The certificate's CN=alice maps to User:alice, who may write and read "mine".
    records = [expected_record(i) for i in range(N)]
    ck_produce(broker.bootstrap_for("SSL"), "mine", records, **ssl_conf)
    got = ck_consume(broker.bootstrap_for("SSL"), "mine", N, **ssl_conf)
    assert [r.content() for r in got] == [r.content() for r in records]
    # bob (SCRAM) has no rights: he reads nothing.
    nothing = ck_consume(
        broker.bootstrap_for("SASL_SSL"),
        "mine",
        1,
        timeout=5,
        require=False,
        **ck_sasl(pki, BOB),
    )
    assert nothing == []
    # Kafka's Java client sees the denial as TopicAuthorizationException.
    reply = java_clients(
        "produce",
        broker.bootstrap_for("SASL_SSL"),
        "mine",
        "none",
        "1",
        *java_sasl(pki, BOB),
        "max.block.ms=10000",
    )
    assert "TopicAuthorizationException" in str(reply["acks"][0].get("error")), reply
    # No client certificate: the TLS handshake itself fails on the SSL listener.
    errors: list[Any] = []
    producer = ck.Producer(
        ck_conf(
            broker.bootstrap_for("SSL"),
            **{
                "security.protocol": "SSL",
                "ssl.ca.location": pki["ca"],
                "message.timeout.ms": 3000,
                "error_cb": errors.append,
            },
        )
    )
    reports: list[Any] = []
    producer.produce("mine", b"x", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(8)
    assert reports and reports[0] is not None, (reports, errors)  # never delivered
    assert errors  # librdkafka reports the failed handshakes
    # The ACLs survive a restart.
    data_dir = broker.data_dir
    broker.stop()
    again = start_broker(
        data_dir=data_dir,
        config={"authorizer.class.name": "StandardAuthorizer", "super.users": "User:ANONYMOUS"},
    )
    admin = AdminClient({"bootstrap.servers": again.bootstrap})
    kept = admin.describe_acls(
        ck.admin.AclBindingFilter(
            ResourceType.TOPIC,
            "mine",
            ResourcePatternType.LITERAL,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
    ).result(10)
    assert len(kept) == 2  # the topic's two; the group's one is not a TOPIC
