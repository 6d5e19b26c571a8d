"""The dispatch table: API key -> handler, and the versions kwire's broker serves.

A handler is a plain function ``handler(state, ctx, request) -> outcome`` (style: Kafka's
``KafkaApis.handle`` switch as one table). The outcome is a response message, ``None`` when no
response is sent (Produce with ``acks=0``), ``CLOSE_CONNECTION`` (acks=0 that failed), or a
``Deferred`` (a long-polling Fetch) that the
server completes later. Handlers never touch sockets; they may ask the state's logs to append or
read, and the logs own the files.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from kwire.broker._context import RequestContext
from kwire.broker._state import BrokerState

__all__ = [
    "CLOSE_CONNECTION",
    "GUARDS",
    "HANDLERS",
    "STARTUP",
    "Deferred",
    "Handler",
    "Outcome",
    "dispatch",
    "implemented_versions",
    "on_startup",
    "register",
]


@dataclass(eq=False)
class Deferred:
    """A response that waits: until ``deadline_ms`` or until one of ``keys`` is notified.

    Keys are whatever the state notifies (``BrokerState.notify``): a ``Partition`` when it grows,
    a coordinator's own keys (a group) when its state moves. ``complete(final)`` recomputes the
    response; it returns it, or ``None`` to keep waiting (never ``None`` when ``final`` is true).
    """

    deadline_ms: int
    keys: set[Hashable]
    complete: Callable[[bool], Any]


class _CloseConnection:
    """The outcome that closes the client's connection instead of answering."""

    def __repr__(self) -> str:
        return "CLOSE_CONNECTION"


CLOSE_CONNECTION: Final = _CloseConnection()

Outcome: TypeAlias = Any  # a response message, None, CLOSE_CONNECTION, or a Deferred
Handler: TypeAlias = Callable[[BrokerState, RequestContext, Any], Outcome]

#: api key -> (handler, lowest version served, highest version served)
HANDLERS: dict[int, tuple[Handler, int, int]] = {}


def register(api_key: int, lowest: int, highest: int) -> Callable[[Handler], Handler]:
    def add(handler: Handler) -> Handler:
        HANDLERS[api_key] = (handler, lowest, highest)
        return handler

    return add


#: Checks run before the handler: one that returns an outcome answers the request instead (an
#: in-process cluster's NOT_COORDINATOR for a request sent to a node that does not lead the
#: coordinator's partition, ``_routing``); ``None`` lets the handler run.
GUARDS: list[Callable[[BrokerState, RequestContext, Any], Outcome | None]] = []


def dispatch(state: BrokerState, ctx: RequestContext, request: Any) -> Outcome:
    """Answer one decoded request: the guards, then the API's handler."""
    for guard in GUARDS:
        outcome = guard(state, ctx, request)
        if outcome is not None:
            return outcome
    return HANDLERS[ctx.api_key][0](state, ctx, request)


#: Run with the state when a broker starts: coordinators load what their internal topics hold
#: (and start their timers) before the first request, as Kafka's do when they become leaders.
STARTUP: list[Callable[[BrokerState], None]] = []


def on_startup(hook: Callable[[BrokerState], None]) -> Callable[[BrokerState], None]:
    STARTUP.append(hook)
    return hook


def load_handlers() -> None:
    """Import every handler module, so that each has registered its handler, guards and start-up
    hooks. A broker built from a submodule (``kwire.broker._broker``) would otherwise serve only
    the handlers its own imports happened to load, and coordinators whose modules were not loaded
    would not replay their topics at start. ``kwire.broker._everything`` lists the modules; it is
    imported by name here because it imports this module."""
    importlib.import_module("kwire.broker._everything")


def implemented_versions() -> dict[int, tuple[int, int]]:
    load_handlers()
    return {key: (lo, hi) for key, (_, lo, hi) in HANDLERS.items()}
