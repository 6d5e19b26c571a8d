"""AddRaftVoter (API 80) and RemoveRaftVoter (API 81), KIP-853: changing the KRaft voter set.

Versions: AddRaftVoter v0 (Kafka 3.9), v1 (4.1) adds ``AckWhenCommitted``; RemoveRaftVoter v0
(3.9). Both are served on the broker listener, which forwards them to the controller after
checking ALTER on the cluster (``KafkaApis.handleAddRaftVoterRequest``).

kwire's quorum is the static one its data directory holds (``_describe_quorum``): one voter,
this node, ``kraft.version`` 0. Kafka refuses every reconfiguration of such a quorum, after the
checks ``KafkaRaftClient.handleAddVoterRequest`` / ``handleRemoveVoterRequest`` run first, in
this order: the cluster id (INCONSISTENT_CLUSTER_ID; a null id is accepted), the leadership
(this node leads), a valid voter key (a non-negative id and a directory id: INVALID_REQUEST), for
an addition an endpoint on the leader's default listener (INVALID_REQUEST), and then the
feature, in ``AddVoterHandler`` / ``RemoveVoterHandler``: UNSUPPORTED_VERSION, "Cluster doesn't
support adding voter because the kraft.version feature is 0".
"""

from __future__ import annotations

from typing import Any, Final

from kwire.broker._acl import CLUSTER, CLUSTER_NAME, authorize
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState
from kwire.broker._update_features import KRAFT_VERSION
from kwire.protocol import ZERO_UUID, ErrorCode
from kwire.protocol.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
)

__all__ = ["handle_add_raft_voter", "handle_remove_raft_voter"]

ADD_RESPONSE: Final = AddRaftVoterResponse
REMOVE_RESPONSE: Final = RemoveRaftVoterResponse

#: The finalized ``kraft.version`` of a static quorum (KIP-853: 1 allows reconfiguration).
STATIC_QUORUM_KRAFT_VERSION: Final = 0


def _refusal(
    state: BrokerState, ctx: RequestContext, request: Any, verb: str
) -> tuple[ErrorCode, str | None]:
    """The error every reconfiguration of this quorum gets, from the first check that fails."""
    if not authorize(state, ctx, "ALTER", CLUSTER, CLUSTER_NAME):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    if request.cluster_id is not None and request.cluster_id != state.cluster_id:
        return (
            ErrorCode.INCONSISTENT_CLUSTER_ID,
            f'The given id "{request.cluster_id}" doesn\'t match the cluster id '
            f'"{state.cluster_id}"',
        )
    noun = "Add" if verb == "adding" else "Remove"
    if request.voter_id < 0 or request.voter_directory_id == ZERO_UUID:
        return ErrorCode.INVALID_REQUEST, f"{noun} voter request didn't include a valid voter"
    if verb == "adding":
        default = _default_listener(state)
        if all(listener.name != default for listener in request.listeners):
            return (
                ErrorCode.INVALID_REQUEST,
                f"Add voter request didn't include the endpoint for the default listener {default}",
            )
    return (
        ErrorCode.UNSUPPORTED_VERSION,
        f"Cluster doesn't support {verb} voter because the {KRAFT_VERSION} feature is "
        f"{STATIC_QUORUM_KRAFT_VERSION}",
    )


def _default_listener(state: BrokerState) -> str:
    """The voters' listener: kwire has no controller listener, so the node's first one."""
    endpoints = state.live_brokers.get(state.metadata_log.node.node_id) or {}
    return next(iter(endpoints), "PLAINTEXT")


@register(80, 0, 1)
def handle_add_raft_voter(
    state: BrokerState, ctx: RequestContext, request: AddRaftVoterRequest
) -> Any:
    error, message = _refusal(state, ctx, request, "adding")
    return ADD_RESPONSE(error_code=int(error), error_message=message)


@register(81, 0, 0)
def handle_remove_raft_voter(
    state: BrokerState, ctx: RequestContext, request: RemoveRaftVoterRequest
) -> Any:
    error, message = _refusal(state, ctx, request, "removing")
    return REMOVE_RESPONSE(error_code=int(error), error_message=message)
