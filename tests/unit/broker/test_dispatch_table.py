"""The written dispatch table (``_apis.TABLE``) is what the handler modules define: every
``@register`` of a module names the table's function with the table's versions, no module
registers an API the table lacks, and the versions advertised are the table's."""

from __future__ import annotations

import importlib

from kwire.broker import _apis
from kwire.broker._apis import REGISTERED, STARTUP, STARTUP_TABLE, TABLE, load_handlers


def test_the_table_matches_what_the_modules_register() -> None:
    load_handlers()
    assert sorted(REGISTERED) == sorted(TABLE)
    for api_key, route in TABLE.items():
        function, lowest, highest = REGISTERED[api_key]
        module = importlib.import_module(route.module)
        assert getattr(module, route.function) is function, api_key
        assert (lowest, highest) == (route.lowest, route.highest), api_key
        assert _apis.handler(api_key) is function


def test_the_versions_served_are_the_tables() -> None:
    assert _apis.implemented_versions() == {k: (r.lowest, r.highest) for k, r in TABLE.items()}
    assert dict(_apis.HANDLERS.items()) == {
        k: (_apis.handler(k), r.lowest, r.highest) for k, r in TABLE.items()
    }


def test_the_startup_table_matches_the_modules_hooks() -> None:
    load_handlers()
    written = [getattr(importlib.import_module(m), f) for m, f, _ in STARTUP_TABLE]
    assert sorted(written, key=id) == sorted(STARTUP, key=id)
    from kwire.broker._share_state import STATE_TOPIC
    from kwire.broker._txn import TRANSACTION_TOPIC
    from kwire.broker.group import GROUP_TOPIC

    topics = {f: t for _, f, t in STARTUP_TABLE}
    assert topics["_load_groups"] == GROUP_TOPIC
    assert topics["_load_transactions"] == TRANSACTION_TOPIC
    assert topics["_load_share_state"] == STATE_TOPIC


def test_both_group_feature_gates_are_guards_of_their_apis_only() -> None:
    """``share.version`` and ``streams.version`` gate their APIs by one mechanism, the guard
    table; an API outside both (Produce, Fetch) passes neither."""
    from kwire.broker._share_feature import share_gate
    from kwire.broker._streams_group_apis import streams_gate

    scoped = {function: api_keys for _, function, api_keys in _apis.GUARD_TABLE}
    assert scoped["share_gate"] == {76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92}
    assert scoped["streams_gate"] == {88, 89}
    for api_key in (76, 79, 92):
        assert share_gate in _apis.guards(api_key)
        assert streams_gate not in _apis.guards(api_key)
    for api_key in (88, 89):
        assert streams_gate in _apis.guards(api_key)
        assert share_gate not in _apis.guards(api_key)
    for api_key in (0, 1):
        assert not {share_gate, streams_gate} & set(_apis.guards(api_key))
