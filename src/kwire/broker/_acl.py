"""Authorization: ACLs with ``StandardAuthorizer`` semantics and the CreateAcls, DescribeAcls and
DeleteAcls APIs.

Approach, after Kafka 3.9's ``StandardAuthorizer``/``StandardAuthorizerData`` and
``AclControlManager``: an ACL binds a resource pattern (type, name, LITERAL or PREFIXED; the
literal name ``*`` matches every name) to a principal (``User:*`` for all), a host (``*``), an
operation (``ALL`` for every one) and ALLOW or DENY. A request is authorized when the principal is
in ``super.users``, or when some matching ACL allows the operation (READ, WRITE, DELETE and
ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) and none denies it: deny wins.
A resource that no ACL matches at all is allowed only with ``allow.everyone.if.no.acl.found``.

Handlers call ``authorize(state, ctx, "WRITE", TOPIC, name)``. Without ``authorizer.class.name``
every call answers True at once and the ACL APIs answer SECURITY_DISABLED, as Kafka does with no
authorizer. ACLs are kept as a KRaft broker keeps them (``AclControlManager``):
``AccessControlEntryRecord``s (each with a random id) and ``RemoveAccessControlEntryRecord``s in
``__cluster_metadata``, replayed into the metadata image at start (``AclStore`` is a view of it; a
change is fsynced before it is answered). An ``acls.json`` of an older kwire is imported once when
the metadata log opens.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final

from kwire._lazy import lazy_dataclass
from kwire.broker import _metadata_image as mimage
from kwire.broker import _metadata_log as mlog
from kwire.broker._apis import register
from kwire.broker._context import RequestContext
from kwire.broker._metadata_image import StandardAcl
from kwire.broker._state import BrokerState
from kwire.protocol import ErrorCode, messages

if TYPE_CHECKING:
    from kwire.protocol.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

# The ACL APIs' message classes are looked up when a handler runs: ``authorize`` is needed at
# start (quotas, every handler's checks) but the three generated codecs only by the ACL APIs.

__all__ = [
    "CLUSTER",
    "GROUP",
    "HIDDEN_GROUP_TOPICS",
    "OPERATIONS",
    "TOPIC",
    "TRANSACTIONAL_ID",
    "AclBinding",
    "AclStore",
    "Authorizer",
    "authorize",
    "authorize_any",
    "authorized_operations",
    "authorizer",
    "config_resource_error",
    "topics_describable",
]

# ResourceType codes
ANY_RESOURCE: Final = 1
TOPIC: Final = 2
GROUP: Final = 3
CLUSTER: Final = 4
TRANSACTIONAL_ID: Final = 5
DELEGATION_TOKEN: Final = 6
USER: Final = 7
RESOURCE_TYPES: Final = {
    2: "TOPIC",
    3: "GROUP",
    4: "CLUSTER",
    5: "TRANSACTIONAL_ID",
    6: "DELEGATION_TOKEN",
    7: "USER",
}
# PatternType codes
ANY_PATTERN: Final = 1
MATCH: Final = 2
LITERAL: Final = 3
PREFIXED: Final = 4
# AclPermissionType codes
ANY_PERMISSION: Final = 1
DENY: Final = 2
ALLOW: Final = 3
#: AclOperation codes by name.
OPERATIONS: Final = {
    "ANY": 1,
    "ALL": 2,
    "READ": 3,
    "WRITE": 4,
    "CREATE": 5,
    "DELETE": 6,
    "ALTER": 7,
    "DESCRIBE": 8,
    "CLUSTER_ACTION": 9,
    "DESCRIBE_CONFIGS": 10,
    "ALTER_CONFIGS": 11,
    "IDEMPOTENT_WRITE": 12,
    "CREATE_TOKENS": 13,
    "DESCRIBE_TOKENS": 14,
}
_IMPLIED: Final = {
    OPERATIONS["DESCRIBE"]: {3, 4, 6, 7, 8},
    OPERATIONS["DESCRIBE_CONFIGS"]: {10, 11},
}
#: The operations each resource type supports (``AclEntry.supportedOperations``), for KIP-430.
SUPPORTED: Final = {
    TOPIC: (
        "READ",
        "WRITE",
        "CREATE",
        "DESCRIBE",
        "DELETE",
        "ALTER",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
    ),
    GROUP: ("READ", "DESCRIBE", "DELETE"),
    CLUSTER: (
        "CREATE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
        "ALTER",
        "DESCRIBE",
    ),
    TRANSACTIONAL_ID: ("DESCRIBE", "WRITE"),
}
CLUSTER_NAME: Final = "kafka-cluster"


#: One ACL (Kafka's ``AclBinding``: a resource pattern and an access control entry), as the
#: metadata image holds it (``StandardAcl``).
AclBinding = StandardAcl


@lazy_dataclass(frozen=True)
class AclFilter:
    """A DescribeAcls/DeleteAcls filter (``AclBindingFilter``); None matches anything."""

    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ANY_RESOURCE and self.resource_type != acl.resource_type:
            return False
        if not self._matches_pattern(acl):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != OPERATIONS["ANY"] and self.operation != acl.operation:
            return False
        return self.permission_type in (ANY_PERMISSION, acl.permission_type)

    def _matches_pattern(self, acl: AclBinding) -> bool:
        name = self.resource_name
        if self.pattern_type == MATCH:
            if name is None:
                return True
            if acl.pattern_type == LITERAL:
                return acl.resource_name in (name, "*")
            return acl.pattern_type == PREFIXED and name.startswith(acl.resource_name)
        if self.pattern_type != ANY_PATTERN and self.pattern_type != acl.pattern_type:
            return False
        return name is None or name == acl.resource_name


class AclStore(mlog.ImageView):
    """The ACLs, as the metadata image holds them (by id, in creation order;
    ``AccessControlEntryRecord`` / ``RemoveAccessControlEntryRecord``; see ``ImageView``)."""

    @classmethod
    def of(cls, acls: Iterable[AclBinding]) -> AclStore:
        """A store without a log holding ``acls`` (tests, tools)."""
        store = cls.in_memory()
        store.add(acls)
        return store

    @property
    def acls(self) -> Collection[AclBinding]:
        """The ACLs (a live view)."""
        return self._image.acls.values()

    def with_ids(self) -> Iterator[tuple[uuid.UUID, AclBinding]]:
        return iter(list(self._image.acls.items()))

    def add(self, acls: Iterable[AclBinding]) -> None:
        """Create ACLs in one batch (``AclControlManager.createAcls``: one that exists already
        is not written again)."""
        self._write(mimage.create_acl_records(self._image, acls))

    def remove(self, acl_ids: Iterable[uuid.UUID]) -> None:
        """Delete the ACLs of ``acl_ids`` in one batch."""
        self._write(mimage.delete_acl_records(i for i in acl_ids if i in self._image.acls))


class Authorizer:
    """``StandardAuthorizer`` over an ``AclStore`` (see the module doc)."""

    def __init__(
        self, store: AclStore, super_users: Iterable[str], allow_if_no_acl: bool = False
    ) -> None:
        self.store = store
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl

    def authorize(
        self, principal: str, host: str, operation: int, resource_type: int, name: str
    ) -> bool:
        if principal in self.super_users:
            return True
        found = allowed = False
        for acl in self.store.acls:
            if not acl.matches_resource(resource_type, name):
                continue
            found = True
            if acl.principal not in (principal, "User:*") or acl.host not in (host, "*"):
                continue
            if acl.permission_type == DENY:
                if acl.operation in (operation, OPERATIONS["ALL"]):
                    return False
            elif acl.permission_type == ALLOW and (
                acl.operation in (operation, OPERATIONS["ALL"])
                or acl.operation in _IMPLIED.get(operation, ())
            ):
                allowed = True
        if not found:
            return self.allow_if_no_acl
        return allowed

    def authorize_any(self, principal: str, host: str, operation: int, resource_type: int) -> bool:
        """``Authorizer.authorizeByResourceType``: some resource of the type could be allowed
        (an ALLOW for the principal, not undone by a DENY of the same or a wider pattern)."""
        if principal in self.super_users:
            return True
        allows: list[AclBinding] = []
        denies: list[AclBinding] = []
        for acl in self.store.acls:
            if acl.resource_type != resource_type:
                continue
            if acl.principal not in (principal, "User:*") or acl.host not in (host, "*"):
                continue
            if acl.operation not in (operation, OPERATIONS["ALL"]):
                continue
            (denies if acl.permission_type == DENY else allows).append(acl)
        if any(d.pattern_type == LITERAL and d.resource_name == "*" for d in denies):
            return False
        for allow in allows:
            if not any(
                d.resource_name == allow.resource_name
                or (d.pattern_type == PREFIXED and allow.resource_name.startswith(d.resource_name))
                for d in denies
            ):
                return True
        return False


def authorizer(state: BrokerState) -> Authorizer | None:
    """The state's authorizer, or None without ``authorizer.class.name``."""
    found = state.services.authorizer
    if found is not None:
        return found or None
    if not state.static_config.get("authorizer.class.name"):
        state.services.authorizer = False
        return None
    supers = [
        s.strip() for s in (state.static_config.get("super.users") or "").split(";") if s.strip()
    ]
    allow = (state.static_config.get("allow.everyone.if.no.acl.found") or "false").lower() == "true"
    made = Authorizer(AclStore(state.metadata_image, state.append_metadata), supers, allow)
    state.services.authorizer = made
    return made


def _host(ctx: RequestContext) -> str:
    return ctx.client_address.rpartition(":")[0].strip("[]") or ctx.client_address


def authorize(
    state: BrokerState, ctx: RequestContext, operation: str, resource_type: int, name: str
) -> bool:
    """Whether ``ctx``'s principal may do ``operation`` on the resource (True without authorizer)."""
    if state.services.authorizer is False:
        return True
    auth = authorizer(state)
    if auth is None:
        return True
    return auth.authorize(ctx.principal, _host(ctx), OPERATIONS[operation], resource_type, name)


def authorize_any(
    state: BrokerState, ctx: RequestContext, operation: str, resource_type: int
) -> bool:
    auth = authorizer(state)
    if auth is None:
        return True
    return auth.authorize_any(ctx.principal, _host(ctx), OPERATIONS[operation], resource_type)


#: KafkaApis' message for a consumer or share group hidden by ``topics_describable``.
HIDDEN_GROUP_TOPICS: Final = (
    "The group has described topic(s) that the client is not authorized to describe."
)


def topics_describable(state: BrokerState, ctx: RequestContext, names: Iterable[str]) -> bool:
    """Whether the principal may DESCRIBE every topic of ``names``: the rule the KIP-848, KIP-932
    and KIP-1071 group APIs share (``KafkaApis``' ``filterByAuthorized(DESCRIBE, TOPIC, ...)``,
    KAFKA-18813 / 18817 / 18819): a heartbeat naming such a topic is TOPIC_AUTHORIZATION_FAILED and
    a described group using one is hidden, so a group never reveals a topic its reader may not
    see. A topic that does not exist needs its ACL too."""
    return all(authorize(state, ctx, "DESCRIBE", TOPIC, name) for name in set(names))


def authorized_operations(
    state: BrokerState, ctx: RequestContext, resource_type: int, name: str
) -> int:
    """KIP-430's bit field: 1 << operation for each supported operation the principal may do."""
    bits = 0
    for op in SUPPORTED[resource_type]:
        if authorize(state, ctx, op, resource_type, name):
            bits |= 1 << OPERATIONS[op]
    return bits


# --- the APIs (``KafkaApis.handleCreateAcls`` and friends, ``AclControlManager``) -------------

_NO_AUTHORIZER: Final = "No Authorizer is configured."


def _check_new(acl: AclBinding) -> str | None:
    if acl.resource_type not in RESOURCE_TYPES:
        return f"Invalid resourceType {acl.resource_type}"
    if acl.pattern_type not in (LITERAL, PREFIXED):
        return f"Invalid patternType {acl.pattern_type}"
    if acl.operation not in set(OPERATIONS.values()) - {OPERATIONS["ANY"]}:
        return f"Invalid operation {acl.operation}"
    if acl.permission_type not in (ALLOW, DENY):
        return f"Invalid permissionType {acl.permission_type}"
    if not acl.resource_name:
        return "Resource name should not be empty"
    if acl.resource_type == CLUSTER and acl.resource_name != CLUSTER_NAME:
        return "The only valid name for the CLUSTER resource is kafka-cluster"
    kind, sep, who = acl.principal.partition(":")
    if not sep or not kind or not who:
        return f"Could not parse principal from `{acl.principal}` (no colon is present separating the principal type from the principal name)"
    if not acl.host:
        return "Invalid host"
    return None


@register(30, 0, 3)
def handle_create_acls(state: BrokerState, ctx: RequestContext, request: CreateAclsRequest) -> Any:
    create_response = messages.CreateAclsResponse
    creation_result = create_response.AclCreationResult
    auth = authorizer(state)
    results = []
    allowed = auth is not None and authorize(state, ctx, "ALTER", CLUSTER, CLUSTER_NAME)
    created: list[AclBinding] = []
    for creation in request.creations:
        if auth is None:
            results.append(
                creation_result(
                    error_code=int(ErrorCode.SECURITY_DISABLED), error_message=_NO_AUTHORIZER
                )
            )
            continue
        if not allowed:
            results.append(
                creation_result(
                    error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), error_message=None
                )
            )
            continue
        acl = AclBinding(
            creation.resource_type,
            creation.resource_name,
            creation.resource_pattern_type if ctx.api_version >= 1 else LITERAL,
            creation.principal,
            creation.host,
            creation.operation,
            creation.permission_type,
        )
        problem = _check_new(acl)
        if problem is not None:
            results.append(
                creation_result(error_code=int(ErrorCode.INVALID_REQUEST), error_message=problem)
            )
            continue
        created.append(acl)
        results.append(creation_result(error_code=0, error_message=None))
    if auth is not None:
        auth.store.add(created)  # one batch, in the metadata log before the answer
    return create_response(throttle_time_ms=0, results=results)


def _filter(item: Any, version: int) -> AclFilter:
    return AclFilter(
        item.resource_type_filter,
        item.resource_name_filter,
        item.pattern_type_filter if version >= 1 else LITERAL,
        item.principal_filter,
        item.host_filter,
        item.operation,
        item.permission_type,
    )


def _filter_problem(f: AclFilter) -> str | None:
    if f.resource_type < ANY_RESOURCE or f.resource_type > USER:
        return "Invalid resource type filter"
    if f.pattern_type < ANY_PATTERN or f.pattern_type > PREFIXED:
        return "Invalid pattern type filter"
    if f.operation < OPERATIONS["ANY"] or f.operation > OPERATIONS["DESCRIBE_TOKENS"]:
        return "Invalid operation filter"
    if f.permission_type not in (ANY_PERMISSION, ALLOW, DENY):
        return "Invalid permission type filter"
    return None


@register(29, 0, 3)
def handle_describe_acls(
    state: BrokerState, ctx: RequestContext, request: DescribeAclsRequest
) -> Any:
    describe_response = messages.DescribeAclsResponse
    describe_resource = describe_response.DescribeAclsResource
    acl_description = describe_response.AclDescription

    def error(code: ErrorCode, message: str | None) -> Any:
        return describe_response(
            throttle_time_ms=0, error_code=int(code), error_message=message, resources=[]
        )

    auth = authorizer(state)
    if auth is None:
        return error(ErrorCode.SECURITY_DISABLED, _NO_AUTHORIZER)
    if not authorize(state, ctx, "DESCRIBE", CLUSTER, CLUSTER_NAME):
        return error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    wanted = _filter(request, ctx.api_version)
    problem = _filter_problem(wanted)
    if problem is not None:
        return error(ErrorCode.INVALID_REQUEST, problem)
    grouped: dict[tuple[int, str, int], list[Any]] = {}
    for acl in auth.store.acls:
        if wanted.matches(acl):
            grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
                acl_description(
                    principal=acl.principal,
                    host=acl.host,
                    operation=acl.operation,
                    permission_type=acl.permission_type,
                )
            )
    resources = [
        describe_resource(resource_type=t, resource_name=n, pattern_type=p, acls=acls)
        for (t, n, p), acls in grouped.items()
    ]
    return describe_response(
        throttle_time_ms=0, error_code=0, error_message=None, resources=resources
    )


@register(31, 0, 3)
def handle_delete_acls(state: BrokerState, ctx: RequestContext, request: DeleteAclsRequest) -> Any:
    delete_response = messages.DeleteAclsResponse
    filter_result = delete_response.DeleteAclsFilterResult
    matching_acl = delete_response.DeleteAclsMatchingAcl
    auth = authorizer(state)
    allowed = auth is not None and authorize(state, ctx, "ALTER", CLUSTER, CLUSTER_NAME)
    results = []
    deleted: list[uuid.UUID] = []
    for item in request.filters:
        out = filter_result(error_code=0, error_message=None, matching_acls=[])
        if auth is None:
            out.error_code, out.error_message = int(ErrorCode.SECURITY_DISABLED), _NO_AUTHORIZER
        elif not allowed:
            out.error_code = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        else:
            wanted = _filter(item, ctx.api_version)
            problem = _filter_problem(wanted)
            if problem is not None:
                out.error_code, out.error_message = int(ErrorCode.INVALID_REQUEST), problem
            else:
                # AclControlManager.deleteAclsForFilter: every filter matches against the ACLs
                # as they were before the request.
                for acl_id, acl in auth.store.with_ids():
                    if not wanted.matches(acl):
                        continue
                    deleted.append(acl_id)
                    out.matching_acls.append(
                        matching_acl(error_code=0, error_message=None, **acl.fields())
                    )
        results.append(out)
    if auth is not None:
        auth.store.remove(deleted)  # one batch, in the metadata log before the answer
    return delete_response(throttle_time_ms=0, filter_results=results)


def config_resource_error(
    state: BrokerState, ctx: RequestContext, resource: Any, operation: str
) -> ErrorCode | None:
    """DescribeConfigs/AlterConfigs (``ConfigAdminManager``/``AuthHelper``): the error for a
    config resource the principal may not touch (a topic: the topic; a broker or its loggers:
    the cluster), else None."""
    if resource.resource_type == 2:  # ConfigResource.Type.TOPIC
        if authorize(state, ctx, operation, TOPIC, resource.resource_name):
            return None
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if authorize(state, ctx, operation, CLUSTER, CLUSTER_NAME):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
