"""DescribeCluster (API 60): the cluster id, controller and brokers.

Versions: v0 (Kafka 2.8, KIP-700) the brokers and the cluster's authorized operations; v1
(KIP-919) the endpoint type asked for (brokers or controllers); v2 (KIP-1073) fenced brokers on
request.

Follows ``AuthHelper.computeDescribeClusterResponse`` on a broker endpoint.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import (
    CLUSTER,
    authorized_operations,
)
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._metadata import NO_OPERATIONS
from kwire.broker._routing import live_nodes
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
)

__all__ = ["handle_describe_cluster"]


# DescribeCluster endpoint types (KIP-919)
ENDPOINT_BROKER: Final = 1


ENDPOINT_CONTROLLER: Final = 2


_ENDPOINT_NAMES: Final = {ENDPOINT_BROKER: "BROKER", ENDPOINT_CONTROLLER: "CONTROLLER"}


DESCRIBE_CLUSTER_RESPONSE: Final = DescribeClusterResponse


DESCRIBE_CLUSTER_BROKER: Final = DescribeClusterResponse.DescribeClusterBroker


@register(60, 0, 2)
def handle_describe_cluster(
    state: BrokerState, ctx: RequestContext, request: DescribeClusterRequest
) -> Any:
    """DescribeCluster (``AuthHelper.computeDescribeClusterResponse`` on a broker endpoint)."""
    version = ctx.api_version
    endpoint = request.endpoint_type if version >= 1 else ENDPOINT_BROKER
    if endpoint not in _ENDPOINT_NAMES:
        return DESCRIBE_CLUSTER_RESPONSE(
            throttle_time_ms=0,
            error_code=int(
                ErrorCode.INVALID_REQUEST if version == 0 else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
            ),
            error_message=f"Unsupported endpoint type {endpoint}",
            cluster_id="",
            controller_id=-1,
            brokers=[],
        )
    if endpoint != ENDPOINT_BROKER:
        return DESCRIBE_CLUSTER_RESPONSE(
            throttle_time_ms=0,
            error_code=int(
                ErrorCode.INVALID_REQUEST if version == 0 else ErrorCode.MISMATCHED_ENDPOINT_TYPE
            ),
            error_message="The request was sent to an endpoint of type BROKER, but we wanted an "
            f"endpoint of type {_ENDPOINT_NAMES[endpoint]}",
            cluster_id="",
            controller_id=-1,
            brokers=[],
        )
    brokers = [
        DESCRIBE_CLUSTER_BROKER(
            broker_id=node,
            host=host,
            port=port,
            rack=state.static_config.get("broker.rack"),
            is_fenced=False,
        )
        for node, host, port in live_nodes(state, ctx)
    ]
    if version >= 2 and request.include_fenced_brokers:
        brokers.extend(_fenced_brokers(state, ctx, {b.broker_id for b in brokers}))
        brokers.sort(key=lambda b: b.broker_id)
    return DESCRIBE_CLUSTER_RESPONSE(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        endpoint_type=ENDPOINT_BROKER,
        cluster_id=state.cluster_id,
        controller_id=min(state.live_brokers, default=state.node_id),
        brokers=brokers,
        cluster_authorized_operations=(
            authorized_operations(state, ctx, CLUSTER, "kafka-cluster")
            if request.include_cluster_authorized_operations
            else NO_OPERATIONS
        ),
    )


def _fenced_brokers(state: BrokerState, ctx: RequestContext, listed: set[int]) -> list[Any]:
    """KIP-1073 (DescribeCluster v2 ``IncludeFencedBrokers``): the registered brokers that are
    fenced (a stopped node of an in-process cluster), at their registered endpoint of the
    request's listener (``KRaftMetadataCache.getBrokerNodes``)."""
    out = []
    for broker in state.metadata_image.brokers.values():
        if broker.broker_id in listed or not broker.fenced:
            continue
        for name, host, port, _protocol in broker.endpoints:
            if name == ctx.listener_name:
                out.append(
                    DESCRIBE_CLUSTER_BROKER(
                        broker_id=broker.broker_id,
                        host=host,
                        port=port,
                        rack=state.static_config.get("broker.rack"),
                        is_fenced=True,
                    )
                )
    return out
