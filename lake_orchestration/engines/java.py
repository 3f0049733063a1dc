"""Java detection: Spark 4 needs Java 17+, and a missing JVM should read as one clear line, not a Py4J trace."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from lake_orchestration.errors import JavaNotFoundError

MIN_JAVA = 17


def java_executable() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("java")


def java_major_version(java: str) -> int:
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise JavaNotFoundError(f"'{java} -version' failed ({err})") from err
    text = proc.stderr + proc.stdout
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        raise JavaNotFoundError(f"cannot read the version from '{java} -version': {text.strip()[:200]!r}")
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def check_java(min_version: int = MIN_JAVA) -> str:
    """Return the java executable, or raise :class:`JavaNotFoundError` naming what was found."""
    java = java_executable()
    if java is None:
        raise JavaNotFoundError("no 'java' on PATH and JAVA_HOME is not set")
    major = java_major_version(java)
    if major < min_version:
        raise JavaNotFoundError(f"{java} is Java {major}")
    return java
