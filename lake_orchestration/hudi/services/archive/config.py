"""Archival options under Hudi's key names (``HoodieArchivalConfig`` and the cleaner keys archival depends on)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.hudi.services.clean.config import CleaningPolicy
from lake_orchestration.hudi.services.compaction.config import CompactionConfig, TriggerStrategy
from lake_orchestration.hudi.table.lock import LockConfig


@dataclass(frozen=True, kw_only=True)
class ArchiveConfig:
    """Archival settings (defaults of Hudi 0.14/0.15)."""

    min_commits: int = 20
    """``hoodie.keep.min.commits``."""
    max_commits: int = 30
    """``hoodie.keep.max.commits``."""
    archival_batch: int = 10
    """``hoodie.commits.archival.batch``: records per Avro block of an archive file."""
    archive_beyond_savepoint: bool = False
    """``hoodie.archive.beyond.savepoint``."""
    merge_enable: bool = False
    """``hoodie.archive.merge.enable``."""
    merge_files_batch_size: int = 10
    """``hoodie.archive.merge.files.batch.size``: minimum number of small files to merge."""
    merge_small_file_limit_bytes: int = 20 * 1024 * 1024
    """``hoodie.archive.merge.small.file.limit.bytes``."""
    cleaner_policy: CleaningPolicy = CleaningPolicy.KEEP_LATEST_COMMITS
    """``hoodie.cleaner.policy``."""
    cleaner_commits_retained: int = 10
    """``hoodie.cleaner.commits.retained``."""
    cleaner_hours_retained: int = 24
    """``hoodie.cleaner.hours.retained``."""
    compaction_trigger: TriggerStrategy = TriggerStrategy.NUM_COMMITS
    """``hoodie.compact.inline.trigger.strategy`` (MOR: deltacommits a future compaction needs stay active)."""
    max_delta_commits: int = 5
    """``hoodie.compact.inline.max.delta.commits``."""
    lock: LockConfig = field(default_factory=LockConfig)
    """``hoodie.write.lock.*``: the table lock held for the whole run (archive and merge)."""

    @classmethod
    def from_options(
        cls, options: Mapping[str, str] | None = None, *, table_properties: Mapping[str, str] | None = None
    ) -> ArchiveConfig:
        """Parse Hudi keys from ``options``, then ``table_properties`` (``hoodie.properties``), then the defaults.

        Raises:
            InvalidOptionError: A value that does not parse, naming the key and the value.
        """
        merged = {**dict(table_properties or {}), **dict(options or {})}

        def integer(key: HoodieKey) -> int:
            raw = merged.get(key.key, key.default or "")
            try:
                value = int(raw)
            except ValueError as err:
                raise InvalidOptionError(f"Invalid archive option {key.key}={raw!r}: expected an integer") from err
            if value < 0:
                raise InvalidOptionError(f"Invalid archive option {key.key}={raw!r}: expected an integer >= 0")
            return value

        def boolean(key: HoodieKey) -> bool:
            raw = merged.get(key.key, key.default or "false")
            if raw.strip().lower() not in ("true", "false"):
                raise InvalidOptionError(f"Invalid archive option {key.key}={raw!r}: expected true or false")
            return raw.strip().lower() == "true"

        raw_policy = merged.get(HoodieKey.CLEANER_POLICY.key, HoodieKey.CLEANER_POLICY.default or "")
        try:
            policy = CleaningPolicy(raw_policy.strip().upper())
        except ValueError as err:
            raise InvalidOptionError(
                f"Invalid option {HoodieKey.CLEANER_POLICY.key}={raw_policy!r}: expected one of "
                f"{', '.join(p.value for p in CleaningPolicy)}"
            ) from err
        compaction = CompactionConfig.from_options(merged)
        return cls(
            min_commits=integer(HoodieKey.KEEP_MIN_COMMITS),
            max_commits=integer(HoodieKey.KEEP_MAX_COMMITS),
            archival_batch=integer(HoodieKey.COMMITS_ARCHIVAL_BATCH),
            archive_beyond_savepoint=boolean(HoodieKey.ARCHIVE_BEYOND_SAVEPOINT),
            merge_enable=boolean(HoodieKey.ARCHIVE_MERGE_ENABLE),
            merge_files_batch_size=integer(HoodieKey.ARCHIVE_MERGE_FILES_BATCH_SIZE),
            merge_small_file_limit_bytes=integer(HoodieKey.ARCHIVE_MERGE_SMALL_FILE_LIMIT_BYTES),
            cleaner_policy=policy,
            cleaner_commits_retained=integer(HoodieKey.CLEANER_COMMITS_RETAINED),
            cleaner_hours_retained=integer(HoodieKey.CLEANER_HOURS_RETAINED),
            compaction_trigger=compaction.trigger_strategy,
            max_delta_commits=compaction.max_delta_commits,
            lock=LockConfig.from_options(options),
        )

    def validate(self) -> None:
        """The checks of ``HoodieWriteConfig.Builder.validate`` (0.14/0.15) that concern archival.

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
        if self.min_commits <= self.cleaner_commits_retained:
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
