"""Static contracts: the layer rules (import-linter) and ruff on the package."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    exe = Path(sys.executable).parent / name
    return str(exe) if exe.exists() else (shutil.which(name) or name)


def test_import_layers_contract_kept() -> None:
    proc = subprocess.run([_tool("lint-imports")], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_ruff_package_clean() -> None:
    proc = subprocess.run(
        [_tool("ruff"), "check", "lake_orchestration", "definitions", "benchmarks"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
