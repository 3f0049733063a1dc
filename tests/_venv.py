"""A venv built once per machine for a test oracle that cannot share this project's environment (Airflow, pypaimon).

The venv lives under ``~/.cache/lake_orchestration/<name>`` (``$XDG_CACHE_HOME`` respected); the name carries what
the venv holds (versions, a digest of the requirements, the Python version), so a change builds a new one. It is built
beside its place and renamed into it, so a crash leaves no half venv and two sessions building at once keep the first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/lake_orchestration`` (``~/.cache/lake_orchestration`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lake_orchestration"


def cached_venv_python(name: str, requirements: Callable[[Path], list[str]], *, complete: str, timeout: float) -> Path:
    """The python of the cached venv ``cache_root() / name``, built on first use with ``pip install <requirements>``.

    ``requirements(scratch)`` returns what to install; it may put files under ``scratch`` (deleted once installed).
    ``complete`` is written to the venv's ``.complete`` marker. Raises ``subprocess.CalledProcessError`` or
    ``subprocess.TimeoutExpired`` (after ``timeout`` seconds) when the build fails."""
    venv = cache_root() / name
    if not (venv / ".complete").is_file():
        venv.parent.mkdir(parents=True, exist_ok=True)
        _build_venv(venv, requirements, complete=complete, timeout=timeout)
    return venv / "bin" / "python"


def _build_venv(venv: Path, requirements: Callable[[Path], list[str]], *, complete: str, timeout: float) -> None:
    tmp = venv.with_name(f"{venv.name}.build-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True, capture_output=True, text=True)
        scratch = tmp / "build-src"
        subprocess.run(
            [str(tmp / "bin" / "python"), "-m", "pip", "install", "--quiet", *requirements(scratch)],
            check=True,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        shutil.rmtree(scratch, ignore_errors=True)
        (tmp / ".complete").write_text(complete)
        try:
            tmp.rename(venv)
        except OSError:
            if not (venv / ".complete").is_file():  # another session finished first: keep its venv
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
