"""``HoodieCommitMetadata`` / ``HoodieReplaceCommitMetadata`` JSON (v6 commit, deltacommit, replacecommit files).

Written the way Jackson's default pretty printer renders them in Hudi 0.14 (field order of the Java classes),
read leniently: unknown fields ignored, empty content = empty metadata (as ``HoodieCommitMetadata.fromBytes``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from lake_orchestration.errors import CorruptFileError


@dataclass(kw_only=True)
class RuntimeStats:
    """``HoodieWriteStat.RuntimeStats`` (milliseconds)."""

    totalScanTime: int = 0
    totalUpsertTime: int = 0
    totalCreateTime: int = 0


@dataclass(kw_only=True)
class WriteStat:
    """``HoodieWriteStat`` (+ the ``HoodieDeltaWriteStat`` fields for log writes), in Jackson field order.

    Field names are Hudi's JSON names so a stat reads exactly like the file.
    """

    fileId: str = ""
    path: str | None = None
    cdcStats: dict[str, int] | None = None
    prevCommit: str = "null"
    numWrites: int = 0
    numDeletes: int = 0
    numUpdateWrites: int = 0
    numInserts: int = 0
    totalWriteBytes: int = 0
    totalWriteErrors: int = 0
    tempPath: str | None = None
    partitionPath: str | None = None
    totalLogRecords: int = 0
    totalLogFilesCompacted: int = 0
    totalLogSizeCompacted: int = 0
    totalUpdatedRecordsCompacted: int = 0
    totalLogBlocks: int = 0
    totalCorruptLogBlock: int = 0
    totalRollbackBlocks: int = 0
    fileSizeInBytes: int = 0
    minEventTime: int | None = None
    maxEventTime: int | None = None
    runtimeStats: RuntimeStats | None = None
    # HoodieDeltaWriteStat only (None = not a delta stat, field omitted)
    logVersion: int | None = None
    logOffset: int | None = None
    baseFile: str | None = None
    logFiles: list[str] | None = None
    recordsStats: dict[str, Any] | None = None

    _DELTA_FIELDS = ("logVersion", "logOffset", "baseFile", "logFiles", "recordsStats")

    @property
    def is_delta(self) -> bool:
        return self.logFiles is not None

    def to_json_obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in self._DELTA_FIELDS and not self.is_delta:
                continue
            if isinstance(v, RuntimeStats):
                v = {
                    "totalScanTime": v.totalScanTime,
                    "totalUpsertTime": v.totalUpsertTime,
                    "totalCreateTime": v.totalCreateTime,
                }
            out[f.name] = v
        if self.is_delta and out.get("recordsStats") is None:
            out["recordsStats"] = {"val": None}
        return out

    @classmethod
    def from_json_obj(cls, obj: Mapping[str, Any]) -> WriteStat:
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in obj.items() if k in known}
        rs = kwargs.get("runtimeStats")
        if isinstance(rs, Mapping):
            kwargs["runtimeStats"] = RuntimeStats(
                totalScanTime=int(rs.get("totalScanTime") or 0),
                totalUpsertTime=int(rs.get("totalUpsertTime") or 0),
                totalCreateTime=int(rs.get("totalCreateTime") or 0),
            )
        for k in ("prevCommit",):
            if kwargs.get(k) is None and k in kwargs:
                kwargs[k] = "null"
        return cls(**kwargs)


@dataclass(kw_only=True)
class CommitMetadata:
    """``HoodieCommitMetadata``; ``partition_to_replace_file_ids`` set makes it a replace-commit metadata."""

    partition_to_write_stats: dict[str, list[WriteStat]] = field(default_factory=dict)
    """Write stats per partition path."""
    compacted: bool = False
    """True only for compaction commits."""
    extra_metadata: dict[str, str] = field(default_factory=dict)
    """``extraMetadata``; ``schema`` holds the writer schema."""
    operation_type: str | None = None
    """``WriteOperationType`` name (INSERT, UPSERT, BULK_INSERT, DELETE, COMPACT, ...)."""
    partition_to_replace_file_ids: dict[str, list[str]] | None = None
    """Replace commits only: replaced file ids per partition."""

    @property
    def schema(self) -> str | None:
        return self.extra_metadata.get("schema")

    def write_stats(self) -> list[WriteStat]:
        return [s for stats in self.partition_to_write_stats.values() for s in stats]

    def to_json_obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "partitionToWriteStats": {
                p: [s.to_json_obj() for s in stats] for p, stats in self.partition_to_write_stats.items()
            },
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra_metadata),
            "operationType": self.operation_type,
        }
        if self.partition_to_replace_file_ids is not None:
            out["partitionToReplaceFileIds"] = self.partition_to_replace_file_ids
        return out

    def to_bytes(self) -> bytes:
        return jackson_pretty(self.to_json_obj()).encode()

    @classmethod
    def from_bytes(cls, data: bytes, *, path: str) -> CommitMetadata:
        """Parse the JSON of a commit file; empty content gives empty metadata, like Java.

        Raises:
            CorruptFileError: not JSON, or not an object with Hudi's fields.
        """
        if not data.strip():
            return cls()
        obj = commit_json_object(data, path=path)
        try:
            p2ws = obj.get("partitionToWriteStats") or {}
            stats = {p: [WriteStat.from_json_obj(s) for s in (lst or [])] for p, lst in p2ws.items()}
            replace = obj.get("partitionToReplaceFileIds")
            return cls(
                partition_to_write_stats=stats,
                compacted=bool(obj.get("compacted") or False),
                extra_metadata={k: v for k, v in (obj.get("extraMetadata") or {}).items()},
                operation_type=obj.get("operationType"),
                partition_to_replace_file_ids=(
                    {p: list(v or []) for p, v in replace.items()} if isinstance(replace, dict) else None
                ),
            )
        except (TypeError, AttributeError, ValueError) as err:
            raise CorruptFileError(path, f"unexpected HoodieCommitMetadata structure ({err})") from err


def jackson_pretty(obj: Any, indent: int = 0) -> str:
    """JSON as Jackson's ``DefaultPrettyPrinter`` writes it (``"k" : v``, arrays ``[ a, b ]``, 2-space objects)."""
    pad = "  " * indent
    if isinstance(obj, dict):
        if not obj:
            return "{ }"
        inner = ",\n".join(f"{pad}  {json.dumps(str(k))} : {jackson_pretty(v, indent + 1)}" for k, v in obj.items())
        return "{\n" + inner + "\n" + pad + "}"
    if isinstance(obj, list | tuple):
        if not obj:
            return "[ ]"
        return "[ " + ", ".join(jackson_pretty(v, indent) for v in obj) + " ]"
    return json.dumps(obj, ensure_ascii=False)


def commit_json_object(data: bytes, *, path: str) -> dict[str, Any]:
    """The JSON object of a commit file (empty content: ``{}``).

    Raises:
        CorruptFileError: not JSON, or not a JSON object.
    """
    if not data.strip():
        return {}
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CorruptFileError(path, f"not HoodieCommitMetadata JSON ({err})") from err
    if not isinstance(obj, dict):
        raise CorruptFileError(path, f"expected a JSON object, found {type(obj).__name__}")
    return obj
