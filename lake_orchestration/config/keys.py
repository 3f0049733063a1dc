"""Every ``hoodie.*`` key this project reads or writes, with its default, doc and alternative keys.

The only module that spells Hudi key strings; everything else refers to :class:`HoodieKey` members (a lint test,
``tests/test_lint.py``, fails on a ``"hoodie.`` string literal anywhere else). Mirrors hudi-rs ``HudiTableConfig``
and Java's ``ConfigProperty`` (``key``, ``defaultValue``, ``withDocumentation``, ``withAlternatives``);
:mod:`lake_orchestration.config.options` parses the values.
"""

from __future__ import annotations

import enum


class HoodieKey(enum.Enum):
    """A Hudi config key: ``(key, default, doc)``; ``.key`` is the string Hudi uses."""

    # -- hoodie.properties (table config) --------------------------------------------------------------------------
    TABLE_NAME = ("hoodie.table.name", None, "Table name.", ("hoodie.datasource.write.table.name",))
    DATABASE_NAME = ("hoodie.database.name", None, "Database name; part of the checksum input.")
    TABLE_TYPE = (
        "hoodie.table.type",
        "COPY_ON_WRITE",
        "COPY_ON_WRITE or MERGE_ON_READ. Missing: refused when deltacommits or log files show a MERGE_ON_READ table, "
        "else read as COPY_ON_WRITE (Java's default) with a warning.",
    )
    TABLE_VERSION = (
        "hoodie.table.version",
        None,
        "Table format version (6 = Hudi 0.14/0.15). Required: Java reads a missing version as 0 and would upgrade "
        "the table, so a hoodie.properties without it is refused.",
    )
    TIMELINE_LAYOUT_VERSION = ("hoodie.timeline.layout.version", "1", "Timeline layout version (1 for v6).")
    TABLE_CDC_ENABLED = (
        "hoodie.table.cdc.enabled",
        "false",
        "The table keeps a change log (CDC log files written beside each write and compaction). lake_orchestration "
        "does not write CDC files yet, so writes, compaction, log compaction and clean refuse such a table (a service "
        "that changed data without its change log would silently drop changes from CDC queries).",
    )
    TABLE_CDC_SUPPLEMENTAL_LOGGING_MODE = (
        "hoodie.table.cdc.supplemental.logging.mode",
        "DATA_BEFORE_AFTER",
        "Table config (HoodieCDCSupplementalLoggingMode): what a CDC log block holds: op_key_only (op, record key), "
        "data_before (and the before image) or data_before_after (and both images). CDC queries read each "
        "(docs/incremental.md).",
    )
    ARCHIVELOG_FOLDER = ("hoodie.archivelog.folder", "archived", "Archived timeline folder under .hoodie.")
    RECORDKEY_FIELDS = ("hoodie.table.recordkey.fields", None, "Comma-separated record key fields.")
    PARTITION_FIELDS = ("hoodie.table.partition.fields", None, "Comma-separated partition fields; absent = none.")
    PRECOMBINE_FIELD = ("hoodie.table.precombine.field", None, "Ordering (precombine) field.")
    KEYGENERATOR_CLASS = ("hoodie.table.keygenerator.class", None, "Key generator class.")
    HIVE_STYLE_PARTITIONING = (
        "hoodie.datasource.write.hive_style_partitioning",
        "false",
        "Partition paths as field=value.",
    )
    URL_ENCODE_PARTITIONING = (
        "hoodie.datasource.write.partitionpath.urlencode",
        "false",
        "URL-encode partition path values.",
    )
    DROP_PARTITION_COLUMNS = (
        "hoodie.datasource.write.drop.partition.columns",
        "false",
        "Partition columns are not stored in data files.",
    )
    CREATE_SCHEMA = ("hoodie.table.create.schema", None, "Avro schema (without meta fields) at creation.")
    POPULATE_META_FIELDS = ("hoodie.populate.meta.fields", "true", "Whether the _hoodie_* meta columns are written.")
    PAYLOAD_CLASS = (
        "hoodie.compaction.payload.class",
        "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
        "Record payload class: decides how log records merge (commit-time vs event-time ordering).",
        ("hoodie.datasource.write.payload.class",),
    )
    RECORD_MERGER_STRATEGY = (
        "hoodie.compaction.record.merger.strategy",
        "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
        "Record merger strategy id.",
    )
    BASE_FILE_FORMAT = (
        "hoodie.table.base.file.format",
        "PARQUET",
        "Base file format.",
        (),
        ("hoodie.table.ro.file.format",),
    )
    LOG_FILE_FORMAT = (
        "hoodie.table.log.file.format",
        "HOODIE_LOG",
        "Log file format.",
        (),
        ("hoodie.table.rt.file.format",),
    )
    TIMELINE_TIMEZONE = ("hoodie.table.timeline.timezone", "LOCAL", "Timezone of instant times: LOCAL or UTC.")
    BOOTSTRAP_INDEX_CLASS = (
        "hoodie.bootstrap.index.class",
        "org.apache.hudi.common.bootstrap.index.HFileBootstrapIndex",
        "Bootstrap index implementation (table config); HFileBootstrapIndex is the one this project reads and writes.",
    )
    TABLE_CHECKSUM = ("hoodie.table.checksum", None, "CRC32 of '<database>.<table>'.")
    PARTITION_METAFILE_USE_BASE_FORMAT = (
        "hoodie.partition.metafile.use.base.format",
        "false",
        "Partition metadata stored as a base-format file.",
    )
    BOOTSTRAP_BASE_PATH = ("hoodie.bootstrap.base.path", None, "Source path of a bootstrapped table.")
    # -- write options (DataSourceWriteOptions, HoodieWriteConfig) --------------------------------------------------
    WRITE_TABLE_TYPE = (
        "hoodie.datasource.write.table.type",
        "MERGE_ON_READ",
        "Type of a table the write creates: COPY_ON_WRITE or MERGE_ON_READ (this project's default; Java's is "
        "COPY_ON_WRITE).",
        ("hoodie.table.type",),
    )
    RECORDKEY_FIELD = (
        "hoodie.datasource.write.recordkey.field",
        None,
        "Comma-separated record key fields of the written records.",
        ("hoodie.table.recordkey.fields",),
    )
    PARTITIONPATH_FIELD = (
        "hoodie.datasource.write.partitionpath.field",
        None,
        "Comma-separated partition fields of the written records; empty = non-partitioned.",
        ("hoodie.table.partition.fields",),
    )
    WRITE_PRECOMBINE_FIELD = (
        "hoodie.datasource.write.precombine.field",
        None,
        "Ordering (precombine) field of the written records.",
        ("hoodie.table.precombine.field",),
    )
    WRITE_KEYGENERATOR_CLASS = (
        "hoodie.datasource.write.keygenerator.class",
        None,
        "Key generator class, or SIMPLE / COMPLEX / NON_PARTITION.",
        ("hoodie.table.keygenerator.class",),
    )
    COMBINE_BEFORE_INSERT = (
        "hoodie.combine.before.insert",
        "false",
        "Precombine duplicate keys of an insert or bulk_insert too.",
    )
    PARQUET_SMALL_FILE_LIMIT = (
        "hoodie.parquet.small.file.limit",
        str(100 * 1024 * 1024),
        "Base files below this many bytes take new inserts (0 disables small-file filling).",
    )
    PARQUET_MAX_FILE_SIZE = (
        "hoodie.parquet.max.file.size",
        str(120 * 1024 * 1024),
        "Bytes a small base file is filled up to; compaction's write-size estimate of a log-only slice.",
    )
    # -- write / read options ----------------------------------------------------------------------------------------
    PAYLOAD_ORDERING_FIELD = (
        "hoodie.payload.ordering.field",
        None,
        "Ordering field for DefaultHoodieRecordPayload; defaults to the precombine field.",
    )
    LOGFILE_DATA_BLOCK_FORMAT = ("hoodie.logfile.data.block.format", "avro", "Data block format: avro or parquet.")
    PARQUET_COMPRESSION_CODEC = (
        "hoodie.parquet.compression.codec",
        "gzip",
        "Base file codec (gzip, snappy, zstd, ...), at parquet-mr's default level: zlib's 6 for gzip, 3 for zstd.",
    )
    PARQUET_BLOCK_SIZE = (
        "hoodie.parquet.block.size",
        str(120 * 1024 * 1024),
        "Bytes of (compressed) data per row group of a base file, as parquet-mr closes its row groups.",
    )
    PARQUET_PAGE_SIZE = (
        "hoodie.parquet.page.size",
        str(1024 * 1024),
        "Bytes per data page of a base file; also the dictionary page limit (a larger dictionary falls back to "
        "PLAIN), as Hudi sets it.",
    )
    PARQUET_DICTIONARY_ENABLED = (
        "hoodie.parquet.dictionary.enabled",
        "true",
        "Dictionary encoding of base file columns (never for _hoodie_commit_seqno, _hoodie_record_key and a single "
        "record key field: unique by construction, parquet-mr falls back to PLAIN on them).",
    )
    MEMORY_COMPACTION_MAX_SIZE = (
        "hoodie.memory.compaction.max.size",
        str(100 * 1024 * 1024),
        "Bytes of memory for a merged log scan before spilling.",
    )
    METADATA_PARTITIONS = (
        "hoodie.table.metadata.partitions",
        None,
        "Metadata table partitions that are built; non-empty means readers may list files through it.",
    )
    METADATA_PARTITIONS_INFLIGHT = (
        "hoodie.table.metadata.partitions.inflight",
        None,
        "Metadata table partitions being built.",
    )
    METADATA_ENABLE = (
        "hoodie.metadata.enable",
        "true",
        "Keep the table's metadata table (files partition): every action updates it; false deletes it first, as a "
        "Java writer with that setting does. Given explicitly as true to a write, a table without one gets one "
        "(initialised at Java's instant, the latest one + 010, unless an instant is pending; `lake-orch metadata init` "
        "does the same).",
    )
    METADATA_COMPACT_MAX_DELTA_COMMITS = (
        "hoodie.metadata.compact.max.delta.commits",
        "10",
        "Metadata-table deltacommits after which the metadata table is compacted (read from hoodie.properties).",
    )
    HEARTBEAT_INTERVAL_MS = ("hoodie.client.heartbeat.interval_in_ms", "60000", "Writer heartbeat interval.")
    HEARTBEAT_TOLERABLE_MISSES = ("hoodie.client.heartbeat.tolerable.misses", "2", "Missed heartbeats tolerated.")
    WRITE_CONCURRENCY_MODE = (
        "hoodie.write.concurrency.mode",
        "SINGLE_WRITER",
        "SINGLE_WRITER or OPTIMISTIC_CONCURRENCY_CONTROL (the mode of the table's Java writers). lake_orchestration "
        "always takes the table lock and checks conflicts at commit; with OPTIMISTIC_CONCURRENCY_CONTROL compaction "
        "scheduling skips Java's single-writer check (no pending write before the plan's instant), as Java does: a "
        "writer whose file groups a later plan covers fails its own conflict check instead.",
    )
    FAILED_WRITES_CLEANER_POLICY = (
        "hoodie.cleaner.policy.failed.writes",
        "EAGER",
        "How Java writers roll back failed writes (EAGER: the next write rolls back every pending write; LAZY: "
        "only writes whose heartbeat expired). `lake-orch rollback --stale` follows heartbeats either way; LAZY, "
        "like multi-writer mode, lets compaction be scheduled beside pending writes (Java's rule).",
    )
    # -- incremental query (DataSourceReadOptions, HoodieCommonConfig) ----------------------------------------------
    QUERY_TYPE = (
        "hoodie.datasource.query.type",
        "snapshot",
        "snapshot or incremental (read_optimized is not offered by `lake-orch read`). incremental: the records whose "
        "_hoodie_commit_time is in (begin, end], each at its latest version in the range (docs/incremental.md).",
    )
    QUERY_INCREMENTAL_FORMAT = (
        "hoodie.datasource.query.incremental.format",
        "latest_state",
        "Incremental query: latest_state (the records a range of commits wrote, at their latest version) or cdc "
        "(the change records op, ts_ms, before, after of a CDC table, as hudi_table_changes(..., 'cdc', ...)).",
    )
    READ_BEGIN_INSTANTTIME = (
        "hoodie.datasource.read.begin.instanttime",
        None,
        "Incremental query: exclusive lower bound, an instant time (need not be on the timeline; 0 = from the start). "
        "With hoodie.read.timeline.holes.resolution.policy=USE_TRANSITION_TIME it bounds completion times.",
    )
    READ_END_INSTANTTIME = (
        "hoodie.datasource.read.end.instanttime",
        None,
        "Incremental query: inclusive upper bound (default: the latest completed commit).",
    )
    READ_INCR_FALLBACK_FULLTABLESCAN = (
        "hoodie.datasource.read.incr.fallback.fulltablescan.enable",
        "false",
        "Incremental query: when the begin instant precedes the active timeline or a file of the range was cleaned, "
        "read the latest snapshot filtered by _hoodie_commit_time instead of failing.",
    )
    READ_TIMELINE_HOLES_RESOLUTION_POLICY = (
        "hoodie.read.timeline.holes.resolution.policy",
        "FAIL",
        "Incremental query with a hollow commit (a pending commit older than a completed one): FAIL, BLOCK (read "
        "only up to the hollow commit) or USE_TRANSITION_TIME (range on completion times).",
        (),
        ("hoodie.datasource.read.handle.hollow.commit",),
    )
    # -- bootstrap (HoodieBootstrapConfig) ---------------------------------------------------------------------------
    BOOTSTRAP_MODE_SELECTOR = (
        "hoodie.bootstrap.mode.selector",
        "org.apache.hudi.client.bootstrap.selector.MetadataOnlyBootstrapModeSelector",
        "Chooses the bootstrap mode of each source partition: MetadataOnlyBootstrapModeSelector, "
        "FullRecordBootstrapModeSelector or BootstrapRegexModeSelector (class or short name).",
    )
    BOOTSTRAP_MODE_SELECTOR_REGEX = (
        "hoodie.bootstrap.mode.selector.regex",
        ".*",
        "BootstrapRegexModeSelector: source partition paths matching this regex (whole path) get the regex mode.",
    )
    BOOTSTRAP_MODE_SELECTOR_REGEX_MODE = (
        "hoodie.bootstrap.mode.selector.regex.mode",
        "METADATA_ONLY",
        "BootstrapRegexModeSelector: mode of matching partitions (METADATA_ONLY or FULL_RECORD); the others get the "
        "other mode.",
    )
    # -- table lock (HoodieLockConfig, FileSystemBasedLockProvider) -------------------------------------------------
    LOCK_PROVIDER = (
        "hoodie.write.lock.provider",
        "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
        "Table lock: FileSystemBasedLockProvider (the lock file, shared with Java writers using that provider), "
        "DynamoDBBasedLockProvider (hudi-aws's DynamoDB lock item, needs boto3) or InProcessLockProvider (threads of "
        "one process only).",
    )
    LOCK_FILESYSTEM_PATH = (
        "hoodie.write.lock.filesystem.path",
        None,
        "Directory of the lock file 'lock'; default: the table's .hoodie folder, as in Java.",
    )
    LOCK_FILESYSTEM_EXPIRE = (
        "hoodie.write.lock.filesystem.expire",
        "0",
        "Minutes after which a lock file written by Java (no heartbeat) is stale; 0 = never, as in Java.",
    )
    LOCK_DYNAMODB_TABLE = (
        "hoodie.write.lock.dynamodb.table",
        "hudi_locks",
        "DynamoDBBasedLockProvider: the DynamoDB table holding one lock item per Hudi table (hash key 'key').",
    )
    LOCK_DYNAMODB_PARTITION_KEY = (
        "hoodie.write.lock.dynamodb.partition_key",
        None,
        "DynamoDBBasedLockProvider: this Hudi table's lock item; default the Hudi table name, as in Java.",
    )
    LOCK_DYNAMODB_REGION = (
        "hoodie.write.lock.dynamodb.region",
        None,
        "DynamoDBBasedLockProvider: the AWS region; default AWS_REGION, else us-east-1.",
    )
    LOCK_DYNAMODB_ENDPOINT_URL = (
        "hoodie.write.lock.dynamodb.endpoint_url",
        None,
        "DynamoDBBasedLockProvider: a DynamoDB-compatible endpoint (local development, tests).",
    )
    LOCK_DYNAMODB_BILLING_MODE = (
        "hoodie.write.lock.dynamodb.billing_mode",
        "PAY_PER_REQUEST",
        "DynamoDBBasedLockProvider: billing mode of a lock table created on first use (PAY_PER_REQUEST or "
        "PROVISIONED).",
    )
    LOCK_WAIT_TIME_MS = (
        "hoodie.write.lock.wait_time_ms",
        "60000",
        "How long to wait for a held table lock before failing with TableLockedError.",
    )
    LOCK_RETRY_WAIT_TIME_MS = (
        "hoodie.write.lock.wait_time_ms_between_retry",
        "1000",
        "Pause between two attempts to take a held table lock.",
    )
    LOCK_HEARTBEAT_INTERVAL_MS = (
        "hoodie.write.lock.heartbeat_interval_ms",
        "10000",
        "How often the holder refreshes the lock file; the lock is stale after this times "
        "hoodie.client.heartbeat.tolerable.misses without a refresh.",
    )
    # -- compaction (HoodieCompactionConfig) ---------------------------------------------------------------------------
    COMPACT_TRIGGER_STRATEGY = (
        "hoodie.compact.inline.trigger.strategy",
        "NUM_COMMITS",
        "When a compaction is scheduled: NUM_COMMITS, NUM_COMMITS_AFTER_LAST_REQUEST, TIME_ELAPSED, NUM_AND_TIME or "
        "NUM_OR_TIME.",
    )
    COMPACT_MAX_DELTA_COMMITS = (
        "hoodie.compact.inline.max.delta.commits",
        "5",
        "Delta commits since the last compaction that trigger a new one (NUM_* strategies).",
    )
    COMPACT_MAX_DELTA_SECONDS = (
        "hoodie.compact.inline.max.delta.seconds",
        "3600",
        "Seconds since the last compaction that trigger a new one (*TIME* strategies).",
    )
    COMPACTION_STRATEGY = (
        "hoodie.compaction.strategy",
        "org.apache.hudi.table.action.compact.strategy.LogFileSizeBasedCompactionStrategy",
        "Which file slices a plan compacts (class or short name: LogFileSizeBasedCompactionStrategy, "
        "LogFileNumBasedCompactionStrategy, BoundedIOCompactionStrategy, DayBasedCompactionStrategy, "
        "BoundedPartitionAwareCompactionStrategy, UnBoundedCompactionStrategy).",
    )
    COMPACTION_TARGET_IO = (
        "hoodie.compaction.target.io",
        str(500 * 1024),
        "MB of IO per plan (BoundedIO-based strategies).",
    )
    COMPACTION_LOGFILE_SIZE_THRESHOLD = (
        "hoodie.compaction.logfile.size.threshold",
        "0",
        "Bytes of log files a slice needs to be compacted (LogFileSizeBasedCompactionStrategy).",
    )
    COMPACTION_LOGFILE_NUM_THRESHOLD = (
        "hoodie.compaction.logfile.num.threshold",
        "0",
        "Log files a slice needs to be compacted (LogFileNumBasedCompactionStrategy).",
    )
    COMPACTION_DAYBASED_TARGET_PARTITIONS = (
        "hoodie.compaction.daybased.target.partitions",
        "10",
        "Latest partitions compacted per plan (DayBasedCompactionStrategy).",
    )
    LOG_COMPACTION_BLOCKS_THRESHOLD = (
        "hoodie.log.compaction.blocks.threshold",
        "5",
        "Log blocks a file slice needs before log compaction merges them.",
    )
    # -- clustering (HoodieClusteringConfig) ---------------------------------------------------------------------------
    CLUSTERING_INLINE = ("hoodie.clustering.inline", "false", "Schedule (and run) clustering after each write.")
    CLUSTERING_INLINE_MAX_COMMITS = (
        "hoodie.clustering.inline.max.commits",
        "4",
        "Completed commits since the last clustering before an inline clustering is scheduled.",
    )
    CLUSTERING_ASYNC_ENABLED = ("hoodie.clustering.async.enabled", "false", "Schedule clustering asynchronously.")
    CLUSTERING_SCHEDULE_INLINE = (
        "hoodie.clustering.schedule.inline",
        "false",
        "Schedule clustering inline with the writes (execution left to an async job).",
    )
    CLUSTERING_ASYNC_MAX_COMMITS = (
        "hoodie.clustering.async.max.commits",
        "4",
        "Completed commits since the last clustering before an async clustering is scheduled.",
    )
    CLUSTERING_PLAN_STRATEGY_CLASS = (
        "hoodie.clustering.plan.strategy.class",
        "org.apache.hudi.client.clustering.plan.strategy.SparkSizeBasedClusteringPlanStrategy",
        "Which file slices a clustering plan groups (SparkSizeBasedClusteringPlanStrategy and its deprecated "
        "SparkRecentDays/SparkSelectedPartitions variants).",
    )
    CLUSTERING_EXECUTION_STRATEGY_CLASS = (
        "hoodie.clustering.execution.strategy.class",
        "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
        "How a clustering plan is executed: sort by the sort columns, write files of at most target.file.max.bytes.",
    )
    CLUSTERING_SMALL_FILE_LIMIT = (
        "hoodie.clustering.plan.strategy.small.file.limit",
        str(300 * 1024 * 1024),
        "Base files smaller than this (bytes) are clustered.",
    )
    CLUSTERING_MAX_BYTES_PER_GROUP = (
        "hoodie.clustering.plan.strategy.max.bytes.per.group",
        str(2 * 1024 * 1024 * 1024),
        "Bytes of input per clustering group.",
    )
    CLUSTERING_MAX_NUM_GROUPS = (
        "hoodie.clustering.plan.strategy.max.num.groups",
        "30",
        "Clustering groups per plan.",
    )
    CLUSTERING_TARGET_FILE_MAX_BYTES = (
        "hoodie.clustering.plan.strategy.target.file.max.bytes",
        str(1024 * 1024 * 1024),
        "Size of the files clustering writes (bytes).",
    )
    CLUSTERING_SORT_COLUMNS = (
        "hoodie.clustering.plan.strategy.sort.columns",
        "",
        "Comma-separated columns clustering sorts the records by (none: the records keep their order).",
    )
    CLUSTERING_SINGLE_GROUP_ENABLED = (
        "hoodie.clustering.plan.strategy.single.group.clustering.enabled",
        "true",
        "Also cluster a partition whose eligible file slices form a single group of one slice.",
    )
    CLUSTERING_PARTITION_FILTER_MODE = (
        "hoodie.clustering.plan.partition.filter.mode",
        "NONE",
        "Which partitions a plan considers: NONE, RECENT_DAYS, SELECTED_PARTITIONS or DAY_ROLLING.",
    )
    CLUSTERING_DAYBASED_LOOKBACK_PARTITIONS = (
        "hoodie.clustering.plan.strategy.daybased.lookback.partitions",
        "2",
        "Latest partitions considered (RECENT_DAYS).",
    )
    CLUSTERING_DAYBASED_SKIP_FROM_LATEST = (
        "hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions",
        "0",
        "Latest partitions skipped (RECENT_DAYS).",
    )
    CLUSTERING_BEGIN_PARTITION = (
        "hoodie.clustering.plan.strategy.cluster.begin.partition",
        None,
        "First partition considered, inclusive (SELECTED_PARTITIONS).",
    )
    CLUSTERING_END_PARTITION = (
        "hoodie.clustering.plan.strategy.cluster.end.partition",
        None,
        "Last partition considered, inclusive (SELECTED_PARTITIONS).",
    )
    CLUSTERING_PARTITION_REGEX = (
        "hoodie.clustering.plan.strategy.partition.regex.pattern",
        None,
        "Only partitions whose whole path matches this regular expression are considered.",
    )
    CLUSTERING_PARTITION_SELECTED = (
        "hoodie.clustering.plan.strategy.partition.selected",
        None,
        "Comma-separated partitions to consider (instead of every partition).",
    )
    LAYOUT_OPTIMIZE_STRATEGY = (
        "hoodie.layout.optimize.strategy",
        "linear",
        "Order of the records clustering writes by the sort columns: linear, z-order or hilbert.",
    )
    LAYOUT_CURVE_BUILD_METHOD = (
        "hoodie.layout.optimize.curve.build.method",
        "direct",
        "How z-order and hilbert keys are built: direct (sample, Java's RangeSampleSort, is refused: not "
        "reproducible).",
    )
    CLUSTERING_UPDATES_STRATEGY = (
        "hoodie.clustering.updates.strategy",
        "org.apache.hudi.client.clustering.update.strategy.SparkRejectUpdateStrategy",
        "What a write does to file groups under a pending clustering plan: SparkRejectUpdateStrategy refuses the "
        "upsert or delete (Java's default), SparkAllowUpdateStrategy lets it through.",
    )
    CLUSTERING_ROLLBACK_PENDING_ON_CONFLICT = (
        "hoodie.clustering.rollback.pending.replacecommit.on.conflict",
        "false",
        "With SparkAllowUpdateStrategy: roll the pending clustering plan back before writing into its file groups.",
    )
    # -- archival (HoodieArchivalConfig) -------------------------------------------------------------------------------
    KEEP_MIN_COMMITS = (
        "hoodie.keep.min.commits",
        "20",
        "Archival keeps at least this many completed commits (and cleans, rollbacks) on the active timeline.",
    )
    KEEP_MAX_COMMITS = (
        "hoodie.keep.max.commits",
        "30",
        "Archival starts once more than this many completed commits (or cleans, rollbacks) are active.",
    )
    COMMITS_ARCHIVAL_BATCH = (
        "hoodie.commits.archival.batch",
        "10",
        "Archived instants per Avro data block of an archive file.",
    )
    ARCHIVE_BEYOND_SAVEPOINT = (
        "hoodie.archive.beyond.savepoint",
        "false",
        "Archive commits after the first savepoint too (the savepointed commits themselves are kept).",
    )
    ARCHIVE_MERGE_ENABLE = (
        "hoodie.archive.merge.enable",
        "false",
        "Merge small archive files into one after archiving.",
    )
    ARCHIVE_MERGE_FILES_BATCH_SIZE = (
        "hoodie.archive.merge.files.batch.size",
        "10",
        "Merge only when at least this many small archive files are candidates.",
    )
    ARCHIVE_MERGE_SMALL_FILE_LIMIT_BYTES = (
        "hoodie.archive.merge.small.file.limit.bytes",
        str(20 * 1024 * 1024),
        "Archive files up to this size are merge candidates.",
    )
    CLEANER_POLICY = (
        "hoodie.cleaner.policy",
        "KEEP_LATEST_COMMITS",
        "KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS or KEEP_LATEST_BY_HOURS.",
    )
    CLEANER_COMMITS_RETAINED = (
        "hoodie.cleaner.commits.retained",
        "10",
        "Completed commits whose file slices the cleaner keeps (KEEP_LATEST_COMMITS).",
    )
    CLEANER_HOURS_RETAINED = ("hoodie.cleaner.hours.retained", "24", "Hours of commits kept (KEEP_LATEST_BY_HOURS).")
    CLEANER_FILEVERSIONS_RETAINED = (
        "hoodie.cleaner.fileversions.retained",
        "3",
        "File slices kept per file group (KEEP_LATEST_FILE_VERSIONS).",
    )
    CLEANER_INCREMENTAL_MODE = (
        "hoodie.cleaner.incremental.mode",
        "true",
        "Scan only partitions written since the previous clean's earliest commit to retain.",
    )
    CLEAN_TRIGGER_STRATEGY = ("hoodie.clean.trigger.strategy", "NUM_COMMITS", "When a clean is scheduled.")
    CLEAN_MAX_COMMITS = (
        "hoodie.clean.max.commits",
        "1",
        "Completed commits since the last clean needed to schedule a new one.",
    )
    CLEANER_PARALLELISM = ("hoodie.cleaner.parallelism", "200", "At most this many parallel delete tasks.")

    def __init__(
        self,
        key: str,
        default: str | None,
        doc: str,
        aliases: tuple[str, ...] = (),
        deprecated: tuple[str, ...] = (),
    ) -> None:
        self.key = key
        """The key string Hudi uses."""
        self.default = default
        """Hudi's default as its string form; None = no default."""
        self.doc = doc
        """What the key means here."""
        self.aliases = aliases
        """Alternative keys read, in order, when ``key`` has no value (a write key's table-config twin)."""
        self.deprecated = deprecated
        """Older names of the key (Java's ``withAlternatives``): read last, with a logged warning."""

    @property
    def lookup_keys(self) -> tuple[str, ...]:
        """Every key string a value is read from, in precedence order."""
        return (self.key, *self.aliases, *self.deprecated)

    @classmethod
    def by_key(cls, key: str) -> HoodieKey | None:
        """The member for a key string, or None."""
        return _BY_KEY.get(key)


_BY_KEY = {m.key: m for m in HoodieKey}

UNMODELLED_KEYS: dict[str, str] = {
    # Java writer and table-service switches: a Java writer's config may carry them; nothing here reads them
    "hoodie.clean.automatic": "Java's inline clean after each write; lake_orchestration cleans only when asked "
    "(`lake-orch clean`, the clean job).",
    "hoodie.archive.automatic": "Java's inline archive after each write; lake_orchestration archives only when asked "
    "(`lake-orch archive`, the archive job).",
    "hoodie.compact.inline": "Java's inline compaction after each delta commit; lake_orchestration schedules and runs "
    "compaction as its own service.",
    "hoodie.datasource.compaction.async.enable": "Java's async compaction of a Spark streaming writer.",
    "hoodie.compaction.preserve.commit.metadata": "Compaction always preserves the commit time and sequence number "
    "(Java's default, true).",
    "hoodie.cleaner.delete.bootstrap.base.file": "Clean never deletes bootstrap source files (Java's default, false).",
    "hoodie.write.lock.num_retries": "Java's lock provider retries; ours waits hoodie.write.lock.wait_time_ms.",
    "hoodie.write.lock.client.num_retries": "Java's lock manager retries; ours waits hoodie.write.lock.wait_time_ms.",
    "hoodie.write.lock.client.wait_time_ms_between_retry": "Java's lock manager pause; ours is "
    "hoodie.write.lock.wait_time_ms_between_retry.",
    # table config (HoodieTableConfig) that a write creating the table copies into hoodie.properties as given
    "hoodie.table.initial.version": "Table config: stored in hoodie.properties by a write that creates the table.",
    "hoodie.table.secondary.indexes.metadata": "Table config: stored by a write that creates the table.",
    "hoodie.bootstrap.index.enable": "Table config: stored by a write that creates the table.",
    "hoodie.allow.operation.metadata.field": "Table config (the _hoodie_operation column): stored by a write that "
    "creates the table.",
}
"""Real Hudi keys this project accepts in ``--option`` and the Dagster ``*_options`` maps without reading them,
each with what happens instead: a user's Java writer config may carry them. Any other ``hoodie.*`` key that is not
a :class:`HoodieKey` is refused as unknown (a typo would otherwise silently keep Hudi's default); a key neither
list knows passes only through ``--option-passthrough`` or a table's ``passthrough_keys``."""


def is_known_key(key: str) -> bool:
    """True for a key string a :class:`HoodieKey` reads (its key, an alias or a deprecated name) or one of
    :data:`UNMODELLED_KEYS`."""
    return key in _KNOWN or key in UNMODELLED_KEYS


def known_key_strings() -> list[str]:
    """Every key string :func:`is_known_key` accepts, sorted (the candidates of a "did you mean" hint)."""
    return sorted(_KNOWN | set(UNMODELLED_KEYS))


_KNOWN = frozenset(k for m in HoodieKey for k in m.lookup_keys)

HOODIE_PREFIX = "hoodie."
"""Prefix of every Hudi key."""
TABLE_CONFIG_PREFIX = "hoodie.table."
"""Prefix of the table-config keys a table creation copies into ``hoodie.properties``."""
PROPERTIES_FILE = "hoodie.properties"
"""Name of the table config file under ``.hoodie/``."""
PROPERTIES_BACKUP_FILE = "hoodie.properties.backup"
"""Name of its backup, written while the table config is updated."""

PAYLOAD_OVERWRITE_WITH_LATEST = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
PAYLOAD_DEFAULT = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
