"""A user's own spec directory gives the same codec, checked against Kafka's bytes.

``load_specs(path)`` compiles codecs at run time from any directory of Kafka JSON specs (a Kafka
checkout's ``clients/src/main/resources/common/message``, say). Here the directory is a copy of the
bundled specs outside the package; for every message-version the 3.9.1 jar can judge, the classes it gives must write
Kafka's bytes for the round-trip test's "min", "max" and two random instances and read Kafka's
bytes back to Kafka's JSON.
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from check_specs import json_diff
from test_protocol_kafka_roundtrip import (
    MESSAGE_VERSIONS,
    generate_cases,
    jar_versions,
    restore_records,
)

from kwire.protocol import load_specs
from kwire.protocol._bundled import SPEC_DIR

if TYPE_CHECKING:  # only for annotations: "conftest" names several modules in a full run
    from conftest import JavaProcess

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Any:
    target: Path = tmp_path_factory.mktemp("user") / "message"
    shutil.copytree(SPEC_DIR, target, ignore=shutil.ignore_patterns("SOURCE"))
    return load_specs(target)


@pytest.mark.parametrize("name", sorted({n for n, _ in MESSAGE_VERSIONS}))
def test_user_spec_directory_gives_kafkas_bytes(
    protocol_oracle: JavaProcess, registry: Any, name: str
) -> None:
    cls = registry.message_class(name)
    assert "_dynamic_" in cls.__module__  # compiled from the directory, not the bundled modules
    spec = registry.spec(name)
    asks, cases = [], []
    for version in jar_versions(name):  # the versions the 3.9.1 jar can judge
        for _, sent in generate_cases(name, version)[:4]:
            asks.append({"op": "encode", "message": name, "version": version, "json": sent})
            cases.append((version, sent))
    failures = []
    for (version, sent), reply in zip(cases, protocol_oracle.batch(asks), strict=True):
        assert "error" not in reply, reply
        kafka = base64.b64decode(reply["bytes"])
        mine = cls.from_json(sent, version).encode(version)
        if mine != kafka:
            failures.append(f"{name} v{version}: kwire {mine.hex()}, Kafka {kafka.hex()}")
        read = cls.decode(kafka, version).to_json(version)
        differences = json_diff(
            "", read, restore_records(reply["json"], sent, spec.struct, version)
        )
        if differences:
            failures.append(f"{name} v{version}: {differences[:3]}")
    assert not failures, "\n".join(failures[:10])
