"""lake_orchestration: Apache Hudi table services on Spark, orchestrated by Dagster."""

from lake_orchestration.errors import LakeOrchestrationError

# the metadata table's clean and archive (our cleaner and archiver) handed to the commit path, a lower layer
from lake_orchestration.hudi.services import metadata_table as _metadata_table_services  # noqa: F401
from lake_orchestration.hudi.table import HudiTable, read_file_slice, read_snapshot

__version__ = "0.1.0"

__all__ = ["HudiTable", "LakeOrchestrationError", "__version__", "read_file_slice", "read_snapshot"]
