"""The numba-compiled append walk is opt-in (``kwire.append.compiled.walk``): a broker that was
not asked for it never loads numba (and stays at its small resident size), whatever it is sent."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kwire.broker import Broker, ConfigError

SRC = Path(__file__).resolve().parents[3] / "src"

PRODUCE_THEN_REPORT = textwrap.dedent(
    """
    import sys
    from confluent_kafka import Producer
    from kwire.broker import Broker

    config = dict(arg.split("=", 1) for arg in sys.argv[2:])
    with Broker(sys.argv[1], config=config) as broker:
        broker.create_topic("t")
        producer = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": "lz4",
                             "linger.ms": 50, "batch.num.messages": 1000})
        for i in range(2000):  # batches of hundreds of records: what "auto" compiles for
            producer.produce("t", b"v" * 100)
        assert producer.flush(30) == 0
        assert broker.end_offsets("t") == [2000]
        walks = {p.log.compiled_validation for p in broker.state.iter_partitions()}
        print(sorted(map(str, walks)), "numba" in sys.modules)
    """
)


def produce(tmp_path: Path, *config: str) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    env.pop("KWIRE_DISABLE_NUMBA", None)
    done = subprocess.run(
        [sys.executable, "-c", PRODUCE_THEN_REPORT, str(tmp_path / "data"), *config],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_broker_never_loads_numba_unless_asked(tmp_path: Path) -> None:
    assert produce(tmp_path) == "['False'] False"


def test_the_compiled_walk_on_request(tmp_path: Path) -> None:
    assert produce(tmp_path, "kwire.append.compiled.walk=true") == "['True'] True"


def test_the_setting_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"kwire\.append\.compiled\.walk"):
        Broker(tmp_path / "data", config={"kwire.append.compiled.walk": "sometimes"})
