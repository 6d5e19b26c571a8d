"""Shared fixtures for the oracle tests: Kafka's own Java code, compiled and kept running.

The oracle tests compare kwire with Apache Kafka itself. They need a JDK (``java`` and ``javac``);
Kafka's jars are fetched with pip by ``tools/kafka_jars.py`` on first use. A missing JDK fails the
run loudly: these tests are part of ``make test`` and must never be skipped silently.

Generic fixtures (any oracle test can use them):

* ``java_classes(*names)`` compiles ``tools/java/<name>.java`` and returns the classes directory
  (cached by source hash, so only the first call of a session pays for ``javac``).
* ``start_java(main, sources, *args)`` starts a long-lived JVM running ``main`` and returns a
  :class:`JavaProcess` that speaks JSON lines over its stdin/stdout; every process is stopped at the
  end of the session. One JVM per session instead of one per case keeps the tier fast.

Protocol fixtures (``tools/java/ProtocolOracle.java``):

* ``protocol_oracle``: the ProtocolOracle server (``encode``, ``decode``, ``reencode``, ``frame``,
  ``apiKeys`` and ``dump`` requests; see the Java file's header).
* ``kafka_schemas``: its ``dump`` document, the wire schema and defaults of every message-version.

Several test directories have a conftest.py, so in a full run the module name ``conftest`` is
ambiguous: import :class:`JavaProcess` for annotations only (under ``TYPE_CHECKING``).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from kafka_jars import compile_java, java_command

REQUEST_TIMEOUT = 300.0  # seconds for one request line (a batch); only a hung JVM ever hits it


def require_jdk() -> None:
    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    if missing:
        pytest.fail(
            f"the oracle tests need a JDK, but {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not on PATH "
            "(on Debian/Ubuntu: apt-get install openjdk-17-jdk-headless)",
            pytrace=False,
        )


class JavaProcessError(RuntimeError):
    """The JVM died, hung or answered something that is not a JSON line."""


class JavaProcess:
    """One long-lived JVM that reads a JSON value per line on stdin and answers one per line on stdout.

    ``request(obj)`` sends one value and returns the decoded reply. Sending a list makes one line
    that carries a whole batch (a server such as ProtocolOracle answers it with a list), which saves
    the per-line round trip when thousands of cases are checked. stderr goes to a temporary file
    so that a chatty JVM can never block on a full pipe; its tail is shown when the process fails.
    """

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the JVM; close()
        self._proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr
        )
        self._buffer = bytearray()

    def request(self, value: Any, timeout: float = REQUEST_TIMEOUT) -> Any:
        line = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(line.encode("utf-8") + b"\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            raise self._failure("the JVM is gone (broken pipe)") from None
        reply = self._read_line(timeout)
        try:
            return json.loads(reply)
        except ValueError:
            raise self._failure(
                f"the JVM answered a line that is not JSON: {reply[:200]!r}"
            ) from None

    def batch(self, requests: Sequence[Any], timeout: float = REQUEST_TIMEOUT) -> list[Any]:
        """Sends several requests as one line; returns the replies in the same order."""
        replies = self.request(list(requests), timeout)
        if not isinstance(replies, list) or len(replies) != len(requests):
            raise self._failure(f"asked {len(requests)} requests, got {replies!r:.200}")
        return replies

    def _read_line(self, timeout: float) -> str:
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                failure = self._failure(f"no answer within {timeout:.0f} s")
                self._proc.kill()
                raise failure
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    self._proc.wait(timeout=10)
                    raise self._failure(f"the JVM exited with status {self._proc.returncode}")
                self._buffer += chunk
        end = self._buffer.index(b"\n")
        line = bytes(self._buffer[:end]).decode("utf-8")
        del self._buffer[: end + 1]
        return line

    def _failure(self, what: str) -> JavaProcessError:
        self._stderr.seek(0)
        tail = self._stderr.read()[-4000:].decode("utf-8", "replace")
        return JavaProcessError(f"{what}\ncommand: {' '.join(self.argv)}\nstderr:\n{tail}")

    def close(self) -> None:
        """Ends the JVM (end of input stops a server; kill it if that does not) and closes the pipes."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        with contextlib.suppress(OSError):
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc.stdout.close()
        self._stderr.close()


@pytest.fixture(scope="session")
def java_classes() -> Callable[..., Path]:
    """``java_classes("A", "B")`` compiles tools/java/A.java and B.java; returns the classes dir."""
    require_jdk()

    def compile_sources(*names: str) -> Path:
        return compile_java(*names)

    return compile_sources


@pytest.fixture(scope="session")
def start_java(java_classes: Callable[..., Path]) -> Iterator[Callable[..., JavaProcess]]:
    """``start_java("Main", ["Main", "Helper"], *args)``: a JSON-lines JVM, stopped after the session."""
    started: list[JavaProcess] = []

    def start(main: str, sources: Sequence[str], *args: str) -> JavaProcess:
        process = JavaProcess([*java_command(main, java_classes(*sources)), *args])
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()


@pytest.fixture(scope="session")
def protocol_oracle(start_java: Callable[..., JavaProcess]) -> JavaProcess:
    """Kafka's generated protocol classes behind a JSON-lines server (tools/java/ProtocolOracle.java)."""
    return start_java("ProtocolOracle", ["ProtocolOracle"], "serve")


@pytest.fixture(scope="session")
def kafka_schemas(protocol_oracle: JavaProcess) -> dict[str, Any]:
    """The jar's wire schema and defaults for every message-version (ProtocolOracle's dump)."""
    dump = protocol_oracle.request({"op": "dump"})
    assert "error" not in dump, dump
    return dump  # type: ignore[no-any-return]
