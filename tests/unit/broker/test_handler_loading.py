"""A broker loads a handler's module on the first request of its API (``_apis.TABLE``): started
from the package or a submodule, it serves every API of the table, and the first Metadata imports
no coordinator."""

from __future__ import annotations

import subprocess
import sys


def test_a_broker_loads_handlers_on_first_use(tmp_path: object) -> None:
    script = f"""
import socket, sys
from kwire.broker._broker import Broker
from kwire.broker._apis import TABLE, implemented_versions
from kwire.protocol import ClientConnection, message_class

def ask(port, request, version):
    conn = ClientConnection("test")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(conn.send(request, version))
        for _ in range(100):
            conn.receive_data(s.recv(65536))
            response = conn.next_response()
            if response is not None:
                return response.message
    raise TimeoutError

b = Broker({str(tmp_path)!r}, host="127.0.0.1", port=0)
b.start()
try:
    print(len(TABLE), len(implemented_versions()), len(b.personality.advertised) > 50)
    ask(b.port, message_class("MetadataRequest")(topics=[]), 1)
    print("kwire.broker._group_apis" in sys.modules, "kwire.broker._admin" in sys.modules)
    ask(b.port, message_class("FindCoordinatorRequest")(key="g"), 1)
    print("kwire.broker._group_apis" in sys.modules)
finally:
    b.stop()
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    ).stdout.splitlines()
    table, implemented, advertised = out[0].split()
    assert table == implemented and int(table) > 50 and advertised == "True"
    assert out[1] == "False False"  # Metadata loaded neither the group coordinator nor admin
    assert out[2] == "True"
