"""``kwire broker`` start-up failures: one line naming the problem and what to do, exit status 2
for a usage error and 1 for a runtime one, and nothing written to the data directory before the
checks pass. Unknown config keys are warned about as Kafka does. The CLI runs as a subprocess;
the ``Broker`` API's own checks run in-process."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kwire.broker import Broker, BrokerError, ConfigError

SRC = Path(__file__).resolve().parents[3] / "src"


def kwire_broker(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "kwire", "broker", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("kwire broker: "), lines[0]
    return lines[0]


def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = kwire_broker("--data-dir", str(tmp_path / "data"), "--port", str(port))
    assert done.returncode == 1
    line = one_line(done)
    assert f"127.0.0.1:{port}" in line and "in use" in line and "--port" in line
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_port_out_of_range(tmp_path: Path, port: str) -> None:
    done = kwire_broker("--data-dir", str(tmp_path / "data"), "--port", port)
    assert done.returncode == 2
    line = one_line(done)
    assert f"--port {port}" in line and "to 65535" in line
    assert not (tmp_path / "data").exists()


def test_port_not_a_number(tmp_path: Path) -> None:
    done = kwire_broker("--data-dir", str(tmp_path / "data"), "--port", "abc")
    assert done.returncode == 2
    assert "--port" in one_line(done)


def test_data_dir_is_a_file(tmp_path: Path) -> None:
    file = tmp_path / "data"
    file.write_text("not a directory")
    done = kwire_broker("--data-dir", str(file), "--port", "0")
    assert done.returncode == 2
    line = one_line(done)
    assert str(file) in line and "is a file" in line
    assert file.read_text() == "not a directory"


def test_data_dir_not_writable(tmp_path: Path) -> None:
    # /proc refuses new directories even to root
    done = kwire_broker("--data-dir", "/proc/kwire-data", "--port", "0")
    assert done.returncode == 1
    line = one_line(done)
    assert "/proc/kwire-data" in line and "--data-dir" in line


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("num.partitions=abc", "num.partitions"),
        ("num.partitions", "KEY=VALUE"),
        ("log.segment.bytes=1", "log.segment.bytes"),
    ],
)
def test_bad_config_value(tmp_path: Path, setting: str, expected: str) -> None:
    done = kwire_broker("--data-dir", str(tmp_path / "data"), "--port", "0", "--config", setting)
    assert done.returncode == 2
    line = one_line(done)
    assert expected in line and "--config" in line
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("listeners=FOO://127.0.0.1:0", "No security protocol defined for listener FOO"),
        ("listeners=garbage", "Invalid value garbage for configuration listeners"),
        ("listeners=SSL://127.0.0.1:0", "listener SSL uses TLS but ssl.certfile is not set"),
        (
            "listeners=PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
            "Each listener must have a different name, PLAINTEXT is repeated",
        ),
    ],
)
def test_bad_listeners_refused_before_writing(tmp_path: Path, setting: str, expected: str) -> None:
    # Kafka's KafkaConfig refuses these at start, before LogManager touches log.dirs
    done = kwire_broker("--data-dir", str(tmp_path / "data"), "--port", "0", "--config", setting)
    assert done.returncode == 2, done.stderr
    line = one_line(done)
    assert expected in line and "--config" in line, line
    assert not (tmp_path / "data").exists()


def test_another_node_s_data_dir_is_one_line(tmp_path: Path) -> None:
    # Kafka's MetaPropertiesEnsemble.verify refuses it at start (a RuntimeException there)
    with Broker(tmp_path / "data", node_id=1):
        pass
    meta = (tmp_path / "data" / "meta.properties").read_text()
    done = kwire_broker("--data-dir", str(tmp_path / "data"), "--port", "0", "--node-id", "2")
    assert done.returncode == 1, done.stderr
    line = one_line(done)
    assert "Stored node id 1 doesn't match previous node id 2" in line, line
    assert (tmp_path / "data" / "meta.properties").read_text() == meta


def test_a_data_dir_that_fails_to_load_is_one_last_line(tmp_path: Path) -> None:
    """An I/O error while loading the logs (here a file where a partition's directory belongs;
    a full disk in life): the last line says the broker cannot start and why, as the line for
    a failure while running does, not a bare error code."""
    with Broker(tmp_path / "data"):
        pass
    metadata = tmp_path / "data" / "__cluster_metadata-0"
    for f in metadata.iterdir():
        f.unlink()
    metadata.rmdir()
    metadata.write_text("not a directory")
    done = kwire_broker("--data-dir", str(tmp_path / "data"), "--port", "0")
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"kwire broker: cannot start: the data dir {tmp_path / 'data'} "), last
    assert "__cluster_metadata-0" in last and "File exists" in last, last


def test_bad_log_level(tmp_path: Path) -> None:
    done = kwire_broker("--data-dir", str(tmp_path / "data"), "--log-level", "loud")
    assert done.returncode == 2
    line = one_line(done)
    assert "'loud'" in line and "debug" in line and "info" in line
    assert not (tmp_path / "data").exists()


def test_bad_host(tmp_path: Path) -> None:
    done = kwire_broker("--data-dir", str(tmp_path / "data"), "--host", "no such host!")
    assert done.returncode == 2
    line = one_line(done)
    assert "--host 'no such host!'" in line and "127.0.0.1" in line
    assert not (tmp_path / "data").exists()


def test_missing_data_dir_is_one_line() -> None:
    done = kwire_broker("--port", "0")
    assert done.returncode == 2
    assert "--data-dir" in one_line(done)


def test_help_shows_defaults() -> None:
    done = kwire_broker("--help")
    assert done.returncode == 0
    assert "default: 9092" in done.stdout and "default: 127.0.0.1" in done.stdout


def test_unknown_config_key_warned_as_kafka_does_in_the_cli(tmp_path: Path) -> None:
    # Kafka warns and starts; a port in use stops this broker right after the warning
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = kwire_broker(
            "--data-dir",
            str(tmp_path / "data"),
            "--port",
            str(port),
            "--config",
            "no.such.setting=1",
            "--config",
            "num.partitions=2",
        )
    assert done.returncode == 1
    warning, error = done.stderr.strip().splitlines()
    assert warning.endswith(
        "WARNING kwire.broker: The configuration 'no.such.setting' was supplied but isn't a "
        "known config."
    )
    assert "in use" in error


def test_unknown_config_key_warned_by_broker(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="kwire.broker"):
        Broker(tmp_path / "data", config={"no.such.setting": "1", "num.partitions": "2"})
    assert [r.getMessage() for r in caplog.records] == [
        "The configuration 'no.such.setting' was supplied but isn't a known config."
    ]
    assert not (tmp_path / "data").exists()


def test_bad_config_value_refused_by_broker_before_writing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"num\.partitions"):
        Broker(tmp_path / "data", config={"num.partitions": "abc"})
    assert not (tmp_path / "data").exists()


def test_broker_helpers_raise_broker_error_for_unknown_topics(tmp_path: Path) -> None:
    with Broker(tmp_path / "data") as broker:
        with pytest.raises(BrokerError, match="UNKNOWN_TOPIC_OR_PARTITION"):
            broker.end_offsets("missing")
        with pytest.raises(BrokerError, match="UNKNOWN_TOPIC_OR_PARTITION"):
            broker.delete_topic("missing")


def test_unknown_option_is_one_line(tmp_path: Path) -> None:
    done = kwire_broker("--data-dir", str(tmp_path / "data"), "--bogus")
    assert done.returncode == 2
    assert "--bogus" in one_line(done)
    assert not (tmp_path / "data").exists()


def test_unknown_kafka_version_is_one_line(tmp_path: Path) -> None:
    done = kwire_broker("--data-dir", str(tmp_path / "data"), "--kafka-version", "9.9")
    assert done.returncode == 2
    line = one_line(done)
    assert "'9.9'" in line and "4.3" in line
    assert not (tmp_path / "data").exists()
