"""Airflow fixtures: Airflow 3.3 in its own venv, ``airflow dags test`` by subprocess on a temporary SQLite DB.

apache-airflow 3.3 resolves together with this project's pins (``pip install "lake-orchestration[airflow]"``), but
it brings ~80 packages (FastAPI, SQLAlchemy, OpenTelemetry, ...) the rest of the suite does not need, so the test
environment does not carry it: a session fixture builds a venv once per machine under ``~/.cache/lake_orchestration/``
(``$XDG_CACHE_HOME`` respected; keyed by the Airflow pin, the package's dependencies and the Python version) with
``pip install <copy of this checkout>[airflow]`` — which is also the test that the extra installs on a fresh venv —
and the tests run ``airflow`` in it with ``PYTHONPATH`` set to this checkout (the installed copy provides the
``apache_airflow_provider`` entry point; the checkout's modules shadow it). Building it takes a few minutes (mostly
downloads); ``AIRFLOW_PYTHON=/path/to/python`` uses an existing interpreter that has Airflow and the package instead.
The table checks (hudi-rs, our reader) run in this process.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from tests.conftest import REPO_ROOT

PYPROJECT = REPO_ROOT / "pyproject.toml"


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


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lake_orchestration"


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


def build_airflow_venv(venv: Path) -> None:
    """Create ``venv`` with ``pip install <checkout>[airflow]``; built beside it and renamed into place, so a crash
    leaves no half venv. Raises ``subprocess.CalledProcessError`` when pip fails."""
    tmp = venv.with_name(f"{venv.name}.build-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True, capture_output=True, text=True)
        src = _copy_checkout(tmp / "build-src")
        subprocess.run(
            [str(tmp / "bin" / "python"), "-m", "pip", "install", "--quiet", f"{src}[airflow]"],
            check=True,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        shutil.rmtree(tmp / "build-src")
        (tmp / ".complete").write_text(airflow_requirement())
        try:
            tmp.rename(venv)
        except OSError:
            if not (venv / ".complete").is_file():  # another session finished first: keep its venv
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def airflow_python() -> Path:
    """An interpreter with Airflow and the package (``AIRFLOW_PYTHON``, else the cached venv, built on first use)."""
    given = os.environ.get("AIRFLOW_PYTHON")
    if given:
        return Path(given)
    venv = _cache_root() / _venv_key()
    if not (venv / ".complete").is_file():
        venv.parent.mkdir(parents=True, exist_ok=True)
        try:
            build_airflow_venv(venv)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
            detail = str(getattr(err, "stderr", "") or "")
            pytest.fail(f"pip install .[airflow] into a fresh venv at {venv} failed: {err}; {detail[-3000:]}")
    return venv / "bin" / "python"
