"""``HudiTable``: one Hudi table on storage (``hoodie.properties``, active timeline, file-system view).

Timeline files are created with create-if-absent, one file per state, as Hudi's timeline layout 1 does:
requested -> inflight -> completed, nothing renamed or overwritten.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from functools import cached_property
from typing import Any

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import (
    FileAlreadyExistsError,
    InstantNotFoundError,
    InvalidInstantStateError,
    InvalidTablePropertiesError,
    MetadataTableError,
    StorageError,
    TableNotFoundError,
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
from lake_orchestration.io.storage import Storage

log = logging.getLogger(__name__)

HOODIE_DIR = ".hoodie"
PROPERTIES_FILE = "hoodie.properties"
BACKUP_FILE = "hoodie.properties.backup"
_INFLIGHT_ARE_EMPTY = {Action.COMPACTION, Action.LOG_COMPACTION, Action.ROLLBACK, Action.SAVEPOINT, Action.RESTORE}


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
        backup = self.storage.join(HOODIE_DIR, BACKUP_FILE)
        if not self.storage.exists(path):
            if self.storage.exists(backup):
                # HoodieTableConfig recovers from the backup when an update was interrupted.
                log.warning("%s missing; reading %s", self.storage.uri(path), self.storage.uri(backup))
                path = backup
            else:
                raise TableNotFoundError(self.base_uri)
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
        backup = self.storage.join(HOODIE_DIR, BACKUP_FILE)
        props = dict(self.config.raw)
        for k in remove:
            props.pop(k, None)
        props.update(updates)
        props[HoodieKey.TABLE_CHECKSUM.key] = table_checksum(props)
        TableConfig.from_properties(props, path=self.storage.uri(path))  # validate before touching anything
        current = self.storage.read_bytes(path)
        self.storage.delete_file(backup, missing_ok=True)
        self.storage.create_if_absent(backup, current)
        self.storage.delete_file(path)
        self.storage.create_if_absent(path, format_properties(props).encode("latin-1"))
        self.config = self._load_config()
        if self.config.raw.get(HoodieKey.TABLE_CHECKSUM.key) != props[HoodieKey.TABLE_CHECKSUM.key]:
            raise InvalidTablePropertiesError(self.storage.uri(path), "checksum changed while writing")
        self.storage.delete_file(backup)
        return self.config

    # -- metadata table ----------------------------------------------------------------------------------------
    def has_metadata_table(self) -> bool:
        """True if ``.hoodie/metadata`` holds a table or ``hoodie.table.metadata.partitions`` names partitions."""
        parts = (self.config.raw.get(HoodieKey.METADATA_PARTITIONS.key) or "").strip()
        return bool(parts) or self.storage.exists(
            self.storage.join(HOODIE_DIR, "metadata", HOODIE_DIR, PROPERTIES_FILE)
        )

    def ensure_metadata_table_handled(
        self, options: Mapping[str, str] | None, *, service: str, dry_run: bool = False
    ) -> None:
        """Refuse to change a table that has a metadata table, unless ``hoodie.metadata.enable=false`` drops it.

        This project does not update Hudi's metadata table: Java readers listing files through it would miss files a
        write adds and still list files a clean deletes. With ``hoodie.metadata.enable=false`` it is deleted first
        (not on a dry run), as a Java writer with that setting does; Java rebuilds it on its next write with
        metadata enabled.

        Raises:
            MetadataTableError: a metadata table exists and ``hoodie.metadata.enable`` is not ``false``.
        """
        if not self.has_metadata_table():
            return
        if str((options or {}).get(HoodieKey.METADATA_ENABLE.key, "")).strip().lower() == "false":
            if not dry_run:
                log.warning("Deleting the metadata table of %s (hoodie.metadata.enable=false)", self.base_uri)
                self.drop_metadata_table()
            return
        raise MetadataTableError(
            self.base_uri,
            f"has a metadata table (.hoodie/metadata) that {service} does not update: Java readers listing files "
            "through it would see a stale file list. Pass hoodie.metadata.enable=false (CLI: --option "
            "hoodie.metadata.enable=false) to delete the metadata table first, as a Java writer with that setting does",
        )

    def drop_metadata_table(self) -> None:
        """Delete the metadata table as a Java writer with ``hoodie.metadata.enable=false`` does
        (``HoodieTableMetadataUtil.deleteMetadataTable``): clear ``hoodie.table.metadata.partitions[.inflight]``
        first, so readers go back to listing files, then delete ``.hoodie/metadata``. Java rebuilds it on its next
        write with metadata enabled."""
        keys = (HoodieKey.METADATA_PARTITIONS.key, HoodieKey.METADATA_PARTITIONS_INFLIGHT.key)
        if any(k in self.config.raw for k in keys):
            self.update_properties({}, remove=keys)
        self.storage.delete_dir(self.storage.join(HOODIE_DIR, "metadata"))

    # -- timeline ----------------------------------------------------------------------------------------------
    @cached_property
    def timeline(self) -> Timeline:
        """The active timeline (cached; :meth:`refresh` reloads it)."""
        names = [f.name for f in self.storage.list_dir(self.hoodie_dir) if not f.is_dir]
        tl = Timeline.from_file_names(names, where=self.storage.uri(self.hoodie_dir))
        for name in tl.ignored_files:
            log.warning("Ignoring unknown file %s in %s", name, self.storage.uri(self.hoodie_dir))
        return tl

    def refresh(self) -> HudiTable:
        """Forget cached timeline state."""
        self.__dict__.pop("timeline", None)
        return self

    def instant_path(self, instant: Instant) -> str:
        return self.storage.join(HOODIE_DIR, instant.file_name)

    def read_instant(self, instant: Instant) -> bytes:
        """Content of an instant's file (plan files are read from the requested state, as Java does)."""
        path = self.instant_path(instant)
        if not self.storage.exists(path):
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
        return self.storage.read_bytes(path)

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        """``HoodieCommitMetadata`` of a completed commit/deltacommit/replacecommit."""
        return CommitMetadata.from_bytes(self.read_instant(instant), path=self.storage.uri(self.instant_path(instant)))

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
        self.refresh()
        return completed

    def _create(self, instant: Instant, content: bytes) -> None:
        path = self.instant_path(instant)
        try:
            self.storage.create_if_absent(path, content)
        except FileAlreadyExistsError as err:
            raise InvalidInstantStateError(
                self.base_uri, str(instant.time), f"{instant.file_name} already exists on the timeline"
            ) from err
        self.refresh()

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
        base = self.storage.base_path.rstrip("/") + "/"
        parts = set()
        for f in self.storage.walk_files(self.storage.base_path):
            if not f.name.startswith(PARTITION_METAFILE_PREFIX):
                continue
            rel = f.path[len(base) :] if f.path.startswith(base) else f.path
            directory = rel.rsplit("/", 1)[0] if "/" in rel else ""
            if any(seg.startswith(".") for seg in directory.split("/") if seg):
                continue  # .hoodie/, .temp markers, hidden folders are never partitions
            parts.add(directory)
        return sorted(parts)

    def pending_compaction_operations(self, action: Action = Action.COMPACTION) -> dict[FileGroupId, InstantTime]:
        """File groups of every pending (log) compaction plan -> the plan's instant."""
        out: dict[FileGroupId, InstantTime] = {}
        pending = (
            self.timeline.pending_compactions()
            if action is Action.COMPACTION
            else self.timeline.pending_log_compactions()
        )
        for inst in pending:
            req = Instant(inst.time, action, State.REQUESTED)
            path = self.instant_path(req)
            plan = CompactionPlan.from_bytes(self.read_instant(req), path=self.storage.uri(path))
            for op in plan.operations:
                out[FileGroupId(op.partition_path or "", op.file_id or "")] = inst.time
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

    def fs_view(self) -> FileSystemView:
        """The file-system view as of the current timeline."""
        listing: dict[str, list[ListedFile]] = {}
        for p in self.list_partitions():
            listing[p] = [
                ListedFile(f.name, f.size) for f in self.storage.list_dir(self.storage.join(p)) if not f.is_dir
            ]
        return FileSystemView.build(
            timeline=self.timeline,
            listing=listing,
            pending_compaction=self.pending_compaction_operations(),
            pending_log_compaction=self.pending_compaction_operations(Action.LOG_COMPACTION),
            replaced=self.replaced_file_groups(),
        )

    def __repr__(self) -> str:
        return f"HudiTable({self.base_uri!r}, {self.config.table_type.value}, name={self.config.name!r})"
