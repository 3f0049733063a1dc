"""The local engine: the same per-slice tasks, run in this process."""

from __future__ import annotations

import pyarrow as pa

from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table


class LocalEngine:
    """In-process engine for tests, small tables and ``--engine local``."""

    name = "local"

    def read_snapshot(self, table: HudiTable) -> pa.Table:
        return read_snapshot_table(table)
