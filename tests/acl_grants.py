"""ACLs for the tests of a secured broker: ``SECURED`` is the config (the StandardAuthorizer,
``User:admin`` a super user), ``grant_state`` creates ALLOW ACLs through the CreateAcls handler as
``User:admin`` on a broker's state, and ``grant`` does it on a running ``Broker`` or ``Cluster``
(for ``User:ANONYMOUS``, a PLAINTEXT client, unless told). Each asserts every ACL was created.
"""

from __future__ import annotations

from typing import Any

from kwire.broker import Broker, Cluster
from kwire.broker._acl import ALLOW, LITERAL, OPERATIONS
from kwire.broker.testing import call
from kwire.protocol import message_class, struct_class

SECURED = {"authorizer.class.name": "StandardAuthorizer", "super.users": "User:admin"}
ACL = struct_class(message_class("CreateAclsRequest"), "creations")


def grant_state(
    state: Any, principal: str, resource_type: int, name: str, *operations: str
) -> None:
    """ALLOW ``operations`` on one literal resource to ``principal``, from any host."""
    created = call(
        state,
        "CreateAcls",
        3,
        context={"principal": "User:admin"},
        creations=[
            ACL(
                resource_type=resource_type,
                resource_name=name,
                resource_pattern_type=LITERAL,
                principal=principal,
                host="*",
                operation=OPERATIONS[operation],
                permission_type=ALLOW,
            )
            for operation in operations
        ],
    )
    assert [r.error_code for r in created.results] == [0] * len(operations)


def grant(
    target: Broker | Cluster,
    resource_type: int,
    name: str,
    *operations: str,
    principal: str = "User:ANONYMOUS",
) -> None:
    """``grant_state`` on a running broker or cluster, on its event loop."""
    target.call(lambda state: grant_state(state, principal, resource_type, name, *operations))
