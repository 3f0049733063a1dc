"""``HudiTable``: one Hudi table on storage (``hoodie.properties``, active timeline, file-system view).

Timeline files are created with create-if-absent, one file per state, as Hudi's timeline layout 1 does:
requested -> inflight -> completed, nothing renamed or overwritten.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import Any, Protocol, TypeVar

from lake_orchestration.config.keys import PROPERTIES_BACKUP_FILE, PROPERTIES_FILE, HoodieKey
from lake_orchestration.errors import (
    FileAlreadyExistsError,
    InstantNotFoundError,
    InvalidInstantStateError,
    InvalidTablePropertiesError,
    MetadataTableError,
    StorageError,
    TableNotFoundError,
    UnsupportedTableFeatureError,
    UnsupportedTableVersionError,
)
from lake_orchestration.hudi.model.avro import CompactionPlan
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.file_group import PARTITION_METAFILE_PREFIX, FileGroupId, is_log_file_name
from lake_orchestration.hudi.model.fs_view import FileSystemView, ListedFile
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, InstantTimeGenerator, State
from lake_orchestration.hudi.model.properties import (
    SUPPORTED_TABLE_VERSIONS,
    TableConfig,
    format_properties,
    parse_properties,
    table_checksum,
)
from lake_orchestration.hudi.model.schema import parse_schema, with_meta_fields
from lake_orchestration.hudi.model.timeline import Timeline
from lake_orchestration.io.storage import FileInfo, Storage

log = logging.getLogger(__name__)

HOODIE_DIR = ".hoodie"
METADATA_DIR = "metadata"
_LISTING_THREADS = 16
"""Folders listed at once on an object store."""
_CONTENT_CACHE_MAX_BYTES = 64 * 1024 * 1024
"""Timeline file contents kept per :class:`HudiTable` (oldest dropped first)."""
_CONTENT_CACHE_MAX_FILE = 8 * 1024 * 1024
_INFLIGHT_ARE_EMPTY = {Action.COMPACTION, Action.LOG_COMPACTION, Action.ROLLBACK, Action.SAVEPOINT, Action.RESTORE}


M_co = TypeVar("M_co", covariant=True)
M = TypeVar("M")


class InstantModel(Protocol[M_co]):
    """A type a timeline file decodes to: an Avro model class (``CompactionPlan``, ``CleanerPlan`` ...) or
    ``CommitMetadata`` (its ``from_bytes``)."""

    def from_bytes(self, data: bytes, *, path: str) -> M_co: ...


class HudiTable:
    """A Hudi table (version 6) at ``base_uri``.

    Args:
        base_uri: local path or ``s3://``, ``gs://``, ``hdfs://`` URI of the table's base path.
        storage_options: options for the storage backend.

    Raises:
        TableNotFoundError: no ``.hoodie/hoodie.properties`` (nor its backup) under ``base_uri``.
        InvalidTablePropertiesError: the properties are malformed.
        UnsupportedTableVersionError: the table is not version 6.

    Example:
        >>> t = HudiTable("/data/trips")                          # doctest: +SKIP
        >>> [i.file_name for i in t.timeline.completed()]        # doctest: +SKIP
    """

    def __init__(self, base_uri: str, *, storage_options: Mapping[str, str] | None = None) -> None:
        self.storage = Storage(base_uri, options=storage_options)
        self.base_uri = self.storage.base_uri
        self.config = self._load_config()

    # -- properties -------------------------------------------------------------------------------------------
    @property
    def hoodie_dir(self) -> str:
        return self.storage.join(HOODIE_DIR)

    def _load_config(self) -> TableConfig:
        path = self.storage.join(HOODIE_DIR, PROPERTIES_FILE)
        backup = self.storage.join(HOODIE_DIR, PROPERTIES_BACKUP_FILE)
        try:
            raw = self.storage.read_bytes(path)  # existence is checked only when the read fails (no HEAD first)
        except StorageError:
            if self.storage.exists(path):
                raise
            if not self.storage.exists(backup):
                raise TableNotFoundError(self.base_uri) from None
            # HoodieTableConfig recovers from the backup when an update was interrupted.
            log.warning("%s missing; reading %s", self.storage.uri(path), self.storage.uri(backup))
            path = backup
            raw = self.storage.read_bytes(path)
        try:
            text = raw.decode("latin-1")
        except UnicodeDecodeError as err:  # pragma: no cover - latin-1 decodes any byte
            raise InvalidTablePropertiesError(self.storage.uri(path), str(err)) from err
        uri = self.storage.uri(path)
        props = parse_properties(text, path=uri)
        version = props.get(HoodieKey.TABLE_VERSION.key, "").strip()
        if not version:
            # Java reads a missing version as 0 (ZERO) and would run every upgrade step on the table: never guess.
            raise InvalidTablePropertiesError(
                uri,
                f"required key {HoodieKey.TABLE_VERSION.key} is missing (Java Hudi would read the table as version 0 "
                f"and try to upgrade it). If the table really is version 6 (written by Hudi 0.14/0.15), add the line "
                f"{HoodieKey.TABLE_VERSION.key}=6 to {uri}",
            )
        if version not in SUPPORTED_TABLE_VERSIONS:
            raise UnsupportedTableVersionError(self.base_uri, version, "6 (Hudi 0.14/0.15)")
        config = TableConfig.from_properties(props, path=uri)
        if HoodieKey.TABLE_TYPE.key not in props:
            self._check_undeclared_table_type(uri)
        return config

    def _check_undeclared_table_type(self, properties_uri: str) -> None:
        """``hoodie.table.type`` is missing: Java reads the table as COPY_ON_WRITE, which drops every log file's data
        of a MERGE_ON_READ table (reads ignore them, the next write commits a ``.commit``). Refuse when the timeline or
        the files show a MERGE_ON_READ table; otherwise read it as COPY_ON_WRITE with a warning.

        Raises:
            InvalidTablePropertiesError: deltacommits, (log) compactions on the active timeline, or log files.
        """
        key = HoodieKey.TABLE_TYPE.key
        mor_actions = (Action.DELTA_COMMIT, Action.COMPACTION, Action.LOG_COMPACTION)
        evidence = next(
            (f"{i.file_name} is on the active timeline" for i in self.timeline.with_actions(*mor_actions)), ""
        )
        if not evidence:
            base = self.storage.base_path.rstrip("/") + "/"
            for f in self.storage.walk_files(self.storage.base_path):
                rel = f.path[len(base) :] if f.path.startswith(base) else f.path
                if any(seg.startswith(".") for seg in rel.split("/")[:-1]):
                    continue  # .hoodie/ (metadata table, archive), hidden folders
                if is_log_file_name(f.name):
                    evidence = f"log file {self.storage.uri(f.path)} exists"
                    break
        if evidence:
            raise InvalidTablePropertiesError(
                properties_uri,
                f"required key {key} is missing and {evidence}: this is a MERGE_ON_READ table, and reading or writing "
                f"it as COPY_ON_WRITE (Java's default) would lose the data of its log files. Add the line "
                f"{key}=MERGE_ON_READ to {properties_uri}",
            )
        log.warning(
            "%s: %s is missing; no deltacommit nor log file found, so the table is read as COPY_ON_WRITE (Java's "
            "default). Add the line %s=COPY_ON_WRITE to make it explicit",
            properties_uri,
            key,
            key,
        )

    @classmethod
    def create(
        cls,
        base_uri: str,
        properties: Mapping[str, str],
        *,
        storage_options: Mapping[str, str] | None = None,
    ) -> HudiTable:
        """Initialise a new table: ``.hoodie/`` with its sub-folders and ``hoodie.properties``.

        Raises:
            FileAlreadyExistsError: a table already exists at ``base_uri``.
        """
        storage = Storage(base_uri, options=storage_options)
        props = dict(properties)
        props[HoodieKey.TABLE_CHECKSUM.key] = table_checksum(props)
        TableConfig.from_properties(props, path=storage.uri(storage.join(HOODIE_DIR, PROPERTIES_FILE)))
        for sub in (".aux/.bootstrap/.partitions", ".aux/.bootstrap/.fileids", ".temp", ".schema", "archived"):
            storage.make_dirs(storage.join(HOODIE_DIR, sub))
        storage.create_if_absent(storage.join(HOODIE_DIR, PROPERTIES_FILE), format_properties(props).encode("latin-1"))
        return cls(base_uri, storage_options=storage_options)

    def update_properties(self, updates: Mapping[str, str], *, remove: tuple[str, ...] = ()) -> TableConfig:
        """Change ``hoodie.properties`` the way ``HoodieTableConfig.modify`` does.

        Backup the current file -> delete it -> write the new one (checksum recomputed) -> re-read and verify ->
        delete the backup. A crash at any step leaves either the old file, the new file, or the backup that
        :meth:`_load_config` recovers from.
        """
        path = self.storage.join(HOODIE_DIR, PROPERTIES_FILE)
        backup = self.storage.join(HOODIE_DIR, PROPERTIES_BACKUP_FILE)
        props = dict(self.config.raw)
        for k in remove:
            props.pop(k, None)
        props.update(updates)
        props[HoodieKey.TABLE_CHECKSUM.key] = table_checksum(props)
        TableConfig.from_properties(props, path=self.storage.uri(path))  # validate before touching anything
        current = self.storage.read_bytes(path)
        self._delete_with_checksum(backup, missing_ok=True)
        self.storage.create_if_absent(backup, current)
        self._delete_with_checksum(path)
        self.storage.create_if_absent(path, format_properties(props).encode("latin-1"))
        self.config = self._load_config()
        if self.config.raw.get(HoodieKey.TABLE_CHECKSUM.key) != props[HoodieKey.TABLE_CHECKSUM.key]:
            raise InvalidTablePropertiesError(self.storage.uri(path), "checksum changed while writing")
        self._delete_with_checksum(backup)
        return self.config

    def _delete_with_checksum(self, path: str, *, missing_ok: bool = False) -> None:
        """Delete ``path`` and, on a local file system, the ``.<name>.crc`` Hadoop's ``LocalFileSystem`` (a
        ``ChecksumFileSystem``) wrote beside it, as Java's ``fs.delete`` there does. Left behind, Java's checksum of the
        old ``hoodie.properties`` fails its read of the one we rewrote (``ChecksumException``, then "Could not load
        Hoodie properties")."""
        self.storage.delete_file(path, missing_ok=missing_ok)
        if self.storage.is_local:
            folder, _, name = path.rpartition("/")
            self.storage.delete_file(f"{folder}/.{name}.crc" if folder else f".{name}.crc", missing_ok=True)

    # -- metadata table ----------------------------------------------------------------------------------------
    def has_metadata_table(self) -> bool:
        """True if ``.hoodie/metadata`` holds a table or ``hoodie.table.metadata.partitions`` names partitions."""
        parts = (self.config.raw.get(HoodieKey.METADATA_PARTITIONS.key) or "").strip()
        return bool(parts) or self.metadata_table_exists()

    def metadata_table_exists(self) -> bool:
        """True if ``.hoodie/metadata/.hoodie/hoodie.properties`` exists. No request when the ``.hoodie/`` listing
        of the cached timeline shows no ``metadata`` folder."""
        listing = self.__dict__.get("_listing")
        if listing is not None and METADATA_DIR not in listing:
            return False
        return self.storage.exists(self.storage.join(HOODIE_DIR, METADATA_DIR, HOODIE_DIR, PROPERTIES_FILE))

    def metadata_partitions(self) -> list[str]:
        """The metadata table's partitions ``hoodie.properties`` names (``hoodie.table.metadata.partitions``, then
        ``hoodie.table.metadata.partitions.inflight``)."""
        raw = self.config.raw
        names = [
            *(raw.get(HoodieKey.METADATA_PARTITIONS.key) or "").split(","),
            *(raw.get(HoodieKey.METADATA_PARTITIONS_INFLIGHT.key) or "").split(","),
        ]
        return list(dict.fromkeys(n.strip() for n in names if n.strip()))

    def ensure_metadata_table_handled(
        self, options: Mapping[str, str] | None, *, service: str, dry_run: bool = False, keeps_change_log: bool = False
    ) -> None:
        """Check that ``service`` may change this table as regards its metadata table; and refuse a CDC-enabled table
        (``hoodie.table.cdc.enabled=true``) unless the service ``keeps_change_log`` (a rollback removes a failed
        write with its CDC files; it adds no change).

        - A metadata table whose only partition is ``files``: kept. Every completed instant updates it at the same
          instant before completing (the commit path, :func:`lake_orchestration.hudi.table.commit.complete_instant`).
        - ``hoodie.metadata.enable=false``: the metadata table is deleted first (not on a dry run), as a Java writer
          with that setting does; Java rebuilds it on its next write with metadata enabled.
        - Other partitions (``column_stats``, ``bloom_filters``, ``record_index``, ...), a metadata table folder
          that ``hoodie.table.metadata.partitions`` does not list as having ``files``, or that property without a
          metadata table (deleted by hand): refused, before anything is written.

        Raises:
            MetadataTableError: the metadata table has partitions other than ``files`` (or no ``files``) and
                ``hoodie.metadata.enable`` is not ``false``.
            UnsupportedTableFeatureError: the table keeps a CDC change log and the service would not write it.
        """
        if not keeps_change_log:
            self.ensure_no_change_log(service=service)
        if not self.has_metadata_table():
            return
        if str((options or {}).get(HoodieKey.METADATA_ENABLE.key, "")).strip().lower() == "false":
            if not dry_run:
                log.warning("Deleting the metadata table of %s (hoodie.metadata.enable=false)", self.base_uri)
                self.drop_metadata_table()
            return
        partitions = self.metadata_partitions()
        others = [p for p in partitions if p != "files"]
        exists = self.metadata_table_exists()
        if "files" in partitions and not others and exists:
            return
        if others:
            found = f"partitions {others} that {service} does not update (only 'files' is kept here)"
        elif not exists:  # the property names partitions, the table is gone: the commit could not update it
            found = (
                f"no table in it, although {HoodieKey.METADATA_PARTITIONS.key} lists {partitions} (deleted without "
                "clearing the property)"
            )
        else:
            found = (
                f"a folder .hoodie/metadata but {HoodieKey.METADATA_PARTITIONS.key} does not list 'files' (a "
                "half-made initialisation)"
            )
        raise MetadataTableError(
            self.base_uri,
            f"has a metadata table (.hoodie/metadata) with {found}: Java readers using them would see stale "
            "indexes. Either pass hoodie.metadata.enable=false (CLI: --option hoodie.metadata.enable=false), which "
            "deletes the metadata table as a Java writer with that setting does (Java rebuilds it on its next write), "
            f"or run {service} with Java Hudi on this table"
            + (
                ""
                if others
                else "; or rebuild it: lake-orch metadata init PATH (or a write with hoodie.metadata.enable=true)"
            ),
        )

    def ensure_no_change_log(self, *, service: str) -> None:
        """Refuse a CDC-enabled table: Java writes CDC log files (``*-cdc``) with every write and compaction of such a
        table, and a change our services made without them would be missing from CDC queries.

        Raises:
            UnsupportedTableFeatureError: ``hoodie.table.cdc.enabled`` is true.
        """
        key = HoodieKey.TABLE_CDC_ENABLED.key
        value = str(self.config.raw.get(key, "false")).strip()
        if value.lower() == "true":
            raise UnsupportedTableFeatureError(
                self.base_uri,
                key,
                value,
                f"{service} does not write Hudi's CDC log files yet, so it would silently drop changes from CDC "
                "queries; expected a table without the change log. Run this service with Java Hudi on this table "
                "(rollback, archive and savepoints stay available here)",
            )

    def drop_metadata_table(self) -> None:
        """Delete the metadata table as a Java writer with ``hoodie.metadata.enable=false`` does
        (``HoodieTableMetadataUtil.deleteMetadataTable``): clear ``hoodie.table.metadata.partitions[.inflight]``
        first, so readers go back to listing files, then delete ``.hoodie/metadata``. Java rebuilds it on its next
        write with metadata enabled."""
        keys = (HoodieKey.METADATA_PARTITIONS.key, HoodieKey.METADATA_PARTITIONS_INFLIGHT.key)
        if any(k in self.config.raw for k in keys):
            self.update_properties({}, remove=keys)
        self.storage.delete_dir(self.storage.join(HOODIE_DIR, METADATA_DIR))
        self.refresh()

    # -- timeline ----------------------------------------------------------------------------------------------
    def _hoodie_listing(self) -> dict[str, FileInfo]:
        """The entries of ``.hoodie/`` (files and folders, by name) as last listed; one LIST, cached with the
        timeline (:meth:`refresh` drops both)."""
        listing = self.__dict__.get("_listing")
        if listing is None:
            listing = {f.name: f for f in self.storage.list_dir(self.hoodie_dir)}
            self.__dict__["_listing"] = listing
            tl = Timeline.from_file_names(self._timeline_names(listing), where=self.storage.uri(self.hoodie_dir))
            for name in tl.ignored_files:
                log.warning("Ignoring unknown file %s in %s", name, self.storage.uri(self.hoodie_dir))
            self.__dict__["timeline"] = tl
        return listing

    @staticmethod
    def _timeline_names(listing: Mapping[str, FileInfo]) -> list[str]:
        return [name for name, f in listing.items() if not f.is_dir]

    @cached_property
    def timeline(self) -> Timeline:
        """The active timeline (cached; :meth:`refresh` reloads it). Instants this object creates are added to the
        cached timeline without listing ``.hoodie/`` again."""
        listing = self._hoodie_listing()
        if "timeline" in self.__dict__:  # set by the listing itself
            return self.__dict__["timeline"]
        return Timeline.from_file_names(self._timeline_names(listing), where=self.storage.uri(self.hoodie_dir))

    def timeline_file_names(self) -> set[str]:
        """Names of every file of ``.hoodie/`` (every state file of every instant, ``hoodie.properties`` ...) from
        the listing the cached timeline was built from (no extra request)."""
        return set(self._timeline_names(self._hoodie_listing()))

    def refresh(self) -> HudiTable:
        """Forget cached timeline state (the next access lists ``.hoodie/`` again)."""
        self.__dict__.pop("timeline", None)
        self.__dict__.pop("_listing", None)
        self.__dict__.pop("_bootstrap_sources", None)  # a bootstrap rollback drops the index
        return self

    def instant_path(self, instant: Instant) -> str:
        return self.storage.join(HOODIE_DIR, instant.file_name)

    def read_instant(self, instant: Instant) -> bytes:
        """Content of an instant's file (plan files are read from the requested state, as Java does).

        Timeline files are immutable (create-if-absent, never rewritten): a content already read is served again
        while the ``.hoodie/`` listing shows the file with the same size (and modification time), with no request.
        """
        path = self.instant_path(instant)
        name = instant.file_name
        listed = self.__dict__.get("_listing", {}).get(name)
        cached = self._contents.get(name)
        if cached is not None and listed is not None and _same_file(cached, listed):
            return cached[2]
        try:
            data = self.storage.read_bytes(path)  # one GET; existence is checked only when it fails
        except StorageError:
            if self.storage.exists(path):
                raise
            self._raise_missing(instant)
        if listed is not None:
            self._remember(name, listed.size, listed.mtime_ms, data)
        return data

    def _raise_missing(self, instant: Instant) -> None:
        inflight = instant.with_state(State.INFLIGHT)
        if (
            instant.state is State.REQUESTED
            and instant.action is Action.COMPACTION
            and self.storage.exists(self.instant_path(inflight))
        ):
            t = instant.time
            raise InvalidInstantStateError(
                self.base_uri,
                str(t),
                f"{inflight.file_name} has no {instant.file_name} (the compaction plan): nothing can read or run "
                f"this compaction, nor build the file-system view. Restore the plan file from a copy, or roll the "
                f"attempt back and remove the compaction with 'lake-orch compaction rollback {self.base_uri} "
                f"--instant-time {t}' (it deletes the base files named with {t}, which no completed commit wrote)",
            )
        raise InstantNotFoundError(self.base_uri, str(instant.time), f"missing {instant.file_name}")

    @cached_property
    def _contents(self) -> dict[str, tuple[int, int, bytes]]:
        """File name -> (size, mtime ms or 0 if written by this object, content) of timeline files read or written."""
        return {}

    def _remember(self, name: str, size: int, mtime_ms: int, data: bytes) -> None:
        if len(data) > _CONTENT_CACHE_MAX_FILE or size != len(data):
            return
        contents = self._contents
        old = contents.pop(name, None)
        total = self.__dict__.get("_contents_bytes", 0) - (len(old[2]) if old else 0)
        while contents and total + len(data) > _CONTENT_CACHE_MAX_BYTES:
            total -= len(contents.pop(next(iter(contents)))[2])  # oldest first
        contents[name] = (size, mtime_ms, data)
        self.__dict__["_contents_bytes"] = total + len(data)

    def read_model(self, instant: Instant, model: InstantModel[M]) -> M:
        """The content of an instant's file decoded as ``model`` (a plan, clean/rollback/savepoint metadata ...).

        Example:
            >>> req = Instant(t, Action.COMPACTION, State.REQUESTED)  # doctest: +SKIP
            >>> plan = table.read_model(req, CompactionPlan)           # doctest: +SKIP

        Raises:
            InstantNotFoundError: the file does not exist.
            CorruptFileError: the content does not decode as ``model`` (the error names the file).
        """
        return model.from_bytes(self.read_instant(instant), path=self.storage.uri(self.instant_path(instant)))

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        """``HoodieCommitMetadata`` of a completed commit/deltacommit/replacecommit."""
        return self.read_model(instant, CommitMetadata)

    def new_instant_time(self) -> InstantTime:
        """A new instant time after every instant of the timeline, in the table's timeline timezone."""
        last = self.refresh().timeline.last
        gen = InstantTimeGenerator(self.config.timeline_timezone.value)
        return gen.new_instant_time(floor=str(last.time) if last else None)

    # -- state machine ------------------------------------------------------------------------------------------
    def create_requested(self, instant: Instant, content: bytes = b"") -> Instant:
        """Write ``<ts>.<action>.requested`` (create-if-absent)."""
        if instant.state is not State.REQUESTED:
            raise InvalidInstantStateError(self.base_uri, str(instant.time), f"{instant} is not a requested instant")
        self._create(instant, content)
        return instant

    def create_inflight(self, instant: Instant, content: bytes = b"") -> Instant:
        """Write ``<ts>.<action>.inflight`` for an action without a requested state (savepoint), create-if-absent."""
        if instant.state is not State.INFLIGHT or instant.action is not Action.SAVEPOINT:
            raise InvalidInstantStateError(
                self.base_uri, str(instant.time), f"{instant} starts at requested; use create_requested"
            )
        self._create(instant, content)
        return instant

    def transition_to_inflight(self, requested: Instant, content: bytes = b"") -> Instant:
        """Requested -> inflight: the requested file must exist, the inflight one must not."""
        inflight = requested.with_state(State.INFLIGHT)
        if requested.state is not State.REQUESTED or not self.storage.exists(self.instant_path(requested)):
            raise InvalidInstantStateError(
                self.base_uri, str(requested.time), f"cannot move to inflight: {requested.file_name} does not exist"
            )
        if requested.action in _INFLIGHT_ARE_EMPTY:
            content = b""
        self._create(inflight, content)
        return inflight

    def transition_to_completed(self, inflight: Instant, content: bytes) -> Instant:
        """Inflight -> completed; the completed file is the commit point and is written last."""
        completed = inflight.with_state(State.COMPLETED)
        if inflight.state is not State.INFLIGHT or not self.storage.exists(self.instant_path(inflight)):
            raise InvalidInstantStateError(
                self.base_uri, str(inflight.time), f"cannot complete: {inflight.file_name} does not exist"
            )
        self._create(completed, content)
        return completed

    def check_lock(self) -> None:
        """Raise :class:`~lake_orchestration.errors.TableLockLostError` if a table lock this thread holds on this
        table (``table_lock``) was lost meanwhile; nothing without a lock. Called before every timeline file is
        created and before archive changes."""
        for guard in list(self.__dict__.get("_lock_guards", {}).values()):
            guard()

    def _create(self, instant: Instant, content: bytes) -> None:
        self.check_lock()
        path = self.instant_path(instant)
        try:
            self.storage.create_if_absent(path, content)
        except FileAlreadyExistsError as err:
            self.refresh()
            raise InvalidInstantStateError(
                self.base_uri, str(instant.time), f"{instant.file_name} already exists on the timeline"
            ) from err
        except BaseException:
            self.refresh()
            raise
        listing = self.__dict__.get("_listing")
        if listing is None:
            return
        # Add what was just created to the cached timeline instead of listing .hoodie/ again: the listing is as
        # current as before, plus this file (decisions refresh explicitly, under the table lock).
        name = instant.file_name
        listing[name] = FileInfo(path=path, name=name, size=len(content), mtime_ms=0)
        self.__dict__.pop("timeline", None)
        self._remember(name, len(content), 0, content)

    # -- schema ------------------------------------------------------------------------------------------------
    def latest_schema(self) -> dict[str, Any] | None:
        """Writer Avro schema of the latest completed commit that has one, meta fields prepended."""
        for inst in reversed(self.timeline.completed_commits().instants):
            try:
                schema_json = self.commit_metadata(inst).schema
            except StorageError:
                continue
            # a completed commit whose metadata does not decode (CorruptFileError) stops here, naming the file:
            # the table schema cannot be known (hudi-rs and Java refuse such a table too)
            if schema_json:
                schema = parse_schema(schema_json, where=inst.file_name)
                return with_meta_fields(schema) if self.config.populate_meta_fields else schema
        if self.config.create_schema:
            return json.loads(self.config.create_schema)
        return None

    # -- file-system view ------------------------------------------------------------------------------------------
    def list_partitions(self) -> list[str]:
        """Relative paths of every partition (a directory holding ``.hoodie_partition_metadata``)."""
        return sorted(self.partition_listing())

    def partition_listing(self, partitions: Iterable[str] | None = None) -> dict[str, list[FileInfo]]:
        """Partition -> the entries directly in it, from one non-recursive listing per directory.

        Without ``partitions``, every partition is found the way Hudi's ``FileSystemBackedTableMetadata`` does:
        directories are listed level by level from the base path, hidden ones (``.hoodie/``, ``.temp`` ...) are
        never entered, and a directory holding ``.hoodie_partition_metadata`` is a partition. The listing that finds
        a partition is also its file listing, so building the file-system view needs no second listing (on an
        object store: one LIST per directory, instead of a recursive listing of the whole table, ``.hoodie/`` and
        its archive included, plus one per partition).

        With ``partitions`` (e.g. the partitions commit metadata names), only those directories are listed; one
        that does not exist or holds no partition metafile is left out.
        """
        out: dict[str, list[FileInfo]] = {}
        if partitions is not None:
            # only partition paths as listed: normal form, no hidden folder
            wanted = [p for p in sorted(set(partitions)) if _is_partition_path(p)]
            for p, entries in zip(wanted, self._list_folders(wanted), strict=True):
                if any(not f.is_dir and f.name.startswith(PARTITION_METAFILE_PREFIX) for f in entries):
                    out[p] = entries
            return out
        level = [""]
        while level:
            below: list[str] = []
            for rel, entries in zip(level, self._list_folders(level), strict=True):
                if any(not f.is_dir and f.name.startswith(PARTITION_METAFILE_PREFIX) for f in entries):
                    out[rel] = entries
                below.extend(
                    f"{rel}/{f.name}" if rel else f.name for f in entries if f.is_dir and not f.name.startswith(".")
                )
            level = sorted(below)
        return out

    def _list_folders(self, rels: list[str]) -> list[list[FileInfo]]:
        """One non-recursive listing per folder (relative to the base path), in order; on an object store several
        at once (the same requests, less waiting: Java lists partitions in parallel too)."""
        paths = [self.storage.join(r) if r else self.storage.base_path for r in rels]
        if self.storage.is_local or len(paths) < 2:
            return [self.storage.list_dir(p) for p in paths]
        with ThreadPoolExecutor(max_workers=min(_LISTING_THREADS, len(paths))) as pool:
            return list(pool.map(self.storage.list_dir, paths))

    def pending_compaction_plans(self, action: Action = Action.COMPACTION) -> dict[Instant, CompactionPlan]:
        """The plan of every pending compaction (or, with ``Action.LOG_COMPACTION``, log compaction), by its requested
        instant, oldest first.

        Each plan is decoded once per content: the file-system view, the cleaner and the services all ask for
        them, and a plan file never changes (a plan re-read with the same bytes is not decoded again).
        """
        pending = (
            self.timeline.pending_compactions()
            if action is Action.COMPACTION
            else self.timeline.pending_log_compactions()
        )
        decoded: dict[str, tuple[bytes, CompactionPlan]] = self.__dict__.setdefault("_decoded_plans", {})
        out: dict[Instant, CompactionPlan] = {}
        for inst in pending:
            req = Instant(inst.time, action, State.REQUESTED)
            data = self.read_instant(req)
            known = decoded.get(req.file_name)
            if known is None or known[0] != data:
                known = (data, CompactionPlan.from_bytes(data, path=self.storage.uri(self.instant_path(req))))
                decoded[req.file_name] = known
            out[req] = known[1]
        return out

    def pending_compaction_operations(self, action: Action = Action.COMPACTION) -> dict[FileGroupId, InstantTime]:
        """File groups of every pending (log) compaction plan -> the plan's instant."""
        out: dict[FileGroupId, InstantTime] = {}
        for req, plan in self.pending_compaction_plans(action).items():
            for op in plan.operations:
                out[FileGroupId(op.partition_path or "", op.file_id or "")] = req.time
        return out

    def replaced_file_groups(self) -> dict[FileGroupId, InstantTime]:
        """File groups replaced by completed replacecommits -> the replacing instant."""
        out: dict[FileGroupId, InstantTime] = {}
        for inst in self.timeline.completed().with_actions(Action.REPLACE_COMMIT):
            md = self.commit_metadata(inst)
            for p, ids in (md.partition_to_replace_file_ids or {}).items():
                for fid in ids:
                    out[FileGroupId(p, fid)] = inst.time
        return out

    def fs_view(self, listing: Mapping[str, list[FileInfo]] | None = None) -> FileSystemView:
        """The file-system view as of the current timeline, over every partition or over the partitions of
        ``listing`` (from :meth:`partition_listing`, which is not listed again)."""
        entries = self.partition_listing() if listing is None else listing
        files = {p: [ListedFile(f.name, f.size) for f in fs if not f.is_dir] for p, fs in entries.items()}
        return FileSystemView.build(
            timeline=self.timeline,
            listing=files,
            pending_compaction=self.pending_compaction_operations(),
            pending_log_compaction=self.pending_compaction_operations(Action.LOG_COMPACTION),
            replaced=self.replaced_file_groups(),
            bootstrap_sources=self.bootstrap_sources(),
        )

    def bootstrap_sources(self) -> dict[FileGroupId, str]:
        """File group -> source file of every skeleton of a METADATA_ONLY bootstrap, from the bootstrap index
        (``.hoodie/.aux/.bootstrap/.fileids``); empty for a table that was not bootstrapped or whose index is not
        written yet (the bootstrap commits after it). Read once per :class:`HudiTable`: the index never changes."""
        cached = self.__dict__.get("_bootstrap_sources")
        if cached is not None:
            return cached
        if not self.config.raw.get(HoodieKey.BOOTSTRAP_BASE_PATH.key):
            return {}
        # here, not at module level: only bootstrapped tables read the index (HFile, ~40 ms of every CLI start)
        from lake_orchestration.hudi.hfile.bootstrap_index import (
            FILE_ID_INDEX_PATH,
            PARTITION_INDEX_PATH,
            BootstrapIndexReader,
        )

        paths = [self.storage.join(PARTITION_INDEX_PATH), self.storage.join(FILE_ID_INDEX_PATH)]
        if not all(self.storage.exists(p) for p in paths):
            return {}
        reader = BootstrapIndexReader(*(self.storage.read_bytes(p) for p in paths), base_path=self.base_uri)
        out = {
            FileGroupId(p, f): m.bootstrap_file_status.uri or ""
            for (p, f), m in reader.mappings_for_file_groups(reader.indexed_file_groups()).items()
        }
        self.__dict__["_bootstrap_sources"] = out
        return out

    def __repr__(self) -> str:
        return f"HudiTable({self.base_uri!r}, {self.config.table_type.value}, name={self.config.name!r})"


def _is_partition_path(p: str) -> bool:
    """``p`` in the form listed partitions have: no leading, trailing or double ``/``, no hidden folder."""
    segs = p.split("/")
    return p == "" or all(seg and not seg.startswith(".") for seg in segs)


def _same_file(cached: tuple[int, int, bytes], listed: FileInfo) -> bool:
    """The cached content is the listed file's: same size, and the same modification time unless this object wrote
    it (its time unknown, 0)."""
    size, mtime, _ = cached
    return size == listed.size and (mtime == 0 or mtime == listed.mtime_ms)
