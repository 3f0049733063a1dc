"""The whole exception hierarchy of lake_orchestration.

Every error keeps the facts it is about as attributes (``path``, ``value``, ``instant`` ...) and builds its
message from them: what was found, where, and what was expected.
"""

from __future__ import annotations


class LakeOrchestrationError(Exception):
    """Root of every error raised by lake_orchestration."""


class StorageError(LakeOrchestrationError):
    """A storage operation failed (listing, reading, writing, deleting)."""

    def __init__(self, message: str, *, path: str) -> None:
        self.path = path
        super().__init__(f"{message}: {path}")


class FileAlreadyExistsError(StorageError):
    """An atomic create-if-absent found the file already present.

    ``ambiguous``: the refusal answered a *retried* request (the object store client sent the conditional PUT again
    after a lost answer), so the object may be this attempt's own first PUT (see :meth:`Storage.create_if_absent`).
    """

    def __init__(self, path: str, *, ambiguous: bool = False) -> None:
        self.ambiguous = ambiguous
        super().__init__("File already exists (create-if-absent refused to overwrite it)", path=path)


class AmbiguousWriteError(StorageError):
    """A write request failed in a way that leaves it unknown whether the store applied it (connection reset, timeout,
    5xx past the client's retries): unlike a refused request (permission, bad request), the object may exist."""


class ConditionalWriteUnsupportedError(StorageError):
    """The object store cannot create an object only if it is absent (no conditional writes), so timeline files and
    the table lock would not be created atomically."""

    def __init__(self, path: str, reason: str) -> None:
        self.reason = reason
        super().__init__(
            f"The object store does not support conditional writes ({reason}): creating timeline files and the "
            "table lock file would not be atomic, and two writers could overwrite each other's instant. Use a store "
            "with conditional writes (If-None-Match: *), or, if this process is the only writer of the table, set "
            "the storage option conditional_put=false and hoodie.write.lock.provider="
            "org.apache.hudi.client.transaction.lock.InProcessLockProvider (creates are then a check followed by "
            "a PUT, not atomic)",
            path=path,
        )


class TableNotFoundError(LakeOrchestrationError):
    """The base path holds no Hudi table (no ``.hoodie/hoodie.properties``)."""

    def __init__(self, table_uri: str) -> None:
        self.table_uri = table_uri
        super().__init__(f"No Hudi table at {table_uri}: expected {table_uri.rstrip('/')}/.hoodie/hoodie.properties")


class PaimonTableNotFoundError(TableNotFoundError):
    """The path holds no Paimon table (no ``schema/schema-N`` file)."""

    def __init__(self, table_uri: str) -> None:
        self.table_uri = table_uri
        LakeOrchestrationError.__init__(
            self, f"No Paimon table at {table_uri}: expected {table_uri.rstrip('/')}/schema/schema-<id> files"
        )


class PaimonCommitConflictError(LakeOrchestrationError):
    """A Paimon compaction cannot commit: files it compacted are no longer live in the latest snapshot (another
    commit compacted or overwrote them), or a level >= 1 would hold files overlapping in key range, as Java
    ``FileStoreCommitImpl``'s conflict check. Re-plan and rerun."""

    def __init__(self, table_uri: str, snapshot_id: int, missing: list[str]) -> None:
        self.table_uri = table_uri
        self.snapshot_id = snapshot_id
        self.missing = missing
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        LakeOrchestrationError.__init__(
            self,
            f"Paimon compaction of {table_uri} conflicts with snapshot {snapshot_id}: {shown}; expected every "
            "compacted file live and each level >= 1 one sorted run: re-plan the compaction",
        )


class InvalidTablePropertiesError(LakeOrchestrationError):
    """``hoodie.properties`` is malformed or holds an invalid value."""

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(f"Invalid hoodie.properties {path}: {detail}")


class UnsupportedTableVersionError(LakeOrchestrationError):
    """The table version is not one this release reads or writes."""

    def __init__(self, table_uri: str, version: str, supported: str) -> None:
        self.table_uri = table_uri
        self.version = version
        super().__init__(f"Unsupported hoodie.table.version={version!r} for table {table_uri}: expected {supported}")


class MetadataTableError(LakeOrchestrationError):
    """The table has a metadata table that the requested service cannot keep in sync."""

    def __init__(self, table_uri: str, detail: str) -> None:
        self.table_uri = table_uri
        super().__init__(f"Table {table_uri}: {detail}")


class UnsupportedTableFeatureError(LakeOrchestrationError):
    """The table uses a Hudi feature the requested service cannot keep (e.g. the CDC change log): refused before
    anything is written."""

    def __init__(self, table_uri: str, key: str, value: str, detail: str) -> None:
        self.table_uri = table_uri
        self.key = key
        self.value = value
        super().__init__(f"Table {table_uri}: {key}={value} in hoodie.properties: {detail}")


class InvalidInstantTimeError(LakeOrchestrationError, ValueError):
    """An instant time that is not ``yyyyMMddHHmmss[SSS]``."""

    def __init__(self, value: str, where: str = "") -> None:
        self.value = value
        self.where = where
        loc = f" in {where}" if where else ""
        super().__init__(f"Invalid instant time {value!r}{loc}: expected yyyyMMddHHmmss or yyyyMMddHHmmssSSS")


class InvalidFileNameError(LakeOrchestrationError, ValueError):
    """A file name that does not follow Hudi's naming grammar."""

    def __init__(self, name: str, expected: str, where: str = "") -> None:
        self.name = name
        self.expected = expected
        loc = f" in {where}" if where else ""
        super().__init__(f"Invalid file name {name!r}{loc}: expected {expected}")


class TimelineError(LakeOrchestrationError):
    """The timeline is in a state the operation cannot work with."""


class IncrementalQueryError(TimelineError):
    """An incremental or CDC query that cannot be answered as asked (names the table, the instant and the ways
    out)."""

    def __init__(self, table_uri: str, detail: str) -> None:
        self.table_uri = table_uri
        super().__init__(f"Incremental query on {table_uri}: {detail}")


class InstantNotFoundError(TimelineError):
    """An instant that must exist on the timeline does not."""

    def __init__(self, table_uri: str, instant: str, detail: str = "") -> None:
        self.table_uri = table_uri
        self.instant = instant
        extra = f": {detail}" if detail else ""
        super().__init__(f"Instant {instant} not found on the timeline of {table_uri}{extra}")


class InvalidInstantStateError(TimelineError):
    """A state transition that the requested → inflight → completed machine does not allow."""

    def __init__(self, table_uri: str, instant: str, detail: str) -> None:
        self.table_uri = table_uri
        self.instant = instant
        super().__init__(f"Instant {instant} of {table_uri}: {detail}")


class InstantInProgressError(InvalidInstantStateError):
    """A pending table-service instant (compaction, clean) is being executed by another process: its heartbeat
    (``.hoodie/.heartbeat/<instant>``) is fresh. Retry once it committed or its heartbeat expired."""

    def __init__(self, table_uri: str, instant: str, detail: str) -> None:
        super().__init__(table_uri, instant, detail)
        self.detail = detail


class CorruptFileError(LakeOrchestrationError):
    """A timeline or data file whose content cannot be decoded."""

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(f"Cannot decode {path}: {detail}")


class CorruptLogBlockError(CorruptFileError):
    """A log block whose frame is intact but whose content does not decode (Avro data, parquet data, delete block).

    Only framing corruption (a torn write: bad magic, a size past the end, a trailing length mismatch) is skipped
    and counted, as Java's ``HoodieLogFileReader.isBlockCorrupt`` does; content that does not decode is an error,
    raised before anything is written.
    """

    def __init__(
        self, path: str, offset: int, detail: str, *, instant: str | None = None, block_type: str | None = None
    ) -> None:
        self.offset = offset
        self.instant = instant
        self.block_type = block_type
        self.reason = detail
        kind = block_type or "log block"
        super().__init__(
            path,
            f"{kind} at byte {offset} of instant {instant or '(no INSTANT_TIME header)'}: {detail}. Its frame is "
            "intact, so it is not a torn write that readers skip: restore the log file from a copy before reading, "
            "writing to or compacting its file group",
        )


class SchemaError(LakeOrchestrationError):
    """An Avro schema that cannot be used (unparseable or an unsupported type)."""


class PlanError(LakeOrchestrationError):
    """A service plan cannot be made or is invalid."""


class InvalidOptionError(PlanError):
    """A service option (a Hudi key) has a value that does not parse or is out of range; the message names the key,
    the value and what was expected."""


class UnknownOptionError(InvalidOptionError):
    """A ``hoodie.*`` option key that no :class:`~lake_orchestration.config.keys.HoodieKey` reads (a typo such as
    ``hoodie.compact.inline.max.delta.commit``): it would silently keep Hudi's default. The message names the key,
    where it was given, the closest known key and how to pass a key on purpose that is not modelled."""


class CommitStateUnknownError(LakeOrchestrationError):
    """The outcome of a commit is unknown; re-check the timeline with the instant time, never clean up.

    Raised when a create-if-absent of a commit file (a completed instant, an archive file, a Paimon snapshot) failed
    ambiguously (answered ``412`` or lost in transport) and reading the object back could not decide whether this
    attempt created it. Deliberately not a :class:`StorageError`: handlers that clean up after a failed write must
    not catch it, since the commit may be durable and reference every file of the attempt.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class WriteConflictError(LakeOrchestrationError):
    """Optimistic concurrency: a write cannot commit because an instant completed (or a compaction or clustering was
    scheduled) since it started on the same file groups (Hudi's ``HoodieWriteConflictException`` of
    ``SimpleConcurrentFileWritesConflictResolutionStrategy``). The write is rolled back; run it again."""

    def __init__(
        self, *, table_uri: str, instant: str, other: str, file_ids: list[str], rolled_back: bool, detail: str = ""
    ) -> None:
        self.table_uri = table_uri
        self.instant = instant
        self.other = other
        self.file_ids = file_ids
        self.rolled_back = rolled_back
        shown = ", ".join(file_ids[:5]) + (f" (+{len(file_ids) - 5} more)" if len(file_ids) > 5 else "")
        outcome = (
            "it was rolled back (none of its rows are visible, its files are deleted): run it again"
            if rolled_back
            else "it is left inflight and will be rolled back as a failed write (lake-orch rollback --stale): run it "
            "again" + (f" ({detail})" if detail else "")
        )
        super().__init__(
            f"Write conflict on {table_uri}: write {instant} touched file group(s) {shown} that {other} changed "
            f"since {instant} started; expected no other instant on those file groups (optimistic concurrency), "
            f"so {instant} was not committed and {outcome}"
        )


class TableLockedError(LakeOrchestrationError):
    """The table lock (``.hoodie/lock``) is held by another process and did not become free within the wait time."""

    def __init__(
        self,
        *,
        table_uri: str,
        path: str,
        owner: str,
        operation: str,
        since: str,
        expires: str,
        waited_ms: int,
    ) -> None:
        self.table_uri = table_uri
        self.path = path
        self.owner = owner
        self.operation = operation
        self.since = since
        self.expires = expires
        self.waited_ms = waited_ms
        what = f" ({operation})" if operation else ""
        super().__init__(
            f"Table {table_uri} is locked by {owner}{what} since {since or 'an unknown time'}; lock file {path}; "
            f"waited {waited_ms / 1000:g} s (hoodie.write.lock.wait_time_ms). The lock {expires}: retry later, or "
            "remove the lock file only if that process is gone"
        )


class TableLockLostError(LakeOrchestrationError):
    """The table lock this process held was lost while its section ran (its heartbeat was late, e.g. the process was
    paused past the lock's expiry, and another process took the lock over): the section stops before its next
    timeline or archive change."""

    def __init__(self, *, path: str, operation: str, since: str, holder: str) -> None:
        self.path = path
        self.operation = operation
        self.since = since
        self.holder = holder
        super().__init__(
            f"The table lock {path} taken by this process for {operation or '?'} at {since} was lost ({holder}): "
            "another process may be changing the table, so this process stops before its next timeline or archive "
            "change. Check the timeline, then run the operation again"
        )


class EngineError(LakeOrchestrationError):
    """The execution engine (Spark, local) failed or is unavailable."""


class JavaNotFoundError(EngineError):
    """Spark needs Java 17 or newer and it was not found."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(
            f"Spark needs Java 17 or newer: {detail}. Install a JDK 17 "
            "(e.g. 'apt-get install openjdk-17-jdk-headless') and put 'java' on PATH or set JAVA_HOME"
        )
