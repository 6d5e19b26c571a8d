"""SCRAM credentials and ACLs in ``__cluster_metadata-0``, as a KRaft Kafka keeps them:
UserScramCredentialRecord / RemoveUserScramCredentialRecord (``ScramControlManager``) and
AccessControlEntryRecord / RemoveAccessControlEntryRecord (``AclControlManager``), written before
the change is answered and replayed at start; an older kwire's ``scram-credentials.json`` and
``acls.json`` imported once."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

from kwire.broker import ManualClock, RequestContext, implemented_versions, personality
from kwire.broker import _metadata_image as mimage
from kwire.broker._acl import (
    ALLOW,
    CLUSTER,
    DENY,
    LITERAL,
    OPERATIONS,
    PREFIXED,
    TOPIC,
    AclBinding,
    authorizer,
)
from kwire.broker._apis import handler
from kwire.broker._sasl import scram_credential, scram_store
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode, message_class, struct_class
from kwire.protocol._scram import salted_password
from kwire.records import read_batches

NOW = 1_700_000_000_000
SECURED = {"authorizer.class.name": "StandardAuthorizer", "super.users": "User:admin"}


def open_state(
    root: Path, config: dict[str, str] | None = None, clock: ManualClock | None = None
) -> BrokerState:
    return BrokerState(
        root,
        personality=personality("3.9", implemented_versions()),
        static_config=config,
        clock=clock or ManualClock(NOW),
    )


def records(root: Path, *names: str) -> list[tuple[Any, int, int]]:
    """(message, version, batch timestamp) of the metadata log's records named ``names``, each
    decoded with ``decode_record``."""
    out = []
    data = (root / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    for batch in read_batches(data):
        if batch.is_control:
            continue
        for record in batch:
            assert record.value is not None
            message, version = mimage.decode_record(record.value)
            if type(message).__name__ in names:
                out.append((message, version, batch.max_timestamp))
    return out


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


# --- SCRAM -------------------------------------------------------------------------------------

SALT = b"0123456789abcdef"


def alter_scram(
    state: BrokerState, upsert: list[tuple[str, int]], delete: list[tuple[str, int]]
) -> Any:
    alter = message_class("AlterUserScramCredentialsRequest")
    up = struct_class(alter, "upsertions")
    gone = struct_class(alter, "deletions")
    return call(
        state,
        "AlterUserScramCredentials",
        0,
        "User:ANONYMOUS",
        deletions=[gone(name=n, mechanism=m) for n, m in delete],
        upsertions=[
            up(
                name=n,
                mechanism=m,
                iterations=4096,
                salt=SALT,
                salted_password=salted_password(mimage.SCRAM_MECHANISMS[m], f"{n}-pw", SALT, 4096),
            )
            for n, m in upsert
        ],
    )


def test_scram_credentials_are_metadata_records_and_survive_a_restart(tmp_path: Path) -> None:
    clock = ManualClock(NOW)
    state = open_state(tmp_path, clock=clock)
    clock.advance(5)
    response = alter_scram(state, [("alice", 2), ("alice", 1), ("bob", 2)], [])
    assert [r.error_code for r in response.results] == [0, 0]
    expected = scram_credential("SCRAM-SHA-512", "alice-pw", 4096, SALT)
    state.close()
    assert not (tmp_path / "scram-credentials.json").exists()

    written = records(tmp_path, "UserScramCredentialRecord")
    assert [(m.name, m.mechanism, v) for m, v, _ in written] == [
        ("alice", 2, 0),
        ("alice", 1, 0),
        ("bob", 2, 0),
    ]
    alice = written[0][0]
    assert (alice.salt, alice.stored_key, alice.server_key, alice.iterations) == (
        SALT,
        expected.stored_key,
        expected.server_key,
        4096,
    )
    assert {ts for _, _, ts in written} == {NOW + 5}  # the injected clock
    assert (
        b"alice-pw"
        not in (tmp_path / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    )

    state = open_state(tmp_path)
    store = scram_store(state)
    assert store.get("alice", "SCRAM-SHA-512") == expected
    assert state.metadata_image.scram_credentials[("bob", 2)].iterations == 4096
    assert sorted(store.credentials) == [
        ("alice", "SCRAM-SHA-256"),
        ("alice", "SCRAM-SHA-512"),
        ("bob", "SCRAM-SHA-512"),
    ]
    response = alter_scram(state, [], [("alice", 2), ("ghost", 2)])
    errors = {r.user: r.error_code for r in response.results}
    assert errors == {"alice": 0, "ghost": ErrorCode.RESOURCE_NOT_FOUND}
    state.close()

    removed = records(tmp_path, "RemoveUserScramCredentialRecord")
    assert [(m.name, m.mechanism, v) for m, v, _ in removed] == [("alice", 2, 0)]
    state = open_state(tmp_path)  # the deletion stays: replay removes the credential
    store = scram_store(state)
    assert store.get("alice", "SCRAM-SHA-512") is None
    assert store.get("alice", "SCRAM-SHA-256") is not None
    assert ("alice", 2) not in state.metadata_image.scram_credentials
    state.close()


def test_set_scram_password_is_a_record(tmp_path: Path) -> None:
    state = open_state(tmp_path)
    from kwire.broker._sasl import set_scram_password

    set_scram_password(state, "carol", "carol-pw", "SCRAM-SHA-256", 8192)
    state.close()
    [(message, _, _)] = records(tmp_path, "UserScramCredentialRecord")
    assert (message.name, message.mechanism, message.iterations) == ("carol", 1, 8192)
    assert len(message.salt) == 32 and len(message.stored_key) == 32


# --- ACLs --------------------------------------------------------------------------------------


def acl(name: str, op: str, permission: int = ALLOW, pattern: int = LITERAL) -> AclBinding:
    return AclBinding(TOPIC, name, pattern, "User:alice", "*", OPERATIONS[op], permission)


def create_acls(state: BrokerState, *acls: AclBinding) -> Any:
    creation = struct_class(message_class("CreateAclsRequest"), "creations")
    return call(
        state,
        "CreateAcls",
        3,
        "User:admin",
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


def delete_acls(state: BrokerState, *names: str) -> Any:
    delete_filter = struct_class(message_class("DeleteAclsRequest"), "filters")
    return call(
        state,
        "DeleteAcls",
        3,
        "User:admin",
        filters=[
            delete_filter(
                resource_type_filter=TOPIC,
                resource_name_filter=name,
                pattern_type_filter=1,  # ANY
                principal_filter=None,
                host_filter=None,
                operation=1,
                permission_type=1,
            )
            for name in names
        ],
    )


def allowed(state: BrokerState, op: str, name: str) -> bool:
    auth = authorizer(state)
    assert auth is not None
    return auth.authorize("User:alice", "10.0.0.1", OPERATIONS[op], TOPIC, name)


def test_acls_are_metadata_records_and_survive_a_restart(tmp_path: Path) -> None:
    state = open_state(tmp_path, SECURED)
    read, prefixed, deny = (
        acl("t", "READ"),
        acl("p-", "WRITE", pattern=PREFIXED),
        acl("t", "WRITE", DENY),
    )
    created = create_acls(state, read, prefixed, read)  # a duplicate succeeds, writes nothing
    assert [r.error_code for r in created.results] == [0, 0, 0]
    assert [r.error_code for r in create_acls(state, deny, read).results] == [0, 0]
    state.close()
    assert not (tmp_path / "acls.json").exists()

    written = records(tmp_path, "AccessControlEntryRecord")
    assert [v for _, v, _ in written] == [0, 0, 0]
    fields = [
        (
            m.resource_type,
            m.resource_name,
            m.pattern_type,
            m.principal,
            m.host,
            m.operation,
            m.permission_type,
        )
        for m, _, _ in written
    ]
    assert fields == [
        (TOPIC, "t", LITERAL, "User:alice", "*", OPERATIONS["READ"], ALLOW),
        (TOPIC, "p-", PREFIXED, "User:alice", "*", OPERATIONS["WRITE"], ALLOW),
        (TOPIC, "t", LITERAL, "User:alice", "*", OPERATIONS["WRITE"], DENY),
    ]
    ids = [uuid.UUID(bytes=m.id.bytes) for m, _, _ in written]
    assert len(set(ids)) == 3 and all(i.int != 0 for i in ids)

    state = open_state(tmp_path, SECURED)
    assert list(state.metadata_image.acls) == ids
    assert list(state.metadata_image.acls.values()) == [read, prefixed, deny]
    assert allowed(state, "READ", "t") and not allowed(state, "WRITE", "t")
    assert allowed(state, "WRITE", "p-orders")
    deleted = delete_acls(state, "t", "t")  # both filters match both ACLs; one record each
    assert [len(r.matching_acls) for r in deleted.filter_results] == [2, 2]
    state.close()

    removed = records(tmp_path, "RemoveAccessControlEntryRecord")
    assert sorted(uuid.UUID(bytes=m.id.bytes) for m, _, _ in removed) == sorted([ids[0], ids[2]])
    state = open_state(tmp_path, SECURED)  # the deletions stay
    assert list(state.metadata_image.acls) == [ids[1]]
    assert not allowed(state, "READ", "t") and allowed(state, "WRITE", "p-x")
    assert [r.error_code for r in create_acls(state, read).results] == [0]  # created again
    assert len(state.metadata_image.acls) == 2 and ids[0] not in state.metadata_image.acls
    state.close()


def test_create_and_delete_acl_records() -> None:
    image = mimage.MetadataImage()
    first = acl("a", "READ")
    image.replay_all(mimage.create_acl_records(image, [first, first]))
    assert list(image.acls.values()) == [first]
    assert mimage.create_acl_records(image, [first]) == []
    [acl_id] = image.acls
    image.replay_all(mimage.delete_acl_records([acl_id, acl_id]))
    assert image.acls == {}
    cluster = AclBinding(
        CLUSTER, "kafka-cluster", LITERAL, "User:*", "*", OPERATIONS["ALTER"], ALLOW
    )
    [(record, version)] = mimage.create_acl_records(image, [cluster])
    assert version == 0
    assert mimage.decode_record(mimage.encode_record(record, 0)) == (record, 0)


# --- migration from an older kwire -------------------------------------------------------------


def old_scram_json(path: Path, *entries: tuple[str, str, mimage.ScramCredential]) -> None:
    doc = {
        "version": 1,
        "credentials": [
            {
                "user": user,
                "mechanism": mechanism,
                "salt": base64.b64encode(c.salt).decode("ascii"),
                "stored_key": base64.b64encode(c.stored_key).decode("ascii"),
                "server_key": base64.b64encode(c.server_key).decode("ascii"),
                "iterations": c.iterations,
            }
            for user, mechanism, c in entries
        ],
    }
    (path / "scram-credentials.json").write_text(json.dumps(doc, indent=1))


def old_acls_json(path: Path, *acls: AclBinding) -> None:
    doc = {
        "version": 1,
        "acls": [
            {
                "resource_type": a.resource_type,
                "resource_name": a.resource_name,
                "pattern_type": a.pattern_type,
                "principal": a.principal,
                "host": a.host,
                "operation": a.operation,
                "permission_type": a.permission_type,
            }
            for a in acls
        ],
    }
    (path / "acls.json").write_text(json.dumps(doc, indent=1))


def test_old_json_files_are_imported_once(tmp_path: Path) -> None:
    # A data directory of the kwire before: a metadata log with a topic, and the two JSON files.
    state = open_state(tmp_path, SECURED)
    state.create_topic("orders", 1)
    state.close()
    alice = scram_credential("SCRAM-SHA-512", "alice-pw", 4096, SALT)
    bob = scram_credential("SCRAM-SHA-256", "bob-pw", 8192, SALT)
    old_scram_json(tmp_path, ("alice", "SCRAM-SHA-512", alice), ("bob", "SCRAM-SHA-256", bob))
    read, deny = acl("orders", "READ"), acl("orders", "WRITE", DENY)
    old_acls_json(tmp_path, read, deny)

    state = open_state(tmp_path, SECURED)
    assert not (tmp_path / "scram-credentials.json").exists()
    assert not (tmp_path / "acls.json").exists()
    assert (tmp_path / "scram-credentials.json.migrated").exists()
    assert (tmp_path / "acls.json.migrated").exists()
    assert scram_store(state).get("alice", "SCRAM-SHA-512") == alice
    assert scram_store(state).get("bob", "SCRAM-SHA-256") == bob
    assert list(state.metadata_image.acls.values()) == [read, deny]
    assert allowed(state, "READ", "orders") and not allowed(state, "WRITE", "orders")
    assert "orders" in state.topics
    state.close()

    written = records(tmp_path, "UserScramCredentialRecord", "AccessControlEntryRecord")
    assert [(type(m).__name__, getattr(m, "name", None)) for m, _, _ in written] == [
        ("UserScramCredentialRecord", "alice"),
        ("UserScramCredentialRecord", "bob"),
        ("AccessControlEntryRecord", None),
        ("AccessControlEntryRecord", None),
    ]
    assert (written[1][0].mechanism, written[1][0].stored_key) == (1, bob.stored_key)

    # Never twice: a restart finds only the .migrated files ...
    state = open_state(tmp_path, SECURED)
    state.close()
    assert len(records(tmp_path, "UserScramCredentialRecord", "AccessControlEntryRecord")) == 4
    # ... and a file whose import was cut short (records written, file not renamed) adds
    # only what the log lacks.
    (tmp_path / "acls.json.migrated").rename(tmp_path / "acls.json")
    old_scram_json(tmp_path, ("alice", "SCRAM-SHA-512", alice))
    state = open_state(tmp_path, SECURED)
    assert len(state.metadata_image.acls) == 2
    state.close()
    assert len(records(tmp_path, "UserScramCredentialRecord", "AccessControlEntryRecord")) == 4
    assert not (tmp_path / "acls.json").exists()


def test_old_json_files_in_a_fresh_directory(tmp_path: Path) -> None:
    carol = scram_credential("SCRAM-SHA-256", "carol-pw", 4096, SALT)
    old_scram_json(tmp_path, ("carol", "SCRAM-SHA-256", carol))
    old_acls_json(tmp_path, acl("x", "READ"))
    state = open_state(tmp_path, SECURED)
    assert scram_store(state).get("carol", "SCRAM-SHA-256") == carol
    assert allowed(state, "READ", "x")
    state.close()
    state = open_state(tmp_path, SECURED)
    assert scram_store(state).get("carol", "SCRAM-SHA-256") == carol
    assert len(state.metadata_image.acls) == 1
    state.close()
