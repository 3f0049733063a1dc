"""Airflow fixtures: Airflow 3.3 in its own venv, ``airflow dags test`` by subprocess on a temporary SQLite DB.

apache-airflow 3.3 resolves together with this project's pins and its ``dagster`` extra, but it brings ~80 packages
(FastAPI, SQLAlchemy, OpenTelemetry, ...) the rest of the suite does not need, so the test environment does not
carry it: a session fixture builds a venv once per machine under ``~/.cache/lake_orchestration/``
(``$XDG_CACHE_HOME`` respected; keyed by the package's dependencies, the ``airflow`` extra, its entry points and the
Python version) with ``pip install <copy of this checkout>[airflow]`` — which is also the test that the extra installs
on a fresh venv, without Dagster (the ``dagster`` extra). The tests run ``python -m airflow`` in it with
``PYTHONPATH`` on a link to this checkout's package (the installed copy provides the ``apache_airflow_provider``
entry point; the checkout's modules shadow it). Building the venv takes about a minute with a warm pip cache (a few
minutes of downloads without); ``AIRFLOW_PYTHON=/path/to/python`` uses an existing interpreter that has Airflow and
the package instead. The table checks (hudi-rs, our reader) run in this process.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tomllib

from tests._venv import cache_root, cached_venv_python
from tests.conftest import REPO_ROOT

PYPROJECT = REPO_ROOT / "pyproject.toml"
EXAMPLE_DAGS = REPO_ROOT / "lake_orchestration" / "airflow" / "example_dags"


def airflow_requirement() -> str:
    """The ``airflow`` extra's requirement (``apache-airflow>=3.3,<3.4``)."""
    extra = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]["airflow"]
    return str(extra[0])


def _venv_key() -> str:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    spec = json.dumps(
        [project["dependencies"], project["optional-dependencies"]["airflow"], project.get("entry-points", {})]
    )
    digest = hashlib.sha256(spec.encode()).hexdigest()[:12]
    return f"airflow-py{sys.version_info.major}{sys.version_info.minor}-{digest}"


def _copy_checkout(dest: Path) -> Path:
    """What ``pip install .`` needs of the checkout (pyproject, README, the package), without .venv/build dirs."""
    src = dest / "src"
    src.mkdir(parents=True)
    shutil.copy2(PYPROJECT, src / "pyproject.toml")
    shutil.copy2(REPO_ROOT / "README.md", src / "README.md")
    shutil.copytree(
        REPO_ROOT / "lake_orchestration",
        src / "lake_orchestration",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    return src


@pytest.fixture(scope="session")
def airflow_python() -> Path:
    """An interpreter with Airflow and the package (``AIRFLOW_PYTHON``, else the cached venv, built on first use)."""
    given = os.environ.get("AIRFLOW_PYTHON")
    if given:
        return Path(given)
    name = _venv_key()
    try:
        return cached_venv_python(
            name, lambda scratch: [f"{_copy_checkout(scratch)}[airflow]"], complete=airflow_requirement(), timeout=1800
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        detail = str(getattr(err, "stderr", "") or "")
        pytest.fail(
            f"pip install .[airflow] into a fresh venv at {cache_root() / name} failed: {err}; {detail[-3000:]}"
        )


@dataclass(frozen=True)
class DagRunResult:
    """One ``airflow dags test`` run: its output, the run's state and each task's state and XComs (from the DB)."""

    dag_id: str
    returncode: int
    output: str
    state: str | None
    tasks: dict[tuple[str, int], str]
    """(task id, map index) -> state (map index -1: not mapped)."""
    xcom: dict[tuple[str, int, str], Any]
    """(task id, map index, key) -> decoded value."""
    map_labels: dict[tuple[str, int], str | None]
    """(task id, map index) -> the rendered ``map_index_template`` (the label the UI shows; None: none)."""

    def result(self, task_id: str, map_index: int = -1, key: str = "return_value") -> Any:
        """The XCom ``key`` of a task (None when it pushed none: a task returning None pushes nothing)."""
        return self.xcom.get((task_id, map_index, key))

    def mapped_results(self, task_id: str) -> list[Any]:
        """The return values of the mapped task ``task_id``, by map index."""
        return [
            v
            for (t, _, k), v in sorted(self.xcom.items(), key=lambda kv: kv[0][1])
            if t == task_id and k == "return_value"
        ]


class AirflowRunner:
    """Runs the example DAGs with ``airflow dags test`` in the Airflow venv, on the session's SQLite DB.

    The table comes from the connection ``hudi_default`` (``AIRFLOW_CONN_HUDI_DEFAULT``, JSON with ``hoodie_options``
    in its extra) and the Variable ``hudi_table_path`` (``AIRFLOW_VAR_HUDI_TABLE_PATH``), as the examples read them.
    """

    def __init__(self, python: Path, home: Path) -> None:
        self.python = python
        self.home = home
        # the checkout's package, shadowing the venv's installed copy; a directory holding only a link to it (and the
        # processes run in ``home``), since the checkout's root may hold the main venv's editable-install metadata
        # (lake_orchestration.egg-info), which would shadow the installed dist-info and its provider entry point
        self.source_dir = home / "src"
        self.source_dir.mkdir(exist_ok=True)
        link = self.source_dir / "lake_orchestration"
        if not link.exists():
            link.symlink_to(REPO_ROOT / "lake_orchestration", target_is_directory=True)

    def env(self, table_path: Path, hoodie_options: dict[str, str] | None = None) -> dict[str, str]:
        conn = {"conn_type": "hudi", "host": "/nonexistent", "extra": {"hoodie_options": hoodie_options or {}}}
        return {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "VIRTUAL_ENV", "PYTHON"))},
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(EXAMPLE_DAGS),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW_CONN_HUDI_DEFAULT": json.dumps(conn),
            "AIRFLOW_VAR_HUDI_TABLE_PATH": str(table_path),
            "PYTHONPATH": str(self.source_dir),
            "TZ": "UTC",
        }

    def cli(self, *args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.python), "-m", "airflow", *args],
            env=env or self.env(Path("/nonexistent")),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.home,
        )

    def start(
        self, dag_id: str, table_path: Path, log: Path, hoodie_options: dict[str, str] | None = None
    ) -> subprocess.Popen:
        """``airflow dags test dag_id`` in the background, its output (stdout and stderr) written to ``log``."""
        with open(log, "w") as out:
            return subprocess.Popen(
                [str(self.python), "-m", "airflow", "dags", "test", dag_id],
                env=self.env(table_path, hoodie_options),
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
                cwd=self.home,
            )

    def finish(self, dag_id: str, proc: subprocess.Popen, log: Path, timeout: float = 300) -> DagRunResult:
        """Wait for a run :meth:`start` started and read it back."""
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(
                f"airflow dags test {dag_id} did not finish in {timeout} s:\n{log.read_text()[-6000:]}"
            ) from None
        return self._collect(dag_id, proc.returncode, log.read_text())

    def dags_test(self, dag_id: str, table_path: Path, hoodie_options: dict[str, str] | None = None) -> DagRunResult:
        """Run ``dag_id`` once, wait for it, and read back its run (fails with the output when the run failed)."""
        proc = self.cli("dags", "test", dag_id, env=self.env(table_path, hoodie_options))
        return self._collect(dag_id, proc.returncode, proc.stdout + proc.stderr)

    def _collect(self, dag_id: str, returncode: int, output: str) -> DagRunResult:
        with sqlite3.connect(self.home / "airflow.db") as db:
            row = db.execute("SELECT run_id, state FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", (dag_id,))
            run = row.fetchone()
            if run is None:
                raise AssertionError(
                    f"airflow dags test {dag_id} created no run (exit {returncode}):\n{output[-6000:]}"
                )
            run_id, state = run
            rows = db.execute(
                "SELECT task_id, map_index, state, rendered_map_index FROM task_instance"
                " WHERE dag_id = ? AND run_id = ?",
                (dag_id, run_id),
            ).fetchall()
            tasks = {(t, m): s for t, m, s, _ in rows}
            map_labels = {(t, m): label for t, m, _, label in rows}
            xcom = {
                (t, m, k): json.loads(v) if isinstance(v, str) else v
                for t, m, k, v in db.execute(
                    "SELECT task_id, map_index, key, value FROM xcom WHERE dag_id = ? AND run_id = ?", (dag_id, run_id)
                )
            }
        return DagRunResult(
            dag_id=dag_id,
            returncode=returncode,
            output=output,
            state=state,
            tasks=tasks,
            xcom=xcom,
            map_labels=map_labels,
        )


@pytest.fixture(scope="session")
def airflow(airflow_python: Path, tmp_path_factory: pytest.TempPathFactory) -> AirflowRunner:
    """An :class:`AirflowRunner` on a fresh SQLite metadata DB (``airflow db migrate`` once per session)."""
    runner = AirflowRunner(airflow_python, tmp_path_factory.mktemp("airflow-home"))
    proc = runner.cli("db", "migrate")
    assert proc.returncode == 0, f"airflow db migrate failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return runner
