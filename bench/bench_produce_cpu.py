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

    .venv/bin/python bench/bench_produce_cpu.py [--batch 16384] [--chunks 30] [--profile]
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--batch", type=int, default=16384, help="librdkafka batch.size")
    ap.add_argument("--messages", type=int, default=3000, help="messages produced to capture")
    ap.add_argument("--chunks", type=int, default=30)
    ap.add_argument("--per-chunk", type=int, default=100, help="requests per chunk")
    ap.add_argument("--profile", action="store_true", help="cProfile's top entries as well")
    args = ap.parse_args(argv)
    frames = capture(args.batch, args.messages)
    print(
        f"# {len(frames)} Produce requests captured, {sum(map(len, frames)) // len(frames)} B each"
    )
    best = run(frames, args.chunks, args.per_chunk, args.profile)
    for name in STAGES:
        print(f"{name:9s} {best[name]:7.1f} us")
    print(f"{'total':9s} {sum(best.values()):7.1f} us (sum of the stages' minimums)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
