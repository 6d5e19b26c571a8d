"""Broker metrics with Kafka's names, quota accounting per request, and a Prometheus endpoint.

Approach: the server calls ``BrokerMetrics.request`` once per answered request (and
``connected`` once per connection); that call counts the request by (client software, client id,
API, version), puts its time in a per-API histogram, adds produced and fetched record bytes per
topic, and, only when quotas are configured (``_quotas``), records the quota usage and sets
``throttle_time_ms`` on the response (KIP-219: the server then mutes the connection for that
long). Everything else is computed when scraped: ``render`` writes the Prometheus text format
(version 0.0.4) with Kafka's JMX names mapped as the JMX exporter does
(``kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,version=9`` ->
``kafka_network_requestmetrics_requests_total{request="Produce",version="9"}``), plus consumer
group lag from the group coordinator's committed offsets (kafka_exporter's
``kafka_consumergroup_lag``) and the clients that use versions a later release removed
(``_upgrade``).

``serve_metrics`` is a small asyncio HTTP/1.1 responder for ``GET /metrics`` in the broker's loop
(no dependency); the metrics are read on the loop, so no lock is needed.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import struct
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from kwire.broker._context import RequestContext
from kwire.broker._quotas import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuotas,
    client_quotas,
)
from kwire.broker._state import BrokerState
from kwire.protocol import releases

if TYPE_CHECKING:
    from kwire.broker import _upgrade

__all__ = ["BrokerMetrics", "broker_metrics", "render", "serve_metrics"]

log = logging.getLogger("kwire.broker")

PRODUCE: Final = 0
FETCH: Final = 1
#: Histogram buckets of request time, in ms.
BUCKETS_MS: Final = (
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    25.0,
    50.0,
    100.0,
    250.0,
    500.0,
    1000.0,
    2500.0,
    5000.0,
    10000.0,
)
_BATCH_HEAD: Final = struct.Struct(">qiib")  # base offset, length, leader epoch, magic
_COUNT: Final = struct.Struct(">i")
_QUOTA_TYPES: Final = {
    PRODUCER_BYTE_RATE: "produce",
    CONSUMER_BYTE_RATE: "fetch",
    REQUEST_PERCENTAGE: "request",
}


def _records_size(records: Any) -> int:
    if records is None:
        return 0
    nbytes = getattr(records, "nbytes", None)
    return int(nbytes) if nbytes is not None else len(records)


def _record_count(records: Any) -> int:
    """Records in the v2 batches of a produce request (v0/v1 message sets count 0)."""
    view = memoryview(records)
    pos, count, end = 0, 0, len(view)
    while pos + 61 <= end:
        _, length, _, magic = _BATCH_HEAD.unpack_from(view, pos)
        if length < 49:  # not a batch (a corrupt request: the handler refused it)
            break
        if magic == 2:
            count += _COUNT.unpack_from(view, pos + 57)[0]
        pos += 12 + length
    return count


class _Histogram:
    __slots__ = ("counts", "sum_ms")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS_MS) + 1)
        self.sum_ms = 0.0


class BrokerMetrics:
    """What the broker counts (module doc); ``state.services.metrics``."""

    def __init__(self, state: BrokerState) -> None:
        self.state = state
        self.quotas: ClientQuotas = client_quotas(state)
        #: (software, client id, api key, version) -> requests; software is (name, version)
        self.usage: dict[tuple[tuple[str, str] | None, str | None, int, int], int] = {}
        self.latency: dict[int, _Histogram] = {}
        self.bytes_in: dict[str, int] = {}
        self.messages_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}
        #: the open connections (the server's connection objects)
        self.open: dict[int, Any] = {}
        self.created: dict[str, int] = {}
        #: the release whose removed versions are logged as they are seen (``--report-removed-in``)
        self.report_release: str | None = None
        self._removed: frozenset[tuple[int, int]] = frozenset()
        self._reported: set[tuple[tuple[str, str] | None, str | None, int, int]] = set()

    def report_removed_in(self, release: str) -> None:
        from kwire.broker import _upgrade  # the client report's module, loaded when used

        self.report_release = release
        self._removed = _upgrade.removed_versions(release)

    # --- hooks (the server calls these) -------------------------------------------------------

    def connected(self, conn: Any) -> Callable[[], None]:
        """A connection opened; call the result when it closes."""
        key = id(conn)
        self.open[key] = conn
        name = conn.listener.name
        self.created[name] = self.created.get(name, 0) + 1

        def closed() -> None:
            self.open.pop(key, None)

        return closed

    def request(
        self,
        conn: Any,
        ctx: RequestContext,
        message: Any,
        outcome: Any,
        size: int,
        started_ns: int,
        parked_ns: int = 0,
    ) -> int:
        """Count one request; the throttle time (ms) the connection is muted for after it."""
        api, version = ctx.api_key, ctx.api_version
        key = (conn.software, ctx.client_id, api, version)
        usage = self.usage
        usage[key] = usage.get(key, 0) + 1
        fetched = 0
        elapsed_ns = time.perf_counter_ns() - started_ns
        hist = self.latency.get(api)
        if hist is None:
            hist = self.latency[api] = _Histogram()
        ms = elapsed_ns / 1e6
        hist.counts[bisect.bisect_left(BUCKETS_MS, ms)] += 1
        hist.sum_ms += ms
        if api == PRODUCE:
            self._produced(message)
        elif api == FETCH and outcome is not None:
            fetched = self._fetched(outcome)
        if self._removed and (api, version) in self._removed and key not in self._reported:
            self._reported.add(key)
            self._log_removed(key)
        if not self.quotas.active:
            return 0
        # KafkaApis: produce bytes are the request's size, fetch bytes the response's; the
        # request-time quota takes the handler's time (not a long poll's wait; acks=0 exempt).
        principal = ctx.principal
        user = principal.partition(":")[2] if principal.startswith("User:") else principal
        client_id = ctx.client_id or ""
        now = self.state.now_ms()
        quotas = self.quotas
        throttle = 0
        if api == PRODUCE:
            throttle = quotas.record(PRODUCER_BYTE_RATE, user, client_id, size, now)
        elif api == FETCH and outcome is not None:
            throttle = quotas.record(CONSUMER_BYTE_RATE, user, client_id, fetched, now)
        if not (api == PRODUCE and outcome is None):
            busy = max(0, elapsed_ns - parked_ns)
            throttle = max(throttle, quotas.record_request_time(user, client_id, busy, now))
        if throttle and outcome is not None and hasattr(outcome, "throttle_time_ms"):
            outcome.throttle_time_ms = max(outcome.throttle_time_ms, throttle)
        return throttle

    def _produced(self, message: Any) -> None:
        by_id = self.state.topics_by_id
        for topic_data in message.topic_data:
            name = topic_data.name
            if not name:
                found = by_id.get(topic_data.topic_id)
                name = found.name if found is not None else str(topic_data.topic_id)
            size = count = 0
            for pdata in topic_data.partition_data:
                records = pdata.records
                if records is not None:
                    size += _records_size(records)
                    count += _record_count(records)
            self.bytes_in[name] = self.bytes_in.get(name, 0) + size
            self.messages_in[name] = self.messages_in.get(name, 0) + count

    def _fetched(self, response: Any) -> int:
        total = 0
        by_id = self.state.topics_by_id
        for topic in getattr(response, "responses", None) or ():
            size = sum(_records_size(p.records) for p in topic.partitions)
            if not size:
                continue
            name = topic.topic
            if not name:
                found = by_id.get(topic.topic_id)
                name = found.name if found is not None else str(topic.topic_id)
            self.bytes_out[name] = self.bytes_out.get(name, 0) + size
            total += size
        return total

    def _log_removed(self, key: tuple[tuple[str, str] | None, str | None, int, int]) -> None:
        from kwire.broker import _upgrade  # the client report's module, loaded when used

        software, client_id, api, version = key
        name, sw_version = software or (_upgrade.UNKNOWN, _upgrade.UNKNOWN)
        log.warning(
            "client %s/%s (client_id=%s) used %s v%d, which Kafka %s removed (KIP-896)",
            name,
            sw_version,
            client_id,
            releases.api_name(api),
            version,
            self.report_release,
        )

    # --- reports ------------------------------------------------------------------------------

    def usage_by_client(self) -> dict[tuple[str, str, str, int, int], int]:
        """(software name, software version, client id, api key, version) -> requests."""
        from kwire.broker import _upgrade  # the client report's module, loaded when used

        out: dict[tuple[str, str, str, int, int], int] = {}
        for (software, client_id, api, version), count in self.usage.items():
            name, sw_version = software or (_upgrade.UNKNOWN, _upgrade.UNKNOWN)
            key = (name, sw_version, client_id or "", api, version)
            out[key] = out.get(key, 0) + count
        return out

    def removed_version_report(self, release: str | None = None) -> list[_upgrade.RemovedUse]:
        from kwire.broker import _upgrade  # the client report's module, loaded when used

        return _upgrade.report(self.usage_by_client(), release or self.report_release or "4.0")


def broker_metrics(state: BrokerState) -> BrokerMetrics:
    """The state's metrics (``state.services.metrics``), made on first use."""
    metrics = state.services.metrics
    if metrics is None:
        metrics = state.services.metrics = BrokerMetrics(state)
    return metrics


# --- the Prometheus text format -----------------------------------------------------------------


def _escape(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels: object) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.lines.append(f"# HELP {name} {help_text}")
        self.lines.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, value: float, **labels: object) -> None:
        self.lines.append(f"{name}{_labels(**labels)} {_number(value)}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _api_name(key: int) -> str:
    try:
        return releases.api_name(key)
    except KeyError:
        return str(key)


def render(state: BrokerState) -> str:
    """Every metric in the Prometheus text exposition format."""
    m = broker_metrics(state)
    w = _Writer()
    requests: dict[tuple[int, int], int] = {}
    for (_, _, api, version), count in m.usage.items():
        requests[(api, version)] = requests.get((api, version), 0) + count
    w.family(
        "kafka_network_requestmetrics_requests_total",
        "counter",
        "Requests answered (kafka.network:type=RequestMetrics,name=RequestsPerSec).",
    )
    for (api, version), count in sorted(requests.items()):
        w.sample(
            "kafka_network_requestmetrics_requests_total",
            count,
            request=_api_name(api),
            version=version,
        )
    name = "kafka_network_requestmetrics_totaltimems"
    w.family(
        name,
        "histogram",
        "Time from a request read to its response ready, in ms, long polls included "
        "(kafka.network:type=RequestMetrics,name=TotalTimeMs).",
    )
    for api, hist in sorted(m.latency.items()):
        request = _api_name(api)
        running = 0
        for bound, count in zip(BUCKETS_MS, hist.counts, strict=False):
            running += count
            w.sample(f"{name}_bucket", running, request=request, le=_number(bound))
        running += hist.counts[-1]
        w.sample(f"{name}_bucket", running, request=request, le="+Inf")
        w.sample(f"{name}_sum", hist.sum_ms, request=request)
        w.sample(f"{name}_count", running, request=request)
    for metric, values, text in (
        ("bytesin", m.bytes_in, "Record bytes produced (BytesInPerSec)."),
        ("messagesin", m.messages_in, "Records produced in v2 batches (MessagesInPerSec)."),
        ("bytesout", m.bytes_out, "Record bytes fetched (BytesOutPerSec)."),
    ):
        family = f"kafka_server_brokertopicmetrics_{metric}_total"
        w.family(
            family, "counter", f"{text[:-1]} per topic (kafka.server:type=BrokerTopicMetrics)."
        )
        for topic, value in sorted(values.items()):
            w.sample(family, value, topic=topic)
    _connections(w, m)
    _quota_metrics(w, m.quotas, state.now_ms())
    _consumer_lag(w, state)
    release = m.report_release or "4.0"
    family = "kwire_clients_using_removed_versions"
    w.family(
        family,
        "gauge",
        f"Requests by clients at protocol versions Kafka {release} removed (KIP-896), by client.",
    )
    for use in m.removed_version_report(release):
        w.sample(
            family,
            use.requests,
            software=use.client_software_name,
            software_version=use.client_software_version,
            client_id=use.client_id,
            api=use.api,
            version=use.version,
            removed_in=release,
        )
    return w.text()


def _connections(w: _Writer, m: BrokerMetrics) -> None:
    from kwire.broker import _upgrade  # the client report's module, loaded when used

    counts: dict[str, int] = {}
    clients: dict[tuple[str, str, str], int] = {}
    for conn in m.open.values():
        listener = conn.listener.name
        counts[listener] = counts.get(listener, 0) + 1
        name, version = conn.software or (_upgrade.UNKNOWN, _upgrade.UNKNOWN)
        key = (listener, name, version)
        clients[key] = clients.get(key, 0) + 1
    family = "kafka_server_socket_server_metrics_connection_count"
    w.family(family, "gauge", "Open connections per listener (socket-server-metrics).")
    for listener in sorted(set(counts) | set(m.created)):
        w.sample(family, counts.get(listener, 0), listener=listener)
    family = "kafka_server_socket_server_metrics_connection_creation_total"
    w.family(family, "counter", "Connections accepted per listener (socket-server-metrics).")
    for listener, count in sorted(m.created.items()):
        w.sample(family, count, listener=listener)
    family = "kafka_server_socket_server_metrics_connections"
    w.family(
        family,
        "gauge",
        "Open connections by client software name and version (KIP-511; socket-server-metrics).",
    )
    for (listener, name, version), count in sorted(clients.items()):
        w.sample(
            family,
            count,
            client_software_name=name,
            client_software_version=version,
            listener=listener,
        )


def _quota_metrics(w: _Writer, quotas: ClientQuotas, now_ms: int) -> None:
    rows: list[tuple[str, tuple[str, str], float, int]] = []
    for key, kind in sorted(quotas.kinds.items()):
        for tags, sensor in sorted(kind.sensors.items()):
            rows.append((key, tags, sensor.measure(now_ms), kind.throttled_ms.get(tags, 0)))
    for key, metric, unit in (
        (PRODUCER_BYTE_RATE, "produce_byte_rate", "bytes/s"),
        (CONSUMER_BYTE_RATE, "fetch_byte_rate", "bytes/s"),
        (REQUEST_PERCENTAGE, "request_request_time", "% of a thread"),
    ):
        family = f"kafka_server_{metric}"
        quota_type = _QUOTA_TYPES[key]
        w.family(family, "gauge", f"Quota sensor rate in {unit} (kafka.server:type={quota_type}).")
        for k, (user, client_id), rate, _ in rows:
            if k == key:
                w.sample(family, rate, user=user, client_id=client_id)
        family = f"kafka_server_{quota_type}_throttle_time_ms_total"
        w.family(family, "counter", f"Throttle time handed out by the {quota_type} quota, in ms.")
        for k, (user, client_id), _, throttled in rows:
            if k == key:
                w.sample(family, throttled, user=user, client_id=client_id)


def _consumer_lag(w: _Writer, state: BrokerState) -> None:
    coordinator = state.services.group
    groups: Iterable[Any] = getattr(coordinator, "groups", {}).values() if coordinator else ()
    offsets = "kafka_consumergroup_current_offset"
    lag = "kafka_consumergroup_lag"
    rows: list[tuple[str, str, int, int, int]] = []
    for group in groups:
        if getattr(group, "state", None) == "Dead":
            continue
        for (topic, index), committed in sorted(group.offsets.items()):
            partition = state.partition(topic, index)
            if partition is None or committed.offset < 0:
                continue
            hw = partition.high_watermark
            rows.append(
                (group.group_id, topic, index, committed.offset, max(0, hw - committed.offset))
            )
    w.family(offsets, "gauge", "Committed offset per group and partition.")
    for group_id, topic, index, offset, _ in sorted(rows):
        w.sample(offsets, offset, group=group_id, topic=topic, partition=index)
    w.family(lag, "gauge", "High watermark minus committed offset per group and partition.")
    for group_id, topic, index, _, behind in sorted(rows):
        w.sample(lag, behind, group=group_id, topic=topic, partition=index)


# --- the HTTP responder -------------------------------------------------------------------------


async def serve_metrics(state: BrokerState, port: int, host: str = "127.0.0.1") -> asyncio.Server:
    """Serve ``GET /metrics`` on ``host:port`` in the running loop (the broker's)."""

    async def respond(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
            method, _, rest = head.partition(b" ")
            path = rest.partition(b" ")[0].partition(b"?")[0]
            if method not in (b"GET", b"HEAD"):
                status, body = "405 Method Not Allowed", b"only GET\n"
            elif path in (b"/metrics", b"/"):
                status, body = "200 OK", render(state).encode("utf-8")
            else:
                status, body = "404 Not Found", b"see /metrics\n"
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8"
                f"\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("ascii")
            )
            if method != b"HEAD":
                writer.write(body)
            await writer.drain()
        except (
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            TimeoutError,
            ConnectionError,
        ):
            pass
        except Exception:
            log.exception("metrics request failed")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    server = await asyncio.start_server(respond, host, port, reuse_address=True)
    log.info("metrics on http://%s:%d/metrics", host, server.sockets[0].getsockname()[1])
    return server
