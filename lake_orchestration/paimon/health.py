"""The compaction health of a Paimon primary-key table: per bucket its LSM levels, sorted runs, level-0 files and the
size amplification a compaction is pending on (what ``lake-orch paimon compaction show`` prints and the Dagster
table asset records).

Size amplification is Java ``UniversalCompaction.pickForSizeAmp``'s measure: the bytes of every sorted run but the
oldest, in percent of the oldest run's bytes (0 for a bucket of one run). A writer stops to wait for compaction when
a bucket has more sorted runs than ``num-sorted-run.stop-trigger`` (Java ``MergeTreeCompactManager
.shouldWaitForLatestCompaction``); universal compaction triggers at ``num-sorted-run.compaction-trigger`` runs or
when the amplification exceeds ``compaction.max-size-amplification-percent``.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from lake_orchestration.paimon.model.levels import Bucket
from lake_orchestration.paimon.model.options import CoreOptions
from lake_orchestration.paimon.model.snapshot import CommitKind
from lake_orchestration.paimon.table import PaimonTable


def size_amplification_percent(bucket: Bucket) -> float:
    """Bytes of the newer sorted runs in percent of the oldest run's bytes (Java ``pickForSizeAmp``); 0.0 with one
    run or none, and when the oldest run is empty."""
    runs = bucket.levels.level_sorted_runs()
    if len(runs) < 2:
        return 0.0
    oldest = runs[-1].run.total_size
    newer = sum(r.run.total_size for r in runs[:-1])
    return round(newer * 100.0 / oldest, 1) if oldest > 0 else 0.0


@dataclass(frozen=True, kw_only=True)
class BucketHealth:
    """One (partition, bucket) of the latest snapshot."""

    partition: dict[str, str | None]
    """Partition values by partition key, as strings (empty when unpartitioned)."""
    bucket: int
    """Bucket number."""
    levels: tuple[tuple[int, int, int], ...]
    """``(level, files, bytes)`` of every non-empty level, level 0 first."""
    sorted_runs: int
    """Sorted runs: each level-0 file plus each non-empty level above."""
    level0_files: int
    """Files at level 0."""
    files: int
    """Live files."""
    bytes: int
    """Bytes in the live files."""
    rows: int
    """Rows in the live files (retractions and not-yet-merged versions included)."""
    size_amplification_percent: float
    """See :func:`size_amplification_percent`."""

    @property
    def partition_path(self) -> str:
        """``k1=v1/k2=v2`` (empty when unpartitioned)."""
        return "/".join(f"{k}={v}" for k, v in self.partition.items())

    def to_json_obj(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "partition": self.partition,
            "bucket": self.bucket,
            "sorted_runs": self.sorted_runs,
            "level0_files": self.level0_files,
            "files": self.files,
            "bytes": self.bytes,
            "rows": self.rows,
            "size_amplification_percent": self.size_amplification_percent,
            "levels": [{"level": lv, "files": n, "bytes": b} for lv, n, b in self.levels],
        }


@dataclass(frozen=True, kw_only=True)
class PaimonTableHealth:
    """The latest snapshot of a table, bucket by bucket, with the compaction settings it is judged by."""

    table_uri: str
    """The table."""
    snapshot_id: int | None
    """The latest snapshot (None: no commit yet)."""
    commit_kind: str | None
    """Its ``commitKind`` (``APPEND``, ``COMPACT`` ...)."""
    time_millis: int | None
    """Its commit time, epoch milliseconds."""
    total_record_count: int | None
    """Its ``totalRecordCount``."""
    snapshots_since_compaction: int
    """APPEND and OVERWRITE snapshots after the latest COMPACT one, among the existing snapshots."""
    compaction_trigger: int
    """``num-sorted-run.compaction-trigger``."""
    stop_trigger: int
    """``num-sorted-run.stop-trigger`` (writers wait for compaction above it)."""
    max_size_amplification_percent: int
    """``compaction.max-size-amplification-percent``."""
    buckets: tuple[BucketHealth, ...]
    """Every bucket with live files, in (partition, bucket) order."""

    @property
    def max_sorted_runs(self) -> int:
        """The most sorted runs of any bucket (0 without buckets)."""
        return max((b.sorted_runs for b in self.buckets), default=0)

    @property
    def level0_files(self) -> int:
        """Level-0 files of all buckets."""
        return sum(b.level0_files for b in self.buckets)

    @property
    def max_level0_files(self) -> int:
        """The most level-0 files of any bucket."""
        return max((b.level0_files for b in self.buckets), default=0)

    @property
    def pending_size_amplification_percent(self) -> float:
        """The highest size amplification of any bucket."""
        return max((b.size_amplification_percent for b in self.buckets), default=0.0)

    @property
    def buckets_over_stop_trigger(self) -> tuple[BucketHealth, ...]:
        """Buckets with more sorted runs than the stop trigger."""
        return tuple(b for b in self.buckets if b.sorted_runs > self.stop_trigger)

    @property
    def snapshot_datetime(self) -> datetime.datetime | None:
        """The latest snapshot's commit time (UTC)."""
        if self.time_millis is None:
            return None
        return datetime.datetime.fromtimestamp(self.time_millis / 1000, tz=datetime.timezone.utc)

    def to_json_obj(self) -> dict[str, Any]:
        """A JSON-ready summary (what ``paimon compaction show --json`` prints)."""
        return {
            "table": self.table_uri,
            "snapshot_id": self.snapshot_id,
            "commit_kind": self.commit_kind,
            "time_millis": self.time_millis,
            "total_record_count": self.total_record_count,
            "snapshots_since_compaction": self.snapshots_since_compaction,
            "compaction_trigger": self.compaction_trigger,
            "stop_trigger": self.stop_trigger,
            "max_size_amplification_percent": self.max_size_amplification_percent,
            "bucket_count": len(self.buckets),
            "files": sum(b.files for b in self.buckets),
            "bytes": sum(b.bytes for b in self.buckets),
            "level0_files": self.level0_files,
            "max_level0_files": self.max_level0_files,
            "max_sorted_runs": self.max_sorted_runs,
            "pending_size_amplification_percent": self.pending_size_amplification_percent,
            "buckets_over_stop_trigger": len(self.buckets_over_stop_trigger),
            "buckets": [b.to_json_obj() for b in self.buckets],
        }


def _bucket_health(bucket: Bucket, partition_keys: list[str], partition_types: Any) -> BucketHealth:
    values = bucket.partition.to_values(partition_types) if partition_keys else []
    levels = [(0, len(bucket.levels.level0), sum(f.file_size for f in bucket.levels.level0))]
    levels += [(i + 1, len(run.files), run.total_size) for i, run in enumerate(bucket.levels.runs) if run.files]
    files = bucket.files
    return BucketHealth(
        partition={k: None if v is None else str(v) for k, v in zip(partition_keys, values, strict=True)},
        bucket=bucket.bucket,
        levels=tuple(lv for lv in levels if lv[1]),
        sorted_runs=bucket.levels.number_of_sorted_runs,
        level0_files=len(bucket.levels.level0),
        files=len(files),
        bytes=sum(f.file_size for f in files),
        rows=sum(f.row_count for f in files),
        size_amplification_percent=size_amplification_percent(bucket),
    )


def _snapshots_since_compaction(table: PaimonTable, latest_id: int) -> int:
    earliest = table.earliest_snapshot_id() or latest_id
    count = 0
    for snapshot_id in range(latest_id, earliest - 1, -1):
        kind = table.snapshot(snapshot_id).commit_kind
        if kind is CommitKind.COMPACT:
            break
        if kind in (CommitKind.APPEND, CommitKind.OVERWRITE):
            count += 1
    return count


def paimon_table_health(table: PaimonTable) -> PaimonTableHealth:
    """Read the latest snapshot of ``table`` once and judge each bucket.

    Raises:
        PaimonTableNotFoundError: No schema under the table.
        CorruptFileError: Manifests that do not merge, or overlapping files in one level.
    """
    schema = table.schema()
    options = CoreOptions(schema.options)
    snapshot = table.latest_snapshot()
    buckets: tuple[BucketHealth, ...] = ()
    if snapshot is not None:
        keys = list(schema.partition_keys)
        buckets = tuple(_bucket_health(b, keys, schema.partition_types) for b in table.buckets(snapshot, schema=schema))
    return PaimonTableHealth(
        table_uri=table.uri,
        snapshot_id=None if snapshot is None else snapshot.id,
        commit_kind=None if snapshot is None else snapshot.commit_kind.value,
        time_millis=None if snapshot is None else snapshot.time_millis,
        total_record_count=None if snapshot is None else snapshot.total_record_count,
        snapshots_since_compaction=0 if snapshot is None else _snapshots_since_compaction(table, snapshot.id),
        compaction_trigger=options.num_sorted_runs_compaction_trigger,
        stop_trigger=options.num_sorted_runs_stop_trigger,
        max_size_amplification_percent=options.max_size_amplification_percent,
        buckets=buckets,
    )
