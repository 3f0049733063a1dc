"""Java Hudi in the loop: the reference implementation (Hudi's Spark bundle from Maven Central on PySpark 3.5) as an
oracle, driven out of process.

Java Hudi needs Spark 3.5 (Scala 2.12) while this project runs PySpark 4, so it never enters our environment: a venv
with ``pyspark==PYSPARK_VERSION`` is built once per machine under ``~/.cache/lake_orchestration/`` (see
:mod:`tests._venv`), the bundles are fetched once with ``mvn dependency:copy`` (the machine's ordinary Maven client and
its settings; not Spark's ``--packages``) into ``~/.cache/lake_orchestration/maven/hudi-<version>/``, and one
long-lived Spark session per test run answers JSON commands (``hudi_java_driver.py``). No Java, no Maven or a failed
download: a failure in CI (``LAKE_ORCH_REQUIRE_SHARED=1``), a skip with the reason in a user's clone.
``JAVA_HUDI_PYTHON`` / ``JAVA_HUDI_JARS`` use an existing interpreter / comma-separated jars instead.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests._venv import cache_root, cached_venv_python
from tests.conftest import REQUIRE_SHARED

PYSPARK_VERSION = "3.5.1"
"""The Spark Hudi 0.15.0's ``hudi-spark3.5-bundle`` is built against."""
HUDI_VERSION = "0.15.0"
BUNDLES = ("hudi-spark3.5-bundle_2.12",)
"""Java's services run through the bundle's Spark SQL procedures (``run_compaction``, ``run_clean``,
``archive_commits`` ...). ``hudi-utilities-slim-bundle_2.12`` (HoodieCompactor, HoodieCleaner) and the 0.14.1 bundles
are not served by this project's Maven mirror (asked 2026-11-27), so they are not part of the harness."""
DRIVER = Path(__file__).with_name("hudi_java_driver.py")
START_TIMEOUT_S = 300.0
COMMAND_TIMEOUT_S = 900.0


def skip_or_fail(reason: str) -> NoReturn:
    if REQUIRE_SHARED:
        pytest.fail(reason)
    pytest.skip(reason)


def java_hudi_python() -> Path:
    """An interpreter with PySpark 3.5 (``JAVA_HUDI_PYTHON``, else the cached venv, built on first use)."""
    given = os.environ.get("JAVA_HUDI_PYTHON")
    if given:
        return Path(given)
    name = f"java-hudi-pyspark-{PYSPARK_VERSION}-py{sys.version_info.major}{sys.version_info.minor}"
    try:
        return cached_venv_python(
            name, lambda _: [f"pyspark=={PYSPARK_VERSION}"], complete=PYSPARK_VERSION, timeout=1800
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        detail = getattr(err, "stderr", "") or ""
        skip_or_fail(f"cannot build the PySpark {PYSPARK_VERSION} venv at {cache_root() / name}: {err}; {detail}"[-3000:])


def hudi_jars(version: str = HUDI_VERSION) -> list[Path]:
    """The Hudi bundles of ``version``, fetched once with ``mvn dependency:copy`` into the cache."""
    given = os.environ.get("JAVA_HUDI_JARS")
    if given and version == HUDI_VERSION:
        return [Path(p) for p in given.split(",")]
    folder = cache_root() / "maven" / f"hudi-{version}"
    jars = [folder / f"{artifact}-{version}.jar" for artifact in BUNDLES]
    if (folder / ".complete").is_file() and all(j.is_file() for j in jars):
        return jars
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            skip_or_fail(
                f"'{tool}' is not on PATH: the Java Hudi tests need Java 17 and Maven to fetch "
                f"org.apache.hudi:{BUNDLES[0]}:{version} from Maven Central"
            )
    folder.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".hudi-{version}-", dir=folder.parent))
    try:
        for artifact in BUNDLES:
            coords = f"org.apache.hudi:{artifact}:{version}"
            proc = subprocess.run(
                ["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={coords}", f"-DoutputDirectory={tmp}"],
                capture_output=True,
                text=True,
                timeout=1800,
                cwd=tmp,
            )
            if proc.returncode != 0:
                skip_or_fail(
                    f"mvn dependency:copy of {coords} failed (exit {proc.returncode}) into {tmp}:\n"
                    f"{(proc.stdout + proc.stderr)[-3000:]}"
                )
        for jar in tmp.glob("*.jar"):
            jar.replace(folder / jar.name)
        (folder / ".complete").write_text(version)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return jars


class JavaHudiError(AssertionError):
    """Java Hudi answered a command with an error (its message and the Python-side trace)."""


class JavaHudi:
    """One Spark 3.5 session with Java Hudi, in a child process; :meth:`call` sends a command, returns its result."""

    def __init__(self, python: Path, jars: list[Path], log_path: Path, version: str) -> None:
        self.version = version
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 - lives as long as the process
        env = {
            **os.environ,
            "TZ": "UTC",
            "PYSPARK_PYTHON": str(python),
            "PYSPARK_DRIVER_PYTHON": str(python),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "JAVA_HUDI_WAREHOUSE": str(log_path.parent / "warehouse"),
        }
        env.pop("SPARK_HOME", None)
        self._proc = subprocess.Popen(
            [str(python), str(DRIVER), ",".join(str(j) for j in jars)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            cwd=str(log_path.parent),
        )
        self.spark_version = self._answer(START_TIMEOUT_S)["spark"]

    def _answer(self, timeout: float) -> Any:
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout)
        if not ready:
            self.close()
            raise JavaHudiError(f"Java Hudi did not answer within {timeout:.0f} s; log: {self.log_tail()}")
        line = self._proc.stdout.readline()
        if not line:
            raise JavaHudiError(f"Java Hudi exited (code {self._proc.poll()}); log: {self.log_tail()}")
        answer = json.loads(line)
        if not answer["ok"]:
            raise JavaHudiError(f"Java Hudi: {answer['error']}\n{answer['trace'][-3000:]}")
        return answer["result"]

    def call(self, op: str, timeout: float = COMMAND_TIMEOUT_S, **args: Any) -> Any:
        assert self._proc.stdin is not None
        self._proc.stdin.write((json.dumps({"op": op, **args}) + "\n").encode())
        self._proc.stdin.flush()
        return self._answer(timeout)

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
                self._proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._log.close()


def start_java_hudi(workdir: Path, version: str = HUDI_VERSION) -> JavaHudi:
    """A running :class:`JavaHudi` of Hudi ``version`` (venv and jars fetched on first use; skip/fail as above)."""
    if shutil.which("java") is None:
        skip_or_fail("'java' is not on PATH: the Java Hudi tests need a Java 17 runtime")
    python = java_hudi_python()
    jars = hudi_jars(version)
    workdir.mkdir(parents=True, exist_ok=True)
    return JavaHudi(python, jars, workdir / f"java-hudi-{version}.log", version)


@pytest.fixture(scope="session")
def java_hudi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaHudi]:
    """The test run's Java Hudi 0.15 session (one JVM for every module: starting one costs ~15 s)."""
    java = start_java_hudi(tmp_path_factory.mktemp("java-hudi"))
    yield java
    java.close()


# -- Java-written histories, shared by the module's cells (each cell works on a private copy) ---------------------


@pytest.fixture(scope="session")
def java_histories(java_hudi: JavaHudi, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """``get(shape, table_type)`` -> the Java-written history of that shape and type (built once per run; read-only:
    take a private copy with :func:`java_table`)."""
    from tests.java.interop import java_history

    built: dict[tuple[str, str], Any] = {}

    def get(shape: Any, table_type: Any) -> Any:
        key = (shape.name, table_type.value)
        if key not in built:
            root = tmp_path_factory.mktemp(f"java-{table_type.value}-{shape.name.replace(' ', '-')}")
            built[key] = java_history(java_hudi, root / "t", shape, table_type)
        return built[key]

    return get


@pytest.fixture
def java_table(java_histories, tmp_path: Path):  # type: ignore[no-untyped-def]
    """``java_table(shape, table_type)`` -> a private copy of the Java-written history the test may change."""

    def get(shape: Any, table_type: Any) -> Any:
        return java_histories(shape, table_type).copy(tmp_path / "t")

    return get


# -- the interop matrix: each cell's outcome, rendered as docs/interop.md ------------------------------------------

_CELLS: list[dict[str, str]] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    marker = item.get_closest_marker("interop")
    if marker is None or report.when not in ("setup", "call"):
        return
    if report.when == "setup" and report.passed:
        return
    status = "passed" if report.passed else ("skipped" if report.skipped else "failed")
    _CELLS.append({**marker.kwargs, "test": item.nodeid, "status": status, "version": HUDI_VERSION})


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get("LAKE_ORCH_INTEROP_DOC")
    if target and _CELLS:
        from tests.java.matrix_doc import render

        Path(target).write_text(render(_CELLS))
