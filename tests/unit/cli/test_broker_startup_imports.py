"""``kwire broker`` from spawn to its first Metadata answer and its stop loads nothing it does not
need for that: not the spec model (the JSON loader and its dataclasses: the generated codecs carry
what the wire needs); not SASL (its listeners load it); not the offline log readers (Arrow, index
checks, samples: ``kwire.log`` loads a module on first use of one of its names); not ``pathlib``
(the bundled specs' directory is a ``Path`` made on first use); and not ``importlib.metadata``
(with ``email``, ``zipfile``, ``csv``), which the ``crc32c`` package's ``__init__`` imports for a
version string; nor the data path's shared handler module (``_data``: Produce, ListOffsets, ...),
which Metadata and ApiVersions no longer share; nor what only rarer paths need (``gzip``,
``ipaddress``, ``json``, ``shutil`` with ``bz2`` and ``lzma``, the ``idna`` codec). The broker runs
as the command does, in a subprocess under ``-X importtime``, whose report names every module the
process loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kwire.protocol import ClientConnection, message_class

SRC = Path(__file__).resolve().parents[3] / "src"

#: Modules the first Metadata answer does not need, loaded only by the paths that do.
NOT_AT_START = (
    "kwire.protocol._spec._loader",
    "kwire.protocol._spec._model",
    "kwire.broker._sasl",
    "kwire.broker._delegation_tokens",
    "hmac",
    "kwire.log._arrow",
    "kwire.log._check",
    "kwire.log._sample",
    "pathlib",
    "importlib.metadata",
    "email",
    # the handlers of Produce, ListOffsets and the like: a first Metadata loads its own module
    "kwire.broker._data",
    "kwire.broker._fetch",  # the server checks responses for _file_records' classes only
    "kwire.broker._upgrade",  # the removed-versions report (--report-removed-in, /metrics)
    # the log cleaner's record rules: a broker with no compacted log never builds its cleaner
    "kwire.log._cleaner",
    "kwire.log._compaction",
    # what only a rarer path needs: gzip batches (zlib-ng's extension imports gzip), an IP quota,
    # an older kwire's JSON files or a quorum-state to read back, argparse's terminal width (with
    # bz2 and lzma), a deleted or moved log, the idna codec for an ASCII --host
    "gzip",
    "ipaddress",
    "json",
    "shutil",
    "bz2",
    "lzma",
    "encodings.idna",
    "stringprep",
    # ``kwire.records`` loads a submodule on the first use of one of its names: the start needs
    # the append path and control records (the metadata log's leader-change batch) but not all
    "kwire.records._java",
    # the codecs of the ACL and client-quota APIs: their handlers look them up when they run (the
    # authorizer and the quotas themselves are loaded at start)
    "kwire.protocol._generated.create_acls",
    "kwire.protocol._generated.describe_acls",
    "kwire.protocol._generated.delete_acls",
    "kwire.protocol._generated.alter_client_quotas",
    "kwire.protocol._generated.describe_client_quotas",
)


def first_metadata(port: int) -> int:
    """One MetadataRequest v1 on a fresh connection, bounded in time; the broker count."""
    import socket

    conn = ClientConnection("kwire-startup-test")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(conn.send(message_class("MetadataRequest")(topics=[]), 1))
        for _ in range(100):
            data = s.recv(65536)
            assert data, "the broker closed the connection before answering"
            conn.receive_data(data)
            response = conn.next_response()
            if response is not None:
                return len(response.message.brokers)
    raise AssertionError("no Metadata answer after 100 reads")


def test_start_to_first_metadata_loads_no_spec_model_nor_package_metadata(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    argv = [sys.executable, "-X", "importtime", "-m", "kwire", "broker", "--port", "0"]
    proc = subprocess.Popen(
        [*argv, "--data-dir", str(tmp_path / "data")],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # 'kwire broker listening on HOST:PORT (...)'
        assert "listening on" in line, line
        port = int(line.split("listening on ", 1)[1].split()[0].rsplit(":", 1)[1])
        assert first_metadata(port) == 1
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr[-2000:]
    loaded = {
        row.rsplit("|", 1)[1].strip()
        for row in stderr.splitlines()
        if row.startswith("import time:")
    }
    assert "kwire.broker._server" in loaded  # the report is there
    assert sorted(set(NOT_AT_START) & loaded) == []
