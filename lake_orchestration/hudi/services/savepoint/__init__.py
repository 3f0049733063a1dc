"""Savepoints: create and delete, as Hudi 0.14/0.15's ``SavepointActionExecutor`` / ``SavepointHelpers`` do.

A savepoint of completed commit ``T`` is ``<T>.savepoint.inflight`` (empty) then ``<T>.savepoint``
(``HoodieSavepointMetadata``: per partition the names of the base and log files of the file slices a read as of ``T``
merges). Clean never deletes a file a savepoint lists; archival stops at the first savepoint. Deleting a savepoint
removes the completed file, then the inflight one.

:mod:`.planner` validates and computes the metadata, :mod:`.committer` writes the instant (a savepoint writes no
data file, so there is no executor), :mod:`.delete` deletes a savepoint.
"""

from lake_orchestration.hudi.services.savepoint.committer import SavepointResult, create_savepoint
from lake_orchestration.hudi.services.savepoint.delete import delete_savepoint
from lake_orchestration.hudi.services.savepoint.planner import SavepointInfo, list_savepoints, savepoint_metadata

__all__ = [
    "SavepointInfo",
    "SavepointResult",
    "create_savepoint",
    "delete_savepoint",
    "list_savepoints",
    "savepoint_metadata",
]
