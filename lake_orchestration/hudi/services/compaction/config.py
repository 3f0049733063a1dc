"""Compaction options, under Hudi's key names (``hoodie.compact.*``, ``hoodie.compaction.*``)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import InvalidOptionError
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
        short = value.rsplit(".", 1)[-1]
        for m in cls:
            if m.value.lower() == short.lower() or m.name.lower() == short.lower():
                return m
        raise InvalidOptionError(
            f"Unknown hoodie.compaction.strategy {value!r}: expected one of {', '.join(m.value for m in cls)}"
        )


_KEYS = {
    "trigger_strategy": "hoodie.compact.inline.trigger.strategy",
    "max_delta_commits": "hoodie.compact.inline.max.delta.commits",
    "max_delta_seconds": "hoodie.compact.inline.max.delta.seconds",
    "strategy": "hoodie.compaction.strategy",
    "target_io_mb": "hoodie.compaction.target.io",
    "logfile_size_threshold": "hoodie.compaction.logfile.size.threshold",
    "logfile_num_threshold": "hoodie.compaction.logfile.num.threshold",
    "daybased_target_partitions": "hoodie.compaction.daybased.target.partitions",
    "max_file_size": "hoodie.parquet.max.file.size",
    "memory_max_bytes": "hoodie.memory.compaction.max.size",
    "compression": HoodieKey.PARQUET_COMPRESSION_CODEC.key,
    "block_size": HoodieKey.PARQUET_BLOCK_SIZE.key,
    "page_size": HoodieKey.PARQUET_PAGE_SIZE.key,
    "dictionary_enabled": HoodieKey.PARQUET_DICTIONARY_ENABLED.key,
    "log_compaction_blocks_threshold": "hoodie.log.compaction.blocks.threshold",
    "metadata_enable": HoodieKey.METADATA_ENABLE.key,
    "heartbeat_interval_ms": HoodieKey.HEARTBEAT_INTERVAL_MS.key,
    "heartbeat_tolerable_misses": HoodieKey.HEARTBEAT_TOLERABLE_MISSES.key,
}


@dataclass(frozen=True, kw_only=True)
class CompactionConfig:
    """Compaction settings (defaults of Hudi 0.14/0.15)."""

    trigger_strategy: TriggerStrategy = TriggerStrategy.NUM_COMMITS
    """``hoodie.compact.inline.trigger.strategy``."""
    max_delta_commits: int = 5
    """``hoodie.compact.inline.max.delta.commits``."""
    max_delta_seconds: int = 3600
    """``hoodie.compact.inline.max.delta.seconds``."""
    strategy: CompactionStrategyName = CompactionStrategyName.LOG_FILE_SIZE_BASED
    """``hoodie.compaction.strategy``."""
    target_io_mb: int = 512_000
    """``hoodie.compaction.target.io`` (MB per plan, BoundedIO strategies)."""
    logfile_size_threshold: int = 0
    """``hoodie.compaction.logfile.size.threshold`` (bytes)."""
    logfile_num_threshold: int = 0
    """``hoodie.compaction.logfile.num.threshold``."""
    daybased_target_partitions: int = 10
    """``hoodie.compaction.daybased.target.partitions``."""
    max_file_size: int = 125_829_120
    """``hoodie.parquet.max.file.size`` (write-size estimate for log-only slices)."""
    memory_max_bytes: int = 100 * 1024 * 1024
    """``hoodie.memory.compaction.max.size``: log records held in memory per operation before spilling."""
    compression: str = "gzip"
    """``hoodie.parquet.compression.codec`` (at parquet-mr's default level: 6 for gzip, 3 for zstd)."""
    block_size: int = 120 * 1024 * 1024
    """``hoodie.parquet.block.size``: compressed bytes per row group of the new base files."""
    page_size: int = 1024 * 1024
    """``hoodie.parquet.page.size``: data page size and dictionary page limit."""
    dictionary_enabled: bool = True
    """``hoodie.parquet.dictionary.enabled``."""
    log_compaction_blocks_threshold: int = 5
    """``hoodie.log.compaction.blocks.threshold``."""
    metadata_enable: bool = True
    """``hoodie.metadata.enable``: compaction does not update Hudi's metadata table, so a table that has one is
    refused unless this is ``false``, which deletes the metadata table first (as a Java client with that setting)."""
    lock: LockConfig = field(default_factory=LockConfig)
    """``hoodie.write.lock.*``: the table lock held while a plan is scheduled and while it is committed."""

    heartbeat_interval_ms: int = 60_000
    """``hoodie.client.heartbeat.interval_in_ms``: the process executing a (log) compaction plan refreshes its
    heartbeat ``.hoodie/.heartbeat/<instant>`` this often; another run rolls an inflight attempt back only once its
    heartbeat is older than this times ``heartbeat_tolerable_misses``."""
    heartbeat_tolerable_misses: int = 2
    """``hoodie.client.heartbeat.tolerable.misses``."""

    def __post_init__(self) -> None:
        for attr in ("heartbeat_interval_ms", "heartbeat_tolerable_misses", "block_size", "page_size"):
            if getattr(self, attr) < 1:
                raise InvalidOptionError(
                    f"Invalid compaction option {_KEYS[attr]}={getattr(self, attr)!r} (>= 1 expected)"
                )

    def parquet(self) -> ParquetWriteConfig:
        """The base-file layout settings of the new base files."""
        return ParquetWriteConfig(
            compression=self.compression,
            block_size=self.block_size,
            page_size=self.page_size,
            dictionary_enabled=self.dictionary_enabled,
        )

    def metadata_options(self) -> dict[str, str]:
        """The options :meth:`HudiTable.ensure_metadata_table_handled` reads."""
        return {HoodieKey.METADATA_ENABLE.key: "true" if self.metadata_enable else "false"}

    @classmethod
    def from_options(cls, options: Mapping[str, str] | None = None, **overrides: Any) -> CompactionConfig:
        """Parse Hudi keys; an invalid value raises :class:`InvalidOptionError` (a :class:`PlanError`) naming the key
        and the value."""
        kw: dict[str, Any] = {}
        opts = dict(options or {})
        types = {f.name: f.type for f in fields(cls)}
        for attr, key in _KEYS.items():
            if key not in opts:
                continue
            raw = opts[key]
            try:
                if attr == "trigger_strategy":
                    kw[attr] = TriggerStrategy(raw.upper())
                elif attr == "strategy":
                    kw[attr] = CompactionStrategyName.parse(raw)
                elif attr == "compression":
                    kw[attr] = raw.lower()
                elif attr in ("metadata_enable", "dictionary_enabled"):
                    if str(raw).strip().lower() not in ("true", "false"):
                        raise ValueError(raw)
                    kw[attr] = str(raw).strip().lower() == "true"
                elif attr == "heartbeat_interval_ms":
                    kw[attr] = int(raw)
                    if kw[attr] < 1:
                        raise ValueError(raw)
                else:
                    kw[attr] = int(raw)
            except ValueError as err:
                raise InvalidOptionError(f"Invalid compaction option {key}={raw!r} ({types[attr]} expected)") from err
            if types[attr] in (int, "int") and kw[attr] < 0:
                # a negative count, size or budget is a typo: Java would silently compact on every commit (or never)
                raise InvalidOptionError(f"Invalid compaction option {key}={raw!r} (int >= 0 expected)")
        if "compaction.max_memory" in opts:
            try:
                kw["memory_max_bytes"] = int(opts["compaction.max_memory"]) * 1024 * 1024
            except ValueError as err:
                raise InvalidOptionError(
                    f"Invalid option compaction.max_memory={opts['compaction.max_memory']!r} (MB, int expected)"
                ) from err
            if kw["memory_max_bytes"] < 0:
                raise InvalidOptionError(
                    f"Invalid option compaction.max_memory={opts['compaction.max_memory']!r} (MB, int >= 0 expected)"
                )
        kw["lock"] = LockConfig.from_options(opts)
        kw.update(overrides)
        return cls(**kw)
