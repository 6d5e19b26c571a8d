"""``docs/broker.md``'s table of every API a Kafka 4.3 broker serves is what
``tools/api_table.py`` renders from the broker's own served versions, the release data and the
tests: a handler added, a version range changed or a test file renamed without regenerating the
table (``python tools/api_table.py --write``) fails here."""

from __future__ import annotations

import api_table


def test_the_table_in_docs_is_current() -> None:
    assert api_table.current() == api_table.render()


def test_every_api_kafka_4_3_serves_has_a_row() -> None:
    from kwire.broker import implemented_versions, personality
    from kwire.protocol import releases

    rows = api_table.kafka_apis()
    assert set(releases.broker_personality("4.3").api_versions) <= set(rows)
    assert {71, 72} <= set(rows)  # advertised by Kafka with a telemetry plugin only
    served = personality("4.3", implemented_versions()).advertised
    # An API kwire serves needs no excuse; one it does not needs one.
    assert not set(served) & set(api_table.NOT_SERVED)
    assert set(rows) - set(served) <= set(api_table.NOT_SERVED)
