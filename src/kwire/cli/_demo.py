"""``kwire demo``: build, encode, decode and print a few real Kafka requests and responses.

Shows the protocol layer end to end: ApiVersions (request header v2, response header v0),
Metadata v12 (flexible, with a tagged field and a UUID), and Produce v9 carrying a records field,
each as hex bytes, as a decoded object and as Kafka-shaped JSON.
"""

from __future__ import annotations

import json
import uuid
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="encode and decode a few real Kafka messages")
    parser.set_defaults(func=lambda args: demo())


def _hex(data: bytes, limit: int = 96) -> str:
    text = data.hex(" ")
    return text if len(data) <= limit else data[:limit].hex(" ") + f" ... ({len(data)} bytes)"


def demo(print_fn: Any = print) -> int:
    """Run the demonstration; returns 0 (raises on any mismatch)."""
    from kwire.protocol import ClientConnection, ServerConnection
    from kwire.protocol.messages import (
        ApiVersionsRequest,
        ApiVersionsResponse,
        MetadataRequest,
        MetadataResponse,
        ProduceRequest,
        ProduceResponse,
    )

    client = ClientConnection(client_id="kwire-demo")
    server = ServerConnection()

    def exchange(request: Any, version: int, build_response: Any) -> None:
        frame = client.send(request, version)
        print_fn(f"\n>>> {type(request).__name__} v{version}: {_hex(frame)}")
        server.receive_data(frame)
        got = server.next_request()
        assert got is not None and got.message == request
        print_fn(f"    decoded: {got.message!r}")
        print_fn(f"    json:    {json.dumps(got.message.to_json(version))}")
        response = build_response()
        out = server.respond(got, response)
        print_fn(f"<<< {type(response).__name__} v{version}: {_hex(out)}")
        client.receive_data(out)
        answer = client.next_response()
        assert answer is not None and answer.message == response
        print_fn(f"    decoded: {answer.message!r}")
        print_fn(f"    json:    {json.dumps(answer.message.to_json(version))[:400]}")

    ApiVersion = ApiVersionsResponse.ApiVersion
    exchange(
        ApiVersionsRequest(client_software_name="kwire", client_software_version="0.1.0"),
        3,
        lambda: ApiVersionsResponse(
            api_keys=[
                ApiVersion(api_key=k, min_version=0, max_version=v)
                for k, v in [(0, 11), (1, 17), (3, 12)]
            ],
            throttle_time_ms=0,
        ),
    )

    Topic = MetadataResponse.MetadataResponseTopic
    Partition = MetadataResponse.MetadataResponsePartition
    Broker = MetadataResponse.MetadataResponseBroker
    exchange(
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="orders")]),
        12,
        lambda: MetadataResponse(
            brokers=[Broker(node_id=1, host="broker-1", port=9092, rack="eu-1a")],
            cluster_id="kwire-demo-cluster",
            controller_id=1,
            topics=[
                Topic(
                    name="orders",
                    topic_id=uuid.UUID("7d3b0d7e-3b5f-4b9e-9f6a-2c1d0e4f5a6b"),
                    partitions=[
                        Partition(
                            partition_index=i,
                            leader_id=1,
                            leader_epoch=3,
                            replica_nodes=[1],
                            isr_nodes=[1],
                        )
                        for i in range(3)
                    ],
                )
            ],
            unknown_tags={
                7: b"\x01\x02"
            },  # a tag this version does not know survives the round trip
        ),
    )

    TopicData = ProduceRequest.TopicProduceData
    PartitionData = ProduceRequest.PartitionProduceData
    records = bytes.fromhex(
        "00" * 12
    )  # an opaque records payload (the records layer parses batches)
    TopicResp = ProduceResponse.TopicProduceResponse
    PartResp = ProduceResponse.PartitionProduceResponse
    exchange(
        ProduceRequest(
            acks=-1,
            timeout_ms=30000,
            topic_data=[
                TopicData(name="orders", partition_data=[PartitionData(index=0, records=records)])
            ],
        ),
        9,
        lambda: ProduceResponse(
            responses=[
                TopicResp(name="orders", partition_responses=[PartResp(index=0, base_offset=42)])
            ]
        ),
    )
    print_fn("\nall messages round-tripped through kwire's encoders and decoders")
    return 0
