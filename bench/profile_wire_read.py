"""Where kafka-wire's executor time goes, without Spark: the per-partition read function, profiled.

Starts one ``kwire broker`` on loopback, produces ``--mb`` MiB (1 KiB values, lz4, 4 partitions,
as bench_wire.py), then runs ``KafkaWireReader.read`` (what each Spark task runs) over every
partition ``--rounds`` times, printing per round the wall time, this process's CPU time and the
broker's CPU time; ``--profile`` runs the last round under cProfile. ``--option k=v`` passes
kafka-wire options (e.g. ``columns=key,value``, ``kafka.max.partition.fetch.bytes=1048576``).

    .venv/bin/python bench/profile_wire_read.py [--mb 128] [--rounds 4] [--profile] [--option k=v]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_client import VALUE, produce, start_broker


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--option", action="append", default=[], help="a kafka-wire option, k=v")
    args = ap.parse_args()

    from pyspark.sql.pandas.types import from_arrow_schema

    from kwire.client import LATEST, KafkaClient
    from kwire.spark._schema import RECORD_COLUMNS, arrow_schema
    from kwire.spark._wire_source import KafkaWireDataSource, WireRange

    with tempfile.TemporaryDirectory(prefix="kwire-profile-wire-") as tmp:
        proc, bootstrap = start_broker(os.path.join(tmp, "data"))
        try:
            count = produce(bootstrap, "bench", args.mb, 4)
            with KafkaClient({"bootstrap.servers": bootstrap}) as client:
                client.metadata(["bench"])
                tps = [("bench", p) for p in range(4)]
                ends = {p: o for (_, p), o in client.list_offsets(tps, LATEST).items()}
            options = {"kafka.bootstrap.servers": bootstrap, "subscribe": "bench"}
            options.update(dict(o.split("=", 1) for o in args.option))
            source = KafkaWireDataSource(options)
            schema = source.schema()
            if isinstance(schema, str):  # the default DDL: the same columns, without a session
                schema = from_arrow_schema(arrow_schema([*RECORD_COLUMNS, "_corrupt_record"]))
            reader = source.reader(schema)

            def broker_cpu() -> float:
                with open(f"/proc/{proc.pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

            def run() -> None:
                rows = 0
                for part, end in ends.items():
                    for batch in reader.read(WireRange("bench", part, 0, end)):
                        rows += batch.num_rows
                assert rows == count, (rows, count)

            print(f"{count:,} records, {len(schema.fields)} columns")
            for r in range(args.rounds):
                t0, c0, b0 = time.perf_counter(), time.process_time(), broker_cpu()
                if args.profile and r == args.rounds - 1:
                    profile = cProfile.Profile()
                    profile.runcall(run)
                    pstats.Stats(profile).sort_stats("tottime").print_stats(25)
                else:
                    run()
                wall = time.perf_counter() - t0
                print(
                    f"round {r}: {wall:.2f} s wall, {time.process_time() - c0:.2f} s CPU, "
                    f"broker {broker_cpu() - b0:.2f} s CPU, {count * VALUE / (1 << 20) / wall:.1f} "
                    "MiB/s",
                    flush=True,
                )
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


if __name__ == "__main__":
    main()
