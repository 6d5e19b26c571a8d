"""A broker built from a submodule serves every API and loads every coordinator, as one built from
``kwire.broker``'s public names does (the package loads its modules lazily, on first use)."""

from __future__ import annotations

import subprocess
import sys


def test_a_broker_from_a_submodule_serves_every_api(tmp_path: object) -> None:
    script = f"""
from kwire.broker._broker import Broker
from kwire.broker._apis import HANDLERS, STARTUP
b = Broker({str(tmp_path)!r}, host="127.0.0.1", port=0)
b.start()
try:
    print(len(HANDLERS), len(STARTUP))
finally:
    b.stop()
import kwire.broker
kwire.broker.Broker
print(len(HANDLERS), len(STARTUP))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    ).stdout.splitlines()
    first, after_package = out[0], out[1]
    assert first == after_package
    assert int(first.split()[0]) > 50
