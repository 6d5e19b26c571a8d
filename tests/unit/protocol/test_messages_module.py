"""kwire.protocol.messages: every bundled message class by name, the same class message_class gives."""

from __future__ import annotations

import subprocess
import sys

import kwire.protocol.messages as messages
from kwire.protocol import message_class
from kwire.protocol._registry import bundled_registry


def test_every_bundled_message_is_named() -> None:
    assert sorted(messages.__all__) == bundled_registry().names()
    assert set(dir(messages)) >= set(messages.__all__)


def test_names_resolve_to_the_registry_classes() -> None:
    for name in messages.__all__:
        assert getattr(messages, name) is message_class(name)


def test_from_import_and_unknown_names() -> None:
    from kwire.protocol.messages import FetchResponse, MetadataResponse

    assert MetadataResponse.API_KEY == 3 and FetchResponse.API_KEY == 1
    try:
        messages.NoSuchResponse  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchResponse" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("an unknown name must raise AttributeError")


def test_importing_the_module_loads_no_generated_module() -> None:
    code = (
        "import sys, kwire.protocol.messages as m; "
        "print(sum(k.startswith('kwire.protocol._generated.') for k in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def test_nested_structs_are_typed_names_of_their_message() -> None:
    # ``ProduceResponse.TopicProduceResponse`` is the class of ``responses``' elements, declared
    # in the class body (a type alias a checker reads), not attached after it
    from kwire.protocol import KafkaStruct, struct_class
    from kwire.protocol.messages import FetchRequest, ProduceResponse

    # (as KafkaStruct classes: struct_class's type is the loose one of a class found by name)
    responses: type[KafkaStruct] = struct_class(ProduceResponse, "responses")
    topics: type[KafkaStruct] = struct_class(FetchRequest, "topics")
    assert ProduceResponse.TopicProduceResponse is responses
    assert FetchRequest.FetchTopic is topics
    for name in messages.__all__:
        cls = getattr(messages, name)
        nested = {
            f.struct for f in cls.__kafka_fields__ if f.struct is not None and f.struct is not cls
        }
        for struct in nested:
            alias = next(n for n, v in vars(cls).items() if v is struct)
            assert cls.__annotations__.get(alias) == "TypeAlias", (name, alias)
