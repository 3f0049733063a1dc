"""The demo: a generated MERGE_ON_READ table (:mod:`.table`), its Dagster code location (:mod:`.definitions`) and
the end-to-end run through Dagster (:mod:`.run`, ``python -m lake_orchestration.demo``).

Only the table helpers are re-exported here: importing the package does not import Dagster (the CLI's ``demo``
command uses them).
"""

from lake_orchestration.demo.table import (
    DEMO_OPTIONS,
    DemoBatch,
    DemoResult,
    build_demo_table,
    create_demo_table,
    ingest_demo_batch,
    local_snapshot,
    snapshot_summary,
)

__all__ = [
    "DEMO_OPTIONS",
    "DemoBatch",
    "DemoResult",
    "build_demo_table",
    "create_demo_table",
    "ingest_demo_batch",
    "local_snapshot",
    "snapshot_summary",
]
