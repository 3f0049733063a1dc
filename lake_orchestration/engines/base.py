"""The engine protocol: run per-file-slice tasks somewhere (in-process or on Spark)."""

from __future__ import annotations

from typing import Protocol

import pyarrow as pa

from lake_orchestration.hudi.table import HudiTable


class Engine(Protocol):
    """Runs the per-file-group work of a service."""

    name: str

    def read_snapshot(self, table: HudiTable) -> pa.Table:
        """The merged snapshot of ``table`` (every slice read as one task)."""
        ...
