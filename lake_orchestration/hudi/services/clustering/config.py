"""Clustering options, under Hudi's key names (``hoodie.clustering.*``, ``hoodie.layout.optimize.strategy``)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.config.options import HeartbeatConfig, check_minimums, option, parse_options
from lake_orchestration.hudi.services.rollback.config import RollbackConfig
from lake_orchestration.hudi.table.lock import LockConfig
from lake_orchestration.hudi.write.base_file import ParquetWriteConfig

SIZE_BASED_PLAN_STRATEGY = "org.apache.hudi.client.clustering.plan.strategy.SparkSizeBasedClusteringPlanStrategy"
"""``HoodieClusteringConfig.SPARK_SIZED_BASED_CLUSTERING_PLAN_STRATEGY``: the only plan strategy (its deprecated
``SparkRecentDays``/``SparkSelectedPartitions`` variants map to it with a partition filter mode, as Java's
``checkAndGetClusteringPlanStrategy`` does)."""
SORT_AND_SIZE_EXECUTION_STRATEGY = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
"""The execution strategy the plan names (``strategy.strategyClassName``)."""

_DEPRECATED_PLAN_STRATEGIES = {
    "org.apache.hudi.client.clustering.plan.strategy.SparkRecentDaysClusteringPlanStrategy": "RECENT_DAYS",
    "org.apache.hudi.client.clustering.plan.strategy.SparkSelectedPartitionsClusteringPlanStrategy": (
        "SELECTED_PARTITIONS"
    ),
}


class PartitionFilterMode(str, enum.Enum):
    """``hoodie.clustering.plan.partition.filter.mode`` (``ClusteringPlanPartitionFilterMode``)."""

    NONE = "NONE"
    RECENT_DAYS = "RECENT_DAYS"
    SELECTED_PARTITIONS = "SELECTED_PARTITIONS"
    DAY_ROLLING = "DAY_ROLLING"


class LayoutStrategy(str, enum.Enum):
    """``hoodie.layout.optimize.strategy`` (``LayoutOptimizationStrategy``; ``zorder`` is read as ``z-order``)."""

    LINEAR = "linear"
    ZORDER = "z-order"
    HILBERT = "hilbert"


def _lower(text: str) -> str:
    return text.strip().lower()


def _filter_mode(text: str) -> PartitionFilterMode:
    return PartitionFilterMode(text.strip().upper())


def _layout(text: str) -> LayoutStrategy:
    t = text.strip().lower()
    return LayoutStrategy("z-order" if t in ("zorder", "z_order") else t)


def _columns(text: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in text.split(",") if c.strip())


def _partitions(text: str) -> tuple[str, ...]:
    return tuple(p for p in text.split(",") if p)


@dataclass(frozen=True, kw_only=True)
class ClusteringConfig:
    """Clustering settings (defaults of Hudi 0.14/0.15); :meth:`from_options` reads them from Hudi's keys."""

    inline: bool = option(HoodieKey.CLUSTERING_INLINE, False)
    """``hoodie.clustering.inline``: the inline trigger applies (``inline.max.commits``)."""
    inline_max_commits: int = option(HoodieKey.CLUSTERING_INLINE_MAX_COMMITS, 4, minimum=0)
    """``hoodie.clustering.inline.max.commits``."""
    async_enabled: bool = option(HoodieKey.CLUSTERING_ASYNC_ENABLED, False)
    """``hoodie.clustering.async.enabled``: the async trigger applies (``async.max.commits``)."""
    schedule_inline: bool = option(HoodieKey.CLUSTERING_SCHEDULE_INLINE, False)
    """``hoodie.clustering.schedule.inline``: the async trigger applies too."""
    async_max_commits: int = option(HoodieKey.CLUSTERING_ASYNC_MAX_COMMITS, 4, minimum=0)
    """``hoodie.clustering.async.max.commits``."""
    plan_strategy: str = option(HoodieKey.CLUSTERING_PLAN_STRATEGY_CLASS, SIZE_BASED_PLAN_STRATEGY)
    """``hoodie.clustering.plan.strategy.class``."""
    execution_strategy: str = option(HoodieKey.CLUSTERING_EXECUTION_STRATEGY_CLASS, SORT_AND_SIZE_EXECUTION_STRATEGY)
    """``hoodie.clustering.execution.strategy.class`` (recorded in the plan; sort-and-size is what runs)."""
    small_file_limit: int = option(HoodieKey.CLUSTERING_SMALL_FILE_LIMIT, 300 * 1024 * 1024, minimum=0)
    """``hoodie.clustering.plan.strategy.small.file.limit``: base files smaller than this are clustered."""
    max_bytes_per_group: int = option(HoodieKey.CLUSTERING_MAX_BYTES_PER_GROUP, 2 * 1024**3, minimum=1)
    """``hoodie.clustering.plan.strategy.max.bytes.per.group``."""
    max_num_groups: int = option(HoodieKey.CLUSTERING_MAX_NUM_GROUPS, 30, minimum=1)
    """``hoodie.clustering.plan.strategy.max.num.groups``."""
    target_file_max_bytes: int = option(HoodieKey.CLUSTERING_TARGET_FILE_MAX_BYTES, 1024**3, minimum=1)
    """``hoodie.clustering.plan.strategy.target.file.max.bytes``: each new file holds at most about this much."""
    sort_columns: tuple[str, ...] = option(HoodieKey.CLUSTERING_SORT_COLUMNS, (), parse=_columns)
    """``hoodie.clustering.plan.strategy.sort.columns``."""
    single_group_enabled: bool = option(HoodieKey.CLUSTERING_SINGLE_GROUP_ENABLED, True)
    """``hoodie.clustering.plan.strategy.single.group.clustering.enabled``."""
    partition_filter_mode: PartitionFilterMode = option(
        HoodieKey.CLUSTERING_PARTITION_FILTER_MODE, PartitionFilterMode.NONE, parse=_filter_mode
    )
    """``hoodie.clustering.plan.partition.filter.mode``."""
    lookback_partitions: int = option(HoodieKey.CLUSTERING_DAYBASED_LOOKBACK_PARTITIONS, 2)
    """``hoodie.clustering.plan.strategy.daybased.lookback.partitions`` (RECENT_DAYS; <= 0: all)."""
    skip_from_latest: int = option(HoodieKey.CLUSTERING_DAYBASED_SKIP_FROM_LATEST, 0)
    """``hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions`` (RECENT_DAYS)."""
    begin_partition: str | None = option(HoodieKey.CLUSTERING_BEGIN_PARTITION, None)
    """``hoodie.clustering.plan.strategy.cluster.begin.partition`` (SELECTED_PARTITIONS, inclusive)."""
    end_partition: str | None = option(HoodieKey.CLUSTERING_END_PARTITION, None)
    """``hoodie.clustering.plan.strategy.cluster.end.partition`` (SELECTED_PARTITIONS, inclusive)."""
    partition_regex: str | None = option(HoodieKey.CLUSTERING_PARTITION_REGEX, None)
    """``hoodie.clustering.plan.strategy.partition.regex.pattern`` (whole-path match, Java's ``Pattern.matches``)."""
    partition_selected: tuple[str, ...] = option(HoodieKey.CLUSTERING_PARTITION_SELECTED, (), parse=_partitions)
    """``hoodie.clustering.plan.strategy.partition.selected``."""
    layout_strategy: LayoutStrategy = option(HoodieKey.LAYOUT_OPTIMIZE_STRATEGY, LayoutStrategy.LINEAR, parse=_layout)
    """``hoodie.layout.optimize.strategy``."""
    curve_build_method: str = option(HoodieKey.LAYOUT_CURVE_BUILD_METHOD, "direct", parse=_lower)
    """``hoodie.layout.optimize.curve.build.method`` (``direct``; ``sample`` is refused when executing)."""

    max_file_size: int = option(HoodieKey.PARQUET_MAX_FILE_SIZE, 125_829_120, minimum=0)
    """``hoodie.parquet.max.file.size``: the size a log-only slice counts for when grouping."""
    compression: str = option(HoodieKey.PARQUET_COMPRESSION_CODEC, "gzip", parse=_lower)
    """``hoodie.parquet.compression.codec``."""
    block_size: int = option(HoodieKey.PARQUET_BLOCK_SIZE, 120 * 1024 * 1024, minimum=1)
    """``hoodie.parquet.block.size``."""
    page_size: int = option(HoodieKey.PARQUET_PAGE_SIZE, 1024 * 1024, minimum=1)
    """``hoodie.parquet.page.size``."""
    dictionary_enabled: bool = option(HoodieKey.PARQUET_DICTIONARY_ENABLED, True)
    """``hoodie.parquet.dictionary.enabled``."""
    metadata_enable: bool = option(HoodieKey.METADATA_ENABLE, True)
    """``hoodie.metadata.enable``: as for compaction (a metadata table whose only partition is ``files`` is kept
    up to date by the replacecommit; ``false`` deletes it first)."""
    lock: LockConfig = field(default_factory=LockConfig)
    """``hoodie.write.lock.*``: held while a plan is scheduled, claimed and committed."""
    heartbeat_interval_ms: int = option(HoodieKey.HEARTBEAT_INTERVAL_MS, 60_000, minimum=1)
    """``hoodie.client.heartbeat.interval_in_ms`` of the executing attempt."""
    heartbeat_tolerable_misses: int = option(HoodieKey.HEARTBEAT_TOLERABLE_MISSES, 2, minimum=1)
    """``hoodie.client.heartbeat.tolerable.misses``."""

    def __post_init__(self) -> None:
        check_minimums(self, service="clustering")

    @property
    def sort_enabled(self) -> bool:
        """``isClusteringSortEnabled``: sort columns are set."""
        return bool(self.sort_columns)

    def parquet(self) -> ParquetWriteConfig:
        return ParquetWriteConfig(
            compression=self.compression,
            block_size=self.block_size,
            page_size=self.page_size,
            dictionary_enabled=self.dictionary_enabled,
        )

    def metadata_options(self) -> dict[str, str]:
        return {HoodieKey.METADATA_ENABLE.key: "true" if self.metadata_enable else "false"}

    def rollback_config(self) -> RollbackConfig:
        """The settings of the rollback of a failed clustering attempt (same lock, heartbeats, metadata setting)."""
        heartbeat = HeartbeatConfig(
            interval_ms=self.heartbeat_interval_ms, tolerable_misses=self.heartbeat_tolerable_misses
        )
        return RollbackConfig(lock=self.lock, heartbeat=heartbeat, metadata_enable=self.metadata_enable)

    def strategy_params(self) -> dict[str, str]:
        """``SparkSizeBasedClusteringPlanStrategy.getStrategyParams``: the sort columns, when set."""
        if not self.sort_columns:
            return {}
        return {HoodieKey.CLUSTERING_SORT_COLUMNS.key: ",".join(self.sort_columns)}

    @classmethod
    def from_options(cls, options: Mapping[str, str] | None = None, **overrides: Any) -> ClusteringConfig:
        """Parse Hudi keys; ``overrides`` (typed values) win. A deprecated plan strategy class
        (``SparkRecentDaysClusteringPlanStrategy``, ``SparkSelectedPartitionsClusteringPlanStrategy``) becomes the
        size-based one with its partition filter mode, as Java's ``checkAndGetClusteringPlanStrategy``.

        Raises:
            InvalidOptionError: a value that does not parse or is out of range, naming the key and the value.
        """
        opts = dict(options or {})
        mode = _DEPRECATED_PLAN_STRATEGIES.get(str(opts.get(HoodieKey.CLUSTERING_PLAN_STRATEGY_CLASS.key, "")))
        if mode is not None:
            opts[HoodieKey.CLUSTERING_PLAN_STRATEGY_CLASS.key] = SIZE_BASED_PLAN_STRATEGY
            opts[HoodieKey.CLUSTERING_PARTITION_FILTER_MODE.key] = mode
        overrides.setdefault("lock", LockConfig.from_options(opts, service="clustering"))
        return parse_options(cls, opts, service="clustering", **overrides)
