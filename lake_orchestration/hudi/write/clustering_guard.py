"""Writers beside a pending clustering: Java 0.15's ``hoodie.clustering.updates.strategy``.

A clustering plan (``<ts>.replacecommit.requested`` whose ``HoodieRequestedReplaceMetadata`` says ``CLUSTER``)
names the file groups it will rewrite; until it completes, Java's writer (``BaseSparkCommitActionExecutor
#clusteringHandleUpdate``, after tagging, before any file is written) treats updates and deletes to those file
groups by the update strategy:

- ``SparkRejectUpdateStrategy`` (the default): the write fails with ``HoodieClusteringUpdateException`` "Not allowed
  to update the clustering file group HoodieFileGroupId{partitionPath='…', fileId='…'}. For pending clustering
  operations, we are not going to support update for now." Here: :class:`ClusteringUpdateError`, raised before the
  write's instant is created (Java has created its requested instant by then; it is later rolled back as a failed
  write).
- ``SparkAllowUpdateStrategy``: with ``hoodie.clustering.rollback.pending.replacecommit.on.conflict`` = false (the
  default) the updates go to the file groups and nothing else happens here (Java leaves the overlap to the
  conflict resolution at commit, multi-writer mode); with it true, every pending clustering whose file groups take
  an update is rolled back first (``table.scheduleRollback`` + ``table.rollback``), then the write goes on. The
  write layer sits below the services, so the caller hands the rollback in (``rollback_clustering``); without it
  the write is refused, naming the plans.

Inserts never go to a small file under pending clustering, whatever the strategy (``UpsertPartitioner
#filterSmallFilesInClustering``): :func:`pending_clustering_file_groups` is what the writer leaves out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import LakeOrchestrationError
from lake_orchestration.hudi.model.schema import PARTITION_PATH
from lake_orchestration.hudi.table.clustering import pending_clustering_file_groups as pending_clustering_groups
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.write.records import FILE_ID_COLUMN, OP_COLUMN

UPDATES_STRATEGY_KEY = HoodieKey.CLUSTERING_UPDATES_STRATEGY.key
ROLLBACK_PENDING_CLUSTERING_KEY = HoodieKey.CLUSTERING_ROLLBACK_PENDING_ON_CONFLICT.key
_PACKAGE = "org.apache.hudi.client.clustering.update.strategy."
REJECT = _PACKAGE + "SparkRejectUpdateStrategy"
ALLOW = _PACKAGE + "SparkAllowUpdateStrategy"

FileGroupKey = tuple[str, str]
ClusteringRollback = Callable[[HudiTable, str], object]
"""Rolls back the pending clustering at the instant it is given (the clustering service's rollback)."""


class ClusteringUpdateError(LakeOrchestrationError):
    """An upsert or delete to file groups under a pending clustering plan, refused (Java's
    ``HoodieClusteringUpdateException`` of ``SparkRejectUpdateStrategy``); nothing was written."""

    def __init__(self, table_uri: str, groups: Mapping[FileGroupKey, str], detail: str = "") -> None:
        self.table_uri = table_uri
        self.file_groups = dict(groups)
        self.instants = sorted(set(groups.values()))
        shown = [f"{p}/{f}" if p else f for p, f in sorted(groups)]
        listed = ", ".join(shown[:5]) + (f" (+{len(shown) - 5} more)" if len(shown) > 5 else "")
        super().__init__(
            f"Not allowed to update the clustering file group(s) {listed} of {table_uri}: pending clustering "
            f"{', '.join(self.instants)} (replacecommit) will rewrite them, and {UPDATES_STRATEGY_KEY} is "
            f"SparkRejectUpdateStrategy (Java's default); nothing was written. Run or roll back the clustering "
            f"first, write to other file groups, or set {UPDATES_STRATEGY_KEY}={ALLOW}"
            + (f" ({detail})" if detail else "")
        )


def pending_clustering_file_groups(table: HudiTable) -> dict[FileGroupKey, str]:
    """(partition, file id) of every file group in a pending clustering plan -> the plan's instant time, on the
    timeline ``table`` holds (:func:`lake_orchestration.hudi.table.clustering.pending_clustering_file_groups`; Java
    ``ClusteringUtils.getAllFileGroupsInPendingClusteringPlans``: insert_overwrite's replacecommits are not plans)."""
    return {(g.partition_path, g.file_id): str(t) for g, t in pending_clustering_groups(table).items()}


def updates_strategy(options: Mapping[str, str]) -> tuple[str, bool]:
    """``hoodie.clustering.updates.strategy`` (reject or allow, Java's class names; the simple name is taken too) and
    ``hoodie.clustering.rollback.pending.replacecommit.on.conflict``, checked."""
    raw = (options.get(UPDATES_STRATEGY_KEY) or REJECT).strip()
    simple = raw.rsplit(".", 1)[-1]
    if simple not in ("SparkRejectUpdateStrategy", "SparkAllowUpdateStrategy"):
        raise ValueError(
            f"{UPDATES_STRATEGY_KEY}={raw!r}: expected {REJECT} (the default) or {ALLOW}; the consistent-hashing "
            "bucket strategies apply to bucket-index tables, which this writer does not write"
        )
    rollback_raw = (options.get(ROLLBACK_PENDING_CLUSTERING_KEY) or "false").strip().lower()
    if rollback_raw not in ("true", "false"):
        raise ValueError(f"{ROLLBACK_PENDING_CLUSTERING_KEY}={rollback_raw!r}: expected true or false")
    return (REJECT if simple == "SparkRejectUpdateStrategy" else ALLOW), rollback_raw == "true"


def updated_file_groups(located: pa.Table) -> set[FileGroupKey]:
    """File groups that rows found in the index (updates, deletes: Java's records with a current location) go to."""
    if located.num_rows == 0:
        return set()
    ops = located.column(OP_COLUMN).to_numpy(zero_copy_only=False)
    updated = ops != "I"
    if not np.any(updated):
        return set()
    mask = pa.array(updated)
    pairs = (
        pa.table({"p": located.column(PARTITION_PATH).filter(mask), "f": located.column(FILE_ID_COLUMN).filter(mask)})
        .group_by(["p", "f"])
        .aggregate([])
    )
    return set(zip(pairs.column("p").to_pylist(), pairs.column("f").to_pylist(), strict=True))


def handle_updates(
    table: HudiTable,
    located: pa.Table,
    options: Mapping[str, str],
    pending: Mapping[FileGroupKey, str],
    rollback_clustering: ClusteringRollback | None = None,
) -> list[str]:
    """Java's ``clusteringHandleUpdate`` for the tagged rows ``located`` against the ``pending`` clustering file
    groups (:func:`pending_clustering_file_groups`): returns the clustering instants rolled back (allow strategy
    with rollback on conflict), raises :class:`ClusteringUpdateError` (reject strategy, or no rollback given)."""
    strategy, rollback = updates_strategy(options)
    if not pending:
        return []
    if strategy == ALLOW and not rollback:
        return []
    hit = {g: pending[g] for g in updated_file_groups(located) if g in pending}
    if not hit:
        return []
    if strategy == REJECT:
        raise ClusteringUpdateError(table.base_uri, hit)
    if rollback_clustering is None:
        raise ClusteringUpdateError(
            table.base_uri,
            hit,
            detail=f"{UPDATES_STRATEGY_KEY} is SparkAllowUpdateStrategy with {ROLLBACK_PENDING_CLUSTERING_KEY}=true, "
            "but this writer was given no clustering rollback (the CLI and the services pass theirs)",
        )
    instants = sorted(set(hit.values()))
    for instant in instants:
        rollback_clustering(table, instant)
    return instants


def without_pending_clustering(
    small: Mapping[str, list[tuple[str, int]]], pending: Mapping[FileGroupKey, str]
) -> dict[str, list[tuple[str, int]]]:
    """Small-file candidates (partition -> [(file id, capacity)]) minus the file groups under pending clustering
    (``UpsertPartitioner#filterSmallFilesInClustering``)."""
    return {p: [(f, c) for f, c in files if (p, f) not in pending] for p, files in small.items()}


__all__ = [
    "ALLOW",
    "REJECT",
    "ROLLBACK_PENDING_CLUSTERING_KEY",
    "UPDATES_STRATEGY_KEY",
    "ClusteringRollback",
    "ClusteringUpdateError",
    "handle_updates",
    "pending_clustering_file_groups",
    "updated_file_groups",
    "updates_strategy",
    "without_pending_clustering",
]
