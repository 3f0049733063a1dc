"""A Hudi table on storage: properties, timeline, file-system view, snapshot, incremental and CDC reads."""

from lake_orchestration.hudi.table.cdc import CdcResult, read_cdc, read_cdc_table
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.incremental import IncrementalResult, read_incremental, read_incremental_table
from lake_orchestration.hudi.table.snapshot import read_file_slice, read_snapshot, read_snapshot_table

__all__ = [
    "CdcResult",
    "HudiTable",
    "IncrementalResult",
    "read_cdc",
    "read_cdc_table",
    "read_file_slice",
    "read_incremental",
    "read_incremental_table",
    "read_snapshot",
    "read_snapshot_table",
]
