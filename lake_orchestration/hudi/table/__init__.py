"""A Hudi table on storage: properties, timeline, file-system view, snapshot reads."""

from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_file_slice, read_snapshot, read_snapshot_table

__all__ = ["HudiTable", "read_file_slice", "read_snapshot", "read_snapshot_table"]
