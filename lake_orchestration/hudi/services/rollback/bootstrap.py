"""Rollback of a failed bootstrap: its pending instants rolled back like failed writes, then the bootstrap index
dropped.

Java (``SparkRDDWriteClient.rollbackFailedBootstrap``) finds a pending instant at or before ``00000000000002`` and
restores the table to its initial state; here each pending bootstrap instant (``...02``, then ``...01``) is rolled
back by :func:`~.service.rollback_write` (from its markers: the skeleton or base files it wrote are deleted,
``<R>.rollback`` is written), and the bootstrap index, which a METADATA_ONLY commit writes just before its completed
instant, is removed when ``...01`` is not completed. The source files are never touched. Afterwards the table has no
commit, so a new bootstrap can run. Nothing here imports the bootstrap service (it imports this).
"""

from __future__ import annotations

from lake_orchestration.hudi.hfile.bootstrap_index import FILE_ID_INDEX_PATH, PARTITION_INDEX_PATH
from lake_orchestration.hudi.model.instant import FULL_BOOTSTRAP_INSTANT, METADATA_BOOTSTRAP_INSTANT, Instant
from lake_orchestration.hudi.services.rollback.config import RollbackConfig
from lake_orchestration.hudi.services.rollback.service import rollback_write
from lake_orchestration.hudi.table import HudiTable


def pending_bootstrap_instants(table: HudiTable) -> list[Instant]:
    """Pending instants at or before ``00000000000002`` (a failed bootstrap's), newest first."""
    tl = table.refresh().timeline
    return sorted(
        (i for i in tl.pending() if str(i.time) <= FULL_BOOTSTRAP_INSTANT), key=lambda i: str(i.time), reverse=True
    )


def rollback_bootstrap(table: HudiTable, *, config: RollbackConfig | None = None) -> list[Instant]:
    """Roll back every pending bootstrap instant (newest first) and drop an uncommitted bootstrap index.

    Returns the completed rollback instants (none when no bootstrap was pending).

    Raises:
        TableLockedError: another process holds the table lock past its wait time.
        MetadataTableError: the metadata table has a partition other than ``files`` (or is missing though
            ``hoodie.table.metadata.partitions`` lists it) and ``hoodie.metadata.enable`` is not ``false``.
    """
    done: list[Instant] = []
    for pending in pending_bootstrap_instants(table):
        outcome = rollback_write(table, str(pending.time), config=config)
        if isinstance(outcome, Instant):
            done.append(outcome)
    if table.refresh().timeline.completed().get(METADATA_BOOTSTRAP_INSTANT) is None:
        for rel in (PARTITION_INDEX_PATH, FILE_ID_INDEX_PATH):
            table.storage.delete_file(table.storage.join(rel), missing_ok=True)
    return done
