"""The metadata table's clean and archive are registered on first need, not at import (the package root sets a
loader; ``lake-orch --help`` imports none of the services), in a fresh interpreter as a user's process would."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT

CODE = """
import sys
import lake_orchestration.cli.app
heavy = [m for m in ("pyarrow", "polars", "pyspark", "dagster", "lake_orchestration.hudi.services") if m in sys.modules]
assert not heavy, heavy
from lake_orchestration.hudi.metadata import table_services
assert "lake_orchestration.hudi.services.metadata_table" not in sys.modules
m = table_services._maintenance()
from lake_orchestration.hudi.services.metadata_table import archive_metadata_table, clean_metadata_table
assert (m.clean, m.archive) == (clean_metadata_table, archive_metadata_table)
print("ok")
"""


def test_cli_imports_light_and_mdt_maintenance_registered_on_first_need() -> None:
    p = subprocess.run([sys.executable, "-c", CODE], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr
