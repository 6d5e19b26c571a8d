"""``meta.properties`` as Kafka's ``MetaProperties`` reads and writes it, and the check that a
node's log directories agree (``MetaPropertiesEnsemble.verify``), with Kafka's messages."""

from __future__ import annotations

import calendar
from pathlib import Path

import pytest

from kwire.broker import BrokerState
from kwire.log import META_PROPERTIES, MetaProperties
from kwire.log.storage import DataDir
from tests.unit.broker.test_txn import make_state

CLUSTER = "abcdefghijklmnopqrstuv"
DIRECTORY = "AAECAwQFBgcICQoLDA0ODw"


def test_v1_text_is_kafkas() -> None:
    meta = MetaProperties(1, CLUSTER, 3, DIRECTORY)
    at = calendar.timegm((2026, 11, 26, 9, 5, 7, 0, 0, 0))
    assert meta.to_text(at) == (
        "#\n#Thu Nov 26 09:05:07 UTC 2026\n"
        f"cluster.id={CLUSTER}\ndirectory.id={DIRECTORY}\nnode.id=3\nversion=1\n"
    )
    assert MetaProperties.parse(meta.to_text(at)) == meta


def test_v0_names_the_node_broker_id() -> None:
    assert MetaProperties.parse("version=0\nbroker.id=7\n") == MetaProperties(0, None, 7)
    assert MetaProperties.parse("broker.id=7\n").version == 0  # no version: v0
    assert MetaProperties(0, None, 7).to_text(0).endswith("broker.id=7\nversion=0\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version=2\n", "Unknown meta.properties version number 2"),
        ("version=x\n", "Invalid meta.properties version string 'x'"),
        ("version=1\ncluster.id=c\n", "Failed to find required property node.id."),
        ("version=1\nnode.id=1\n", "cluster.id was not found."),
        ("version=1\nnode.id=one\ncluster.id=c\n", "Unable to read node.id as a base-10 number."),
        ("version=1\nnode.id=1\ncluster.id=c\ndirectory.id=zz\n", "Unable to read directory.id"),
    ],
)
def test_files_kafka_refuses(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        MetaProperties.parse(text)


def _open(tmp_path: Path) -> BrokerState:
    return make_state(tmp_path / "d1", **{"log.dirs": str(tmp_path / "d2")})


def _copy_meta(tmp_path: Path, edit: str, value: str) -> None:
    """d2's meta.properties becomes d1's with ``edit`` set to ``value``."""
    lines = (tmp_path / "d1" / META_PROPERTIES).read_text().splitlines()
    lines = [f"{edit}={value}" if line.startswith(f"{edit}=") else line for line in lines]
    (tmp_path / "d2" / META_PROPERTIES).write_text("\n".join(lines) + "\n")


def test_log_dirs_of_two_clusters_refuse_to_start(tmp_path: Path) -> None:
    _open(tmp_path).close()
    _copy_meta(tmp_path, "cluster.id", "zzzzzzzzzzzzzzzzzzzzzz")
    before = (tmp_path / "d2" / META_PROPERTIES).read_bytes()
    with pytest.raises(ValueError) as caught:
        _open(tmp_path)
    d1 = (tmp_path / "d1" / META_PROPERTIES).read_text()
    cluster = d1.split("cluster.id=")[1].split("\n")[0]
    assert str(caught.value) == (
        f"Invalid cluster.id in: {tmp_path / 'd2' / META_PROPERTIES}. Expected {cluster}, "
        "but read zzzzzzzzzzzzzzzzzzzzzz"
    )
    assert (tmp_path / "d2" / META_PROPERTIES).read_bytes() == before
    # Mended, the directories open: the failed start let their locks go.
    _copy_meta(tmp_path, "cluster.id", cluster)
    _copy_meta(tmp_path, "directory.id", DIRECTORY)
    _open(tmp_path).close()


def test_two_log_dirs_with_one_directory_id_refuse_to_start(tmp_path: Path) -> None:
    """A copied log directory keeps its ``directory.id``: Kafka refuses to start on both."""
    _open(tmp_path).close()
    d1_id = (tmp_path / "d1" / META_PROPERTIES).read_text().split("directory.id=")[1][:22]
    _copy_meta(tmp_path, "directory.id", d1_id)
    with pytest.raises(ValueError) as caught:
        _open(tmp_path)
    assert str(caught.value) == (
        f"Duplicate directory ID Optional[{d1_id}] found. It was the ID of {tmp_path / 'd1'}, "
        f"but also of {tmp_path / 'd2'}"
    )


def test_a_reserved_directory_id_refuses_to_start(tmp_path: Path) -> None:
    _open(tmp_path).close()
    _copy_meta(tmp_path, "directory.id", "AAAAAAAAAAAAAAAAAAAAAQ")  # DirectoryId.LOST
    with pytest.raises(ValueError, match="Invalid resrved directory ID AAAAAAAAAAAAAAAAAAAAAQ"):
        _open(tmp_path)


def test_a_new_log_dir_takes_the_ensembles_cluster_id(tmp_path: Path) -> None:
    d = DataDir.open(tmp_path / "d1", cluster_id=None, node_id=1)
    d.close([])
    opened = DataDir.open_all([tmp_path / "d1", tmp_path / "d2"], cluster_id=None, node_id=1)
    try:
        assert [x.cluster_id for x in opened] == [d.cluster_id, d.cluster_id]
        assert opened[0].directory_id == d.directory_id != opened[1].directory_id
    finally:
        for x in opened:
            x.close([])
