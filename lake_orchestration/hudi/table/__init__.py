"""A Hudi table on storage: properties, timeline, file-system view, snapshot and incremental reads."""

from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.incremental import IncrementalResult, read_incremental, read_incremental_table
from lake_orchestration.hudi.table.snapshot import read_file_slice, read_snapshot, read_snapshot_table

__all__ = [
    "HudiTable",
    "IncrementalResult",
    "read_file_slice",
    "read_incremental",
    "read_incremental_table",
    "read_snapshot",
    "read_snapshot_table",
]
