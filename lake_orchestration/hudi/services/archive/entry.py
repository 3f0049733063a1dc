"""One timeline state file -> one ``HoodieArchivedMetaEntry`` record. Mirrors ``MetadataConversionUtils``
(0.14/0.15) including the Jackson JSON -> Avro conversion of commit metadata.
"""

from __future__ import annotations

from typing import Any

from lake_orchestration.errors import CorruptFileError
from lake_orchestration.hudi.model.avro import (
    ArchivedMetaEntry,
    CleanerPlan,
    CleanMetadata,
    CompactionPlan,
    RequestedReplaceMetadata,
    RollbackMetadata,
    SavepointMetadata,
    schema_for,
)
from lake_orchestration.hudi.model.commit_metadata import commit_json_object
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.table import HudiTable

ROLLING_STAT_METADATA_KEY = "ROLLING_STAT"
"""``HoodieRollingStatMetadata.ROLLING_STAT_METADATA_KEY``: set to "" in every archived commit metadata."""
# Fields of HoodieDeltaWriteStat: Java parses commit JSON into plain HoodieWriteStat objects (the declared element
# type of partitionToWriteStats), so these never reach the archived Avro record.
_DELTA_ONLY = frozenset({"logVersion", "logOffset", "baseFile", "logFiles", "recordsStats"})


def _record_fields(avro_name: str) -> list[dict[str, Any]]:
    return list(schema_for(avro_name)["fields"])


def _named(schema: Any, name: str) -> dict[str, Any] | None:
    """Find the definition of record ``name`` inside a schema node."""
    if isinstance(schema, list):
        for b in schema:
            found = _named(b, name)
            if found:
                return found
    elif isinstance(schema, dict):
        if schema.get("type") == "record":
            if schema.get("name") == name:
                return schema
            for f in schema["fields"]:
                found = _named(f["type"], name)
                if found:
                    return found
        for k in ("items", "values"):
            if k in schema:
                found = _named(schema[k], name)
                if found:
                    return found
    return None


def _write_stat_fields() -> list[str]:
    stat = _named(schema_for("HoodieCommitMetadata"), "HoodieWriteStat")
    return [f["name"] for f in (stat or {}).get("fields", [])]


def _write_stat(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in _write_stat_fields():
        v = None if name in _DELTA_ONLY else obj.get(name)
        if name == "runtimeStats" and isinstance(v, dict):
            v = {k: v.get(k) for k in ("totalScanTime", "totalCreateTime", "totalUpsertTime")}
        out[name] = v
    return out


def commit_metadata_to_avro(data: bytes, *, path: str, replace: bool = False) -> dict[str, Any]:
    """A commit file's JSON as the Avro ``HoodieCommitMetadata`` (or ``HoodieReplaceCommitMetadata``) record.

    What Jackson's ``convertValue`` yields in ``MetadataConversionUtils.convertCommitMetadata``: fields matched by
    name (write stats as plain ``HoodieWriteStat``), ``version`` left null (Avro's no-arg constructor), empty
    content = empty metadata with operation ``UNKNOWN``, ``operationType=COMPACT`` when ``compacted``, and
    ``extraMetadata["ROLLING_STAT"] = ""``.

    Raises:
        CorruptFileError: The content is not a JSON object.
    """
    obj = commit_json_object(data, path=path)
    compacted = bool(obj.get("compacted") or False)
    p2ws = obj.get("partitionToWriteStats") or {}
    extra = {str(k): str(v) for k, v in (obj.get("extraMetadata") or {}).items() if v is not None}
    extra[ROLLING_STAT_METADATA_KEY] = ""
    values: dict[str, Any] = {
        "partitionToWriteStats": {
            p: [_write_stat(s) for s in (stats or []) if isinstance(s, dict)] for p, stats in p2ws.items()
        },
        "compacted": compacted,
        "extraMetadata": extra,
        "version": None,
        "operationType": "COMPACT" if compacted else (obj.get("operationType") or "UNKNOWN"),
        "partitionToReplaceFileIds": {
            p: list(ids or []) for p, ids in (obj.get("partitionToReplaceFileIds") or {}).items()
        },
    }
    name = "HoodieReplaceCommitMetadata" if replace else "HoodieCommitMetadata"
    return {f["name"]: values.get(f["name"]) for f in _record_fields(name)}


def meta_entry(table: HudiTable, instant: Instant) -> ArchivedMetaEntry:
    """The archived entry of one timeline state file (``MetadataConversionUtils.createMetaWrapper``).

    Raises:
        CorruptFileError: The file's content cannot be decoded as its action's metadata.
        InstantNotFoundError: The file (or the plan it needs) is missing.
    """
    data = table.read_instant(instant)
    where = table.storage.uri(table.instant_path(instant))
    common: dict[str, Any] = {"commit_time": str(instant.time), "action_state": instant.state.name}
    a = instant.action
    if a is Action.CLEAN:
        if instant.is_completed:
            return ArchivedMetaEntry(
                **common, action_type="clean", hoodie_clean_metadata=CleanMetadata.from_bytes(data, path=where)
            )
        if not data:  # 1.x-style empty inflight: the plan lives in the requested file
            req = Instant(instant.time, Action.CLEAN, State.REQUESTED)
            data, where = table.read_instant(req), table.storage.uri(table.instant_path(req))
        return ArchivedMetaEntry(
            **common, action_type="clean", hoodie_cleaner_plan=CleanerPlan.from_bytes(data, path=where)
        )
    if a in (Action.COMMIT, Action.DELTA_COMMIT):
        return ArchivedMetaEntry(
            **common, action_type=a.value, hoodie_commit_metadata=commit_metadata_to_avro(data, path=where)
        )
    if a is Action.REPLACE_COMMIT:
        if instant.is_completed:
            return ArchivedMetaEntry(
                **common,
                action_type="replacecommit",
                hoodie_replace_commit_metadata=commit_metadata_to_avro(data, path=where, replace=True),
            )
        if instant.is_inflight:
            return ArchivedMetaEntry(
                **common,
                action_type="replacecommit",
                hoodie_inflight_replace_metadata=(commit_metadata_to_avro(data, path=where) if data else None),
            )
        return ArchivedMetaEntry(
            **common,
            action_type="replacecommit",
            hoodie_requested_replace_metadata=(RequestedReplaceMetadata.from_bytes(data, path=where) if data else None),
        )
    if a is Action.ROLLBACK:
        return ArchivedMetaEntry(
            **common,
            action_type="rollback",
            hoodie_rollback_metadata=(RollbackMetadata.from_bytes(data, path=where) if instant.is_completed else None),
        )
    if a is Action.SAVEPOINT:
        return ArchivedMetaEntry(
            **common,
            action_type="savepoint",
            hoodie_save_point_metadata=(SavepointMetadata.from_bytes(data, path=where) if data else None),
        )
    if a in (Action.COMPACTION, Action.LOG_COMPACTION):
        # CompactionUtils.getCompactionPlan reads the requested file for both pending states.
        return ArchivedMetaEntry(
            **common,
            action_type=a.value,
            hoodie_compaction_plan=table.read_model(Instant(instant.time, a, State.REQUESTED), CompactionPlan),
        )
    raise CorruptFileError(
        where, f"archival of {a.value} instants is not supported (Hudi: 'Action not fully supported yet')"
    )
