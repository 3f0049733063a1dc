"""Schedule-plan: decide whether to cluster and write ``<instant>.replacecommit.requested``.

Mirrors Hudi 0.15's ``ClusteringPlanActionExecutor`` (the ``inline.max.commits`` / ``async.max.commits`` triggers),
``PartitionAwareClusteringPlanStrategy`` + ``SparkSizeBasedClusteringPlanStrategy`` (eligible slices: the latest
slice of every file group not replaced and not under a pending compaction, log compaction or clustering, whose base
file is smaller than ``small.file.limit``; per partition, largest first, cut into groups of at most
``max.bytes.per.group``, ``numOutputFileGroups = ceil(group bytes / target.file.max.bytes)``, at most
``max.num.groups`` in all; a lone slice only when sorting or ``single.group.clustering.enabled``),
``ClusteringPlanPartitionFilter`` (NONE, RECENT_DAYS, SELECTED_PARTITIONS, DAY_ROLLING, after the regex or the
selected partitions) and ``FileSliceMetricUtils`` (the group metrics).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import pendulum

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import InstantNotFoundError, PlanError
from lake_orchestration.hudi.model.avro import (
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    RequestedReplaceMetadata,
    SliceInfo,
)
from lake_orchestration.hudi.model.file_group import FileSlice
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.clustering.config import ClusteringConfig, PartitionFilterMode
from lake_orchestration.hudi.table.clustering import (
    CLUSTER,
    is_clustering,
    pending_clustering_file_groups,
    pending_clustering_plans,
    requested_replace,
)
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.io.hadoop_paths import qualified_path

MB = 1024 * 1024
CLUSTERING_PLAN_VERSION = 1  # ClusteringPlanStrategy.CLUSTERING_PLAN_VERSION_1


@dataclass(frozen=True)
class ScheduleResult:
    """The outcome of schedule-plan: the requested instant and its plan, or why nothing was scheduled (with
    ``dry_run``, the plan that would have been written and no instant)."""

    instant: InstantTime | None
    plan: ClusteringPlan | None
    reason: str

    @property
    def scheduled(self) -> bool:
        return self.instant is not None

    @property
    def groups(self) -> int:
        return len(self.plan.input_groups or ()) if self.plan is not None else 0

    @property
    def file_groups(self) -> int:
        """Input file groups of the plan."""
        return sum(len(g.slices or ()) for g in (self.plan.input_groups or ())) if self.plan is not None else 0

    def to_json_obj(self) -> dict[str, Any]:
        """What ``lake-orch clustering schedule --json`` prints."""
        return {
            "scheduled": self.scheduled,
            "instant": str(self.instant) if self.instant is not None else None,
            "groups": self.groups,
            "file_groups": self.file_groups,
            "output_file_groups": sum(g.num_output_file_groups or 0 for g in self.plan.input_groups or ())
            if self.plan is not None
            else 0,
            "reason": self.reason,
        }


# -- pending clustering ---------------------------------------------------------------------------------------------
def last_clustering(table: HudiTable) -> Instant | None:
    """``getLastClusteringInstant``: the latest completed replacecommit that is a clustering."""
    for inst in reversed(list(table.timeline.completed().with_actions(Action.REPLACE_COMMIT))):
        if is_clustering(table, inst):
            return inst
    return None


# -- trigger -------------------------------------------------------------------------------------------------------
def trigger_reason(table: HudiTable, cfg: ClusteringConfig) -> str | None:
    """None if ``ClusteringPlanActionExecutor``'s triggers allow a plan now, else why not: with
    ``hoodie.clustering.inline`` at least ``inline.max.commits`` completed commits since the last clustering, with
    ``async.enabled`` or ``schedule.inline`` at least ``async.max.commits``; neither set (a clustering job run on
    demand): always."""
    last = last_clustering(table)
    since = [
        i
        for i in table.timeline.completed().with_actions(Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)
        if last is None or i.time > last.time
    ]
    n = len(since)
    after = f"since clustering {last.time}" if last is not None else "(no clustering yet)"
    if cfg.inline and cfg.inline_max_commits > n:
        return f"{n} commit(s) {after}; {HoodieKey.CLUSTERING_INLINE_MAX_COMMITS.key}={cfg.inline_max_commits}"
    if (cfg.async_enabled or cfg.schedule_inline) and cfg.async_max_commits > n:
        return f"{n} commit(s) {after}; {HoodieKey.CLUSTERING_ASYNC_MAX_COMMITS.key}={cfg.async_max_commits}"
    return None


# -- partitions ----------------------------------------------------------------------------------------------------
def filter_partitions(partitions: list[str], cfg: ClusteringConfig, *, hour: int | None = None) -> list[str]:
    """The partitions a plan considers: the selected ones (``partition.selected``) or those matching
    ``partition.regex.pattern`` (whole path), then ``ClusteringPlanPartitionFilter`` of the filter mode.

    Raises:
        PlanError: the regular expression does not compile.
    """
    if cfg.partition_selected:
        parts = list(cfg.partition_selected)
    else:
        parts = list(partitions)
        if cfg.partition_regex:
            try:
                rx = re.compile(cfg.partition_regex)
            except re.error as err:
                raise PlanError(
                    f"{HoodieKey.CLUSTERING_PARTITION_REGEX.key}={cfg.partition_regex!r}: not a regular "
                    f"expression ({err})"
                ) from err
            parts = [p for p in parts if rx.fullmatch(p)]
    mode = cfg.partition_filter_mode
    if mode is PartitionFilterMode.RECENT_DAYS:
        skip = max(cfg.skip_from_latest, 0)
        ordered = sorted(parts, reverse=True)[skip:]
        return ordered[: cfg.lookback_partitions] if cfg.lookback_partitions > 0 else ordered
    if mode is PartitionFilterMode.SELECTED_PARTITIONS:
        begin, end = cfg.begin_partition, cfg.end_partition
        return [p for p in parts if (begin is None or p >= begin) and (end is None or p <= end)]
    if mode is PartitionFilterMode.DAY_ROLLING:
        h = pendulum.now().hour if hour is None else hour
        return [p for i, p in enumerate(sorted(parts)) if i % 24 == h]
    return parts


# -- groups --------------------------------------------------------------------------------------------------------
def _size(fs: FileSlice, cfg: ClusteringConfig) -> int:
    return fs.base_file.size if fs.base_file is not None and fs.base_file.size >= 0 else cfg.max_file_size


def group_metrics(slices: list[FileSlice], cfg: ClusteringConfig) -> dict[str, float]:
    """``FileSliceMetricUtils.addFileSliceCommonMetrics``: sizes in MB by integer division, stored as doubles."""
    n_logs = sum(len(fs.log_files) for fs in slices)
    log_size = sum(max(lf.size, 0) for fs in slices for lf in fs.log_files)
    base = [fs.base_file.size if fs.base_file is not None and fs.base_file.size > 0 else 0 for fs in slices]
    read_mb = (sum(base) + log_size) // MB
    write_mb = sum(b if b > 0 else cfg.max_file_size for b in base) // MB
    return {
        "TOTAL_IO_READ_MB": float(read_mb),
        "TOTAL_IO_WRITE_MB": float(write_mb),
        "TOTAL_IO_MB": float(read_mb + write_mb),
        "TOTAL_LOG_FILES_SIZE": float(log_size),
        "TOTAL_LOG_FILES": float(n_logs),
    }


def slice_info(table: HudiTable, fs: FileSlice) -> SliceInfo:
    """``ClusteringPlanStrategy.getFileSliceInfo``: fully qualified paths (``file:/…``, ``s3a://…``: the form of
    Hadoop's listing, whatever form the base path was given in), ``""`` for a missing base file."""
    st = table.storage
    p = fs.partition_path
    base = fs.base_file
    return SliceInfo(
        data_file_path=qualified_path(st, st.join(p, base.name)) if base is not None else "",
        delta_file_paths=tuple(qualified_path(st, st.join(p, lf.name)) for lf in fs.log_files),
        file_id=fs.file_id,
        partition_path=p,
        bootstrap_file_path=(base.bootstrap_source or "") if base is not None else "",
        version=1,
    )


def build_groups(table: HudiTable, slices: list[FileSlice], cfg: ClusteringConfig) -> list[ClusteringGroup]:
    """``buildClusteringGroupsForPartition`` of one partition's eligible slices."""
    ordered = sorted(slices, key=lambda fs: -_size(fs, cfg))  # stable, largest first (Java's List.sort)
    groups: list[tuple[list[FileSlice], int]] = []
    current: list[FileSlice] = []
    total = 0
    for fs in ordered:
        size = _size(fs, cfg)
        if total + size > cfg.max_bytes_per_group and current:
            groups.append((current, math.ceil(total / cfg.target_file_max_bytes)))
            current, total = [], 0
            if len(groups) >= cfg.max_num_groups:
                break
        current.append(fs)
        total += size
    else:
        if current and (len(current) > 1 or cfg.sort_enabled or cfg.single_group_enabled):
            groups.append((current, math.ceil(total / cfg.target_file_max_bytes)))
    return [
        ClusteringGroup(
            slices=tuple(slice_info(table, fs) for fs in g),
            metrics=group_metrics(g, cfg),
            num_output_file_groups=max(1, n),
            extra_metadata=None,
            version=1,
        )
        for g, n in groups
    ]


def generate_plan(table: HudiTable, cfg: ClusteringConfig) -> ClusteringPlan | None:
    """The plan over the eligible slices (None: nothing to cluster)."""
    view = table.fs_view()
    excluded = (
        set(view.pending_compaction) | set(view.pending_log_compaction) | set(pending_clustering_file_groups(table))
    )
    groups: list[ClusteringGroup] = []
    for p in filter_partitions(list(view.partitions), cfg):
        eligible = [
            fs
            for fs in view.latest_file_slices(p)
            if fs.file_group_id not in excluded
            and (fs.base_file.size if fs.base_file is not None else 0) < cfg.small_file_limit
        ]
        groups += build_groups(table, eligible, cfg)[: cfg.max_num_groups]
    groups = groups[: cfg.max_num_groups]
    if not groups:
        return None
    return ClusteringPlan(
        input_groups=tuple(groups),
        strategy=ClusteringStrategy(
            strategy_class_name=cfg.execution_strategy, strategy_params=cfg.strategy_params(), version=1
        ),
        extra_metadata={},
        version=CLUSTERING_PLAN_VERSION,
        preserve_hoodie_metadata=True,
    )


def _check_instant(table: HudiTable, instant: InstantTime) -> None:
    later = [i for i in table.timeline if i.time >= instant]
    if later:
        raise PlanError(
            f"Following instants have timestamps >= clustering instant {instant} on {table.base_uri}: "
            + ", ".join(str(i) for i in later)
        )


def schedule_clustering(
    table: HudiTable,
    *,
    config: ClusteringConfig | None = None,
    instant_time: InstantTime | str | None = None,
    force: bool = False,
    dry_run: bool = False,
) -> ScheduleResult:
    """Schedule a clustering plan: the triggers, the plan, ``<instant>.replacecommit.requested``.

    Args:
        config: clustering options (Hudi keys via :meth:`ClusteringConfig.from_options`).
        instant_time: the plan's instant (``--instant-time``); default: a new instant.
        force: skip the ``inline``/``async`` max-commits triggers.
        dry_run: compute the plan, write nothing (the result holds the plan, no instant).

    Raises:
        PlanError: ``instant_time`` is not after every instant of the timeline, or a bad partition regex.
        MetadataTableError: as for compaction (a metadata table with a partition other than ``files``).
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    cfg = config or ClusteringConfig()
    given = InstantTime(instant_time, where=table.base_uri) if instant_time else None
    with table_lock(table, operation="clustering schedule", config=cfg.lock):
        instant = given or table.new_instant_time()
        if given is not None:
            table.refresh()
            _check_instant(table, instant)
        if not dry_run:
            table.ensure_metadata_table_handled(cfg.metadata_options(), service="clustering")
        if not force:
            reason = trigger_reason(table, cfg)
            if reason:
                return ScheduleResult(None, None, f"clustering not triggered: {reason}")
        if not table.timeline.completed_commits().instants:
            return ScheduleResult(None, None, "no completed commit on the timeline")
        table.latest_schema()  # a latest commit whose schema does not decode stops here (CorruptFileError)
        plan = generate_plan(table, cfg)
        if plan is None:
            return ScheduleResult(None, None, "no file slice eligible for clustering")
        n = len(plan.input_groups or ())
        if dry_run:
            return ScheduleResult(None, plan, f"dry run: would schedule {n} clustering group(s)")
        md = RequestedReplaceMetadata(operation_type=CLUSTER, clustering_plan=plan, extra_metadata={}, version=1)
        table.create_requested(Instant(instant, Action.REPLACE_COMMIT, State.REQUESTED), md.to_bytes())
        return ScheduleResult(instant, plan, f"scheduled {n} clustering group(s)")


# -- pending plans -------------------------------------------------------------------------------------------------
def load_plan(table: HudiTable, instant: InstantTime | str) -> ClusteringPlan:
    """The clustering plan of ``instant`` (its ``.replacecommit.requested``, which stays once committed).

    Raises:
        InstantNotFoundError: no replacecommit ``instant`` on the active timeline, or it is no clustering.
        CorruptFileError: the plan does not decode.
    """
    instant = InstantTime(instant, where=table.base_uri)
    found = table.timeline.get(instant, Action.REPLACE_COMMIT)
    if found is None or found.action is not Action.REPLACE_COMMIT:
        raise InstantNotFoundError(table.base_uri, instant, "no clustering plan on the active timeline")
    md = requested_replace(table, found)
    if md is None or md.operation_type != CLUSTER or md.clustering_plan is None:
        raise InstantNotFoundError(table.base_uri, instant, "replacecommit is not a clustering (no clustering plan)")
    return md.clustering_plan


def pending_clustering_instants(table: HudiTable) -> list[Instant]:
    """Pending clustering instants (requested or inflight), oldest first, on a fresh listing."""
    return list(pending_clustering_plans(table.refresh()))


def select_pending_plans(
    table: HudiTable, *, seq: str = "FIFO", max_plans: int | None = None, exclude: Collection[str] = ()
) -> list[str]:
    """The pending clustering plans to run next: ``FIFO`` (oldest first) or ``LIFO``, at most ``max_plans``.

    Raises:
        PlanError: ``seq`` is neither FIFO nor LIFO.
    """
    if seq.upper() not in ("FIFO", "LIFO"):
        raise PlanError(f"clustering order {seq!r}: expected FIFO or LIFO")
    pending = [str(i.time) for i in pending_clustering_instants(table) if str(i.time) not in exclude]
    if seq.upper() == "LIFO":
        pending.reverse()
    return pending if max_plans is None else pending[: max(0, max_plans)]


def is_clustering_committed(table: HudiTable, instant: InstantTime | str) -> bool:
    """Clustering ``instant`` is completed (``<instant>.replacecommit``) on the timeline the table holds."""
    instant = InstantTime(instant, where=table.base_uri)
    done = table.timeline.get(instant, Action.REPLACE_COMMIT)
    return done is not None and done.action is Action.REPLACE_COMMIT and done.is_completed
