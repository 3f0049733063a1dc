"""Archival options under Hudi's key names (``HoodieArchivalConfig`` and the cleaner keys archival depends on)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.config.options import check_minimums, option, parse_options
from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.hudi.services.clean.config import CleaningPolicy
from lake_orchestration.hudi.services.compaction.config import TriggerStrategy
from lake_orchestration.hudi.table.lock import LockConfig


@dataclass(frozen=True, kw_only=True)
class ArchiveConfig:
    """Archival settings (defaults of Hudi 0.14/0.15); :meth:`from_options` reads them from Hudi's keys."""

    min_commits: int = option(HoodieKey.KEEP_MIN_COMMITS, 20, minimum=0)
    """``hoodie.keep.min.commits``."""
    max_commits: int = option(HoodieKey.KEEP_MAX_COMMITS, 30, minimum=0)
    """``hoodie.keep.max.commits``."""
    archival_batch: int = option(HoodieKey.COMMITS_ARCHIVAL_BATCH, 10, minimum=0)
    """``hoodie.commits.archival.batch``: records per Avro block of an archive file (>= 1: :meth:`validate`)."""
    archive_beyond_savepoint: bool = option(HoodieKey.ARCHIVE_BEYOND_SAVEPOINT, False)
    """``hoodie.archive.beyond.savepoint``."""
    merge_enable: bool = option(HoodieKey.ARCHIVE_MERGE_ENABLE, False)
    """``hoodie.archive.merge.enable``."""
    merge_files_batch_size: int = option(HoodieKey.ARCHIVE_MERGE_FILES_BATCH_SIZE, 10, minimum=0)
    """``hoodie.archive.merge.files.batch.size``: minimum number of small files to merge (>= 1: :meth:`validate`)."""
    merge_small_file_limit_bytes: int = option(
        HoodieKey.ARCHIVE_MERGE_SMALL_FILE_LIMIT_BYTES, 20 * 1024 * 1024, minimum=0
    )
    """``hoodie.archive.merge.small.file.limit.bytes``."""
    cleaner_policy: CleaningPolicy = option(HoodieKey.CLEANER_POLICY, CleaningPolicy.KEEP_LATEST_COMMITS)
    """``hoodie.cleaner.policy``."""
    cleaner_commits_retained: int = option(HoodieKey.CLEANER_COMMITS_RETAINED, 10, minimum=0)
    """``hoodie.cleaner.commits.retained``."""
    cleaner_hours_retained: int = option(HoodieKey.CLEANER_HOURS_RETAINED, 24, minimum=0)
    """``hoodie.cleaner.hours.retained``."""
    compaction_trigger: TriggerStrategy = option(HoodieKey.COMPACT_TRIGGER_STRATEGY, TriggerStrategy.NUM_COMMITS)
    """``hoodie.compact.inline.trigger.strategy`` (MOR: deltacommits a future compaction needs stay active)."""
    max_delta_commits: int = option(HoodieKey.COMPACT_MAX_DELTA_COMMITS, 5, minimum=0)
    """``hoodie.compact.inline.max.delta.commits``."""
    lock: LockConfig = field(default_factory=LockConfig)
    """``hoodie.write.lock.*``: the table lock held for the whole run (archive and merge)."""

    def __post_init__(self) -> None:
        check_minimums(self, service="archive")

    @classmethod
    def from_options(
        cls, options: Mapping[str, str] | None = None, *, table_properties: Mapping[str, str] | None = None
    ) -> ArchiveConfig:
        """Parse Hudi keys from ``options``, then ``table_properties`` (``hoodie.properties``), then the defaults.

        Raises:
            InvalidOptionError: A value that does not parse, naming the key and the value.
        """
        merged = {**dict(table_properties or {}), **dict(options or {})}
        return parse_options(cls, merged, service="archive", lock=LockConfig.from_options(options, service="archive"))

    @classmethod
    def for_table(cls, table_properties: Mapping[str, str]) -> ArchiveConfig:
        """The settings of a table's ``hoodie.properties`` over Hudi's defaults (no options given).

        Raises:
            InvalidOptionError: A value in ``hoodie.properties`` that does not parse, naming the key and the value.
        """
        return cls.from_options(None, table_properties=table_properties)

    def validate(self, *, strict_retained: bool = True) -> None:
        """The checks of ``HoodieWriteConfig.Builder.validate`` (0.14/0.15) that concern archival.
        ``strict_retained=False``: ``hoodie.keep.min.commits`` <= ``hoodie.cleaner.commits.retained`` is only logged,
        as Java 0.15 does (the archiver adjusts to the cleaner: :func:`.planner.min_and_max_to_keep`).

        Raises:
            InvalidOptionError: ``hoodie.keep.max.commits`` <= ``hoodie.keep.min.commits``, or
                ``hoodie.keep.min.commits`` <= ``hoodie.cleaner.commits.retained`` (archiving a commit the cleaner
                still retains would make incremental reads miss data), or a batch size below 1.
        """
        if self.max_commits <= self.min_commits:
            raise InvalidOptionError(
                f"Increase {HoodieKey.KEEP_MAX_COMMITS.key}={self.max_commits} to be greater than "
                f"{HoodieKey.KEEP_MIN_COMMITS.key}={self.min_commits}."
            )
        if self.min_commits <= self.cleaner_commits_retained and strict_retained:
            raise InvalidOptionError(
                f"Increase {HoodieKey.KEEP_MIN_COMMITS.key}={self.min_commits} to be greater than "
                f"{HoodieKey.CLEANER_COMMITS_RETAINED.key}={self.cleaner_commits_retained}. Otherwise, there is "
                "risk of incremental pull missing data from few instants."
            )
        if self.archival_batch < 1:
            raise InvalidOptionError(
                f"Invalid {HoodieKey.COMMITS_ARCHIVAL_BATCH.key}={self.archival_batch}: expected >= 1"
            )
        if self.merge_files_batch_size < 1:
            raise InvalidOptionError(
                f"Invalid {HoodieKey.ARCHIVE_MERGE_FILES_BATCH_SIZE.key}={self.merge_files_batch_size}: expected >= 1"
            )
