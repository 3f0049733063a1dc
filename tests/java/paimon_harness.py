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
from pathlib import Path
from typing import Any

from tests.java.harness import JavaHudi, OnMissing, _raise, java_hudi_python, maven_jars

PAIMON_VERSION = "1.2.0"
"""The newest Java Paimon whose bundle Maven Central serves here. The golden tables were written by Paimon 2.0
(their primary-key global index options ``pk-btree``/``pk-bitmap``/``pk-full-text``/``pk-vector`` first appear in
``release-2.0.0``); 1.2.0 reads their data, ignores those options and cannot open the vector table (type
``VECTOR``)."""
DRIVER = Path(__file__).with_name("paimon_java_driver.py")


def paimon_bundle(version: str = PAIMON_VERSION, on_missing: OnMissing = _raise) -> Path:
    """``org.apache.paimon:paimon-bundle:<version>``, fetched once with ``mvn dependency:copy`` into the cache
    (:func:`tests.java.harness.maven_jars`)."""
    given = os.environ.get("JAVA_PAIMON_JAR")
    if given and version == PAIMON_VERSION:
        return Path(given)
    if shutil.which("java") is None:
        on_missing("'java' is not on PATH: the Java Paimon tests need Java 17")
    coords = f"org.apache.paimon:paimon-bundle:{version}"
    jars = maven_jars(f"paimon-{version}", artifacts=[coords], on_missing=on_missing, what=coords)
    jar = next((j for j in jars if j.name == f"paimon-bundle-{version}.jar"), None)
    if jar is None:
        on_missing(f"mvn dependency:copy of {coords} left no paimon-bundle-{version}.jar in the cache")
    return jar  # type: ignore[return-value]


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
