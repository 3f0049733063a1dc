"""Paimon test fixtures: the Java-written golden tables from ../shared, and pypaimon (the oracle) in its own venv.

pypaimon pins ``pyarrow<20`` and ``fsspec<2026``, which conflict with this project's pins, so it never enters our
environment: a session fixture builds a venv with ``pypaimon==PYPAIMON_VERSION`` once per machine under
``~/.cache/lake_orchestration/`` (``$XDG_CACHE_HOME`` respected; keyed by pypaimon and Python version) and the tests
run ``pypaimon_driver.py`` in it by subprocess (one :mod:`tests.forkserver` per session, pypaimon imported once,
each command run in a forked child of it). ``PYPAIMON_PYTHON=/path/to/python`` uses an existing interpreter
that has pypaimon instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests._venv import cache_root, cached_venv_python
from tests.conftest import REQUIRE_SHARED, SHARED
from tests.forkserver import ForkServer

PYPAIMON_VERSION = "2.1.0"
PAIMON_FIXTURES = SHARED / "fixtures" / "paimon-tables"
GOLDEN_ARCHIVE = PAIMON_FIXTURES / "pk_global_index_golden.tar.gz"
DRIVER = Path(__file__).with_name("pypaimon_driver.py")


def _skip_or_fail(reason: str) -> NoReturn:
    if REQUIRE_SHARED:
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def paimon_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extracted golden warehouse database dir (``.../default.db``), shared by the session: do not modify."""
    if not GOLDEN_ARCHIVE.is_file():
        _skip_or_fail(
            f"Java-written Paimon tables not found at {GOLDEN_ARCHIVE}: they live in ../shared beside the checkout "
            "(CI has them; a user's clone does not)"
        )
    dest = tmp_path_factory.mktemp("paimon-golden")
    with tarfile.open(GOLDEN_ARCHIVE) as tar:
        tar.extractall(dest, filter="data")
    return dest / "default.db"


@pytest.fixture(scope="session")
def pypaimon_python() -> Path:
    """An interpreter with pypaimon (``PYPAIMON_PYTHON``, else the cached venv, built on first use)."""
    given = os.environ.get("PYPAIMON_PYTHON")
    if given:
        return Path(given)
    name = f"pypaimon-{PYPAIMON_VERSION}-py{sys.version_info.major}{sys.version_info.minor}"
    try:
        return cached_venv_python(
            name, lambda _: [f"pypaimon=={PYPAIMON_VERSION}"], complete=PYPAIMON_VERSION, timeout=900
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        detail = getattr(err, "stderr", "") or ""
        _skip_or_fail(
            f"cannot build the pypaimon {PYPAIMON_VERSION} venv at {cache_root() / name}: {err}; {str(detail)[-1500:]}"
        )


@pytest.fixture(scope="session")
def pypaimon(
    pypaimon_python: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., dict[str, Any]]]:
    """``pypaimon("scan", warehouse, "db.table")`` -> the driver's JSON output (see pypaimon_driver.py)."""
    server = ForkServer(pypaimon_python, ["--script", str(DRIVER)], tmp_path_factory.mktemp("pypaimon") / "server.log")

    def run(command: str, *args: Any) -> dict[str, Any]:
        argv = [command, *(a if isinstance(a, str) else json.dumps(a) for a in args)]
        proc = server.run(argv, script=DRIVER, env={**os.environ, "TZ": "UTC"}, cwd=os.getcwd(), timeout=600)
        if proc.returncode != 0:
            raise AssertionError(f"pypaimon {command} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(proc.stdout)
        return result

    yield run
    server.close()
