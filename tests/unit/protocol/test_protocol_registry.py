"""load_specs (any spec directory gives the same codec), the codegen CLI, and error codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kwire.cli import main
from kwire.protocol import ErrorCode, SpecError, load_specs, message_class
from kwire.protocol._bundled import SPEC_DIR
from kwire.protocol._testing import nested, random_instance


def test_load_specs_gives_the_same_codec(tmp_path: Path) -> None:
    import random

    for name in ("MetadataRequest.json", "MetadataResponse.json"):
        shutil.copy(SPEC_DIR / name, tmp_path / name)
    registry = load_specs(tmp_path)
    assert registry.names() == ["MetadataRequest", "MetadataResponse"]
    mine = registry.message_class(api_key=3, kind="response")
    bundled = message_class("MetadataResponse")
    assert mine is not bundled and mine.__name__ == "MetadataResponse"
    rng = random.Random(5)
    for version in range(13):
        msg = random_instance(bundled, version, rng)
        data = msg.encode(version)
        theirs = mine.decode(data, version)
        assert theirs.encode(version) == data
        assert theirs.to_json(version) == msg.to_json(version)


def test_load_specs_of_an_evolved_spec(tmp_path: Path) -> None:
    text = (SPEC_DIR / "ApiVersionsRequest.json").read_text()
    text = text.replace('"validVersions": "0-4"', '"validVersions": "0-5"')
    text = text.replace(
        '"fields": [',
        '"fields": [\n    { "name": "Extra", "type": "int64", "versions": "5+", "default": "0x10" },',
        1,
    )
    (tmp_path / "ApiVersionsRequest.json").write_text(text)
    cls = load_specs(tmp_path).message_class("ApiVersionsRequest")
    assert cls.MAX_VERSION == 5 and cls().extra == 16
    assert cls.decode(cls(extra=1).encode(5), 5).extra == 1


def test_load_specs_rejects_bad_specs(tmp_path: Path) -> None:
    (tmp_path / "Bad.json").write_text(
        json.dumps({"name": "Bad", "type": "data", "validVersions": "0"})
    )
    with pytest.raises(SpecError, match=r"Bad\.json.*flexibleVersions"):
        load_specs(tmp_path)
    with pytest.raises(SpecError):
        load_specs(tmp_path / "missing")


def test_codegen_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["codegen", "MetadataResponse", "12"]) == 0
    out = capsys.readouterr().out
    assert "def _d_MetadataResponse_v12(" in out and "def _e_MetadataResponse_v12(" in out
    assert "_v0(" not in out  # only the functions version 12 uses
    assert main(["codegen", "MetadataResponse", "99"]) == 2
    assert main(["codegen", "NoSuch", "1"]) == 2


def test_codegen_check_passes_and_detects_drift(tmp_path: Path) -> None:
    from kwire.protocol._codegen import GENERATED_DIR, check_generated

    assert check_generated() == []
    copy = tmp_path / "gen"
    shutil.copytree(GENERATED_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "metadata.py").write_text((copy / "metadata.py").read_text() + "\n# edited\n")
    (copy / "stray.py").write_text("")
    problems = check_generated(target=copy)
    assert any("metadata.py" in p for p in problems) and any("stray.py" in p for p in problems)


def test_error_codes() -> None:
    assert ErrorCode(0) is ErrorCode.NONE and int(ErrorCode.UNKNOWN_SERVER_ERROR) == -1
    assert ErrorCode(35).name == "UNSUPPORTED_VERSION"
    assert "not supported" in ErrorCode.UNSUPPORTED_VERSION.message
    resp = message_class("ApiVersionsResponse")(error_code=ErrorCode.UNSUPPORTED_VERSION)
    assert (
        ErrorCode(type(resp).decode(resp.encode(3), 3).error_code) is ErrorCode.UNSUPPORTED_VERSION
    )


def test_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "MetadataResponse v12" in out and "round-tripped" in out


def test_nested_helper() -> None:
    assert nested(message_class("MetadataResponse"), "topics").__name__ == "MetadataResponseTopic"


def test_codegen_reference(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["codegen", "--reference", "MetadataResponse"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## MetadataResponse")
    assert (
        "| `cluster_authorized_operations` | `clusterAuthorizedOperations` | `int32` | 8-10 |"
        in out
    )
    assert "### MetadataResponse.MetadataResponsePartition" in out
    assert main(["codegen", "--reference", "Nope"]) == 2
