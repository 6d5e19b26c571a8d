"""The broker's services, one typed object per state (kfake's ``Cluster`` struct): the
coordinators, the authorizer, quotas, metrics, the SCRAM store, the log cleaner and the fetch
session caches, each a named field.

Approach: ``Services`` is built once with the state. A coordinator whose internal topic exists is
made at start (``_apis.STARTUP_TABLE``); the others are made by their module on the first request
that needs them (``group_coordinator(state)``, ``authorizer(state)``, ...), so a broker imports a
coordinator only when it has one. The field types are imported for the type checker only: the
modules that define them import ``_state``, which builds this object.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Literal

from kwire._lazy import lazy_dataclass

if TYPE_CHECKING:
    from kwire.broker._acl import Authorizer
    from kwire.broker._cleaner import BrokerLogCleaner
    from kwire.broker._delegation_tokens import DelegationTokenCache
    from kwire.broker._fetch import FetchSessionCache
    from kwire.broker._metrics import BrokerMetrics
    from kwire.broker._quotas import ClientQuotas
    from kwire.broker._sasl import ScramStore
    from kwire.broker._share_group import ShareCoordinator
    from kwire.broker._txn import TransactionCoordinator
    from kwire.broker.group import GroupCoordinator

__all__ = ["Services"]


@lazy_dataclass(eq=False)
class Services:
    """What plugs into one broker state; ``None`` until its module makes it."""

    group: GroupCoordinator | None = None
    transaction: TransactionCoordinator | None = None
    share: ShareCoordinator | None = None
    #: ``False``: no ``authorizer.class.name`` (everything is allowed)
    authorizer: Authorizer | Literal[False] | None = None
    quotas: ClientQuotas | None = None
    metrics: BrokerMetrics | None = None
    scram: ScramStore | None = None
    log_cleaner: BrokerLogCleaner | None = None
    delegation_tokens: DelegationTokenCache | None = None
    #: node id -> its fetch sessions (each node of an in-process cluster has its own cache)
    fetch_sessions: dict[int, FetchSessionCache] = field(default_factory=dict)
