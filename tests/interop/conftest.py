"""Fixtures for the interop tests: a fresh ``kwire broker`` per test, in-process or as a process.

* ``broker``: a :class:`kwire.broker.Broker` on a free loopback port with its data dir in
  ``tmp_path``, started before the test and stopped after it.
* ``start_broker(data_dir=None, kafka_version="4.3", config=None, **kw)``: more of them (another
  personality, or a restart on the same data dir); every one is stopped at the end of the test.
* ``broker_cli(data_dir=None, port=0, kafka_version=None, config=None)``: ``kwire broker`` started
  as ``sys.executable -m kwire broker ...``; returns a :class:`CliBroker` once the process printed
  its "listening on" line. Every process started is killed by its pid at the end of the test.

Nothing here waits without a deadline: a broker that does not come up fails the test.

kafka-python 3 calls the deprecated ``importlib.resources.read_text`` while importing (and when it
loads a protocol schema later): it is imported here with that warning silenced, and the tests that
use it ignore DeprecationWarnings raised from ``kafka.*`` (pyproject turns warnings into errors).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka
    import kafka.admin
    import kafka.errors

    del kafka

START_TIMEOUT = 30.0  # seconds for a broker to listen
STOP_TIMEOUT = 15.0
LISTENING = re.compile(r"kwire broker listening on (\S+):(\d+)")


@pytest.fixture
def start_broker(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    from kwire.broker import Broker

    started: list[Any] = []
    count = 0

    def start(
        data_dir: str | os.PathLike[str] | None = None,
        kafka_version: str = "4.3",
        config: dict[str, str] | None = None,
        port: int = 0,
        node_id: int = 1,
    ) -> Any:
        nonlocal count
        count += 1
        if data_dir is None:
            data_dir = tmp_path / f"data-{count}"
        b = Broker(
            str(data_dir),
            host="127.0.0.1",
            port=port,
            kafka_version=kafka_version,
            node_id=node_id,
            config={"num.partitions": "1", **(config or {})},
        )
        started.append(b)
        b.start()
        return b

    yield start
    for b in reversed(started):
        with contextlib.suppress(Exception):
            b.stop()


@pytest.fixture
def broker(start_broker: Callable[..., Any]) -> Any:
    return start_broker()


class CliBroker:
    """One ``kwire broker`` process; its output goes to files next to its data dir."""

    def __init__(
        self,
        data_dir: Path,
        port: int = 0,
        kafka_version: str | None = None,
        config: dict[str, str] | None = None,
        node_id: int = 1,
    ) -> None:
        self.data_dir = data_dir
        self.requested_port = port
        argv = [
            sys.executable,
            "-m",
            "kwire",
            "broker",
            "--data-dir",
            str(data_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--node-id",
            str(node_id),
        ]
        if kafka_version is not None:
            argv += ["--kafka-version", kafka_version]
        for k, v in {"num.partitions": "1", **(config or {})}.items():
            argv += ["--config", f"{k}={v}"]
        self.argv = argv
        n = 0
        while (data_dir.parent / f"{data_dir.name}.out.{n}").exists():
            n += 1
        self.out_path = data_dir.parent / f"{data_dir.name}.out.{n}"
        self.err_path = data_dir.parent / f"{data_dir.name}.err.{n}"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        self.pid = self.proc.pid
        self.host, self.port = self._wait_listening()
        self.bootstrap = f"{self.host}:{self.port}"

    def output(self) -> str:
        out = self.out_path.read_text(errors="replace")
        err = self.err_path.read_text(errors="replace")
        return f"stdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}"

    def _wait_listening(self) -> tuple[str, int]:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            found = LISTENING.search(self.out_path.read_text(errors="replace"))
            if found:
                return found.group(1), int(found.group(2))
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"kwire broker exited with {self.proc.returncode} before listening\n"
                    f"{' '.join(self.argv)}\n{self.output()}"
                )
            time.sleep(0.05)
        self.kill()
        raise AssertionError(f"kwire broker not listening after {START_TIMEOUT} s\n{self.output()}")

    def kill(self, sig: int = signal.SIGKILL) -> int | None:
        """Sends ``sig`` to this process (by its pid) and waits for it; returns its exit status."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.proc.wait(timeout=STOP_TIMEOUT)
        return self.proc.returncode


@pytest.fixture
def broker_cli(tmp_path: Path) -> Iterator[Callable[..., CliBroker]]:
    started: list[CliBroker] = []

    def start(
        data_dir: Path | None = None,
        port: int = 0,
        kafka_version: str | None = None,
        config: dict[str, str] | None = None,
    ) -> CliBroker:
        b = CliBroker(data_dir or tmp_path / "data", port, kafka_version, config)
        started.append(b)
        return b

    yield start
    for b in started:
        b.kill()
