"""The Avro models against timeline files written by Java Hudi 0.14/0.15 (fixture tables, table version 6)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pytest

from lake_orchestration.errors import CorruptFileError
from lake_orchestration.hudi.model.avro import (
    AvroModel,
    InstantInfo,
    RequestedReplaceMetadata,
    RollbackMetadata,
    RollbackPlan,
    decode_container,
    schema_for,
)
from tests.conftest import HudiFixture

pytestmark = pytest.mark.fixtures

GetFixture = Callable[[HudiFixture], Path]

ROLLBACK_TS = "20250126040936578"
FAILED_TS = "20250126040826878"
TABLE = "/opt/data/external_tables/v6_nonpartitioned_rollback"
FILE_GROUP = "0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0"
FAILED_BASE_FILE = f"{TABLE}/cd329d8f-0ce4-4654-84ab-2f769aae5034-0_1-33-44_{FAILED_TS}.parquet"
FAILED_LOG_FILE = f"file:{TABLE}/.{FILE_GROUP}_20250126040823628.log.1_0-33-43"
ROLLBACK_LOG_FILE = f"file:{TABLE}/.{FILE_GROUP}_20250126040823628.log.2_1-0-1"


def _timeline_file(hudi_fixture: GetFixture, fixture: HudiFixture, pattern: str) -> Path:
    matches = sorted((hudi_fixture(fixture) / ".hoodie").glob(pattern))
    assert len(matches) == 1, f"{fixture.name}: expected one .hoodie/{pattern}, found {matches}"
    return matches[0]


def _java_files(hudi_fixture: GetFixture) -> list[tuple[Path, type[AvroModel]]]:
    return [
        (
            _timeline_file(hudi_fixture, HudiFixture.MOR_ROLLBACK, f"{ROLLBACK_TS}.rollback.requested"),
            RollbackPlan,
        ),
        (_timeline_file(hudi_fixture, HudiFixture.MOR_ROLLBACK, f"{ROLLBACK_TS}.rollback"), RollbackMetadata),
        (
            _timeline_file(hudi_fixture, HudiFixture.COW_OVERWRITE_TABLE, "*.replacecommit.requested"),
            RequestedReplaceMetadata,
        ),
    ]


def _header(data: bytes) -> dict[str, Any]:
    return dict(fastavro.reader(io.BytesIO(data)).metadata)


def _normalized(node: Any) -> Any:
    """Schema without ``avro.java.string`` properties and docs; ``{"type": "string"}`` -> ``"string"``."""
    if isinstance(node, list):
        return [_normalized(n) for n in node]
    if isinstance(node, dict):
        out = {k: _normalized(v) for k, v in node.items() if k not in ("avro.java.string", "doc")}
        return out["type"] if list(out) == ["type"] and isinstance(out["type"], str) else out
    return node


def test_rollback_plan_java_file_decodes_marker_based_requests(hudi_fixture: GetFixture) -> None:
    path = _timeline_file(hudi_fixture, HudiFixture.MOR_ROLLBACK, f"{ROLLBACK_TS}.rollback.requested")
    plan = RollbackPlan.from_bytes(path.read_bytes(), path=str(path))
    assert plan.instant_to_rollback == InstantInfo(commit_time=FAILED_TS, action="deltacommit")
    assert plan.version == 1
    assert plan.rollback_requests is not None
    create, append = plan.rollback_requests
    # CREATE marker: the base file written by the failed instant, scheme-less absolute path.
    assert (create.partition_path, create.file_id, create.latest_base_instant) == ("", "", "")
    assert create.files_to_be_deleted == (FAILED_BASE_FILE,)
    assert create.log_blocks_to_be_deleted == {}
    # APPEND marker: the log file the failed instant appended to, scheme-qualified, with its size.
    assert (append.partition_path, append.file_id, append.latest_base_instant) == (
        "",
        FILE_GROUP,
        "20250126040823628",
    )
    assert append.files_to_be_deleted == ()
    assert append.log_blocks_to_be_deleted == {FAILED_LOG_FILE: 11828}


def test_rollback_metadata_java_file_decodes_result(hudi_fixture: GetFixture) -> None:
    path = _timeline_file(hudi_fixture, HudiFixture.MOR_ROLLBACK, f"{ROLLBACK_TS}.rollback")
    meta = RollbackMetadata.from_bytes(path.read_bytes(), path=str(path))
    assert meta.start_rollback_time == ROLLBACK_TS
    assert meta.time_taken_in_millis == 195
    assert meta.total_files_deleted == 1
    assert meta.commits_rollback == (FAILED_TS,)
    assert meta.instants_rollback == (InstantInfo(commit_time=FAILED_TS, action="deltacommit"),)
    assert meta.version == 1
    assert list(meta.partition_metadata) == [""]
    part = meta.partition_metadata[""]
    assert part.partition_path == ""
    assert part.success_delete_files == (FAILED_BASE_FILE,)
    assert part.failed_delete_files == ()
    assert part.rollback_log_files == {ROLLBACK_LOG_FILE: 105}
    assert part.log_files_from_failed_commit == {FAILED_LOG_FILE: 11828}


def test_rollback_metadata_rollback_log_file_size_matches_fixture_file(hudi_fixture: GetFixture) -> None:
    base = hudi_fixture(HudiFixture.MOR_ROLLBACK)
    assert (base / ROLLBACK_LOG_FILE.rsplit("/", 1)[1]).stat().st_size == 105


def test_requested_replace_java_file_insert_overwrite_all_null(hudi_fixture: GetFixture) -> None:
    path = _timeline_file(hudi_fixture, HudiFixture.COW_OVERWRITE_TABLE, "*.replacecommit.requested")
    assert path.name == "20240707001303088.replacecommit.requested"
    meta = RequestedReplaceMetadata.from_bytes(path.read_bytes(), path=str(path))
    # Even `version` (Avro default 1) is null: Java writes an empty record, not the builder defaults.
    assert meta == RequestedReplaceMetadata(
        operation_type=None, clustering_plan=None, extra_metadata=None, version=None
    )


def test_rollback_inflight_java_file_empty_raises_corrupt_file_error(hudi_fixture: GetFixture) -> None:
    path = _timeline_file(hudi_fixture, HudiFixture.MOR_ROLLBACK, f"{ROLLBACK_TS}.rollback.inflight")
    assert path.read_bytes() == b""
    with pytest.raises(CorruptFileError, match="empty file") as exc:
        RollbackPlan.from_bytes(b"", path=str(path))
    assert str(path) in str(exc.value)


def test_java_files_reencode_record_equal(hudi_fixture: GetFixture) -> None:
    for path, model_type in _java_files(hudi_fixture):
        java = path.read_bytes()
        java_record, _ = decode_container(java, path=str(path))
        ours = model_type.from_bytes(java, path=str(path)).to_bytes()
        our_record, _ = decode_container(ours, path="<ours>")
        assert our_record == java_record, path.name
        assert model_type.from_avro(java_record).to_avro() == java_record, path.name


def test_java_files_reencode_header_keys_equal(hudi_fixture: GetFixture) -> None:
    for path, model_type in _java_files(hudi_fixture):
        java = path.read_bytes()
        ours = model_type.from_bytes(java, path=str(path)).to_bytes()
        assert list(_header(ours)) == list(_header(java)) == ["avro.schema"], path.name


def test_java_files_reencode_bytes_equal_except_sync_marker(hudi_fixture: GetFixture) -> None:
    for path, model_type in _java_files(hudi_fixture):
        java = path.read_bytes()
        ours = model_type.from_bytes(java, path=str(path)).to_bytes()
        assert len(ours) == len(java), path.name
        # The container ends with the sync marker, which also closes the header: 16 random bytes, twice.
        assert ours.replace(ours[-16:], b"\0" * 16) == java.replace(java[-16:], b"\0" * 16), path.name


def test_java_files_writer_schema_matches_ours(hudi_fixture: GetFixture) -> None:
    for path, model_type in _java_files(hudi_fixture):
        _, java_schema = decode_container(path.read_bytes(), path=str(path))
        assert _normalized(schema_for(model_type.AVRO_NAME)) == _normalized(java_schema), path.name
        # Stronger: the header text is identical, avro.java.string and key order included.
        assert _header(path.read_bytes())["avro.schema"] == json.dumps(
            schema_for(model_type.AVRO_NAME), separators=(",", ":")
        )


def test_java_rollback_metadata_writer_schema_has_0_14_partition_field(hudi_fixture: GetFixture) -> None:
    path = _timeline_file(hudi_fixture, HudiFixture.MOR_ROLLBACK, f"{ROLLBACK_TS}.rollback")
    _, java_schema = decode_container(path.read_bytes(), path=str(path))
    partition = java_schema["fields"][4]["type"]["values"]
    assert [f["name"] for f in partition["fields"]] == [
        "partitionPath",
        "successDeleteFiles",
        "failedDeleteFiles",
        "rollbackLogFiles",
        "logFilesFromFailedCommit",
    ]
