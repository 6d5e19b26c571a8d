"""``kwire broker``: run a Kafka broker on a data directory until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

EXIT_OK = 0
EXIT_FAILURE = 1  # the data directory is another broker's, or failed (an I/O error) while serving
EXIT_USAGE = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "broker",
        help="run a Kafka broker that real clients use unchanged",
        description=(
            "Run a single-node Kafka broker over a Kafka data directory. It prints "
            "'kwire broker listening on HOST:PORT' once it accepts connections and stops "
            "cleanly (logs flushed and checkpointed) on SIGTERM or SIGINT."
        ),
    )
    parser.add_argument("--data-dir", required=True, help="the log directory (log.dirs)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=9092, help="port to listen on (0: any free)")
    parser.add_argument(
        "--kafka-version",
        default=None,
        metavar="RELEASE",
        help="the Apache Kafka release to behave as, 0.8.0 to 4.3 (default: the newest)",
    )
    parser.add_argument("--node-id", type=int, default=1, help="node.id")
    parser.add_argument(
        "--nodes",
        type=int,
        default=1,
        metavar="N",
        help="run an in-process cluster of N brokers (node ids 1..N) sharing the data directory; "
        "node n listens on PORT + n - 1 (PORT 0: free ports)",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka broker setting (repeatable), e.g. num.partitions=3",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics on http://127.0.0.1:PORT/metrics (0: any free port)",
    )
    parser.add_argument(
        "--report-removed-in",
        default=None,
        metavar="RELEASE",
        help="log each client (software name and version) that uses a protocol version Kafka "
        "RELEASE removed (4.0: KIP-896), and print them all at shutdown",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    parser.set_defaults(func=run)


def _parse_config(items: list[str]) -> dict[str, str]:
    config: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--config takes KEY=VALUE, not {item!r}")
        config[key.strip()] = value.strip()
    return config


def run(args: argparse.Namespace) -> int:
    from kwire.broker import Broker, Cluster, ConfigError
    from kwire.errors import DataDirLockedError
    from kwire.protocol.releases import NEWEST

    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        config = _parse_config(args.config)
        if args.nodes < 1:
            raise ValueError(f"--nodes takes a positive number, not {args.nodes}")
        broker: Broker
        if args.nodes > 1:
            broker = Cluster(
                args.data_dir,
                nodes=args.nodes,
                host=args.host,
                port=args.port,
                kafka_version=args.kafka_version or NEWEST,
                config=config,
                metrics_port=args.metrics_port,
                report_removed_in=args.report_removed_in,
            )
        else:
            broker = Broker(
                args.data_dir,
                host=args.host,
                port=args.port,
                kafka_version=args.kafka_version or NEWEST,
                node_id=args.node_id,
                config=config,
                metrics_port=args.metrics_port,
                report_removed_in=args.report_removed_in,
            )
        if args.report_removed_in is not None:
            from kwire.broker._upgrade import removed_versions

            removed_versions(args.report_removed_in)
    except (ValueError, ConfigError, KeyError) as exc:
        print(f"kwire broker: {exc}", file=sys.stderr)
        return EXIT_USAGE

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await broker.start_async()
        if isinstance(broker, Cluster):
            for node in broker.node_ids:
                print(
                    f"kwire broker listening on {broker.node_bootstrap(node)} (node {node} of "
                    f"{len(broker.node_ids)}, Kafka {broker.personality.release}, data dir "
                    f"{args.data_dir})",
                    flush=True,
                )
            print(f"kwire cluster bootstrap servers {broker.bootstrap}", flush=True)
        else:
            print(
                f"kwire broker listening on {broker.bootstrap} "
                f"(Kafka {broker.personality.release}, data dir {args.data_dir})",
                flush=True,
            )
        if broker.metrics_port is not None:
            print(
                f"kwire broker metrics on http://127.0.0.1:{broker.metrics_port}/metrics",
                flush=True,
            )
        stopping = asyncio.ensure_future(stop.wait())
        halted = asyncio.ensure_future(broker.wait_halted())
        try:
            await asyncio.wait({stopping, halted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            halted.cancel()
            if args.report_removed_in is not None and broker.running:
                _print_removed(broker.removed_version_report(), args.report_removed_in)
            await broker.stop_async()
        if broker.failed_log_dir is not None:
            # Kafka's Exit.halt(1) when its log directories have failed
            print(
                f"kwire broker: stopped: the data dir {broker.failed_log_dir} failed (I/O error);"
                " the next start recovers it",
                file=sys.stderr,
                flush=True,
            )
            return EXIT_FAILURE
        return EXIT_OK

    try:
        return asyncio.run(main())
    except DataDirLockedError as exc:
        print(f"kwire broker: {exc}", file=sys.stderr)
        return EXIT_FAILURE


def _print_removed(uses: list[dict[str, object]], release: str) -> None:
    """The clients that would break on ``release``, one line each."""
    if not uses:
        print(f"no client used a protocol version Kafka {release} removed", flush=True)
        return
    print(f"clients using protocol versions Kafka {release} removed:", flush=True)
    for u in uses:
        print(
            f"  {u['client_software_name']}/{u['client_software_version']} "
            f"client_id={u['client_id']}: {u['api']} v{u['version']} ({u['requests']} requests)",
            flush=True,
        )
