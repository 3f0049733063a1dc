"""The code location loads and its table asset materializes with the table's health."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import dagster as dg
import pytest

from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions

pytestmark = pytest.mark.dagster


def test_definitions_code_location_loads_demo_table_asset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKE_ORCH_DEMO_DIR", str(tmp_path))
    sys.modules.pop("definitions", None)
    sys.modules.pop("definitions.definitions", None)
    module = importlib.import_module("definitions")
    defs = module.defs
    assert isinstance(defs, dg.Definitions)
    keys = {a.key for a in defs.resolve_all_asset_specs()}
    assert dg.AssetKey(["hudi", "demo_trips"]) in keys
    assert (tmp_path / "demo_trips" / ".hoodie" / "hoodie.properties").exists()


def test_table_asset_materialize_reports_health(hudi_fixture) -> None:
    from tests.conftest import HudiFixture

    base = hudi_fixture(HudiFixture.MOR_ROLLBACK)
    defs = build_hudi_definitions(tables=[HudiTableConfig(name="rb", base_path=str(base))])
    result = dg.materialize([defs.resolve_assets_def(dg.AssetKey(["hudi", "rb"]))])
    assert result.success
    (mat,) = result.asset_materializations_for_node("hudi__rb")
    md = {k: v.value for k, v in mat.metadata.items()}
    assert md["file_groups"] == 1
    assert md["log_files"] == 3
    assert md["table_type"] == "MERGE_ON_READ"


def test_dagster_definitions_validate_workspace_passes(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    dagster_cli = Path(sys.executable).parent / "dagster"
    env = {**os.environ, "LAKE_ORCH_DEMO_DIR": str(tmp_path / "demo"), "DAGSTER_HOME": str(tmp_path / "home"),
           "PYTHONPATH": str(REPO_ROOT)}
    (tmp_path / "home").mkdir()
    proc = subprocess.run([str(dagster_cli), "definitions", "validate", "-w", "workspace.yaml"], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "All code locations passed validation" in proc.stdout + proc.stderr
