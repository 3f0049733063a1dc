"""The metadata-table step of the commit path: what a data-table action about to complete changes in the metadata
table's ``files`` partition, written as an MDT deltacommit at the same instant before the data instant completes
(Java: ``BaseHoodieWriteClient.commit`` -> ``writeTableMetadata`` -> ``HoodieBackedTableMetadataWriter.update``,
under the data table's lock, before ``saveAsComplete``).

Called by :func:`lake_orchestration.hudi.table.commit.complete_instant` for every completed instant, so every write
and service keeps the metadata table the same way. What each action changes:

- commit, deltacommit, replacecommit, a compaction's commit, a log compaction's deltacommit: the files it wrote
  (:func:`~.writer.update_from_commit`);
- clean: the files it deleted (:func:`~.writer.update_from_clean`);
- rollback: Java 0.15's ``update(HoodieRollbackMetadata)``: refused when the rolled-back instant is at or before the
  MDT's latest compaction (``validateRollback``); the log files the rollback added
  (:func:`~.writer.update_from_rollback`) at the rollback's instant; then the MDT deltacommit of the rolled-back
  instant, if completed since that compaction, is rolled back at ``<rollback>006``;
- savepoint (and anything else): nothing, as in Java.

Before the MDT deltacommit of a commit or clean (not a rollback), the MDT's own compaction runs when Java's
``performTableServices`` would run it (:func:`~.table_services.run_metadata_table_services`).
"""

from __future__ import annotations

import logging

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import MetadataTableError
from lake_orchestration.hudi.metadata.records import FILES_PARTITION
from lake_orchestration.hudi.metadata.table_services import run_metadata_table_services
from lake_orchestration.hudi.metadata.writer import (
    METADATA_TABLE_DIR,
    MetadataCommit,
    check_partitions,
    enabled_partitions,
    metadata_table,
    rollback_metadata_deltacommit,
    update_from_clean,
    update_from_commit,
    update_from_rollback,
    update_metadata_table,
)
from lake_orchestration.hudi.model.avro import CleanMetadata, RollbackMetadata
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.table.hudi_table import HudiTable

log = logging.getLogger(__name__)

ROLLBACK_SUFFIX = "006"
"""``HoodieTableMetadataUtil.createRollbackTimestamp``: the MDT rollback of a data rollback ``R`` is ``R006``."""

_COMMIT_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT})


def keeps_metadata_table(table: HudiTable) -> bool:
    """True if ``table``'s ``hoodie.properties`` lists the ``files`` partition of a metadata table (Java's
    ``isMetadataTableAvailable``): every completed action must then update it."""
    return FILES_PARTITION in enabled_partitions(table)


def sync_metadata_table(table: HudiTable, inflight: Instant, content: bytes) -> MetadataCommit | None:
    """Write the MDT deltacommit of the data instant ``inflight`` from ``content`` (what its completed file will
    hold) -- call before the data instant completes, under the table lock. Returns None when the table keeps no
    metadata table or the action changes nothing in it (savepoint).

    Raises:
        MetadataTableError: a partition other than ``files`` is enabled; a rollback of an instant at or before the
            MDT's latest compaction (Java's ``validateRollback``); the MDT cannot be updated.
    """
    if table.base_uri.rstrip("/").endswith(f"/{METADATA_TABLE_DIR}") or not keeps_metadata_table(table):
        return None
    action = inflight.with_state(State.COMPLETED).action
    instant = str(inflight.time)
    where = table.storage.uri(table.instant_path(inflight))
    if action in _COMMIT_ACTIONS or action is Action.CLEAN:
        # Java's performTableServices when the write starts, before its MDT deltacommit; not before a rollback's
        # (the rolled-back instant's files are gone from the data timeline: its MDT deltacommit would be compacted)
        check_partitions(table)
        run_metadata_table_services(table, metadata_table(table))
    if action in _COMMIT_ACTIONS:
        return update_metadata_table(table, instant, update_from_commit(CommitMetadata.from_bytes(content, path=where)))
    if action is Action.CLEAN:
        return update_metadata_table(table, instant, update_from_clean(CleanMetadata.from_bytes(content, path=where)))
    if action is Action.ROLLBACK:
        return _sync_rollback(table, instant, RollbackMetadata.from_bytes(content, path=where))
    return None


def _sync_rollback(table: HudiTable, instant: str, metadata: RollbackMetadata) -> MetadataCommit:
    mdt = metadata_table(table)
    rolled_back = metadata.commits_rollback[0] if metadata.commits_rollback else ""
    compaction = _latest_mdt_compaction(mdt)
    if rolled_back and compaction is not None and rolled_back <= str(compaction.time):
        raise MetadataTableError(
            mdt.base_uri,
            f"the rollback {instant} rolls back {rolled_back}, at or before the metadata table's latest compaction "
            f"{compaction.time}: the metadata table cannot undo it (Java's validateRollback refuses it too). Pass "
            f"{HoodieKey.METADATA_ENABLE.key}=false to delete the metadata table (Java rebuilds it), or restore the "
            "table with Java",
        )
    done = update_metadata_table(table, instant, update_from_rollback(metadata))
    target = mdt.refresh().timeline.get(rolled_back, Action.DELTA_COMMIT) if rolled_back else None
    if target is not None and target.is_completed:
        log.info("Rolling back the metadata-table deltacommit %s of the rolled-back instant", rolled_back)
        rollback_metadata_deltacommit(mdt, rolled_back, instant + ROLLBACK_SUFFIX)
    return done


def _latest_mdt_compaction(mdt: HudiTable) -> Instant | None:
    """The MDT's latest completed compaction (a ``commit`` on the MDT timeline)."""
    commits = [i for i in mdt.timeline.completed() if i.action is Action.COMMIT]
    return max(commits, key=lambda i: str(i.time)) if commits else None


__all__ = ["keeps_metadata_table", "sync_metadata_table"]
