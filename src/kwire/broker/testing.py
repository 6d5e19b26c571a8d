"""Helpers for tests of the broker's handlers: a state over a directory, and one request through
the handler the way the server runs it, bytes in and bytes out.

Approach: ``handle`` takes a request frame, decodes it as the server does, runs the dispatch
table's handler (``_apis.handler``, no guards) and encodes the response frame as the server sends
it, record bytes read back from the segment files; ``call`` builds the frame from a message name
and fields and decodes the answer as a client would. Outcomes that are not a response (``None``
for acks=0, ``CLOSE_CONNECTION``, a parked ``Deferred``) come back as they are, unless ``settle``
asks for a parked response to be completed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kwire.broker._apis import CLOSE_CONNECTION, Deferred, handler, implemented_versions, start
from kwire.broker._context import RequestContext
from kwire.broker._fetch import FileRecords
from kwire.broker._releases import personality
from kwire.broker._server import encode_response_pieces
from kwire.broker._state import BrokerState, Clock, ManualClock
from kwire.protocol import (
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    message_class,
)

__all__ = ["NOW", "call", "handle", "make_state", "request_frame", "response_frame", "served"]

#: The time a test state starts at (``ManualClock``), 2023-11-14.
NOW = 1_700_000_000_000


def make_state(
    path: str | Path,
    *,
    release: str = "4.3",
    clock: Clock | None = None,
    config: Mapping[str, str] | None = None,
    startup: bool = False,
    **kwargs: Any,
) -> BrokerState:
    """A state over ``path`` serving every API of ``release``, on a ``ManualClock(NOW)`` unless
    ``clock`` is given; ``startup`` runs the start-up hooks a broker runs."""
    state = BrokerState(
        path,
        personality=personality(release, implemented_versions()),
        clock=ManualClock(NOW) if clock is None else clock,
        static_config=dict(config or {}),
        **kwargs,
    )
    if startup:
        start(state)
    return state


def served(name: str) -> range:
    """The versions of API ``name`` (``"Fetch"``) kwire's broker serves."""
    api_key = message_class(f"{name}Request").API_KEY
    assert api_key is not None
    lowest, highest = implemented_versions()[api_key]
    return range(lowest, highest + 1)


def request_frame(
    name: str, version: int, *, correlation_id: int = 7, client_id: str = "test", **fields: Any
) -> bytes:
    """The request frame of ``<name>Request(**fields)`` at ``version``."""
    request = message_class(f"{name}Request")(**fields)
    return encode_request_frame(
        request, version, correlation_id=correlation_id, client_id=client_id
    )


def response_frame(message: Any, version: int, correlation_id: int = 7) -> bytes:
    """The response frame as the server writes it (record bytes read back from the files)."""
    size, pieces = encode_response_pieces(message, version, correlation_id)
    out = b"".join(p.to_bytes() if isinstance(p, FileRecords) else p for p in pieces)
    for p in pieces:
        if isinstance(p, FileRecords):
            p.close()
    assert len(out) == size + 4
    return out


def handle(
    state: BrokerState,
    frame: bytes,
    *,
    settle: bool | None = None,
    allow_trailing: bool = False,
    **context: Any,
) -> Any:
    """Request frame in, response frame out, through the API's handler. ``context``: the
    ``RequestContext`` fields beyond the header's (``principal``, ``client_address``, ...).
    ``None``, ``CLOSE_CONNECTION`` and a ``Deferred`` come back as they are, unless ``settle``
    completes a parked response (``True``: as at its deadline; ``False``: as it stands, which
    must then be an answer)."""
    request = decode_request_frame(frame, allow_trailing=allow_trailing)
    api_key, version = request.api_key, int(request.header.request_api_version)
    ctx = RequestContext(
        api_key, version, request.correlation_id, request.header.client_id, **context
    )
    outcome = handler(api_key)(state, ctx, request.message)
    if isinstance(outcome, Deferred) and settle is not None:
        outcome = outcome.complete(settle)
        assert outcome is not None, "the parked response is still waiting"
    if outcome is None or outcome is CLOSE_CONNECTION or isinstance(outcome, Deferred):
        return outcome
    return response_frame(outcome, version, request.correlation_id)


def call(
    state: BrokerState,
    name: str,
    version: int,
    /,
    *,
    context: Mapping[str, Any] | None = None,
    settle: bool | None = None,
    client_id: str = "test",
    **fields: Any,
) -> Any:
    """``<name>Request(**fields)`` through the wire and the handler: the response as a client
    decodes it (or the outcome that is not one, as ``handle`` returns it)."""
    frame = request_frame(name, version, client_id=client_id, **fields)
    out = handle(state, frame, settle=settle, **dict(context or {}))
    if not isinstance(out, bytes):
        return out
    api_key = message_class(f"{name}Request").API_KEY
    assert api_key is not None
    return decode_response_frame(out, api_key, version).message
