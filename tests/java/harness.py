"""The Java Hudi harness, shared by tests/java (through its conftest) and benchmarks/java_peer_benchmark.py: a venv with
PySpark 3.5 built once per machine, the Hudi Spark bundle fetched once with ``mvn dependency:copy`` (the machine's
Maven client and settings; not Spark's ``--packages``), and :class:`JavaHudi`, one long-lived Spark session with Java
Hudi in a child process answering JSON commands (``hudi_java_driver.py``).

A missing prerequisite calls ``on_missing(reason)`` (the tests skip or, in CI, fail; the benchmark exits).
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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from tests._venv import cache_root, cached_venv_python

OnMissing = Callable[[str], NoReturn]


def _raise(reason: str) -> NoReturn:
    raise RuntimeError(reason)


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


def java_hudi_python(on_missing: OnMissing = _raise) -> Path:
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
        on_missing(f"cannot build the PySpark {PYSPARK_VERSION} venv at {cache_root() / name}: {err}; {detail}"[-3000:])


def maven_jars(
    name: str,
    *,
    artifacts: Sequence[str] = (),
    pom: str | None = None,
    on_missing: OnMissing = _raise,
    what: str = "",
) -> list[Path]:
    """Jars fetched once with the machine's Maven client into ``cache_root()/maven/<name>`` (later calls reuse them):
    each of ``artifacts`` (``group:artifact:version``, the jar alone) with ``mvn dependency:copy``, and, given a
    ``pom``, its dependencies with their runtime dependencies (``mvn dependency:copy-dependencies``). Fetched into a
    scratch folder and moved in, the folder's ``.complete`` marker written last. No Maven or a failed fetch:
    ``on_missing(reason)``. Returns every jar of the folder, sorted."""
    folder = cache_root() / "maven" / name
    if not (folder / ".complete").is_file():
        if shutil.which("mvn") is None:
            on_missing(f"'mvn' is not on PATH: needed to fetch {what or name} from Maven Central")
        folder.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder.parent))
        try:
            steps = [["dependency:copy", f"-Dartifact={coords}", f"-DoutputDirectory={tmp}"] for coords in artifacts]
            if pom is not None:
                (tmp / "pom.xml").write_text(pom)
                steps.append(["dependency:copy-dependencies", f"-DoutputDirectory={tmp}", "-DincludeScope=runtime"])
            for step in steps:
                proc = subprocess.run(["mvn", "-q", "-B", *step], capture_output=True, text=True, timeout=1800, cwd=tmp)
                if proc.returncode != 0:
                    on_missing(
                        f"mvn {' '.join(step[:2])} failed (exit {proc.returncode}) into {tmp}:\n"
                        f"{(proc.stdout + proc.stderr)[-3000:]}"
                    )
            for jar in tmp.glob("*.jar"):
                jar.replace(folder / jar.name)
            (folder / ".complete").write_text(name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return sorted(folder.glob("*.jar"))


def hudi_jars(version: str = HUDI_VERSION, on_missing: OnMissing = _raise) -> list[Path]:
    """The Hudi bundles of ``version``, fetched once with ``mvn dependency:copy`` into the cache."""
    given = os.environ.get("JAVA_HUDI_JARS")
    if given and version == HUDI_VERSION:
        return [Path(p) for p in given.split(",")]
    if shutil.which("java") is None:
        on_missing(
            f"'java' is not on PATH: the Java Hudi tests need Java 17 and Maven to fetch "
            f"org.apache.hudi:{BUNDLES[0]}:{version} from Maven Central"
        )
    coords = [f"org.apache.hudi:{artifact}:{version}" for artifact in BUNDLES]
    folder_jars = maven_jars(f"hudi-{version}", artifacts=coords, on_missing=on_missing, what=coords[0])
    jars = [j for j in folder_jars if j.name in {f"{artifact}-{version}.jar" for artifact in BUNDLES}]
    if len(jars) != len(BUNDLES):
        on_missing(f"the Maven cache {folder_jars[0].parent if folder_jars else f'hudi-{version}'} lacks {BUNDLES}")
    return jars


class JavaHudiError(AssertionError):
    """Java Hudi answered a command with an error (its message and the Python-side trace)."""


class JavaHudi:
    """One Spark 3.5 session with Java Hudi, in a child process; :meth:`call` sends a command, returns its result."""

    def __init__(
        self,
        python: Path,
        jars: list[Path],
        log_path: Path,
        version: str,
        driver: Path = DRIVER,
        driver_args: tuple[str, ...] = (),
    ) -> None:
        """Start ``driver`` (default: the Hudi driver) as ``python driver JARS_CSV *driver_args``; its first line
        answers ``{"spark": version, ...}``."""
        self.version = version
        self.log_path = log_path
        self._log = open(log_path, "ab")
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
            [str(python), str(driver), ",".join(str(j) for j in jars), *driver_args],
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


def start_java_hudi(workdir: Path, version: str = HUDI_VERSION, on_missing: OnMissing = _raise) -> JavaHudi:
    """A running :class:`JavaHudi` of Hudi ``version`` (venv and jars fetched on first use; skip/fail as above)."""
    if shutil.which("java") is None:
        on_missing("'java' is not on PATH: the Java Hudi tests need a Java 17 runtime")
    python = java_hudi_python(on_missing)
    jars = hudi_jars(version, on_missing)
    workdir.mkdir(parents=True, exist_ok=True)
    return JavaHudi(python, jars, workdir / f"java-hudi-{version}.log", version)
