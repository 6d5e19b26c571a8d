"""Every broker setting kwire reads is one it knows: else a user who sets it is told it "was
supplied but isn't a known config" while the broker honours it (log.cleaner.backoff.ms was)."""

from __future__ import annotations

import re
from pathlib import Path

import kwire
from kwire.broker._config import is_known_broker_config

SRC = Path(kwire.__file__).parent
READ = re.compile(
    r"""static_config(?:\.get)?\(\s*"([a-z0-9._]+)"|static_config\["([a-z0-9._]+)"\]"""
    r"""|broker_(?:int|config|bool|str)\(\s*"([a-z0-9._]+)\""""
)


def test_every_setting_the_broker_reads_is_known() -> None:
    read = {
        next(g for g in match.groups() if g)
        for path in (SRC / "broker").glob("*.py")
        for match in READ.finditer(path.read_text())
    }
    assert len(read) > 20  # the pattern still finds them
    assert sorted(name for name in read if not is_known_broker_config(name)) == []
