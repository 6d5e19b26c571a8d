"""Files an older kwire kept in a data directory, read once and retired.

Approach: before the metadata log held them, kwire wrote ``kwire-metadata.json`` (topics, the
cluster id, the next producer id), ``scram-credentials.json`` and ``acls.json``. The broker imports
each once: ``read_legacy_json`` gives the document (None when the file is absent), the broker
appends its records to ``__cluster_metadata`` (fsynced), then ``retire_legacy_file`` renames the
file ``<name>.migrated`` (and fsyncs the directory), so an import cut short by a crash is redone
at the next start and a finished one never again. The broker never opens these files itself.
"""

from __future__ import annotations

import os
from typing import Final

from kwire.log._writer import _fsync_dir

__all__ = ["MIGRATED_SUFFIX", "read_legacy_json", "retire_legacy_file"]

MIGRATED_SUFFIX: Final = ".migrated"


def read_legacy_json(root: str | os.PathLike[str], name: str) -> object | None:
    """The JSON document of ``<root>/<name>``, or None when there is no such file."""
    try:
        f = open(os.path.join(root, name), encoding="utf-8")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return None
    import json  # here: only an older kwire's data directory has these files

    with f:
        doc: object = json.load(f)
    return doc


def retire_legacy_file(root: str | os.PathLike[str], name: str) -> None:
    """Rename ``<root>/<name>`` to ``<name>.migrated`` once its content is in the metadata log."""
    path = os.path.join(root, name)
    os.replace(path, path + MIGRATED_SUFFIX)
    _fsync_dir(os.fspath(root))
