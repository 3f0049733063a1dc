"""Compaction options, under Hudi's key names (``hoodie.compact.*``, ``hoodie.compaction.*``)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.config.options import HeartbeatConfig, check_minimums, option, parse_int_option, parse_options
from lake_orchestration.hudi.services.rollback.config import RollbackConfig
from lake_orchestration.hudi.table.lock import LockConfig
from lake_orchestration.hudi.write.base_file import ParquetWriteConfig


class TriggerStrategy(str, enum.Enum):
    """``hoodie.compact.inline.trigger.strategy``."""

    NUM_COMMITS = "NUM_COMMITS"
    NUM_COMMITS_AFTER_LAST_REQUEST = "NUM_COMMITS_AFTER_LAST_REQUEST"
    TIME_ELAPSED = "TIME_ELAPSED"
    NUM_AND_TIME = "NUM_AND_TIME"
    NUM_OR_TIME = "NUM_OR_TIME"


class CompactionStrategyName(str, enum.Enum):
    """``hoodie.compaction.strategy`` (short names of ``org.apache.hudi.table.action.compact.strategy.*``)."""

    LOG_FILE_SIZE_BASED = "LogFileSizeBasedCompactionStrategy"
    LOG_FILE_NUM_BASED = "LogFileNumBasedCompactionStrategy"
    BOUNDED_IO = "BoundedIOCompactionStrategy"
    DAY_BASED = "DayBasedCompactionStrategy"
    BOUNDED_PARTITION_AWARE = "BoundedPartitionAwareCompactionStrategy"
    UNBOUNDED = "UnBoundedCompactionStrategy"

    @classmethod
    def parse(cls, value: str) -> CompactionStrategyName:
        """A strategy by its Java class name, short name or member name, in any case.

        Raises:
            ValueError: no such strategy.
        """
        short = value.rsplit(".", 1)[-1]
        for m in cls:
            if m.value.lower() == short.lower() or m.name.lower() == short.lower():
                return m
        raise ValueError(value)


FLINK_MAX_MEMORY_MB = "compaction.max_memory"
"""Flink's name of the merge memory budget, in MB (``FlinkOptions.COMPACTION_MAX_MEMORY``)."""


def _upper(text: str) -> str:
    return text.strip().upper()


def _lower(text: str) -> str:
    return text.lower()


@dataclass(frozen=True, kw_only=True)
class CompactionConfig:
    """Compaction settings (defaults of Hudi 0.14/0.15); :meth:`from_options` reads them from Hudi's keys."""

    trigger_strategy: TriggerStrategy = option(HoodieKey.COMPACT_TRIGGER_STRATEGY, TriggerStrategy.NUM_COMMITS)
    """``hoodie.compact.inline.trigger.strategy``."""
    max_delta_commits: int = option(HoodieKey.COMPACT_MAX_DELTA_COMMITS, 5, minimum=0)
    """``hoodie.compact.inline.max.delta.commits``."""
    max_delta_seconds: int = option(HoodieKey.COMPACT_MAX_DELTA_SECONDS, 3600, minimum=0)
    """``hoodie.compact.inline.max.delta.seconds``."""
    strategy: CompactionStrategyName = option(HoodieKey.COMPACTION_STRATEGY, CompactionStrategyName.LOG_FILE_SIZE_BASED)
    """``hoodie.compaction.strategy``."""
    target_io_mb: int = option(HoodieKey.COMPACTION_TARGET_IO, 512_000, minimum=0)
    """``hoodie.compaction.target.io`` (MB per plan, BoundedIO strategies)."""
    logfile_size_threshold: int = option(HoodieKey.COMPACTION_LOGFILE_SIZE_THRESHOLD, 0, minimum=0)
    """``hoodie.compaction.logfile.size.threshold`` (bytes)."""
    logfile_num_threshold: int = option(HoodieKey.COMPACTION_LOGFILE_NUM_THRESHOLD, 0, minimum=0)
    """``hoodie.compaction.logfile.num.threshold``."""
    daybased_target_partitions: int = option(HoodieKey.COMPACTION_DAYBASED_TARGET_PARTITIONS, 10, minimum=0)
    """``hoodie.compaction.daybased.target.partitions``."""
    max_file_size: int = option(HoodieKey.PARQUET_MAX_FILE_SIZE, 125_829_120, minimum=0)
    """``hoodie.parquet.max.file.size`` (write-size estimate for log-only slices)."""
    memory_max_bytes: int = option(HoodieKey.MEMORY_COMPACTION_MAX_SIZE, 100 * 1024 * 1024, minimum=0)
    """``hoodie.memory.compaction.max.size``: log records held in memory per operation before spilling (Flink's
    ``compaction.max_memory``, in MB, is read too)."""
    compression: str = option(HoodieKey.PARQUET_COMPRESSION_CODEC, "gzip", parse=_lower)
    """``hoodie.parquet.compression.codec`` (at parquet-mr's default level: 6 for gzip, 3 for zstd)."""
    block_size: int = option(HoodieKey.PARQUET_BLOCK_SIZE, 120 * 1024 * 1024, minimum=1)
    """``hoodie.parquet.block.size``: compressed bytes per row group of the new base files."""
    page_size: int = option(HoodieKey.PARQUET_PAGE_SIZE, 1024 * 1024, minimum=1)
    """``hoodie.parquet.page.size``: data page size and dictionary page limit."""
    dictionary_enabled: bool = option(HoodieKey.PARQUET_DICTIONARY_ENABLED, True)
    """``hoodie.parquet.dictionary.enabled``."""
    log_compaction_blocks_threshold: int = option(HoodieKey.LOG_COMPACTION_BLOCKS_THRESHOLD, 5, minimum=0)
    """``hoodie.log.compaction.blocks.threshold``."""
    metadata_enable: bool = option(HoodieKey.METADATA_ENABLE, True)
    """``hoodie.metadata.enable``: true (Hudi's default) keeps a metadata table whose only partition is ``files``
    (the compaction's MDT deltacommit lists the files it wrote, at the compaction's instant) and refuses one with
    other partitions (``column_stats``, ``bloom_filters``, ``record_index``); ``false`` deletes the metadata table
    first (as a Java client with that setting)."""
    lock: LockConfig = field(default_factory=LockConfig)
    """``hoodie.write.lock.*``: the table lock held while a plan is scheduled and while it is committed."""
    failed_writes_policy: str = option(HoodieKey.FAILED_WRITES_CLEANER_POLICY, "EAGER", parse=_upper)
    """``hoodie.cleaner.policy.failed.writes`` of the table's writers (see :attr:`multi_writer`)."""

    heartbeat_interval_ms: int = option(HoodieKey.HEARTBEAT_INTERVAL_MS, 60_000, minimum=1)
    """``hoodie.client.heartbeat.interval_in_ms``: the process executing a (log) compaction plan refreshes its
    heartbeat ``.hoodie/.heartbeat/<instant>`` this often; another run rolls an inflight attempt back only once its
    heartbeat is older than this times ``heartbeat_tolerable_misses``."""
    heartbeat_tolerable_misses: int = option(HoodieKey.HEARTBEAT_TOLERABLE_MISSES, 2, minimum=1)
    """``hoodie.client.heartbeat.tolerable.misses``."""

    def __post_init__(self) -> None:
        # a negative count, size or budget is a typo: Java would silently compact on every commit (or never)
        check_minimums(self, service="compaction")

    def parquet(self) -> ParquetWriteConfig:
        """The base-file layout settings of the new base files."""
        return ParquetWriteConfig(
            compression=self.compression,
            block_size=self.block_size,
            page_size=self.page_size,
            dictionary_enabled=self.dictionary_enabled,
        )

    @property
    def multi_writer(self) -> bool:
        """Writers run beside each other (``OPTIMISTIC_CONCURRENCY_CONTROL`` or the ``LAZY`` failed-writes policy):
        scheduling skips the single-writer check that no write is pending before the plan's instant, as Java's
        ``ScheduleCompactionActionExecutor`` does; a pending write on a file group the plan covers then fails its
        own conflict check at commit (Java's and ours) instead of writing into a slice being compacted."""
        mode = self.lock.concurrency_mode  # hoodie.write.concurrency.mode, parsed once with the lock's settings
        return mode == "OPTIMISTIC_CONCURRENCY_CONTROL" or self.failed_writes_policy == "LAZY"

    def metadata_options(self) -> dict[str, str]:
        """The options :meth:`HudiTable.ensure_metadata_table_handled` reads."""
        return {HoodieKey.METADATA_ENABLE.key: "true" if self.metadata_enable else "false"}

    def rollback_config(self) -> RollbackConfig:
        """The settings of the rollback of a failed (log) compaction attempt: the same lock file and lock settings
        as its caller (the nested lock is reentrant), the same heartbeats and ``hoodie.metadata.enable``."""
        heartbeat = HeartbeatConfig(
            interval_ms=self.heartbeat_interval_ms, tolerable_misses=self.heartbeat_tolerable_misses
        )
        return RollbackConfig(lock=self.lock, heartbeat=heartbeat, metadata_enable=self.metadata_enable)

    @classmethod
    def from_options(cls, options: Mapping[str, str] | None = None, **overrides: Any) -> CompactionConfig:
        """Parse Hudi keys; ``overrides`` (typed values) win.

        Raises:
            InvalidOptionError: (a :class:`PlanError`) a value that does not parse or is out of range, naming the
                key and the value.
        """
        opts = dict(options or {})
        if FLINK_MAX_MEMORY_MB in opts and "memory_max_bytes" not in overrides:
            mb = parse_int_option(FLINK_MAX_MEMORY_MB, opts[FLINK_MAX_MEMORY_MB], service="compaction")
            overrides = {**overrides, "memory_max_bytes": mb * 1024 * 1024}
        overrides.setdefault("lock", LockConfig.from_options(opts, service="compaction"))
        return parse_options(cls, opts, service="compaction", **overrides)
