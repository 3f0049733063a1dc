"""Unit tests of the Avro timeline models, schemas and one-record container files."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import fastavro
import pytest

from lake_orchestration.errors import CorruptFileError, SchemaError
from lake_orchestration.hudi.model.avro import (
    ActionInstant,
    ArchivedMetaEntry,
    AvroModel,
    CleanerPlan,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    CompactionOperation,
    CompactionPlan,
    CompactionStrategy,
    InstantInfo,
    MergeArchiveFilePlan,
    RequestedReplaceMetadata,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
    SavepointMetadata,
    SavepointPartitionMetadata,
    SliceInfo,
    decode_container,
    encode_container,
    schema_for,
    schema_text,
)
from lake_orchestration.hudi.model.avro.container import MAGIC
from lake_orchestration.hudi.model.avro.schema import PARSE_ORDER
from tests.conftest import REPO_ROOT, REQUIRE_SHARED, SHARED

UPSTREAM_AVRO = SHARED / "reference" / "hudi" / "avro"
PACKAGED = REPO_ROOT / "lake_orchestration" / "hudi" / "model" / "avro" / "schemas"
PATH = "/tbl/.hoodie/20250101000000000.x"
BASE = "/opt/data/t"

INSTANT = InstantInfo(commit_time="20250126040826878", action="deltacommit")
COMPACTION_OP = CompactionOperation(
    base_instant_time="20250101000000000",
    delta_file_paths=(".f1-0_20250101000000000.log.1_0-1-1", ".f1-0_20250101000000000.log.2_0-2-2"),
    data_file_path="f1-0_0-1-1_20250101000000000.parquet",
    file_id="f1-0",
    partition_path="2025/01/01",
    metrics={"TOTAL_LOG_FILES": 2.0, "TOTAL_IO_MB": 120.0},
    bootstrap_file_path=None,
)
COMPACTION_STRATEGY = CompactionStrategy(
    compactor_class_name="org.example.Compactor", strategy_params={"k": "v"}, version=1
)
COMPACTION_PLAN = CompactionPlan(
    operations=(COMPACTION_OP,),
    extra_metadata={"_hoodie.spark.sql.writes.prepped": "false"},
    version=2,
    strategy=COMPACTION_STRATEGY,
    preserve_hoodie_metadata=True,
)
ACTION_INSTANT = ActionInstant(timestamp="20250101000000000", action="commit", state="COMPLETED")
CLEAN_FILE = CleanFileInfo(file_path=f"{BASE}/p1/f1-0_0-1-1_20241231000000000.parquet", is_bootstrap_base_file=False)
CLEANER_PLAN = CleanerPlan(
    earliest_instant_to_retain=ACTION_INSTANT,
    last_completed_commit_timestamp="20250102000000000",
    policy="KEEP_LATEST_COMMITS",
    files_to_be_deleted_per_partition={},
    version=2,
    file_paths_to_be_deleted_per_partition={"p1": (CLEAN_FILE,)},
    partitions_to_be_deleted=("p9",),
    extra_metadata={"a": "b"},
)
CLEAN_PARTITION = CleanPartitionMetadata(
    partition_path="p1",
    policy="KEEP_LATEST_COMMITS",
    delete_path_patterns=("f1-0_0-1-1_20241231000000000.parquet",),
    success_delete_files=("f1-0_0-1-1_20241231000000000.parquet",),
    failed_delete_files=(),
    is_partition_deleted=False,
)
CLEAN_METADATA = CleanMetadata(
    start_clean_time="20250103000000000",
    time_taken_in_millis=42,
    total_files_deleted=1,
    earliest_commit_to_retain="20250101000000000",
    last_completed_commit_timestamp="20250102000000000",
    partition_metadata={"p1": CLEAN_PARTITION},
    version=2,
    bootstrap_partition_metadata={},
)
ROLLBACK_REQUEST = RollbackRequest(
    partition_path="",
    file_id="f1-0",
    latest_base_instant="20250101000000000",
    files_to_be_deleted=(),
    log_blocks_to_be_deleted={f"file:{BASE}/.f1-0_20250101000000000.log.1_0-1-1": 11828},
)
ROLLBACK_PLAN = RollbackPlan(instant_to_rollback=INSTANT, rollback_requests=(ROLLBACK_REQUEST,), version=1)
ROLLBACK_PARTITION = RollbackPartitionMetadata(
    partition_path="",
    success_delete_files=(f"{BASE}/f2-0_1-33-44_20250126040826878.parquet",),
    failed_delete_files=(),
    rollback_log_files={f"file:{BASE}/.f1-0_20250101000000000.log.2_1-0-1": 105},
    log_files_from_failed_commit={f"file:{BASE}/.f1-0_20250101000000000.log.1_0-1-1": 11828},
)
ROLLBACK_METADATA = RollbackMetadata(
    start_rollback_time="20250126040936578",
    time_taken_in_millis=195,
    total_files_deleted=1,
    commits_rollback=("20250126040826878",),
    partition_metadata={"": ROLLBACK_PARTITION},
    version=1,
    instants_rollback=(INSTANT,),
)
SAVEPOINT_PARTITION = SavepointPartitionMetadata(
    partition_path="p1", savepoint_data_file=("f1-0_0-1-1_20250101000000000.parquet",)
)
SAVEPOINT_METADATA = SavepointMetadata(
    savepointed_by="alice",
    savepointed_at=1735689600,
    comments="before migration",
    partition_metadata={"p1": SAVEPOINT_PARTITION},
    version=1,
)
SLICE = SliceInfo(
    data_file_path="p1/f1-0_0-1-1_20250101000000000.parquet",
    delta_file_paths=(),
    file_id="f1-0",
    partition_path="p1",
    bootstrap_file_path=None,
    version=1,
)
CLUSTERING_GROUP = ClusteringGroup(
    slices=(SLICE,),
    metrics={"TOTAL_IO_MB": 1.0},
    num_output_file_groups=1,
    extra_metadata={"x": "y"},
    version=1,
)
CLUSTERING_STRATEGY = ClusteringStrategy(
    strategy_class_name="org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
    strategy_params={"hoodie.clustering.plan.strategy.sort.columns": "ts"},
    version=1,
)
CLUSTERING_PLAN = ClusteringPlan(
    input_groups=(CLUSTERING_GROUP,),
    strategy=CLUSTERING_STRATEGY,
    extra_metadata={},
    version=1,
    preserve_hoodie_metadata=True,
)
REQUESTED_REPLACE = RequestedReplaceMetadata(
    operation_type="CLUSTER", clustering_plan=CLUSTERING_PLAN, extra_metadata={}, version=1
)
MERGE_PLAN = MergeArchiveFilePlan(
    candidate=(
        f"{BASE}/.hoodie/archived/.commits_.archive.2_1-0-1",
        f"{BASE}/.hoodie/archived/.commits_.archive.1_1-0-1",
    ),
    merged_archive_file_name=".commits_.archive.3_1-0-1",
)
COMMIT_METADATA_DICT: dict[str, Any] = {
    "partitionToWriteStats": None,
    "compacted": False,
    "extraMetadata": {"ROLLING_STAT": ""},
    "version": 1,
    "operationType": "UPSERT",
}
ARCHIVED_ENTRIES = (
    ArchivedMetaEntry(
        hoodie_commit_metadata=COMMIT_METADATA_DICT,
        commit_time="20250101000000000",
        action_type="deltacommit",
        action_state="COMPLETED",
        state_transition_time="20250101000001000",
    ),
    ArchivedMetaEntry(
        hoodie_rollback_metadata=ROLLBACK_METADATA,
        commit_time="20250126040936578",
        action_type="rollback",
        action_state="COMPLETED",
    ),
    ArchivedMetaEntry(
        hoodie_clean_metadata=CLEAN_METADATA, commit_time="20250103000000000", action_type="clean", version=1
    ),
    ArchivedMetaEntry(hoodie_cleaner_plan=CLEANER_PLAN, action_type="clean", action_state="REQUESTED"),
    ArchivedMetaEntry(hoodie_compaction_plan=COMPACTION_PLAN, action_type="compaction", action_state="REQUESTED"),
    ArchivedMetaEntry(hoodie_save_point_metadata=SAVEPOINT_METADATA, action_type="savepoint"),
    ArchivedMetaEntry(hoodie_requested_replace_metadata=REQUESTED_REPLACE, action_type="replacecommit"),
)

ALL_MODELS: tuple[AvroModel, ...] = (
    INSTANT,
    COMPACTION_OP,
    COMPACTION_STRATEGY,
    COMPACTION_PLAN,
    ACTION_INSTANT,
    CLEAN_FILE,
    CLEANER_PLAN,
    CLEAN_PARTITION,
    CLEAN_METADATA,
    ROLLBACK_REQUEST,
    ROLLBACK_PLAN,
    ROLLBACK_PARTITION,
    ROLLBACK_METADATA,
    SAVEPOINT_PARTITION,
    SAVEPOINT_METADATA,
    SLICE,
    CLUSTERING_GROUP,
    CLUSTERING_STRATEGY,
    CLUSTERING_PLAN,
    REQUESTED_REPLACE,
    MERGE_PLAN,
    *ARCHIVED_ENTRIES,
)
# Records Hudi writes as timeline/archive files (the rest only appear nested).
TOP_LEVEL: tuple[AvroModel, ...] = (
    COMPACTION_PLAN,
    CLEANER_PLAN,
    CLEAN_METADATA,
    ROLLBACK_PLAN,
    ROLLBACK_METADATA,
    SAVEPOINT_METADATA,
    REQUESTED_REPLACE,
    MERGE_PLAN,
    *ARCHIVED_ENTRIES,
)


def _ids(models: tuple[AvroModel, ...]) -> list[str]:
    return [f"{type(m).__name__}-{i}" for i, m in enumerate(models)]


def _strip_comments(text: str) -> Any:
    return json.loads(re.sub(r"/\*.*?\*/", "", text, flags=re.S))


@pytest.fixture(scope="module")
def upstream_reader_schemas() -> dict[str, Any]:
    """Verbatim upstream .avsc (comments stripped), parsed in dependency order, expanded per record name."""
    if not UPSTREAM_AVRO.is_dir():
        reason = f"upstream Hudi .avsc files not found at {UPSTREAM_AVRO} (they live in ../shared)"
        if REQUIRE_SHARED:
            pytest.fail(reason)
        pytest.skip(reason)
    named: dict[str, Any] = {}
    docs: dict[str, Any] = {}
    for stem in PARSE_ORDER:
        if stem == "HoodieIndexCommitMetadata":
            # Not among the upstream .avsc copies; the only source is a Java-written (1.x) file.
            doc = json.loads((UPSTREAM_AVRO / "embedded" / "HoodieIndexCommitMetadata.v8-writer.json").read_text())
        elif stem == "HoodieMetadata":
            # Not among the upstream .avsc copies either: the packaged file is the schema of the 0.15.0 bundle's
            # generated HoodieMetadataRecord class (tests/java/test_metadata_table_java.py checks it against Java).
            doc = json.loads((PACKAGED / "HoodieMetadata.avsc").read_text())
        else:
            doc = _strip_comments((UPSTREAM_AVRO / f"{stem}.avsc").read_text())
        fastavro.parse_schema(doc, named)
        docs[doc["name"]] = doc
    return {name: fastavro.parse_schema(doc, named, expand=True) for name, doc in docs.items()}


def _read_with(data: bytes, reader_schema: Any) -> dict[str, Any]:
    """The single record of ``data`` as fastavro resolves it into ``reader_schema``."""
    records = list(fastavro.reader(io.BytesIO(data), reader_schema=reader_schema))
    assert len(records) == 1
    assert isinstance(records[0], dict)
    return records[0]


def _two_record_container() -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema_for("HoodieInstantInfo")), [INSTANT.to_avro()] * 2)
    return buf.getvalue()


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("model", ALL_MODELS, ids=_ids(ALL_MODELS))
def test_model_to_bytes_round_trip_equal(model: AvroModel) -> None:
    decoded = type(model).from_bytes(model.to_bytes(), path=PATH)
    assert decoded == model


@pytest.mark.parametrize("model", ALL_MODELS, ids=_ids(ALL_MODELS))
def test_model_to_avro_from_avro_equal(model: AvroModel) -> None:
    assert type(model).from_avro(model.to_avro()) == model


def test_model_defaults_match_avro_defaults() -> None:
    assert RollbackPlan().to_avro() == {"instantToRollback": None, "RollbackRequests": None, "version": 1}
    assert CompactionPlan().preserve_hoodie_metadata is False
    assert RollbackRequest(partition_path="p").files_to_be_deleted == ()


def test_model_to_avro_field_order_matches_schema() -> None:
    for model in TOP_LEVEL:
        names = [f["name"] for f in schema_for(model.AVRO_NAME)["fields"]]
        assert list(model.to_avro()) == names


# ---------------------------------------------------------------- Java's upstream schemas as reader


# Fields 0.14/0.15 writes that the (older) upstream .avsc copies lack; a reader schema drops them.
ONLY_IN_0_14 = frozenset({"logFilesFromFailedCommit", "strategy", "preserveHoodieMetadata", "extraMetadata"})


def _assert_resolved(ours: Any, theirs: Any, where: str = "$") -> None:
    """``theirs`` (read with the upstream reader schema) is ``ours`` minus fields only 0.14/0.15 has."""
    if isinstance(ours, dict):
        assert isinstance(theirs, dict), where
        assert set(theirs) <= set(ours), where
        assert set(ours) - set(theirs) <= ONLY_IN_0_14, where
        for key in theirs:
            _assert_resolved(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(ours, list):
        assert isinstance(theirs, list) and len(theirs) == len(ours), where
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _assert_resolved(a, b, f"{where}[{i}]")
    else:
        assert theirs == ours, where


@pytest.mark.parametrize("model", TOP_LEVEL, ids=_ids(TOP_LEVEL))
def test_upstream_avsc_reader_resolves_our_bytes(model: AvroModel, upstream_reader_schemas: dict[str, Any]) -> None:
    reader_schema = upstream_reader_schemas[model.AVRO_NAME]
    _assert_resolved(model.to_avro(), _read_with(model.to_bytes(), reader_schema))


def test_upstream_avsc_reader_rollback_metadata_drops_0_14_field(
    upstream_reader_schemas: dict[str, Any],
) -> None:
    reader_schema = upstream_reader_schemas["HoodieRollbackMetadata"]
    record = _read_with(ROLLBACK_METADATA.to_bytes(), reader_schema)
    partition = record["partitionMetadata"][""]
    assert "logFilesFromFailedCommit" not in partition
    assert partition["rollbackLogFiles"] == ROLLBACK_PARTITION.rollback_log_files
    assert partition["successDeleteFiles"] == list(ROLLBACK_PARTITION.success_delete_files)
    decoded = RollbackMetadata.from_avro(record)
    assert decoded.partition_metadata[""].log_files_from_failed_commit is None


def test_upstream_avsc_reader_compaction_plan_keeps_operations(
    upstream_reader_schemas: dict[str, Any],
) -> None:
    reader_schema = upstream_reader_schemas["HoodieCompactionPlan"]
    record = _read_with(COMPACTION_PLAN.to_bytes(), reader_schema)
    assert "strategy" not in record
    assert record["operations"] == [COMPACTION_OP.to_avro()]
    assert record["version"] == 2


# ---------------------------------------------------------------- schemas


@pytest.mark.parametrize("name", ["HoodieRollbackPlan", "HoodieRollbackMetadata", "HoodieRequestedReplaceMetadata"])
def test_schema_text_equals_java_v6_writer_schema(name: str) -> None:
    java = json.loads((PACKAGED / f"{name}.v6-writer.json").read_text())
    assert schema_text(name) == json.dumps(java, separators=(",", ":"))


def test_schema_for_compaction_plan_has_0_14_fields_in_order() -> None:
    names = [f["name"] for f in schema_for("HoodieCompactionPlan")["fields"]]
    assert names == ["operations", "extraMetadata", "version", "strategy", "preserveHoodieMetadata"]


def test_schema_for_full_name_same_as_short_name() -> None:
    assert schema_for("org.apache.hudi.avro.model.HoodieCleanerPlan") == schema_for("HoodieCleanerPlan")


def test_schema_for_unknown_name_raises_schema_error() -> None:
    with pytest.raises(SchemaError, match="HoodieNoSuchThing"):
        schema_for("HoodieNoSuchThing")


def test_schema_for_named_types_defined_once_is_java_parsable() -> None:
    # Java's Schema.Parser rejects a second definition of a name ("Can't redefine").
    text = schema_text("HoodieArchivedMetaEntry")
    for name in (
        "HoodieCleanPartitionMetadata",
        "HoodieWriteStat",
        "HoodieInstantInfo",
        "HoodieCompactionPlan",
    ):
        assert text.count(f'"name":"{name}"') == 1, name


# ---------------------------------------------------------------- container layout


def test_encode_container_header_has_only_avro_schema() -> None:
    data = ROLLBACK_PLAN.to_bytes()
    reader = fastavro.reader(io.BytesIO(data))
    assert data[:4] == MAGIC
    assert list(reader.metadata) == ["avro.schema"]
    assert reader.codec == "null"
    assert reader.metadata["avro.schema"] == schema_text("HoodieRollbackPlan")
    # One block: the sync marker closes the header and the single block.
    assert data.count(data[-16:]) == 2


def test_encode_container_sync_marker_random() -> None:
    assert ROLLBACK_PLAN.to_bytes()[-16:] != ROLLBACK_PLAN.to_bytes()[-16:]


def test_decode_container_returns_record_and_writer_schema() -> None:
    record, writer = decode_container(encode_container(INSTANT.to_avro(), schema_for("HoodieInstantInfo")), path=PATH)
    assert record == {"commitTime": "20250126040826878", "action": "deltacommit"}
    assert writer == schema_for("HoodieInstantInfo")


# ---------------------------------------------------------------- bad input


def test_decode_container_empty_bytes_raises_corrupt_file_error() -> None:
    with pytest.raises(CorruptFileError, match="empty file, expected an Avro container") as exc:
        RollbackPlan.from_bytes(b"", path=PATH)
    assert PATH in str(exc.value)
    assert exc.value.path == PATH


def test_decode_container_garbage_bytes_raises_corrupt_file_error() -> None:
    with pytest.raises(CorruptFileError, match="no Avro container magic") as exc:
        RollbackPlan.from_bytes(b'{"json": "not avro"}', path=PATH)
    assert PATH in str(exc.value)


def test_decode_container_two_records_raises_corrupt_file_error() -> None:
    with pytest.raises(CorruptFileError, match=r"exactly one record.*found 2") as exc:
        InstantInfo.from_bytes(_two_record_container(), path=PATH)
    assert PATH in str(exc.value)


def test_decode_container_zero_records_raises_corrupt_file_error() -> None:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema_for("HoodieInstantInfo")), [])
    with pytest.raises(CorruptFileError, match="found 0"):
        decode_container(buf.getvalue(), path=PATH)


def test_decode_container_truncated_raises_corrupt_file_error_with_cause() -> None:
    data = ROLLBACK_METADATA.to_bytes()
    with pytest.raises(CorruptFileError, match="cannot decode Avro container") as exc:
        RollbackMetadata.from_bytes(data[: len(data) - 40], path=PATH)
    assert exc.value.__cause__ is not None
    assert PATH in str(exc.value)


def test_decode_container_magic_only_raises_corrupt_file_error() -> None:
    with pytest.raises(CorruptFileError, match="cannot decode"):
        decode_container(MAGIC + b"\x02", path=PATH)


def test_from_bytes_other_record_type_raises_corrupt_file_error() -> None:
    with pytest.raises(CorruptFileError, match=r"expected an Avro HoodieRollbackMetadata record.*HoodieRollbackPlan"):
        RollbackMetadata.from_bytes(ROLLBACK_PLAN.to_bytes(), path=PATH)


def test_from_bytes_missing_required_field_raises_corrupt_file_error() -> None:
    schema = {
        "type": "record",
        "name": "HoodieInstantInfo",
        "namespace": "org.apache.hudi.avro.model",
        "fields": [{"name": "commitTime", "type": "string"}],
    }
    with pytest.raises(CorruptFileError, match="lacks the field 'action'"):
        InstantInfo.from_bytes(encode_container({"commitTime": "1"}, schema), path=PATH)


def test_from_avro_wrong_shape_raises_schema_error() -> None:
    with pytest.raises(SchemaError, match="commitsRollback: expected an Avro array"):
        RollbackMetadata.from_avro({**ROLLBACK_METADATA.to_avro(), "commitsRollback": "x"})


# ---------------------------------------------------------------- schema evolution tolerance


def test_from_bytes_old_writer_schema_missing_optional_fields_uses_defaults() -> None:
    # Pre-0.14 writer: no logFilesFromFailedCommit, no instantsRollback.
    old = json.loads(json.dumps(schema_for("HoodieRollbackMetadata")))
    old["fields"] = [f for f in old["fields"] if f["name"] != "instantsRollback"]
    part = old["fields"][4]["type"]["values"]
    part["fields"] = [f for f in part["fields"] if f["name"] != "logFilesFromFailedCommit"]
    record = ROLLBACK_METADATA.to_avro()
    del record["instantsRollback"]
    decoded = RollbackMetadata.from_bytes(encode_container(record, old), path=PATH)
    assert decoded.instants_rollback == ()
    assert decoded.partition_metadata[""].log_files_from_failed_commit is None
    assert decoded.partition_metadata[""].rollback_log_files == ROLLBACK_PARTITION.rollback_log_files


def test_from_bytes_newer_writer_schema_extra_fields_ignored() -> None:
    newer = json.loads(json.dumps(schema_for("HoodieCompactionPlan")))
    newer["fields"].append(
        {
            "name": "missingSchedulePartitions",
            "type": ["null", {"type": "array", "items": "string"}],
            "default": None,
        }
    )
    record = {**COMPACTION_PLAN.to_avro(), "missingSchedulePartitions": ["p7"]}
    assert CompactionPlan.from_bytes(encode_container(record, newer), path=PATH) == COMPACTION_PLAN
