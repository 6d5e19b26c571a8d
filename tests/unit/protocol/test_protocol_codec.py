"""The generated codecs: bytes exactly as Kafka writes them, tagged fields, write-time rules."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kwire import DecodeError, EncodeError, UnsupportedVersionError
from kwire.protocol import inspect, message_class
from kwire.protocol._testing import nested, roundtrip


def _uv(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def test_classes_by_name_and_api_key() -> None:
    cls = message_class("MetadataResponse")
    assert message_class(api_key=3, kind="response") is cls
    assert message_class(api_key=3, kind="request") is message_class("MetadataRequest")
    assert (cls.API_KEY, cls.MIN_VERSION, cls.MAX_VERSION) == (3, 0, 13)
    with pytest.raises(KeyError):
        message_class("NoSuchMessage")
    with pytest.raises(TypeError):
        message_class(api_key=3)


def test_generated_class_shape(metadata_response: Any) -> None:
    topic_cls = nested(metadata_response, "topics")
    assert topic_cls.__name__ == "MetadataResponseTopic"
    msg = metadata_response(throttle_time_ms=7)
    assert msg.brokers == [] and msg.controller_id == -1 and msg.cluster_id is None
    assert msg.cluster_authorized_operations == -(2**31)
    other = metadata_response(throttle_time_ms=7)
    assert msg == other and msg.brokers is not other.brokers  # fresh mutable defaults
    assert "throttle_time_ms=7" in repr(msg)
    with pytest.raises(AttributeError):
        msg.no_such_field = 1  # __slots__
    assert [f.attr for f in inspect(metadata_response, 0)] == ["brokers", "topics"]
    assert "cluster_authorized_operations" in [f.attr for f in inspect("MetadataResponse", 9)]
    assert "Each topic in the response." in (topic_cls.__doc__ or "")


def test_non_flexible_bytes_by_hand() -> None:
    # MetadataRequest v1: topics is a nullable int32-counted array of int16-length strings.
    req_cls = message_class("MetadataRequest")
    topic = nested(req_cls, "topics")
    msg = req_cls(topics=[topic(name="ab")])
    assert roundtrip(msg, 1) == b"\x00\x00\x00\x01" + b"\x00\x02ab"
    assert roundtrip(req_cls(topics=None), 1) == b"\xff\xff\xff\xff"


def test_flexible_bytes_by_hand() -> None:
    # ApiVersionsRequest v3: two compact strings then an empty tag section.
    cls = message_class("ApiVersionsRequest")
    msg = cls(client_software_name="kw", client_software_version="1")
    assert roundtrip(msg, 3) == b"\x03kw" + b"\x021" + b"\x00"


def test_uvarint_300_in_a_compact_length() -> None:
    cls = message_class("ApiVersionsRequest")
    data = roundtrip(cls(client_software_name="x" * 299, client_software_version=""), 3)
    assert data[:2] == b"\xac\x02"  # 299 + 1 = 300, as KIP-482 encodes it


def test_nullable_struct_marker() -> None:
    cls = message_class("ConsumerGroupHeartbeatResponse")
    assignment = nested(cls, "assignment")
    assert cls().assignment is None
    none_bytes = roundtrip(cls(), 0)
    with_bytes = roundtrip(cls(assignment=assignment()), 0)
    # marker -1 for null, 1 then the struct (empty compact array + tag section) otherwise
    assert none_bytes.endswith(b"\xff\x00")
    assert with_bytes.endswith(b"\x01\x01\x00\x00")


def test_records_are_zero_copy_memoryviews() -> None:
    cls = message_class("ProduceRequest")
    topic = nested(cls, "topic_data")
    part = nested(topic, "partition_data")
    payload = bytes(range(40))
    msg = cls(
        acks=1,
        timeout_ms=10,
        topic_data=[topic(name="t", partition_data=[part(index=0, records=payload)])],
    )
    for version in (3, 9):
        data = msg.encode(version)
        back = cls.decode(data, version)
        records = back.topic_data[0].partition_data[0].records
        assert isinstance(records, memoryview) and records == payload
        assert records.obj is data  # a view into the caller's buffer, not a copy
        assert back.encode(version) == data


class TestTaggedFields:
    cls = message_class("ApiVersionsResponse")

    def test_written_only_when_not_default(self) -> None:
        plain = self.cls(error_code=0)
        tagged = self.cls(error_code=0, zk_migration_ready=True)
        base = roundtrip(plain, 3)
        data = roundtrip(tagged, 3)
        assert base.endswith(b"\x00")  # empty tag section
        assert data.endswith(b"\x01" + b"\x03\x01\x01")  # one tag: tag 3, size 1, true

    def test_ascending_order_with_unknown_tags_merged(self) -> None:
        msg = self.cls(
            finalized_features_epoch=5,
            zk_migration_ready=True,
            unknown_tags={2**20: b"zz", 0x7F: b""},
        )
        data = roundtrip(msg, 3)
        tail = (
            _uv(4)
            + b"\x01\x08"
            + (5).to_bytes(8, "big")  # tag 1: FinalizedFeaturesEpoch
            + b"\x03\x01\x01"  # tag 3: ZkMigrationReady
            + b"\x7f\x00"  # unknown tag 127, empty
            + _uv(2**20)
            + b"\x02zz"  # unknown tag 2^20
        )
        assert data.endswith(tail)

    def test_unknown_tags_round_trip_byte_identical(self) -> None:
        data = self.cls(error_code=1).encode(3)
        raw = data[:-1] + b"\x02" + b"\x09\x03abc" + b"\x0a\x00"
        msg = self.cls.decode(raw, 3)
        assert msg.unknown_tags == {9: b"abc", 10: b""}
        assert msg.encode(3) == raw

    def test_known_tag_leftover_bytes_are_skipped(self) -> None:
        base = self.cls(error_code=1).encode(3)
        raw = base[:-1] + b"\x01" + b"\x03\x03\x01\xee\xee"  # bool true plus two extra bytes
        msg = self.cls.decode(raw, 3)
        assert msg.zk_migration_ready is True

    def test_known_tag_overrunning_its_size_is_an_error(self) -> None:
        base = self.cls(error_code=1).encode(3)
        raw = base[:-1] + b"\x01" + b"\x01\x04" + b"\x00" * 8  # int64 declared as 4 bytes
        with pytest.raises(DecodeError, match="needs 8 bytes") as info:
            self.cls.decode(raw, 3)
        assert info.value.path == "finalized_features_epoch"

    def test_duplicate_tags_are_an_error(self) -> None:
        base = self.cls(error_code=1).encode(3)
        raw = base[:-1] + b"\x02" + b"\x09\x00" + b"\x09\x00"
        with pytest.raises(DecodeError, match="duplicate tag 9"):
            self.cls.decode(raw, 3)

    def test_tags_cannot_be_written_in_non_flexible_versions(self) -> None:
        with pytest.raises(UnsupportedVersionError, match="Tagged fields were set"):
            self.cls(unknown_tags={5: b""}).encode(2)


class TestWriteRules:
    def test_non_default_absent_field_names_the_field(self, metadata_response: Any) -> None:
        msg = metadata_response(cluster_authorized_operations=5)
        with pytest.raises(UnsupportedVersionError, match="clusterAuthorizedOperations"):
            msg.encode(12)
        assert metadata_response.decode(msg.encode(9), 9) == msg

    def test_ignorable_absent_field_is_dropped(self, metadata_response: Any) -> None:
        msg = metadata_response(throttle_time_ms=100)  # ThrottleTimeMs is v3+, ignorable
        assert metadata_response.decode(msg.encode(2), 2).throttle_time_ms == 0

    def test_null_in_non_nullable_field(self, metadata_response: Any) -> None:
        broker = nested(metadata_response, "brokers")
        msg = metadata_response(brokers=[broker(host=None)])
        with pytest.raises(EncodeError, match=r"null in non-nullable field .*brokers\[0\]\.host"):
            msg.encode(12)
        out = bytearray(b"keep")
        with pytest.raises(EncodeError):
            msg.encode_into(out, 12)
        assert out == b"keep"

    @pytest.mark.parametrize("version", [1, 12])
    def test_string_over_32767_bytes(self, metadata_response: Any, version: int) -> None:
        broker = nested(metadata_response, "brokers")
        ok = metadata_response(brokers=[broker(host="h" * 32767)])
        assert len(ok.encode(version)) > 32767
        too_long = metadata_response(brokers=[broker(host="é" * 16384)])  # 32768 UTF-8 bytes
        with pytest.raises(EncodeError, match="too long"):
            too_long.encode(version)

    def test_out_of_range_integer_names_the_field(self, metadata_response: Any) -> None:
        with pytest.raises(EncodeError, match=r"out of range for int32.*controller_id"):
            metadata_response(controller_id=2**31).encode(12)

    def test_unsupported_version(self, metadata_response: Any) -> None:
        with pytest.raises(UnsupportedVersionError):
            metadata_response().encode(14)
        with pytest.raises(UnsupportedVersionError):
            metadata_response.decode(b"", 99)


class TestDecodeErrors:
    def test_truncation_names_path_and_offset(self, metadata_response: Any) -> None:
        topic = nested(metadata_response, "topics")
        part = nested(topic, "partitions")
        msg = metadata_response(
            topics=[
                topic(name=f"t{i}", partitions=[part(partition_index=j) for j in range(8)])
                for i in range(4)
            ]
        )
        data = msg.encode(12)
        # cut inside the last partition of the last topic: path says where
        with pytest.raises(DecodeError) as info:
            metadata_response.decode(data[:-12], 12)
        err = info.value
        assert err.path is not None and err.path.startswith("topics[3].partitions[7].")
        assert err.offset is not None and 0 < err.offset <= len(data) - 12
        assert "MetadataResponse v12" in str(err) and isinstance(err, ValueError)

    def test_trailing_bytes(self, metadata_response: Any) -> None:
        with pytest.raises(DecodeError, match="trailing"):
            metadata_response.decode(metadata_response().encode(12) + b"\x00", 12)

    def test_negative_length_other_than_null(self) -> None:
        cls = message_class("MetadataRequest")
        with pytest.raises(DecodeError, match="negative array length -2"):
            cls.decode(b"\xff\xff\xff\xfe", 1)

    def test_null_in_non_nullable_string(self, metadata_response: Any) -> None:
        data = b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01" + b"\xff\xff"
        with pytest.raises(DecodeError, match="non-nullable") as info:
            metadata_response.decode(data, 0)
        assert info.value.path == "brokers[0].host"

    def test_varint_too_long(self) -> None:
        cls = message_class("ApiVersionsRequest")
        with pytest.raises(DecodeError, match="longer than 5 bytes"):
            cls.decode(b"\xff\xff\xff\xff\xff\x01", 3)

    def test_invalid_utf8(self) -> None:
        cls = message_class("ApiVersionsRequest")
        with pytest.raises(DecodeError, match="UTF-8") as info:
            cls.decode(b"\x03\xff\xfe\x01\x00", 3)
        assert info.value.offset == 1 and info.value.path == "client_software_name"

    def test_huge_count_fails_before_allocating(self, metadata_response: Any) -> None:
        data = (
            b"\x00\x00\x00\x00" + b"\xff\xff\xff\xff\x0f" + b"\x00" * 20
        )  # 29 bytes, 2^32 - 1 elements
        assert len(data) == 29
        with pytest.raises(DecodeError, match="elements"):
            metadata_response.decode(data, 12)

    def test_any_bytes_like_input(self, metadata_response: Any) -> None:
        data = metadata_response(throttle_time_ms=3).encode(12)
        for form in (bytearray(data), memoryview(data), memoryview(b"xx" + data)[2:]):
            assert metadata_response.decode(form, 12).throttle_time_ms == 3


class TestJson:
    def test_kafka_shape(self) -> None:
        cls = message_class("ApiVersionsResponse")
        msg = cls(error_code=0, zk_migration_ready=True)
        obj = msg.to_json(3)
        assert obj["zkMigrationReady"] is True and "finalizedFeaturesEpoch" not in obj
        assert cls.from_json(obj, 3) == msg

    def test_uuid_bytes_int64(self) -> None:
        cls = message_class("MetadataResponse")
        topic = nested(cls, "topics")
        u = uuid.UUID(bytes=bytes(range(16)))
        obj = cls(topics=[topic(name="t", topic_id=u)]).to_json(12)
        assert obj["topics"][0]["topicId"] == "AAECAwQFBgcICQoLDA0ODw"  # Kafka's base64url form
        sasl = message_class("SaslAuthenticateRequest")
        assert sasl(auth_bytes=b"\xff\x00").to_json(2) == {"authBytes": "/wA="}
        resp = message_class("SaslAuthenticateResponse")
        obj = resp(session_lifetime_ms=2**62).to_json(2)
        assert obj["sessionLifetimeMs"] == 2**62
        assert resp.from_json(obj, 2).session_lifetime_ms == 2**62

    def test_missing_mandatory_field(self) -> None:
        cls = message_class("ApiVersionsRequest")
        with pytest.raises(DecodeError, match="mandatory in version 3"):
            cls.from_json({"clientSoftwareName": "x"}, 3)


def test_tag_of_a_field_tagged_in_other_versions_is_rejected() -> None:
    # BrokerHeartbeatRequest.OfflineLogDirs is tag 0 from v1 (CordonedLogDirs tag 1 from v2);
    # at v0 Kafka's reader rejects tags 0 and 1, other tags are kept as unknown.
    cls = message_class("BrokerHeartbeatRequest")
    data = cls(unknown_tags={0: b""}).encode(0)  # Kafka's writer writes it too
    with pytest.raises(DecodeError, match="tag 0 is not valid for version 0"):
        cls.decode(data, 0)
    with pytest.raises(DecodeError, match="tag 1 is not valid for version 0"):
        cls.decode(cls(unknown_tags={1: b""}).encode(0), 0)
    assert cls.decode(cls(unknown_tags={2: b"x"}).encode(0), 0).unknown_tags == {2: b"x"}
    with pytest.raises(EncodeError, match="tagged at this version"):
        cls(unknown_tags={0: b""}).encode(1)  # tag 0 is OfflineLogDirs at v1: one tag twice


def test_messages_pickle_and_copy(metadata_response: Any) -> None:
    import copy
    import pickle

    topic = nested(metadata_response, "topics")
    msg = metadata_response(topics=[topic(name="t")], unknown_tags={3: b"x"})
    assert pickle.loads(pickle.dumps(msg)) == msg
    clone = copy.deepcopy(msg)
    assert clone == msg and clone.topics[0] is not msg.topics[0]


class TestJsonErrors:
    cls = message_class("MetadataResponse")

    def test_bad_types_name_the_field(self) -> None:
        obj = self.cls().to_json(12)
        obj["controllerId"] = "x"
        with pytest.raises(DecodeError, match="integer") as info:
            self.cls.from_json(obj, 12)
        assert info.value.path == "controller_id"
        obj = self.cls().to_json(12)
        obj["brokers"] = [{"nodeId": 1, "host": None, "port": 1, "rack": None}]
        with pytest.raises(DecodeError, match="non-nullable") as info:
            self.cls.from_json(obj, 12)
        assert info.value.path == "brokers[0].host"
        obj["brokers"] = [{"nodeId": 2**31, "host": "h", "port": 1, "rack": None}]
        with pytest.raises(DecodeError, match="range"):
            self.cls.from_json(obj, 12)

    def test_uuid_and_bytes_forms(self) -> None:
        topic = self.cls.MetadataResponseTopic
        obj = self.cls(topics=[topic(name="t")]).to_json(12)
        obj["topics"][0]["topicId"] = "not a uuid!"
        with pytest.raises(DecodeError, match="UUID"):
            self.cls.from_json(obj, 12)

    def test_non_default_absent_field(self) -> None:
        with pytest.raises(UnsupportedVersionError, match="clusterAuthorizedOperations"):
            self.cls(cluster_authorized_operations=1).to_json(12)
        assert "throttleTimeMs" not in self.cls(throttle_time_ms=5).to_json(2)  # ignorable

    def test_unsupported_version(self) -> None:
        with pytest.raises(UnsupportedVersionError):
            self.cls().to_json(99)
