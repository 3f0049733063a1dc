"""Bootstrap planning: list the source dataset's partitions and files, choose a mode per partition, derive the table
schema. Writes nothing.

Mirrors Hudi 0.14/0.15 ``SparkBootstrapCommitActionExecutor.listAndProcessSourcePartitions``:
``BootstrapUtils.getAllLeafFoldersWithFiles`` (the deepest folders holding ``.parquet`` files are the partitions,
``""`` for files at the top level of a non-partitioned dataset; hidden folders such as ``.hoodie`` are skipped),
the bootstrap schema of ``HoodieSparkBootstrapSchemaProvider`` (the Parquet schema of a source file as the writer's
Avro record ``<table>_record``), then the mode selector of ``hoodie.bootstrap.mode.selector``.
"""

from __future__ import annotations

import getpass
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import PlanError, TableNotFoundError
from lake_orchestration.hudi.model.avro.bootstrap import FilePath, FileStatus, FSPermission
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.instant import FULL_BOOTSTRAP_INSTANT, METADATA_BOOTSTRAP_INSTANT
from lake_orchestration.hudi.model.schema import META_FIELDS, arrow_to_avro_schema
from lake_orchestration.hudi.services.bootstrap.config import BootstrapConfig, BootstrapMode
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.base_file_reader import source_storage_and_path
from lake_orchestration.io.hadoop_paths import qualified_path
from lake_orchestration.io.storage import FileInfo, Storage

SOURCE_FILE_EXTENSION = ".parquet"
"""Base file extension of the table (``HoodieFileFormat.PARQUET``): the source files bootstrapped."""
_LOCAL_BLOCK_SIZE = 32 * 1024 * 1024
"""Block size Hadoop's local (and S3A) file system reports (``fs.local.block.size``)."""


@dataclass(frozen=True, kw_only=True)
class SourceFile:
    """One source data file."""

    path: str
    """Storage path (in the source storage's own form)."""
    uri: str
    """Its Hadoop path as Java records it (``file:/data/src/p/a.parquet``, ``s3a://bucket/src/p/a.parquet``)."""
    size: int
    """Size in bytes."""
    modification_time_ms: int
    """Last modification, epoch ms."""
    mode: int = 0o644
    """POSIX permission bits."""
    owner: str = ""
    """Owner name."""
    group: str = ""
    """Group name."""

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    def file_status(self) -> FileStatus:
        """``FileStatusUtils.fromFileStatus`` of the file: what the bootstrap index records."""
        return FileStatus(
            path=FilePath(uri=self.uri),
            length=self.size,
            is_dir=False,
            block_replication=1,
            block_size=_LOCAL_BLOCK_SIZE,
            modification_time=self.modification_time_ms,
            access_time=self.modification_time_ms,
            permission=FSPermission.from_mode(self.mode),
            owner=self.owner,
            group=self.group,
        )


@dataclass(frozen=True, kw_only=True)
class PartitionPlan:
    """One source partition and the mode it is bootstrapped with."""

    partition_path: str
    """Relative folder in the source dataset, also the partition path in the table (identity translator)."""
    mode: BootstrapMode
    """METADATA_ONLY or FULL_RECORD."""
    files: tuple[SourceFile, ...]
    """Its source files, by name."""

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "partition": self.partition_path,
            "mode": self.mode.value,
            "files": len(self.files),
            "bytes": sum(f.size for f in self.files),
        }


@dataclass(frozen=True, kw_only=True)
class BootstrapPlan:
    """What a bootstrap writes: per source partition its mode and files, and the table schema."""

    table_uri: str
    """The table's base path."""
    source_path: str
    """The source dataset's base path (``hoodie.bootstrap.base.path``)."""
    schema: dict[str, Any]
    """The bootstrap schema: the writer's Avro record of the source columns (no meta fields)."""
    partitions: tuple[PartitionPlan, ...]
    """Source partitions in path order."""
    resume: bool = False
    """True when ``00000000000001`` (the METADATA_ONLY half) is already committed and only the FULL_RECORD half
    ``00000000000002`` is left to write (a bootstrap killed between the two, resumed)."""

    def partitions_in(self, mode: BootstrapMode) -> tuple[PartitionPlan, ...]:
        return tuple(p for p in self.partitions if p.mode is mode)

    @property
    def schema_json(self) -> str:
        return json.dumps(self.schema, separators=(",", ":"))

    def to_json_obj(self) -> dict[str, Any]:
        """The plan as ``lake-orch bootstrap --dry-run --json`` prints it."""
        return {
            "table": self.table_uri,
            "source_path": self.source_path,
            "partitions": [p.to_json_obj() for p in self.partitions],
            "metadata_only_files": sum(len(p.files) for p in self.partitions_in(BootstrapMode.METADATA_ONLY)),
            "full_record_files": sum(len(p.files) for p in self.partitions_in(BootstrapMode.FULL_RECORD)),
            "resume": self.resume,
        }


def _source_file(storage: Storage, info: FileInfo) -> SourceFile:
    mode, owner, group = 0o644, getpass.getuser(), getpass.getuser()
    if storage.is_local:
        st = os.stat(info.path)
        mode = st.st_mode & 0o7777
        try:
            import grp
            import pwd

            owner, group = pwd.getpwuid(st.st_uid).pw_name, grp.getgrgid(st.st_gid).gr_name
        except (ImportError, KeyError):
            pass
    return SourceFile(
        path=info.path,
        uri=qualified_path(storage, info.path),
        size=info.size,
        modification_time_ms=info.mtime_ms,
        mode=mode,
        owner=owner,
        group=group,
    )


def list_source_partitions(source: Storage) -> list[tuple[str, list[SourceFile]]]:
    """``BootstrapUtils.getAllLeafFoldersWithFiles``: (relative folder, its ``.parquet`` files by name) of the
    deepest folder level holding such files, in path order.

    Raises:
        StorageError: the source path cannot be listed.
    """
    by_level: dict[int, list[tuple[str, list[SourceFile]]]] = {}
    level = [""]
    depth = 0
    while level:
        below: list[str] = []
        for rel in level:
            entries = source.list_dir(source.join(rel) if rel else source.base_path)
            files = sorted(
                (
                    e
                    for e in entries
                    if not e.is_dir and e.name.endswith(SOURCE_FILE_EXTENSION) and not e.name.startswith((".", "_"))
                ),
                key=lambda e: e.name,
            )
            if files:
                by_level.setdefault(depth, []).append((rel, [_source_file(source, f) for f in files]))
            below.extend(
                f"{rel}/{e.name}" if rel else e.name for e in entries if e.is_dir and not e.name.startswith((".", "_"))
            )
        level = sorted(below)
        depth += 1
    return sorted(by_level[max(by_level)]) if by_level else []


def hive_style_folders(source_path: str, partition_fields: tuple[str, ...], *, storage_options: Any = None) -> bool:
    """True if the source's partition folders are ``<field>=<value>`` for the partition fields (what
    ``hoodie.datasource.write.hive_style_partitioning`` must then be); False when not partitioned or empty."""
    if not partition_fields:
        return False
    folders = list_source_partitions(Storage(source_path, options=storage_options))
    if not folders or not folders[0][0]:
        return False
    segments = folders[0][0].split("/")
    return all(seg.startswith(f"{f}=") for f, seg in zip(partition_fields, segments, strict=False))


ROLLBACK_HINT = (
    "roll it back first: lake-orch rollback {path} --instant-time {instant} "
    "(or rollback_bootstrap(HudiTable({path!r})) in Python)"
)
"""The repair of a bootstrap that failed before ``00000000000001`` committed: a real command and function."""


def _check_table(base_uri: str, storage_options: dict[str, str] | None) -> HudiTable | None:
    """Refuse a table that already has commits or a pending METADATA_ONLY bootstrap (Java: "Active Timeline is
    expected to be empty for bootstrap to be performed").

    Returns the table when the only commit is a completed METADATA_ONLY bootstrap ``00000000000001`` (the
    FULL_RECORD ``00000000000002`` pending or absent: a bootstrap killed between its two halves), which
    :func:`plan_bootstrap` resumes; None for a new or empty table.
    """
    try:
        table = HudiTable(base_uri, storage_options=storage_options)
    except TableNotFoundError:
        return None
    tl = table.timeline
    commits = list(tl.completed_commits())
    pending = [i for i in tl.pending() if str(i.time) <= FULL_BOOTSTRAP_INSTANT]
    if [str(i.time) for i in commits] == [METADATA_BOOTSTRAP_INSTANT] and all(
        str(i.time) == FULL_BOOTSTRAP_INSTANT for i in pending
    ):
        meta = table.read_model(commits[0], CommitMetadata)
        if meta.operation_type == "BOOTSTRAP":
            return table
    if commits:
        raise PlanError(
            f"Cannot bootstrap {base_uri}: the table already has commits (last {commits[-1].time}); a bootstrap "
            "needs an empty timeline. To bootstrap again, delete the table (the source is never modified)"
        )
    if pending:
        raise PlanError(
            f"Cannot bootstrap {base_uri}: a failed bootstrap left {pending[0].file_name} pending; "
            + ROLLBACK_HINT.format(path=base_uri, instant=pending[0].time)
        )
    return None


def _check_resume(table: HudiTable, plan: BootstrapPlan) -> None:
    """A resumed bootstrap must be the one whose METADATA_ONLY half committed: same source, and its selection gives
    the METADATA_ONLY partitions and files the bootstrap index of ``00000000000001`` holds."""
    recorded = table.config.raw.get(HoodieKey.BOOTSTRAP_BASE_PATH.key, "")
    if recorded != plan.source_path:
        raise PlanError(
            f"Cannot resume the bootstrap of {table.base_uri}: its {METADATA_BOOTSTRAP_INSTANT} was bootstrapped "
            f"from {recorded} ({HoodieKey.BOOTSTRAP_BASE_PATH.key}), not from {plan.source_path}"
        )
    committed = {(fg.partition_path, uri) for fg, uri in table.bootstrap_sources().items()}
    planned = {(p.partition_path, f.uri) for p in plan.partitions_in(BootstrapMode.METADATA_ONLY) for f in p.files}
    if committed != planned:
        extra = sorted(planned - committed)[:3]
        gone = sorted(committed - planned)[:3]
        raise PlanError(
            f"Cannot resume the bootstrap of {table.base_uri}: its committed METADATA_ONLY half "
            f"{METADATA_BOOTSTRAP_INSTANT} holds {len(committed)} source file(s), this bootstrap's selection gives "
            f"{len(planned)} METADATA_ONLY file(s) (only in the selection: {extra}; only in the table: {gone}). "
            f"Resume with the same source and {HoodieKey.BOOTSTRAP_MODE_SELECTOR.key}* settings"
        )
    if not plan.partitions_in(BootstrapMode.FULL_RECORD):
        raise PlanError(
            f"Cannot bootstrap {table.base_uri}: the table already has commits (last {METADATA_BOOTSTRAP_INSTANT}): "
            "the bootstrap is complete (no FULL_RECORD partition to write)"
        )


def _first_conflict(a: pa.Schema, b: pa.Schema) -> str | None:
    """The first column present in both schemas whose types do not unify (Arrow's permissive promotion)."""
    for f in a:
        if f.name in b.names and f.name not in META_FIELDS:
            try:
                pa.unify_schemas([pa.schema([f]), pa.schema([b.field(f.name)])], promote_options="permissive")
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                return f.name
    return None


def check_source_types(source: Storage, files: Sequence[SourceFile]) -> None:
    """Every file's columns must have types that unify with the other files' (the FULL_RECORD rows are written as one
    dataset of one schema). Reads the footers only.

    Raises:
        PlanError: naming the two files and the column, with both types.
    """
    seen: list[tuple[SourceFile, pa.Schema]] = []
    for f in files:
        src_storage, src_path = source_storage_and_path(source, f.uri)
        schema = src_storage.open_parquet(src_path).schema_arrow
        for other, other_schema in seen:
            col = _first_conflict(other_schema, schema)
            if col is not None:
                raise PlanError(
                    f"Bootstrap source files disagree on the type of column {col!r}: {other.uri} has "
                    f"{other_schema.field(col).type}, {f.uri} has {schema.field(col).type}; FULL_RECORD writes "
                    "them as one dataset, so the types must be the same (or widen: int32 -> int64)"
                )
        if not any(_same_types(schema, s) for _, s in seen):  # one file per distinct schema is enough
            seen.append((f, schema))


def _same_types(a: pa.Schema, b: pa.Schema) -> bool:
    return a.remove_metadata().equals(b.remove_metadata())


def _check_partition_folder(source: Storage, folder: str, config: BootstrapConfig) -> None:
    """The source folder must be the partition path the table's key generator gives its rows: the skeletons are
    placed by folder (Java's identity ``BootstrapPartitionPathTranslator``), while FULL_RECORD rows and later
    upserts are placed by the key generator; a mismatch would split a record between two partitions."""
    fields = config.write.partition_fields
    segments = folder.split("/") if folder else []
    hive = config.write.hive_style_partitioning
    expected = "/".join(f"{f}=<value>" if hive else "<value>" for f in fields) or "(the top level)"
    ok = len(segments) == len(fields) and all(
        seg.startswith(f"{f}=") if hive else "=" not in seg for f, seg in zip(fields, segments, strict=True)
    )
    if not ok:
        hint = ""
        if not hive and fields and all(seg.startswith(f"{f}=") for f, seg in zip(fields, segments, strict=False)):
            hint = " (hive-style folders: set hoodie.datasource.write.hive_style_partitioning=true)"
        raise PlanError(
            f"Source partition folder {source.uri(source.join(folder))} does not match the table's partition path "
            f"layout {expected} for partition field(s) {list(fields)}{hint}"
        )


def plan_bootstrap(
    base_uri: str, config: BootstrapConfig, *, storage_options: dict[str, str] | None = None
) -> BootstrapPlan:
    """The bootstrap of the source dataset ``config.source_path`` into the table at ``base_uri`` (writes nothing).

    Raises:
        PlanError: no source path, no ``.parquet`` file under it, the key or partition fields are not source
            columns, FULL_RECORD source files disagree on a column's type, the table already has commits (or a
            pending METADATA_ONLY bootstrap), or a resumed bootstrap's selection is not the committed one.
        StorageError: the source cannot be listed or read.
    """
    if not config.source_path:
        raise PlanError("A bootstrap needs the source dataset's path (hoodie.bootstrap.base.path, --source-path)")
    if not config.write.table_name:
        raise PlanError(f"Cannot bootstrap {base_uri}: a table name (hoodie.table.name) is required")
    if not config.write.record_key_fields:
        raise PlanError(
            f"Cannot bootstrap {base_uri}: record key field(s) (hoodie.datasource.write.recordkey.field) are required"
        )
    resume = _check_table(base_uri, storage_options)
    source = Storage(config.source_path, options=storage_options)
    table_storage = Storage(base_uri, options=storage_options)
    src_root = source.base_path.rstrip("/") + "/"
    if table_storage.scheme == source.scheme and (table_storage.base_path.rstrip("/") + "/").startswith(src_root):
        raise PlanError(
            f"Cannot bootstrap into {base_uri}: it lies inside the source {source.uri(source.base_path)}, whose "
            "listing would then take the table's own files for source data"
        )
    folders = list_source_partitions(source)
    if not folders:
        raise PlanError(f"No {SOURCE_FILE_EXTENSION} file under the bootstrap source {source.uri(source.base_path)}")
    first = folders[0][1][0]
    arrow = source.open_parquet(first.path).schema_arrow
    columns = [f for f in arrow if f.name not in META_FIELDS]
    missing_keys = [f for f in config.write.record_key_fields if f not in arrow.names]
    if missing_keys:
        raise PlanError(
            f"Cannot bootstrap from {source.uri(first.path)}: record key field(s) {missing_keys} are not columns of "
            f"the source files (columns: {arrow.names})"
        )
    for p, _ in folders:
        _check_partition_folder(source, p, config)
    # Spark's partitionBy output: hive-style folders hold the partition values, the files lack the columns. Java
    # takes them from the folder (Spark's partition discovery, type inference off: strings, after the file columns)
    from_folder = [f for f in config.write.partition_fields if f not in arrow.names]
    if from_folder and not config.write.hive_style_partitioning:
        raise PlanError(
            f"Cannot bootstrap from {source.uri(first.path)}: partition field(s) {from_folder} are not columns of "
            f"the source files (columns: {arrow.names}) and the folders are not hive-style <field>=<value> folders "
            "they could be read from"
        )
    columns += [pa.field(f, pa.string()) for f in from_folder]
    schema = arrow_to_avro_schema(pa.schema(columns), table_name=config.write.table_name)
    plan = BootstrapPlan(
        table_uri=base_uri,
        source_path=source.uri(source.base_path),
        schema=schema,
        partitions=tuple(
            PartitionPlan(partition_path=p, mode=config.mode_of(p), files=tuple(files)) for p, files in folders
        ),
        resume=resume is not None,
    )
    if resume is not None:
        _check_resume(resume, plan)
    check_source_types(source, [f for p in plan.partitions_in(BootstrapMode.FULL_RECORD) for f in p.files])
    return plan
