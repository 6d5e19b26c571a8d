"""What a handler knows about the request it answers, besides the message itself."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Protocol

from kwire._lazy import lazy_dataclass

__all__ = ["RequestContext"]


class Releasable(Protocol):
    def close(self) -> None: ...


@lazy_dataclass(slots=True)
class RequestContext:
    """The header facts and connection facts of one request (Kafka's ``RequestContext``)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_address: str = ""
    client_software_name: str | None = None
    client_software_version: str | None = None
    listener_host: str = "127.0.0.1"  # the advertised endpoint of the listener it came in on
    listener_port: int = 9092
    listener_name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    principal: str = "User:ANONYMOUS"  # Kafka's KafkaPrincipal as "Type:name"
    #: The connection authenticated with a delegation token (``KafkaPrincipal.tokenAuthenticated``).
    token_authenticated: bool = False
    #: The node whose listener received the request (an in-process cluster has several);
    #: ``None``: the state's own node (``BrokerState.node_id``).
    node_id: int | None = None
    #: Work done for this request before its handler ran, off the event loop: a Produce's
    #: records validated ahead (``_data.validation_jobs``), by (topic, partition) position.
    validated: dict[tuple[int, int], Any] | None = None
    #: What the handler made for this request's response that must be given back however the
    #: request ends (a Fetch's ``FileRecords``: duplicated file descriptors). The server calls
    #: ``release`` once the response is written, or never will be: the handler raised part-way,
    #: the encoding failed, the client went away, the broker stopped.
    held: list[Releasable] = field(default_factory=list)

    def hold(self, resource: Releasable) -> None:
        self.held.append(resource)

    def release(self) -> None:
        """Close what the request holds (a handler redoing its work releases first)."""
        held, self.held = self.held, []
        for resource in held:
            resource.close()
