"""Write options: the typed settings of one write, read from Hudi's datasource and table keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.config.options import check_minimums, option, parse_options
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table.lock import LockConfig


@dataclass(frozen=True, kw_only=True)
class WriteOptions:
    """Table creation and write options (Hudi's key names in the field docs; see :meth:`from_hudi_options`).

    A field read from a datasource key falls back to its table-config twin (``hoodie.table.*``) when the datasource
    key has no value, as the registry's aliases say (``docs/reference/config-keys.md``).
    """

    table_name: str | None = option(HoodieKey.TABLE_NAME, None)
    """``hoodie.table.name`` / ``hoodie.datasource.write.table.name`` (required to create a table)."""
    table_type: TableType = option(HoodieKey.WRITE_TABLE_TYPE, TableType.MERGE_ON_READ)
    """``hoodie.datasource.write.table.type`` / ``hoodie.table.type``."""
    record_key_fields: tuple[str, ...] = option(HoodieKey.RECORDKEY_FIELD, ())
    """``hoodie.datasource.write.recordkey.field``."""
    partition_fields: tuple[str, ...] = option(HoodieKey.PARTITIONPATH_FIELD, ())
    """``hoodie.datasource.write.partitionpath.field``; empty = non-partitioned."""
    precombine_field: str | None = option(HoodieKey.WRITE_PRECOMBINE_FIELD, None)
    """``hoodie.datasource.write.precombine.field``."""
    key_generator: str | None = option(HoodieKey.WRITE_KEYGENERATOR_CLASS, None)
    """``hoodie.datasource.write.keygenerator.class`` or SIMPLE/COMPLEX/NON_PARTITION."""
    hive_style_partitioning: bool = option(HoodieKey.HIVE_STYLE_PARTITIONING, False)
    """``hoodie.datasource.write.hive_style_partitioning``."""
    payload_class: str | None = option(HoodieKey.PAYLOAD_CLASS, None)
    """``hoodie.compaction.payload.class`` (OverwriteWithLatestAvroPayload or DefaultHoodieRecordPayload)."""
    combine_before_insert: bool = option(HoodieKey.COMBINE_BEFORE_INSERT, False)
    """``hoodie.combine.before.insert``: precombine duplicates for insert and bulk_insert too."""
    max_rows_per_file: int = 1_000_000
    """Rows per new base file (new file groups are split by rows; small-file filling uses bytes)."""
    small_file_limit: int = option(HoodieKey.PARQUET_SMALL_FILE_LIMIT, 104_857_600, minimum=0)
    """``hoodie.parquet.small.file.limit``: base files below it take inserts (0 disables)."""
    max_file_size: int = option(HoodieKey.PARQUET_MAX_FILE_SIZE, 125_829_120, minimum=1)
    """``hoodie.parquet.max.file.size``: the size small files are filled up to."""
    compression: str = option(HoodieKey.PARQUET_COMPRESSION_CODEC, "gzip", parse=str.lower)
    """``hoodie.parquet.compression.codec``."""
    heartbeat_interval_ms: int = option(HoodieKey.HEARTBEAT_INTERVAL_MS, 60_000, minimum=1)
    """``hoodie.client.heartbeat.interval_in_ms`` (>= 1: 0 would make every live write look stale to a rollback)."""
    lock: LockConfig = field(default_factory=LockConfig)
    """``hoodie.write.lock.*``: the table lock held while the instant is created and while it is committed."""
    options: Mapping[str, str] = field(default_factory=dict)
    """Raw ``hoodie.*`` options: ``hoodie.table.*`` ones become table properties at creation. To take write
    settings (small file limit, codec ...) from Hudi keys, build the options with :meth:`from_hudi_options`."""

    def __post_init__(self) -> None:
        check_minimums(self, service="write")

    @classmethod
    def from_hudi_options(cls, options: Mapping[str, str], **overrides: Any) -> WriteOptions:
        """Build from Hudi's datasource/table keys (``hoodie.datasource.write.recordkey.field`` ...); ``overrides``
        (typed values) win.

        Raises:
            InvalidOptionError: a value that does not parse or is out of range, naming the key and the value.
        """
        o = dict(options)
        overrides.setdefault("options", o)
        overrides.setdefault("lock", LockConfig.from_options(o, service="write"))
        return parse_options(cls, o, service="write", **overrides)
