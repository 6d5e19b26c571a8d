"""``kwire broker``: run a Kafka broker on a data directory until SIGTERM, SIGINT or SIGHUP."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import signal
import socket
import sys
from typing import TYPE_CHECKING, Final, NoReturn

from kwire.cli._help import DefaultsHelpFormatter

if TYPE_CHECKING:
    from kwire.broker import Broker

EXIT_OK = 0
EXIT_RUNTIME = 1  # the data dir is another broker's, or failed (an I/O error) while serving
EXIT_USAGE = 2


#: what ``--log-level`` takes (``logging``'s level names)
LOG_LEVELS: Final = ("debug", "info", "warning", "error", "critical")


class UsageError(Exception):
    """A start-up failure the command line caused (exit status 2)."""


class StartError(Exception):
    """A start-up failure of the machine or the file system (exit status 1)."""


class _DefaultsHelp(DefaultsHelpFormatter):
    """``--help`` with each option's default, where it has one worth showing."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, []) or action.required:
            return action.help
        return super()._get_help_string(action)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "broker",
        help="run a Kafka broker that real clients use unchanged",
        description=(
            "Run a single-node Kafka broker over a Kafka data directory. It prints "
            "'kwire broker listening on HOST:PORT' once it accepts connections and stops "
            "cleanly (logs flushed and checkpointed) on SIGTERM, SIGINT or SIGHUP. Exit "
            "status: 0 after a clean stop, 1 when the machine refuses (port in use, data "
            "directory not writable), 2 for a usage error."
        ),
        formatter_class=_DefaultsHelp,
    )
    # every start-up failure is one line (argparse's own errors print the usage first)
    parser.error = usage_error  # type: ignore[method-assign]
    parser.add_argument(
        "--data-dir", required=True, help="the log directory (log.dirs), created if missing"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", default="9092", help="port to listen on (0: any free)")
    parser.add_argument(
        "--kafka-version",
        default=None,
        metavar="RELEASE",
        help="the Apache Kafka release to behave as, 0.8.0 to 4.3 (default: the newest)",
    )
    parser.add_argument("--node-id", default="1", help="node.id")
    parser.add_argument(
        "--nodes",
        default="1",
        metavar="N",
        help="run an in-process cluster of N brokers (node ids 1..N) sharing the data directory; "
        "node n listens on PORT + n - 1 (PORT 0: free ports)",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka broker setting (repeatable), e.g. num.partitions=3; Kafka's defaults "
        "otherwise",
    )
    parser.add_argument(
        "--metrics-port",
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
    parser.add_argument(
        "--log-level", default="info", help=f"logging level: {', '.join(LOG_LEVELS)}"
    )
    parser.set_defaults(func=run)


def usage_error(message: str) -> NoReturn:
    """Print a usage error as one line and exit with status 2 (argparse prints the usage too)."""
    print(f"kwire broker: {message} (see kwire broker --help)", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def _parse_config(items: list[str]) -> dict[str, str]:
    config: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--config takes KEY=VALUE, not {item!r}")
        config[key.strip()] = value.strip()
    return config


def _number(option: str, value: str | None, lo: int, hi: int, what: str) -> int:
    try:
        number = int(value or "")
    except ValueError:
        raise UsageError(f"{option} takes a number, not {value!r}; give {what}") from None
    if not lo <= number <= hi:
        raise UsageError(f"{option} {number} is out of range: give {what}")
    return number


def _resolvable(host: str) -> str | bytes:
    """``host`` as ``getaddrinfo`` takes it: an ASCII name as bytes, which is what the ``idna``
    codec gives for one (Python's fast path), without loading that codec (``encodings.idna``,
    ``stringprep``, ``unicodedata``) at every start; any other name as text, for the codec."""
    return host.encode("ascii") if host.isascii() else host


def _check_host(host: str) -> None:
    try:
        socket.getaddrinfo(_resolvable(host), None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise UsageError(
            f"--host {host!r} is neither an IP address nor a name this machine resolves; give "
            "an address such as 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)"
        ) from None


def _check_data_dir(path: str) -> None:
    """The data directory, or the directory it would be created in, must be a writable
    directory; checked without writing anything."""
    target = os.path.abspath(path)
    if os.path.exists(target) and not os.path.isdir(target):
        raise UsageError(
            f"--data-dir {path} is a file, not a directory; give a directory (created if missing)"
        )
    existing = target
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UsageError(
            f"--data-dir {path} cannot be created: {existing} is a file; give a directory"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise StartError(
            f"cannot write the data directory {path} ({existing} is not writable); give a "
            "directory you can write with --data-dir"
        )


def _check_port_free(host: str, port: int) -> None:
    """Bind the listener's address once (as asyncio will, with SO_REUSEADDR) so that a port in
    use is found before the data directory is touched."""
    if port == 0:
        return
    for family, kind, proto, _, address in socket.getaddrinfo(
        _resolvable(host), port, type=socket.SOCK_STREAM
    ):
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise StartError(
                        f"cannot listen on {host}:{port}: the port is in use (another broker?); "
                        "stop that process or choose another --port (0: any free port)"
                    ) from None
                if exc.errno == errno.EADDRNOTAVAIL:
                    raise StartError(
                        f"cannot listen on {host}:{port}: {host} is not an address of this "
                        "machine; give --host 127.0.0.1, 0.0.0.0 or one of its addresses"
                    ) from None
                if exc.errno == errno.EACCES:
                    raise StartError(
                        f"cannot listen on {host}:{port}: ports below 1024 need privileges; "
                        "choose a --port from 1024 (0: any free port)"
                    ) from None
                raise StartError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def run(args: argparse.Namespace) -> int:
    try:
        broker = _prepare(args)
    except UsageError as exc:
        print(f"kwire broker: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StartError as exc:
        print(f"kwire broker: {exc}", file=sys.stderr)
        return EXIT_RUNTIME
    try:
        return _serve(broker, args)
    except OSError as exc:  # the file system or the network, after the checks
        where = f" ({exc.filename})" if exc.filename else ""
        print(
            f"kwire broker: cannot start: {exc.strerror or exc}{where}; check --data-dir, "
            "--host and --port",
            file=sys.stderr,
        )
        return EXIT_RUNTIME


def _prepare(args: argparse.Namespace) -> Broker:
    """Every check that needs no writing, in order; then the broker, not yet started."""
    level = args.log_level.lower()
    if level not in LOG_LEVELS:
        raise UsageError(
            f"--log-level {args.log_level!r} is not a level; give one of " + ", ".join(LOG_LEVELS)
        )
    port = _number("--port", args.port, 0, 65535, "0 (any free port) to 65535")
    nodes = _number("--nodes", args.nodes, 1, 1000, "a cluster size from 1")
    node_id = _number("--node-id", args.node_id, 0, (1 << 31) - 1, "a node id from 0")
    metrics_port = (
        None
        if args.metrics_port is None
        else _number("--metrics-port", args.metrics_port, 0, 65535, "0 (any free port) to 65535")
    )
    if port and port + nodes - 1 > 65535:
        raise UsageError(f"--port {port} with --nodes {nodes} goes past port 65535")
    config = _parse_config(args.config)
    _check_host(args.host)
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from kwire.broker import Broker, Cluster, ConfigError
    from kwire.protocol.releases import NEWEST

    try:
        broker: Broker
        if nodes > 1:
            broker = Cluster(
                args.data_dir,
                nodes=nodes,
                host=args.host,
                port=port,
                kafka_version=args.kafka_version or NEWEST,
                config=config,
                metrics_port=metrics_port,
                report_removed_in=args.report_removed_in,
            )
        else:
            broker = Broker(
                args.data_dir,
                host=args.host,
                port=port,
                kafka_version=args.kafka_version or NEWEST,
                node_id=node_id,
                config=config,
                metrics_port=metrics_port,
                report_removed_in=args.report_removed_in,
            )
        if args.report_removed_in is not None:
            from kwire.broker._upgrade import removed_versions

            removed_versions(args.report_removed_in)
    except ConfigError as exc:
        raise UsageError(f"--config: {exc}") from None
    except (ValueError, KeyError) as exc:  # --kafka-version, --report-removed-in
        raise UsageError(str(exc).strip("'\"")) from None
    _check_data_dir(args.data_dir)
    for n in range(nodes):
        _check_port_free(args.host, port + n if port else 0)
    return broker


def _serve(broker: Broker, args: argparse.Namespace) -> int:
    from kwire.broker import Cluster
    from kwire.errors import DataDirLockedError, KafkaStorageError

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal(sig: signal.Signals) -> None:
            if not stop.is_set():
                logging.getLogger("kwire.broker").info("shutting down (%s)", sig.name)
            stop.set()

        # SIGHUP too (the terminal closed): a JVM runs Kafka's shutdown hook on it
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, on_signal, sig)
        try:
            await broker.start_async()
        except ValueError as exc:
            # the data directory refused at start (meta.properties of another node or cluster:
            # Kafka's MetaPropertiesEnsemble.verify), left as it was
            print(f"kwire broker: cannot start: {exc}", file=sys.stderr, flush=True)
            return EXIT_RUNTIME
        except KafkaStorageError as exc:
            # an I/O error while loading the logs (a full disk): the line a failure while
            # running gives, not the bare error code the generic handler prints
            print(
                f"kwire broker: cannot start: the data dir {exc.log_dir or args.data_dir} failed"
                f" ({exc.message})",
                file=sys.stderr,
                flush=True,
            )
            return EXIT_RUNTIME
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
            cause = broker.log_dir_failure or "I/O error"
            print(
                f"kwire broker: stopped: the data dir {broker.failed_log_dir} failed ({cause});"
                " the next start recovers it",
                file=sys.stderr,
                flush=True,
            )
            return EXIT_RUNTIME
        return EXIT_OK

    try:
        return asyncio.run(main())
    except DataDirLockedError as exc:
        print(f"kwire broker: {exc}", file=sys.stderr)
        return EXIT_RUNTIME


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
