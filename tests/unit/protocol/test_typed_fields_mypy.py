"""mypy checks the field names of generated classes (issue 18), and still accepts classes looked up
by name: one small snippet through mypy's API, against this checkout's kwire."""

from __future__ import annotations

from pathlib import Path

import pytest

import kwire

api = pytest.importorskip("mypy.api")

SNIPPET = """\
from kwire.protocol import message_class, struct_class
from kwire.protocol._generated.metadata import MetadataResponse

resp = MetadataResponse.decode(b"", 12)
print(resp.topics)
print(resp.topcs)
MetadataResponse(topcs=[])
found = message_class("MetadataResponse")(topics=[])
print(found.topcs, message_class("MetadataResponse").MetadataResponseTopic)
print(struct_class(found.__class__, "topics")(name="t").nme)
"""


def test_mypy_rejects_a_misspelled_field_of_a_typed_class(tmp_path: Path) -> None:
    source = tmp_path / "snippet.py"
    source.write_text(SNIPPET)
    config = tmp_path / "mypy.ini"
    # this checkout's sources, not whatever kwire the venv's .pth names
    config.write_text(
        f"[mypy]\nstrict = True\nmypy_path = {Path(kwire.__file__).parent.parent}\n"
        f"cache_dir = {tmp_path / 'cache'}\n"
    )
    out, err, status = api.run(["--config-file", str(config), str(source)])
    errors = [line.split(":", 1)[1] for line in out.splitlines() if ": error: " in line]
    # the misspelled read (line 6) and keyword (line 7) of the typed class; nothing on lines 8-10
    assert errors == [
        '6: error: "MetadataResponse" has no attribute "topcs"; maybe "topics"?  [attr-defined]',
        '7: error: Unexpected keyword argument "topcs" for "MetadataResponse"; '
        'did you mean "topics"?  [call-arg]',
    ], out + err
    assert status == 1


def test_the_loose_types_are_the_base_classes_at_run_time() -> None:
    from kwire.protocol import AnyMessage, AnyStruct, KafkaMessage, KafkaStruct, message_class

    assert (AnyMessage, AnyStruct) == (KafkaMessage, KafkaStruct)
    assert issubclass(message_class("MetadataResponse"), AnyMessage)
