"""Per-request CPU of a Produce inside the broker, stage by stage, without sockets or asyncio.

A ``kwire.broker.Broker`` runs in this process; librdkafka (confluent-kafka) produces 1 KiB values
(``bench_broker.py``'s seeded words, lz4, acks=1) to it with the chosen ``batch.size``, and the
Produce request frames the server received are kept. Then, over a fresh broker state on a
temporary directory, each captured frame goes through what ``KafkaServer._requests`` does with it:
decode the frame, build the ``RequestContext``, the validation jobs (``validation_jobs``), run
them (decompression, the record walk, offset assignment: ``_work_ahead``), the handler
(``dispatch``: the append to the segment files) and the response encode
(``encode_response_pieces``). CPU time per stage (``time.process_time_ns``: this thread only) is
summed over chunks of requests; the minimum over chunks is printed, the figure least disturbed by
other work on the machine. ``--profile`` prints cProfile's top entries instead.

What it leaves out: the socket reads and writes, the event loop and the connection's bookkeeping
(``bench_broker.py --produce-only`` reports the whole broker process's CPU per request).

``--server`` adds the server's own part: the frames go, one at a time, through a real
``KafkaServer`` connection on an asyncio loop, with a transport that keeps nothing (no socket):
``_Channel.buffer_updated`` (what the transport calls after ``recv_into``), ``read_frame``, the
body of ``_requests``, the handler, ``BrokerMetrics.request`` and ``_send`` (the response encode
and ``write``). It prints that whole path's CPU per request (minimum over chunks) and, with
``--profile``, its cProfile entries; the difference from the stages' total is the server's part
without the system calls.

    .venv/bin/python bench/bench_produce_cpu.py [--batch 16384] [--chunks 30] [--profile] [--server]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

STAGES = ("decode", "context", "jobs", "validate", "dispatch", "encode")


def capture(batch_size: int, messages: int) -> list[bytes]:
    """The Produce request frames librdkafka sends to an in-process broker."""
    import bench_broker as bb

    import kwire.broker._server as server
    from kwire.broker import Broker

    frames: list[bytes] = []
    decode = getattr(server, "decode_request_frame")  # noqa: B009 (not re-exported: patched)

    def keep(frame: Any, **kwargs: Any) -> Any:
        if len(frame) > 8 and frame[4] == 0 and frame[5] == 0:  # API key 0: Produce
            frames.append(bytes(frame))
        return decode(frame, **kwargs)

    setattr(server, "decode_request_frame", keep)  # noqa: B010
    try:
        with tempfile.TemporaryDirectory() as d:
            broker = Broker(d)
            broker.start()
            try:
                bootstrap = f"127.0.0.1:{broker.port}"
                bb.create_topic(bootstrap, "t", 1)
                bb.produce(bootstrap, "t", messages, batch_size=batch_size)
            finally:
                broker.stop()
    finally:
        setattr(server, "decode_request_frame", decode)  # noqa: B010
    return frames


def run(frames: list[bytes], chunks: int, per_chunk: int, profile: bool) -> dict[str, float]:
    from kwire.broker._apis import dispatch
    from kwire.broker._context import RequestContext
    from kwire.broker._data import validation_jobs
    from kwire.broker._server import INLINE_VALIDATION_BYTES, encode_response_pieces
    from kwire.broker._state import SystemClock
    from kwire.broker.testing import make_state
    from kwire.protocol import decode_request_frame

    clock = time.process_time_ns
    best = dict.fromkeys(STAGES, float("inf"))
    with tempfile.TemporaryDirectory() as d:
        state = make_state(d, clock=SystemClock(), startup=True)
        state.create_topic("t", 1)
        profiler = cProfile.Profile() if profile else None
        for chunk in range(chunks + 1):  # chunk 0 warms up
            spent = dict.fromkeys(STAGES, 0)
            if profiler is not None and chunk == 1:
                profiler.enable()
            for i in range(per_chunk):
                frame = frames[(chunk * per_chunk + i) % len(frames)]
                t0 = clock()
                request = decode_request_frame(frame, allow_trailing=True)
                t1 = clock()
                header = request.header
                ctx = RequestContext(
                    api_key=0,
                    api_version=int(header.request_api_version),
                    correlation_id=request.correlation_id,
                    client_id=header.client_id,
                    client_address="127.0.0.1",
                    node_id=1,
                )
                t2 = clock()
                jobs = validation_jobs(state, ctx, request.message)
                t3 = clock()
                ctx.validated = {key: job(INLINE_VALIDATION_BYTES) for key, job in jobs}
                t4 = clock()
                outcome = dispatch(state, ctx, request.message)
                t5 = clock()
                encode_response_pieces(outcome, ctx.api_version, request.correlation_id)
                t6 = clock()
                for name, a, b in zip(
                    STAGES, (t0, t1, t2, t3, t4, t5), (t1, t2, t3, t4, t5, t6), strict=True
                ):
                    spent[name] += b - a
            if chunk:
                for name in STAGES:
                    best[name] = min(best[name], spent[name] / per_chunk / 1000)
        if profiler is not None:
            profiler.disable()
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(25)
            stats.sort_stats("cumtime").print_stats(25)
    return best


def _read_frames(data: bytes) -> list[bytes]:
    """Size-prefixed frames, one after another."""
    frames, pos = [], 0
    while pos < len(data):
        end = pos + 4 + int.from_bytes(data[pos : pos + 4], "big")
        frames.append(data[pos:end])
        pos = end
    return frames


class _NullTransport(asyncio.Transport):
    """A transport with no socket: ``write`` counts the responses and wakes the driver."""

    def __init__(self) -> None:
        super().__init__()
        self.responses = 0
        self.wrote = asyncio.Event()
        self.closing = False

    def write(self, data: Any) -> None:
        self.responses += 1
        self.wrote.set()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else default

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


def run_server(frames: list[bytes], chunks: int, per_chunk: int, profile: bool) -> float:
    """CPU per request of the server's whole path (``--server``), minimum over chunks, in us."""
    from kwire.broker._security import Listener
    from kwire.broker._server import KafkaServer, _Channel
    from kwire.broker._state import SystemClock
    from kwire.broker.testing import make_state

    clock = time.process_time_ns

    async def drive(state: Any) -> float:
        server = KafkaServer(state, "127.0.0.1", 0)
        channel = _Channel(server, Listener("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 0), False)
        transport = _NullTransport()
        channel.connection_made(transport)
        await asyncio.sleep(0)  # the connection's task starts
        best = float("inf")
        profiler = cProfile.Profile() if profile else None
        for chunk in range(chunks + 1):  # chunk 0 warms up
            if profiler is not None and chunk == 1:
                profiler.enable()
            t0 = clock()
            for i in range(per_chunk):
                frame = memoryview(frames[(chunk * per_chunk + i) % len(frames)])
                transport.wrote.clear()
                while frame:  # what the event loop does after each recv_into
                    buf = channel.get_buffer(-1)
                    n = min(len(buf), len(frame))
                    buf[:n] = frame[:n]
                    frame = frame[n:]
                    channel.buffer_updated(n)
                await transport.wrote.wait()
            if chunk:
                best = min(best, (clock() - t0) / per_chunk / 1000)
        if profiler is not None:
            profiler.disable()
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(30)
            stats.print_callees(r"\(_requests\)|\(_send\)")
        channel.eof_received()
        transport.close()
        channel.connection_lost(None)
        await server.stop()
        return best

    with tempfile.TemporaryDirectory() as d:
        state = make_state(d, clock=SystemClock(), startup=True)
        state.create_topic("t", 1)
        try:
            return asyncio.run(drive(state))
        finally:
            state.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--batch", type=int, default=16384, help="librdkafka batch.size")
    ap.add_argument("--messages", type=int, default=3000, help="messages produced to capture")
    ap.add_argument("--chunks", type=int, default=30)
    ap.add_argument("--per-chunk", type=int, default=100, help="requests per chunk")
    ap.add_argument("--profile", action="store_true", help="cProfile's top entries as well")
    ap.add_argument("--server", action="store_true", help="also the server's whole path")
    ap.add_argument("--server-only", action="store_true", help="only the server's whole path")
    ap.add_argument(
        "--frames",
        type=Path,
        help="captured frames: read from this file if it exists, else captured and written to it "
        "(the same requests for runs of different commits, e.g. under valgrind)",
    )
    args = ap.parse_args(argv)
    if args.frames is not None and args.frames.exists():
        frames = _read_frames(args.frames.read_bytes())
    else:
        frames = capture(args.batch, args.messages)
        if args.frames is not None:
            args.frames.write_bytes(b"".join(frames))  # each frame starts with its size
    if args.server_only:
        whole = run_server(frames, args.chunks, args.per_chunk, args.profile)
        print(f"{'server':9s} {whole:7.1f} us (the server's whole path, no socket)")
        return 0
    print(
        f"# {len(frames)} Produce requests captured, {sum(map(len, frames)) // len(frames)} B each"
    )
    best = run(frames, args.chunks, args.per_chunk, args.profile)
    for name in STAGES:
        print(f"{name:9s} {best[name]:7.1f} us")
    print(f"{'total':9s} {sum(best.values()):7.1f} us (sum of the stages' minimums)")
    if args.server:
        whole = run_server(frames, args.chunks, args.per_chunk, args.profile)
        print(f"{'server':9s} {whole:7.1f} us (the server's whole path, no socket)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
