"""Code location: tables from ``LAKE_ORCH_TABLES_YAML`` (a YAML list of {name, base_path}), else the demo table.

The demo table is built under ``LAKE_ORCH_DEMO_DIR`` (default ``./demo-tables``) with this project's own writer
the first time the location loads.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from lake_orchestration.dagster import HudiTableConfig, build_hudi_definitions


def _tables() -> list[HudiTableConfig]:
    cfg = os.environ.get("LAKE_ORCH_TABLES_YAML")
    if cfg:
        data = yaml.safe_load(Path(cfg).read_text()) or []
        if not isinstance(data, list):
            raise ValueError(
                f"{cfg}: expected a YAML list of tables with name and base_path, got {type(data).__name__}"
            )
        return [HudiTableConfig(**t) for t in data]
    demo = Path(os.environ.get("LAKE_ORCH_DEMO_DIR", "demo-tables")).resolve() / "demo_trips"
    if not (demo / ".hoodie" / "hoodie.properties").exists():
        from lake_orchestration.demo import build_demo_table

        build_demo_table(demo, rows=1000, echo=lambda _msg: None)
    return [HudiTableConfig(name="demo_trips", base_path=str(demo))]


defs = build_hudi_definitions(tables=_tables())
