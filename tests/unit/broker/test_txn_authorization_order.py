"""AddPartitionsToTxn is authorised before it is routed. v4+ (a broker's batch, KIP-890): Kafka's
``KafkaApis.handleAddPartitionsToTxnRequest`` checks CLUSTER_ACTION on the cluster first (the
whole request's CLUSTER_AUTHORIZATION_FAILED), and only then does each transaction meet its
coordinator, a transaction coordinated elsewhere getting NOT_COORDINATOR for its partitions
(``TransactionStateManager.getTransactionState``), the request's own error code NONE. v0-3 (a
producer's): WRITE on the transactional id before NOT_COORDINATOR.

Over the wire, to an in-process cluster with the StandardAuthorizer: PLAINTEXT connections are
``User:ANONYMOUS``, which has no ACL until the test grants one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import raw_requests
from acl_grants import SECURED, grant

from kwire.broker import Cluster
from kwire.broker._acl import CLUSTER, CLUSTER_NAME
from kwire.broker._routing import TRANSACTION_KEY, coordinator_node
from kwire.protocol import ErrorCode, message_class, struct_class

REQUEST = message_class("AddPartitionsToTxnRequest")
TRANSACTION = struct_class(REQUEST, "transactions")
TOPIC = struct_class(REQUEST, "transactions", "topics")


def exchange(cluster: Cluster, node: int, message: Any, version: int) -> Any:
    """One request to ``node`` over a socket, its decoded response (bounded in time)."""
    return raw_requests.exchange(cluster.node_bootstrap(node), message, version)


def verify(transactional_id: str) -> Any:
    return REQUEST(
        transactions=[
            TRANSACTION(
                transactional_id=transactional_id,
                producer_id=1000,
                producer_epoch=0,
                verify_only=True,
                topics=[TOPIC(name="t", partitions=[0])],
            )
        ]
    )


def test_add_partitions_to_txn_v4_is_authorised_before_it_is_routed(tmp_path: Path) -> None:
    with Cluster(tmp_path / "data", nodes=3, config=SECURED) as cluster:
        cluster.create_topic("t", 1)
        coordinator = cluster.call(lambda state: coordinator_node(state, TRANSACTION_KEY, "tx-1"))
        others = [n for n in cluster.node_ids if n != coordinator]
        for version in (4, 5):
            for node in [*others, coordinator]:
                response = exchange(cluster, node, verify("tx-1"), version)
                assert (node, response.error_code) == (
                    node,
                    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                )
                assert response.results_by_transaction == []
        # a producer's request (v0-3) likewise: WRITE on the transactional id comes first
        client_form = struct_class(REQUEST, "v3_and_below_topics")
        for version in range(4):
            request = REQUEST(
                v3_and_below_transactional_id="tx-1",
                v3_and_below_producer_id=1000,
                v3_and_below_producer_epoch=0,
                v3_and_below_topics=[client_form(name="t", partitions=[0])],
            )
            response = exchange(cluster, others[0], request, version)
            assert [
                (
                    t.name,
                    [(p.partition_index, p.partition_error_code) for p in t.results_by_partition],
                )
                for t in response.results_by_topic_v3_and_below
            ] == [("t", [(0, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)])]
        grant(cluster, CLUSTER, CLUSTER_NAME, "CLUSTER_ACTION")
        for version in (4, 5):
            for node in others:
                response = exchange(cluster, node, verify("tx-1"), version)
                assert response.error_code == ErrorCode.NONE
                (result,) = response.results_by_transaction
                assert result.transactional_id == "tx-1"
                assert [
                    (
                        t.name,
                        [
                            (p.partition_index, p.partition_error_code)
                            for p in t.results_by_partition
                        ],
                    )
                    for t in result.topic_results
                ] == [("t", [(0, ErrorCode.NOT_COORDINATOR)])]
            # the coordinator answers for the transaction itself: no such producer here
            response = exchange(cluster, coordinator, verify("tx-1"), version)
            assert response.error_code == ErrorCode.NONE
            (result,) = response.results_by_transaction
            errors = {
                p.partition_error_code for t in result.topic_results for p in t.results_by_partition
            }
            assert ErrorCode.NOT_COORDINATOR not in errors
