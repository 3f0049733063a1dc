"""Pending clustering on a table's timeline: which replacecommits are clusterings, their plans, their file groups.

A clustering plan is a ``<ts>.replacecommit.requested`` whose ``HoodieRequestedReplaceMetadata`` has operation type
``CLUSTER`` and a ``clusteringPlan`` (Java 0.15 ``ClusteringUtils.isClusteringInstant`` / ``getClusteringPlan``);
insert_overwrite writes an empty requested file instead. The writer's update guard, the compaction, log-compaction
and clustering planners, the stale-write rollback and the incremental query's hollow-commit rule all ask these
questions; they ask them here.
"""

from __future__ import annotations

from lake_orchestration.hudi.model.avro import ClusteringPlan, RequestedReplaceMetadata
from lake_orchestration.hudi.model.file_group import FileGroupId
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.table.hudi_table import HudiTable

CLUSTER = "CLUSTER"
"""``WriteOperationType.CLUSTER``: the operation type of a clustering's requested and completed metadata."""


def requested_replace(table: HudiTable, instant: Instant) -> RequestedReplaceMetadata | None:
    """The ``HoodieRequestedReplaceMetadata`` of replacecommit ``instant`` (None: an empty requested file, as
    insert_overwrite writes, or none at all). A requested file that does not decode raises ``CorruptFileError``
    naming it: a plan that cannot be read is never taken for "no plan"."""
    req = Instant(instant.time, Action.REPLACE_COMMIT, State.REQUESTED)
    if not table.storage.exists(table.instant_path(req)):
        return None
    data = table.read_instant(req)
    if not data:
        return None
    return RequestedReplaceMetadata.from_bytes(data, path=table.storage.uri(table.instant_path(req)))


def is_clustering(table: HudiTable, instant: Instant) -> bool:
    """``ClusteringUtils.isClusteringInstant``: a replacecommit whose requested metadata says ``CLUSTER``."""
    if instant.action is not Action.REPLACE_COMMIT:
        return False
    md = requested_replace(table, instant)
    return md is not None and md.operation_type == CLUSTER


def is_pending_clustering(table: HudiTable, instant: Instant) -> bool:
    """``instant`` is a pending (requested or inflight) clustering."""
    return not instant.is_completed and is_clustering(table, instant)


def pending_clustering_plans(table: HudiTable) -> dict[Instant, ClusteringPlan]:
    """Every pending clustering (requested or inflight replacecommit with a clustering plan) -> its plan, oldest
    first, on the timeline the table holds."""
    out: dict[Instant, ClusteringPlan] = {}
    for inst in table.timeline.with_actions(Action.REPLACE_COMMIT).pending():
        md = requested_replace(table, inst)
        if md is not None and md.operation_type == CLUSTER and md.clustering_plan is not None:
            out[inst] = md.clustering_plan
    return out


def pending_clustering_file_groups(table: HudiTable) -> dict[FileGroupId, InstantTime]:
    """File group of every pending clustering plan -> the plan's instant time (Java
    ``ClusteringUtils.getAllFileGroupsInPendingClusteringPlans``)."""
    out: dict[FileGroupId, InstantTime] = {}
    for inst, plan in pending_clustering_plans(table).items():
        for g in plan.input_groups or ():
            for s in g.slices or ():
                out[FileGroupId(s.partition_path or "", s.file_id or "")] = inst.time
    return out
