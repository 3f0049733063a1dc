"""Clean options, under Hudi's key names (``hoodie.cleaner.*``, ``hoodie.clean.*``)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.config.options import HeartbeatConfig, check_minimums, option, parse_options
from lake_orchestration.hudi.table.lock import LockConfig


class CleaningPolicy(str, enum.Enum):
    """``hoodie.cleaner.policy`` (``HoodieCleaningPolicy``)."""

    KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
    KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
    KEEP_LATEST_BY_HOURS = "KEEP_LATEST_BY_HOURS"


class CleaningTriggerStrategy(str, enum.Enum):
    """``hoodie.clean.trigger.strategy`` (Hudi has only ``NUM_COMMITS``)."""

    NUM_COMMITS = "NUM_COMMITS"


@dataclass(frozen=True, kw_only=True)
class CleanConfig:
    """Clean settings (defaults of Hudi 0.14/0.15); :meth:`from_options` reads them from Hudi's keys."""

    policy: CleaningPolicy = option(HoodieKey.CLEANER_POLICY, CleaningPolicy.KEEP_LATEST_COMMITS)
    """``hoodie.cleaner.policy``."""
    commits_retained: int = option(HoodieKey.CLEANER_COMMITS_RETAINED, 10, minimum=0)
    """``hoodie.cleaner.commits.retained``: completed commits whose file slices stay readable (0 is accepted as in
    Java: no commit to retain is found, nothing is cleaned)."""
    file_versions_retained: int = option(HoodieKey.CLEANER_FILEVERSIONS_RETAINED, 3, minimum=1)
    """``hoodie.cleaner.fileversions.retained``: slices kept per file group (KEEP_LATEST_FILE_VERSIONS)."""
    hours_retained: int = option(HoodieKey.CLEANER_HOURS_RETAINED, 24, minimum=0)
    """``hoodie.cleaner.hours.retained`` (KEEP_LATEST_BY_HOURS)."""
    incremental_mode: bool = option(HoodieKey.CLEANER_INCREMENTAL_MODE, True)
    """``hoodie.cleaner.incremental.mode``: only partitions written since the previous clean's retained commit."""
    trigger_strategy: CleaningTriggerStrategy = option(
        HoodieKey.CLEAN_TRIGGER_STRATEGY, CleaningTriggerStrategy.NUM_COMMITS
    )
    """``hoodie.clean.trigger.strategy``."""
    max_commits: int = option(HoodieKey.CLEAN_MAX_COMMITS, 1, minimum=1)
    """``hoodie.clean.max.commits``: completed commits since the last clean needed to schedule one."""
    parallelism: int = option(HoodieKey.CLEANER_PARALLELISM, 200, minimum=1)
    """``hoodie.cleaner.parallelism``: at most this many delete tasks."""
    lock: LockConfig = field(default_factory=LockConfig)
    """``hoodie.write.lock.*``: the table lock held while a clean is planned and while it is committed."""
    heartbeat: HeartbeatConfig = field(default_factory=HeartbeatConfig)
    """``hoodie.client.heartbeat.*``: the heartbeat of the clean instant while its files are deleted."""
    metadata_enable: bool = option(HoodieKey.METADATA_ENABLE, True)
    """``hoodie.metadata.enable``: true (Hudi's default) keeps a metadata table whose only partition is ``files``
    (the clean's MDT deltacommit flags the deleted files, at the clean's instant) and refuses one with other
    partitions (``column_stats``, ``bloom_filters``, ``record_index``); ``false`` deletes the metadata table first,
    as a Java writer with that setting does."""

    def __post_init__(self) -> None:
        check_minimums(self, service="clean")

    def metadata_options(self) -> dict[str, str]:
        """The options :meth:`HudiTable.ensure_metadata_table_handled` reads."""
        return {HoodieKey.METADATA_ENABLE.key: "true" if self.metadata_enable else "false"}

    @classmethod
    def from_options(cls, options: Mapping[str, str] | None = None, **overrides: Any) -> CleanConfig:
        """Parse Hudi keys; ``overrides`` (typed values) win.

        Raises:
            InvalidOptionError: (a :class:`PlanError`) a value that does not parse or is out of range, naming the
                key and the value.
        """
        opts = dict(options or {})
        overrides.setdefault("lock", LockConfig.from_options(opts, service="clean"))
        overrides.setdefault("heartbeat", HeartbeatConfig.from_options(opts, service="clean"))
        return parse_options(cls, opts, service="clean", **overrides)
