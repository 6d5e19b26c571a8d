"""UnregisterBroker (API 64, KIP-500/KIP-631): remove a broker's registration from the cluster
metadata, as an operator does after decommissioning a node (``kafka-cluster.sh unregister``).

Versions: v0 (3.0) only; KRaft brokers serve it since 3.3 (forwarded to the controller), and
Kafka 4.0's controllers answer it directly (KIP-919).

Follows ``ControllerApis.handleUnregisterBroker`` and ``ReplicationControlManager.
unregisterBroker``: ALTER on the cluster; an id with no registration in the metadata image is
BROKER_ID_NOT_REGISTERED; otherwise the broker leaves every partition it leads
(``handleBrokerUnregistered``: PartitionChangeRecords) and an ``UnregisterBrokerRecord`` with its
broker epoch is written to ``__cluster_metadata``. Kafka does not ask whether the broker is
fenced: a running broker that is unregistered registers again (a new broker epoch), which in an
in-process cluster happens at once, keeping its listeners. A stopped node of ``--nodes N`` stays
unregistered until it starts again; DescribeCluster v2 with ``IncludeFencedBrokers`` (KIP-1073)
lists it as fenced before and not at all after.
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode
from kwire.protocol.messages import (
    UnregisterBrokerRecord,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)

__all__ = ["handle_unregister_broker", "unregister_broker"]

RESPONSE: Final = UnregisterBrokerResponse


def unregister_broker(state: BrokerState, broker_id: int) -> ErrorCode:
    """``ReplicationControlManager.unregisterBroker`` (then, for a running node, its
    re-registration)."""
    image = state.metadata_image
    registration = image.brokers.get(broker_id)
    if registration is None:
        return ErrorCode.BROKER_ID_NOT_REGISTERED
    live = broker_id in state.live_brokers
    for partition in state.iter_partitions():
        if partition.leader_id == broker_id:
            target = state.place_leader(exclude=broker_id)
            if target != -1:
                state.move_leader(partition, target)
    record = UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=registration.broker_epoch)
    state.append_metadata([(record, 0)])
    if live:
        state.metadata_log.register(broker_id, registration.endpoints, state.now_ms())
    return ErrorCode.NONE


@register(64, 0, 0)
def handle_unregister_broker(
    state: BrokerState, ctx: RequestContext, request: UnregisterBrokerRequest
) -> Any:
    if not authorize(state, ctx, "ALTER", CLUSTER, CLUSTER_NAME):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    else:
        error = unregister_broker(state, request.broker_id)
    # ControllerApis answers the error code only (Errors.forException), no message.
    return RESPONSE(throttle_time_ms=0, error_code=int(error), error_message=None)
