"""Frames cut by ``kwire.protocol.FrameReader`` (the broker's and the client's edge), sans-IO.

A stream of same-size frames is written into the reader's buffers as asyncio's
``BufferedProtocol`` does (up to 64 KiB per read, ``get_buffer`` / ``buffer_updated``), and every
whole frame is taken with ``next_frame(limit)`` after each read, as the broker's connection task
does. Small frames are cut from the staging buffer; a frame over 8 KiB that does not arrive in
one read is received into its own buffer. Best of ``--rounds``.

    .venv/bin/python bench/bench_frame_reader.py [--frames 10000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import struct
import time

from kwire.protocol import FrameReader

LIMIT = 100 * 1024 * 1024  # socket.request.max.bytes
READ = 65_536


def feed_all(stream: memoryview, frames: int) -> float:
    reader = FrameReader()
    taken = 0
    pos, total = 0, len(stream)
    started = time.perf_counter()
    while pos < total:
        buf = reader.get_buffer()
        n = min(len(buf), READ, total - pos)
        buf[:n] = stream[pos : pos + n]
        reader.buffer_updated(n)
        pos += n
        while reader.next_frame(LIMIT) is not None:
            taken += 1
    elapsed = time.perf_counter() - started
    assert taken == frames and reader.buffered == 0
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    for body in (100, 1_000, 16_000, 200_000):
        frames = args.frames if body < 100_000 else max(1, args.frames // 5)
        stream = memoryview((struct.pack(">i", body) + os.urandom(body)) * frames)
        best = min(feed_all(stream, frames) for _ in range(args.rounds))
        print(
            f"frame body {body:>7} B x {frames}: {best * 1e3:8.2f} ms, "
            f"{best / frames * 1e6:6.2f} us/frame"
        )


if __name__ == "__main__":
    main()
