"""Typed models of Hudi's Avro timeline records (``org.apache.hudi.avro.model``, table version 6).

Attributes are Hudi's field names in snake_case; each dataclass field carries its Avro name in
``field.metadata["avro"]``. Avro nulls are None, arrays are tuples, maps are dicts. Conversion is driven
by the type hints: nested models, ``tuple[...]``, ``dict[str, ...]`` and ``X | None`` are converted, anything
else passes through.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, Union

from lake_orchestration.errors import CorruptFileError, SchemaError
from lake_orchestration.hudi.model.avro.container import decode_container, encode_container
from lake_orchestration.hudi.model.avro.schema import schema_for

_M = TypeVar("_M", bound="AvroModel")


def _avro(name: str) -> dict[str, str]:
    """Dataclass field metadata naming the Avro field."""
    return {"avro": name}


@dataclass(frozen=True)
class _FieldSpec:
    attr: str
    avro: str
    hint: Any
    required: bool


def _optional_inner(hint: Any) -> Any:
    """``X | None`` -> X; other hints unchanged."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _to_avro(value: Any, hint: Any) -> Any:
    if value is None:
        return None
    hint = _optional_inner(hint)
    origin = typing.get_origin(hint)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return [_to_avro(v, item) for v in value]
    if origin is dict:
        vals = typing.get_args(hint)[1]
        return {k: _to_avro(v, vals) for k, v in value.items()}
    if isinstance(value, AvroModel):
        return value.to_avro()
    return value


def _from_avro(value: Any, hint: Any, where: str) -> Any:
    if value is None:
        return None
    hint = _optional_inner(hint)
    origin = typing.get_origin(hint)
    if origin is tuple:
        if not isinstance(value, list):
            raise SchemaError(f"{where}: expected an Avro array, found {type(value).__name__}")
        item = typing.get_args(hint)[0]
        return tuple(_from_avro(v, item, where) for v in value)
    if origin is dict:
        if not isinstance(value, dict):
            raise SchemaError(f"{where}: expected an Avro map, found {type(value).__name__}")
        vals = typing.get_args(hint)[1]
        return {k: _from_avro(v, vals, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, AvroModel):
        if not isinstance(value, dict):
            raise SchemaError(f"{where}: expected an Avro record {hint.AVRO_NAME}, found {type(value).__name__}")
        return hint.from_avro(value)
    return value


class AvroModel:
    """Base of the typed Avro record models: conversion to/from Avro dicts and container bytes."""

    AVRO_NAME: ClassVar[str]

    @classmethod
    @functools.cache
    def _specs(cls) -> tuple[_FieldSpec, ...]:
        hints = typing.get_type_hints(cls)
        return tuple(
            _FieldSpec(
                f.name,
                f.metadata["avro"],
                hints[f.name],
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        )

    def to_avro(self) -> dict[str, Any]:
        """The Avro record as a dict (fields in schema order; tuples become lists)."""
        return {s.avro: _to_avro(getattr(self, s.attr), s.hint) for s in self._specs()}

    @classmethod
    def from_avro(cls: type[_M], record: dict[str, Any]) -> _M:
        """Build the model from a decoded Avro record, resolving fields by name.

        Unknown fields are ignored; missing fields take the schema default.

        Raises:
            SchemaError: A field without default is missing or has the wrong shape.
        """
        kwargs: dict[str, Any] = {}
        for s in cls._specs():
            if s.avro in record:
                kwargs[s.attr] = _from_avro(record[s.avro], s.hint, f"{cls.AVRO_NAME}.{s.avro}")
            elif s.required:
                raise SchemaError(f"{cls.AVRO_NAME} record lacks the field {s.avro!r}, which has no default")
        return cls(**kwargs)

    def to_bytes(self) -> bytes:
        """A one-record Avro container with our 0.14/0.15 writer schema (as Java writes timeline files)."""
        return encode_container(self.to_avro(), schema_for(self.AVRO_NAME))

    @classmethod
    def from_bytes(cls: type[_M], data: bytes, *, path: str) -> _M:
        """Decode a one-record container with its embedded writer schema, then resolve fields by name.

        Args:
            data: The file content.
            path: The file's path, for error messages.

        Raises:
            CorruptFileError: Not a one-record container, a record of another type, or unusable fields.
        """
        record, writer_schema = decode_container(data, path=path)
        name = str(writer_schema.get("name", "")).rpartition(".")[2] if isinstance(writer_schema, dict) else ""
        if name != cls.AVRO_NAME:
            raise CorruptFileError(path, f"expected an Avro {cls.AVRO_NAME} record, the file holds {name or '?'}")
        try:
            return cls.from_avro(record)
        except SchemaError as err:
            raise CorruptFileError(path, str(err)) from err


@dataclass(frozen=True, kw_only=True)
class InstantInfo(AvroModel):
    """An instant reference (``HoodieInstantInfo``)."""

    AVRO_NAME = "HoodieInstantInfo"
    commit_time: str = field(metadata=_avro("commitTime"))
    """Instant time."""
    action: str = field(metadata=_avro("action"))
    """Action, e.g. ``deltacommit``."""


# ---------------------------------------------------------------- compaction


@dataclass(frozen=True, kw_only=True)
class CompactionOperation(AvroModel):
    """One file slice to compact (``HoodieCompactionOperation``)."""

    AVRO_NAME = "HoodieCompactionOperation"
    base_instant_time: str | None = field(metadata=_avro("baseInstantTime"))
    """Base instant of the file slice."""
    delta_file_paths: tuple[str, ...] | None = field(default=None, metadata=_avro("deltaFilePaths"))
    """Log file names (plan version 2; full paths in version 1), in log-file order."""
    data_file_path: str | None = field(default=None, metadata=_avro("dataFilePath"))
    """Base file name, None for a log-only slice."""
    file_id: str | None = field(metadata=_avro("fileId"))
    """File group id."""
    partition_path: str | None = field(default=None, metadata=_avro("partitionPath"))
    """Relative partition path (``""`` for non-partitioned tables)."""
    metrics: dict[str, float] | None = field(default=None, metadata=_avro("metrics"))
    """Strategy metrics (TOTAL_LOG_FILES, TOTAL_IO_MB, ...)."""
    bootstrap_file_path: str | None = field(default=None, metadata=_avro("bootstrapFilePath"))
    """Bootstrap source file, if any."""


@dataclass(frozen=True, kw_only=True)
class CompactionStrategy(AvroModel):
    """Execution strategy of a compaction plan (``HoodieCompactionStrategy``)."""

    AVRO_NAME = "HoodieCompactionStrategy"
    compactor_class_name: str | None = field(default=None, metadata=_avro("compactorClassName"))
    """Execution strategy class name."""
    strategy_params: dict[str, str] | None = field(default=None, metadata=_avro("strategyParams"))
    """Strategy parameters (also mark log compaction)."""
    version: int | None = field(default=1, metadata=_avro("version"))
    """Schema version."""


@dataclass(frozen=True, kw_only=True)
class CompactionPlan(AvroModel):
    """Content of ``<ts>.compaction.requested`` / ``.logcompaction.requested`` (``HoodieCompactionPlan``)."""

    AVRO_NAME = "HoodieCompactionPlan"
    operations: tuple[CompactionOperation, ...] | None = field(default=None, metadata=_avro("operations"))
    """File slices to compact."""
    extra_metadata: dict[str, str] | None = field(default=None, metadata=_avro("extraMetadata"))
    """Caller's extra metadata."""
    version: int | None = field(default=1, metadata=_avro("version"))
    """Plan version (2 = log file names instead of paths)."""
    strategy: CompactionStrategy | None = field(default=None, metadata=_avro("strategy"))
    """Execution strategy; None for regular compaction."""
    preserve_hoodie_metadata: bool | None = field(default=False, metadata=_avro("preserveHoodieMetadata"))
    """Whether meta columns are preserved."""


# ---------------------------------------------------------------- clean


@dataclass(frozen=True, kw_only=True)
class ActionInstant(AvroModel):
    """An instant with state (``HoodieActionInstant``)."""

    AVRO_NAME = "HoodieActionInstant"
    timestamp: str = field(metadata=_avro("timestamp"))
    """Instant time."""
    action: str = field(metadata=_avro("action"))
    """Action name."""
    state: str = field(metadata=_avro("state"))
    """State name, e.g. ``COMPLETED``."""


@dataclass(frozen=True, kw_only=True)
class CleanFileInfo(AvroModel):
    """A file the cleaner will delete (``HoodieCleanFileInfo``)."""

    AVRO_NAME = "HoodieCleanFileInfo"
    file_path: str | None = field(default=None, metadata=_avro("filePath"))
    """Full path of the file."""
    is_bootstrap_base_file: bool | None = field(default=None, metadata=_avro("isBootstrapBaseFile"))
    """Whether it is a bootstrap source file."""


@dataclass(frozen=True, kw_only=True)
class CleanerPlan(AvroModel):
    """Content of ``<ts>.clean.requested`` / ``.clean.inflight`` (``HoodieCleanerPlan``)."""

    AVRO_NAME = "HoodieCleanerPlan"
    earliest_instant_to_retain: ActionInstant | None = field(default=None, metadata=_avro("earliestInstantToRetain"))
    """Earliest commit to retain, None if none."""
    last_completed_commit_timestamp: str = field(default="", metadata=_avro("lastCompletedCommitTimestamp"))
    """Latest completed commit when planned."""
    policy: str = field(metadata=_avro("policy"))
    """Cleaning policy name."""
    files_to_be_deleted_per_partition: dict[str, tuple[str, ...]] | None = field(
        default=None, metadata=_avro("filesToBeDeletedPerPartition")
    )
    """Deprecated (Hudi writes ``{}``); replaced by ``file_paths_to_be_deleted_per_partition``."""
    version: int | None = field(default=1, metadata=_avro("version"))
    """Plan version (2)."""
    file_paths_to_be_deleted_per_partition: dict[str, tuple[CleanFileInfo, ...]] | None = field(
        default=None, metadata=_avro("filePathsToBeDeletedPerPartition")
    )
    """Files to delete per partition."""
    partitions_to_be_deleted: tuple[str, ...] | None = field(default=None, metadata=_avro("partitionsToBeDeleted"))
    """Partitions to delete entirely."""
    extra_metadata: dict[str, str] | None = field(default=None, metadata=_avro("extraMetadata"))
    """Extra metadata."""


@dataclass(frozen=True, kw_only=True)
class CleanPartitionMetadata(AvroModel):
    """Clean result of one partition (``HoodieCleanPartitionMetadata``)."""

    AVRO_NAME = "HoodieCleanPartitionMetadata"
    partition_path: str = field(metadata=_avro("partitionPath"))
    """Relative partition path."""
    policy: str = field(metadata=_avro("policy"))
    """Cleaning policy name."""
    delete_path_patterns: tuple[str, ...] = field(metadata=_avro("deletePathPatterns"))
    """File names planned for deletion."""
    success_delete_files: tuple[str, ...] = field(metadata=_avro("successDeleteFiles"))
    """File names deleted (or already missing)."""
    failed_delete_files: tuple[str, ...] = field(metadata=_avro("failedDeleteFiles"))
    """File names that could not be deleted."""
    is_partition_deleted: bool | None = field(default=None, metadata=_avro("isPartitionDeleted"))
    """Whether the partition was deleted."""


@dataclass(frozen=True, kw_only=True)
class CleanMetadata(AvroModel):
    """Content of a completed ``<ts>.clean`` (``HoodieCleanMetadata``)."""

    AVRO_NAME = "HoodieCleanMetadata"
    policy: str = field(default="", metadata=_avro("policy"))
    """Cleaning policy name (unused by Hudi, usually empty)."""
    start_clean_time: str = field(metadata=_avro("startCleanTime"))
    """Clean instant time."""
    time_taken_in_millis: int = field(metadata=_avro("timeTakenInMillis"))
    """Duration of the clean."""
    total_files_deleted: int = field(metadata=_avro("totalFilesDeleted"))
    """Number of files deleted."""
    earliest_commit_to_retain: str = field(metadata=_avro("earliestCommitToRetain"))
    """Earliest commit retained, or ``""``."""
    last_completed_commit_timestamp: str = field(default="", metadata=_avro("lastCompletedCommitTimestamp"))
    """Latest completed commit when planned."""
    partition_metadata: dict[str, CleanPartitionMetadata] = field(metadata=_avro("partitionMetadata"))
    """Result per partition."""
    version: int | None = field(default=1, metadata=_avro("version"))
    """Metadata version (2)."""
    bootstrap_partition_metadata: dict[str, CleanPartitionMetadata] | None = field(
        default=None, metadata=_avro("bootstrapPartitionMetadata")
    )
    """Result per partition for bootstrap source files."""
    extra_metadata: dict[str, str] | None = field(default=None, metadata=_avro("extraMetadata"))
    """The plan's extra metadata (0.15: ``savepointed_timestamps``, read by the next clean)."""


# ---------------------------------------------------------------- rollback


@dataclass(frozen=True, kw_only=True)
class RollbackRequest(AvroModel):
    """What to undo in one file group (``HoodieRollbackRequest``)."""

    AVRO_NAME = "HoodieRollbackRequest"
    partition_path: str = field(metadata=_avro("partitionPath"))
    """Relative partition path (``""`` for non-partitioned tables)."""
    file_id: str | None = field(default=None, metadata=_avro("fileId"))
    """File group id (``""`` for base-file deletions)."""
    latest_base_instant: str | None = field(default=None, metadata=_avro("latestBaseInstant"))
    """Base instant of the slice the rollback block goes to (``""`` for base-file deletions)."""
    files_to_be_deleted: tuple[str, ...] = field(default=(), metadata=_avro("filesToBeDeleted"))
    """Absolute paths (without scheme) of files to delete."""
    log_blocks_to_be_deleted: dict[str, int] | None = field(default=None, metadata=_avro("logBlocksToBeDeleted"))
    """Scheme-qualified log file path -> size, of logs written by the failed instant."""


@dataclass(frozen=True, kw_only=True)
class RollbackPlan(AvroModel):
    """Content of ``<ts>.rollback.requested`` (``HoodieRollbackPlan``)."""

    AVRO_NAME = "HoodieRollbackPlan"
    instant_to_rollback: InstantInfo | None = field(default=None, metadata=_avro("instantToRollback"))
    """The instant being rolled back."""
    rollback_requests: tuple[RollbackRequest, ...] | None = field(default=None, metadata=_avro("RollbackRequests"))
    """Per file group work (the Avro field name is capitalised in Hudi)."""
    version: int | None = field(default=1, metadata=_avro("version"))
    """Plan version (1)."""


@dataclass(frozen=True, kw_only=True)
class RollbackPartitionMetadata(AvroModel):
    """Rollback result of one partition (``HoodieRollbackPartitionMetadata``)."""

    AVRO_NAME = "HoodieRollbackPartitionMetadata"
    partition_path: str = field(metadata=_avro("partitionPath"))
    """Relative partition path."""
    success_delete_files: tuple[str, ...] = field(metadata=_avro("successDeleteFiles"))
    """Deleted files (paths as in the plan)."""
    failed_delete_files: tuple[str, ...] = field(metadata=_avro("failedDeleteFiles"))
    """Files that could not be deleted."""
    rollback_log_files: dict[str, int] | None = field(default=None, metadata=_avro("rollbackLogFiles"))
    """Log file written with the rollback command block -> its size."""
    log_files_from_failed_commit: dict[str, int] | None = field(
        default=None, metadata=_avro("logFilesFromFailedCommit")
    )
    """The plan's ``logBlocksToBeDeleted`` (0.14+ field)."""


@dataclass(frozen=True, kw_only=True)
class RollbackMetadata(AvroModel):
    """Content of a completed ``<ts>.rollback`` (``HoodieRollbackMetadata``)."""

    AVRO_NAME = "HoodieRollbackMetadata"
    start_rollback_time: str = field(metadata=_avro("startRollbackTime"))
    """Rollback instant time."""
    time_taken_in_millis: int = field(metadata=_avro("timeTakenInMillis"))
    """Duration of the rollback."""
    total_files_deleted: int = field(metadata=_avro("totalFilesDeleted"))
    """Number of files deleted."""
    commits_rollback: tuple[str, ...] = field(metadata=_avro("commitsRollback"))
    """Instant times rolled back."""
    partition_metadata: dict[str, RollbackPartitionMetadata] = field(metadata=_avro("partitionMetadata"))
    """Result per partition."""
    version: int | None = field(default=1, metadata=_avro("version"))
    """Metadata version (1)."""
    instants_rollback: tuple[InstantInfo, ...] = field(default=(), metadata=_avro("instantsRollback"))
    """Instants rolled back, with their action."""


# ---------------------------------------------------------------- savepoint


@dataclass(frozen=True, kw_only=True)
class SavepointPartitionMetadata(AvroModel):
    """Savepointed files of one partition (``HoodieSavepointPartitionMetadata``)."""

    AVRO_NAME = "HoodieSavepointPartitionMetadata"
    partition_path: str = field(metadata=_avro("partitionPath"))
    """Relative partition path."""
    savepoint_data_file: tuple[str, ...] = field(metadata=_avro("savepointDataFile"))
    """Names of the latest base files as of the savepoint."""


@dataclass(frozen=True, kw_only=True)
class SavepointMetadata(AvroModel):
    """Content of a completed ``<ts>.savepoint`` (``HoodieSavepointMetadata``)."""

    AVRO_NAME = "HoodieSavepointMetadata"
    savepointed_by: str = field(metadata=_avro("savepointedBy"))
    """User who made the savepoint."""
    savepointed_at: int = field(metadata=_avro("savepointedAt"))
    """Epoch milliseconds (Java writes ``System.currentTimeMillis()``)."""
    comments: str = field(metadata=_avro("comments"))
    """Free text."""
    partition_metadata: dict[str, SavepointPartitionMetadata] = field(metadata=_avro("partitionMetadata"))
    """Savepointed files per partition."""
    version: int | None = field(default=1, metadata=_avro("version"))
    """Metadata version."""


# ---------------------------------------------------------------- replace / clustering


@dataclass(frozen=True, kw_only=True)
class SliceInfo(AvroModel):
    """A file slice in a clustering group (``HoodieSliceInfo``)."""

    AVRO_NAME = "HoodieSliceInfo"
    data_file_path: str | None = field(default=None, metadata=_avro("dataFilePath"))
    """Base file path."""
    delta_file_paths: tuple[str, ...] | None = field(default=None, metadata=_avro("deltaFilePaths"))
    """Log file paths."""
    file_id: str | None = field(metadata=_avro("fileId"))
    """File group id."""
    partition_path: str | None = field(default=None, metadata=_avro("partitionPath"))
    """Relative partition path."""
    bootstrap_file_path: str | None = field(default=None, metadata=_avro("bootstrapFilePath"))
    """Bootstrap source file, if any."""
    version: int | None = field(default=1, metadata=_avro("version"))
    """Schema version."""


@dataclass(frozen=True, kw_only=True)
class ClusteringGroup(AvroModel):
    """Slices rewritten together (``HoodieClusteringGroup``)."""

    AVRO_NAME = "HoodieClusteringGroup"
    slices: tuple[SliceInfo, ...] | None = field(default=None, metadata=_avro("slices"))
    """Input file slices."""
    metrics: dict[str, float] | None = field(default=None, metadata=_avro("metrics"))
    """Strategy metrics."""
    num_output_file_groups: int | None = field(default=1, metadata=_avro("numOutputFileGroups"))
    """Number of file groups to write."""
    extra_metadata: dict[str, str] | None = field(default=None, metadata=_avro("extraMetadata"))
    """Extra metadata (0.14+ field)."""
    version: int | None = field(default=1, metadata=_avro("version"))
    """Schema version."""


@dataclass(frozen=True, kw_only=True)
class ClusteringStrategy(AvroModel):
    """Execution strategy of a clustering plan (``HoodieClusteringStrategy``)."""

    AVRO_NAME = "HoodieClusteringStrategy"
    strategy_class_name: str | None = field(default=None, metadata=_avro("strategyClassName"))
    """Execution strategy class name."""
    strategy_params: dict[str, str] | None = field(default=None, metadata=_avro("strategyParams"))
    """Strategy parameters (e.g. sort columns)."""
    version: int | None = field(default=1, metadata=_avro("version"))
    """Schema version."""


@dataclass(frozen=True, kw_only=True)
class ClusteringPlan(AvroModel):
    """A clustering plan (``HoodieClusteringPlan``)."""

    AVRO_NAME = "HoodieClusteringPlan"
    input_groups: tuple[ClusteringGroup, ...] | None = field(default=None, metadata=_avro("inputGroups"))
    """Groups to cluster."""
    strategy: ClusteringStrategy | None = field(default=None, metadata=_avro("strategy"))
    """Execution strategy."""
    extra_metadata: dict[str, str] | None = field(default=None, metadata=_avro("extraMetadata"))
    """Extra metadata."""
    version: int | None = field(default=1, metadata=_avro("version"))
    """Plan version."""
    preserve_hoodie_metadata: bool | None = field(default=None, metadata=_avro("preserveHoodieMetadata"))
    """Whether meta columns are preserved."""


@dataclass(frozen=True, kw_only=True)
class RequestedReplaceMetadata(AvroModel):
    """Content of ``<ts>.replacecommit.requested`` (``HoodieRequestedReplaceMetadata``)."""

    AVRO_NAME = "HoodieRequestedReplaceMetadata"
    operation_type: str | None = field(default=None, metadata=_avro("operationType"))
    """``CLUSTER`` for clustering; None for insert_overwrite (all-null record)."""
    clustering_plan: ClusteringPlan | None = field(default=None, metadata=_avro("clusteringPlan"))
    """The clustering plan (clustering only)."""
    extra_metadata: dict[str, str] | None = field(default=None, metadata=_avro("extraMetadata"))
    """Extra metadata."""
    version: int | None = field(default=1, metadata=_avro("version"))
    """Schema version (Java writes null in the insert_overwrite record)."""


# ---------------------------------------------------------------- archival


@dataclass(frozen=True, kw_only=True)
class MergeArchiveFilePlan(AvroModel):
    """Content of ``.hoodie/archived/mergeArchivePlan`` (``HoodieMergeArchiveFilePlan``)."""

    AVRO_NAME = "HoodieMergeArchiveFilePlan"
    candidate: tuple[str, ...] | None = field(default=None, metadata=_avro("candidate"))
    """Full paths of the small archive files to merge."""
    merged_archive_file_name: str | None = field(default=None, metadata=_avro("mergedArchiveFileName"))
    """Name of the merged archive file."""


@dataclass(frozen=True, kw_only=True)
class ArchivedMetaEntry(AvroModel):
    """One archived instant state (``HoodieArchivedMetaEntry``); exactly one payload field is set."""

    AVRO_NAME = "HoodieArchivedMetaEntry"
    hoodie_commit_metadata: dict[str, Any] | None = field(default=None, metadata=_avro("hoodieCommitMetadata"))
    """Commit/deltacommit metadata (HoodieCommitMetadata record as a dict)."""
    hoodie_clean_metadata: CleanMetadata | None = field(default=None, metadata=_avro("hoodieCleanMetadata"))
    """Completed clean."""
    hoodie_compaction_metadata: dict[str, Any] | None = field(default=None, metadata=_avro("hoodieCompactionMetadata"))
    """Deprecated HoodieCompactionMetadata record as a dict."""
    hoodie_rollback_metadata: RollbackMetadata | None = field(default=None, metadata=_avro("hoodieRollbackMetadata"))
    """Completed rollback."""
    hoodie_save_point_metadata: SavepointMetadata | None = field(
        default=None, metadata=_avro("hoodieSavePointMetadata")
    )
    """Completed savepoint."""
    commit_time: str | None = field(default=None, metadata=_avro("commitTime"))
    """Instant time."""
    action_type: str | None = field(default=None, metadata=_avro("actionType"))
    """Action name."""
    version: int | None = field(default=1, metadata=_avro("version"))
    """Entry version."""
    hoodie_compaction_plan: CompactionPlan | None = field(default=None, metadata=_avro("hoodieCompactionPlan"))
    """Pending compaction/logcompaction plan."""
    hoodie_cleaner_plan: CleanerPlan | None = field(default=None, metadata=_avro("hoodieCleanerPlan"))
    """Pending clean plan."""
    action_state: str | None = field(default=None, metadata=_avro("actionState"))
    """``REQUESTED``, ``INFLIGHT`` or ``COMPLETED``."""
    hoodie_replace_commit_metadata: dict[str, Any] | None = field(
        default=None, metadata=_avro("hoodieReplaceCommitMetadata")
    )
    """Completed replacecommit (HoodieReplaceCommitMetadata record as a dict)."""
    hoodie_requested_replace_metadata: RequestedReplaceMetadata | None = field(
        default=None, metadata=_avro("hoodieRequestedReplaceMetadata")
    )
    """Requested replacecommit."""
    hoodie_inflight_replace_metadata: dict[str, Any] | None = field(
        default=None, metadata=_avro("HoodieInflightReplaceMetadata")
    )
    """Inflight replacecommit (HoodieCommitMetadata as a dict; Hudi spells this field with a capital H)."""
    hoodie_index_commit_metadata: dict[str, Any] | None = field(
        default=None, metadata=_avro("hoodieIndexCommitMetadata")
    )
    """Completed indexing (HoodieIndexCommitMetadata record as a dict)."""
    state_transition_time: str | None = field(default=None, metadata=_avro("stateTransitionTime"))
    """Time of the state transition."""
