"""Bootstrap of an existing parquet dataset into a Hudi table, as Hudi 0.14/0.15's
``SparkBootstrapCommitActionExecutor`` does it: METADATA_ONLY partitions get skeleton base files at
``00000000000001`` (meta columns only, the data stays in the source files, found through the bootstrap index),
FULL_RECORD partitions are bulk-inserted at ``00000000000002``.

:mod:`.config` (:class:`BootstrapConfig`, the mode selectors), :mod:`.planner` (:func:`plan_bootstrap`: source
partitions, files and modes), :mod:`.executor` (skeleton files, the FULL_RECORD bulk insert), :mod:`.committer`
(bootstrap index, then the completed instant), rollback (:func:`rollback_bootstrap`, in
:mod:`lake_orchestration.hudi.services.rollback.bootstrap`, re-exported here), :mod:`.service`
(:func:`prepare_bootstrap` -> :func:`execute_bootstrap`; :func:`bootstrap` end to end).
"""

from lake_orchestration.hudi.services.bootstrap.committer import commit_metadata_only
from lake_orchestration.hudi.services.bootstrap.config import BootstrapConfig, BootstrapMode, ModeSelector
from lake_orchestration.hudi.services.bootstrap.executor import (
    MetadataOnlyExecution,
    execute_full_record,
    execute_metadata_only,
)
from lake_orchestration.hudi.services.bootstrap.planner import (
    BootstrapPlan,
    PartitionPlan,
    SourceFile,
    list_source_partitions,
    plan_bootstrap,
)
from lake_orchestration.hudi.services.bootstrap.service import (
    BootstrapResult,
    PreparedBootstrap,
    bootstrap,
    execute_bootstrap,
    prepare_bootstrap,
)
from lake_orchestration.hudi.services.rollback.bootstrap import pending_bootstrap_instants, rollback_bootstrap

__all__ = [
    "BootstrapConfig",
    "BootstrapMode",
    "BootstrapPlan",
    "BootstrapResult",
    "MetadataOnlyExecution",
    "ModeSelector",
    "PartitionPlan",
    "PreparedBootstrap",
    "SourceFile",
    "bootstrap",
    "commit_metadata_only",
    "execute_bootstrap",
    "execute_full_record",
    "execute_metadata_only",
    "list_source_partitions",
    "pending_bootstrap_instants",
    "plan_bootstrap",
    "prepare_bootstrap",
    "rollback_bootstrap",
]
