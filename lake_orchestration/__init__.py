"""lake_orchestration: Apache Hudi table services on Spark, orchestrated by Dagster."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lake_orchestration.errors import LakeOrchestrationError
from lake_orchestration.hudi.metadata.maintenance_loader import set_metadata_table_maintenance_loader

if TYPE_CHECKING:
    from lake_orchestration.hudi.table import HudiTable, read_file_slice, read_snapshot

__version__ = "0.1.0"

__all__ = ["HudiTable", "LakeOrchestrationError", "__version__", "read_file_slice", "read_snapshot"]


def _load_metadata_table_maintenance() -> object:
    # the metadata table's clean and archive (our cleaner and archiver) handed to the commit path, a lower layer,
    # when it first needs them: importing the services here would cost every process (lake-orch --help) ~1 s
    from lake_orchestration.hudi.services import metadata_table

    return metadata_table


set_metadata_table_maintenance_loader(_load_metadata_table_maintenance)

_LAZY = {"HudiTable", "read_file_slice", "read_snapshot"}


def __getattr__(name: str) -> Any:
    """``HudiTable``, ``read_file_slice``, ``read_snapshot`` imported on first use (PEP 562)."""
    if name in _LAZY:
        from lake_orchestration.hudi import table

        return getattr(table, name)
    raise AttributeError(f"module 'lake_orchestration' has no attribute {name!r}")
