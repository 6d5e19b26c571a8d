"""A config value that is not a number of its type is refused with Kafka's words, ``ConfigDef``'s
``Invalid value V for configuration NAME: Not a number of type LONG`` (Java's parseInt/parseLong:
decimal digits with an optional sign, surrounding blanks trimmed, within the type's range), to a
client (CreateTopics, IncrementalAlterConfigs) and on ``kwire broker --config``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from interop_helpers import ck_conf

pytestmark = pytest.mark.interop

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize(
    ("name", "value", "kind"),
    [
        ("retention.ms", "abc", "LONG"),
        ("retention.ms", "1_000", "LONG"),
        ("max.message.bytes", "3000000000", "INT"),
        ("min.cleanable.dirty.ratio", "half", "DOUBLE"),
    ],
)
def test_create_topics_refuses_a_non_number(broker: Any, name: str, value: str, kind: str) -> None:
    admin = AdminClient(ck_conf(broker.bootstrap))
    (future,) = admin.create_topics([NewTopic("t", 1, 1, config={name: value})]).values()
    with pytest.raises(KafkaException) as info:
        future.result(timeout=30)
    error = info.value.args[0]
    assert error.name() == "INVALID_CONFIG"
    assert (
        error.str()
        == f"Invalid value {value} for configuration {name}: Not a number of type {kind}"
    )


def test_a_number_with_blanks_is_accepted_as_java_trims_it(broker: Any) -> None:
    admin = AdminClient(ck_conf(broker.bootstrap))
    (future,) = admin.create_topics(
        [NewTopic("t", 1, 1, config={"retention.ms": " 5000 "})]
    ).values()
    future.result(timeout=30)


def test_cli_config_value_not_a_number(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kwire",
            "broker",
            "--data-dir",
            str(tmp_path / "data"),
            "--port",
            "0",
            "--config",
            "num.partitions=abc",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "kwire broker: --config: Invalid value abc for configuration num.partitions: "
        "Not a number of type INT"
    ]
    assert not (tmp_path / "data").exists()
