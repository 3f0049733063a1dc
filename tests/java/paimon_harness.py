"""The Java Paimon harness: Java Paimon's ``paimon-bundle`` (fetched once with ``mvn dependency:copy`` into the
cache, as :mod:`tests.java.harness` fetches Hudi's bundle) driven through its Java API over py4j, in one long-lived
JVM started by the same PySpark 3.5 venv (``paimon_java_driver.py``; the JSON-lines protocol of
:class:`tests.java.harness.JavaHudi`).

Why the Java API and not Spark SQL: Maven Central (as this project's mirror serves it, asked 2026-11-27) has
``paimon-bundle`` 1.2.0 and 1.0.1 but ``paimon-spark-3.5`` only as 0.9.0, and no Paimon 2.x artifact at all.

``JAVA_PAIMON_JAR`` uses an existing bundle jar instead. A missing prerequisite calls ``on_missing(reason)``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests._venv import cache_root
from tests.java.harness import JavaHudi, OnMissing, _raise, java_hudi_python

PAIMON_VERSION = "1.2.0"
"""The newest Java Paimon whose bundle Maven Central serves here. The golden tables were written by Paimon 2.0
(their primary-key global index options ``pk-btree``/``pk-bitmap``/``pk-full-text``/``pk-vector`` first appear in
``release-2.0.0``); 1.2.0 reads their data, ignores those options and cannot open the vector table (type
``VECTOR``)."""
DRIVER = Path(__file__).with_name("paimon_java_driver.py")


def paimon_bundle(version: str = PAIMON_VERSION, on_missing: OnMissing = _raise) -> Path:
    """``org.apache.paimon:paimon-bundle:<version>``, fetched once with ``mvn dependency:copy`` into the cache."""
    given = os.environ.get("JAVA_PAIMON_JAR")
    if given and version == PAIMON_VERSION:
        return Path(given)
    folder = cache_root() / "maven" / f"paimon-{version}"
    jar = folder / f"paimon-bundle-{version}.jar"
    if (folder / ".complete").is_file() and jar.is_file():
        return jar
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            on_missing(
                f"'{tool}' is not on PATH: the Java Paimon tests need Java 17 and Maven to fetch "
                f"org.apache.paimon:paimon-bundle:{version} from Maven Central"
            )
    folder.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".paimon-{version}-", dir=folder.parent))
    coords = f"org.apache.paimon:paimon-bundle:{version}"
    try:
        proc = subprocess.run(
            ["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={coords}", f"-DoutputDirectory={tmp}"],
            capture_output=True,
            text=True,
            timeout=1800,
            cwd=tmp,
        )
        if proc.returncode != 0 or not (tmp / jar.name).is_file():
            on_missing(
                f"mvn dependency:copy of {coords} failed (exit {proc.returncode}) into {tmp}:\n"
                f"{(proc.stdout + proc.stderr)[-3000:]}"
            )
        (tmp / jar.name).replace(jar)
        (folder / ".complete").write_text(version)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return jar


class JavaPaimon:
    """Java Paimon in a child JVM; :meth:`call` sends a command (see ``paimon_java_driver.py``), returns its
    result or raises :class:`tests.java.harness.JavaHudiError` with Java's message and trace."""

    def __init__(self, python: Path, jar: Path, workdir: Path, version: str) -> None:
        self.version = version
        self._java = JavaHudi(
            python, [jar], workdir / f"java-paimon-{version}.log", version, driver=DRIVER, driver_args=(version,)
        )

    def call(self, op: str, **args: Any) -> Any:
        return self._java.call(op, **args)

    def read(self, warehouse: Path | str, table: str, snapshot_id: int | None = None) -> list[list[Any]]:
        """Java's merged batch read of ``table`` (latest, or ``snapshot_id``), rows sorted; every row is ``+I``."""
        result = self.call("read", warehouse=str(warehouse), table=table, snapshot_id=snapshot_id)
        assert set(result["row_kinds"]) <= {"+I"}, result["row_kinds"]
        return sort_rows(result["rows"])

    def log_tail(self) -> str:
        return self._java.log_tail()

    def close(self) -> None:
        self._java.close()


def sort_rows(rows: list[list[Any]]) -> list[list[Any]]:
    """``rows`` in one order whatever their value types (None, numbers and strings mixed): for comparing reads."""
    return sorted(rows, key=lambda row: [(v is None, str(v)) for v in row])


def start_java_paimon(workdir: Path, version: str = PAIMON_VERSION, on_missing: OnMissing = _raise) -> JavaPaimon:
    """A running :class:`JavaPaimon` (venv and bundle fetched on first use; ``on_missing`` when they cannot be)."""
    if shutil.which("java") is None:
        on_missing("'java' is not on PATH: the Java Paimon tests need a Java 17 runtime")
    python = java_hudi_python(on_missing)
    jar = paimon_bundle(version, on_missing)
    workdir.mkdir(parents=True, exist_ok=True)
    return JavaPaimon(python, jar, workdir, version)
