"""Log-record merging with typed ordering values (delete blocks written with a record's own ordering value)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import pytest

from lake_orchestration.hudi.log.block_content import DeleteRecord
from lake_orchestration.hudi.log.log_format import iter_blocks
from lake_orchestration.hudi.log.writer import avro_data_block, delete_block
from lake_orchestration.hudi.merge.record_merger import MergeConfig, merge_slice_batches, resolve_log_records
from lake_orchestration.hudi.model.properties import MergeSemantics
from lake_orchestration.hudi.model.schema import avro_to_arrow_schema

MICROS = 1_700_000_000_000_000


def _schema(ts_type: Any) -> dict[str, Any]:
    return {
        "type": "record",
        "name": "r",
        "namespace": "hoodie.t",
        "fields": [
            {"name": "_hoodie_record_key", "type": ["null", "string"], "default": None},
            {"name": "ts", "type": ["null", ts_type], "default": None},
            {"name": "v", "type": ["null", "string"], "default": None},
        ],
    }


def _merged(schema: dict[str, Any], ts_value: Any, delete: DeleteRecord, semantics: MergeSemantics) -> list[dict]:  # type: ignore[type-arg]
    arrow = avro_to_arrow_schema(schema)
    rows = pa.Table.from_pylist([{"_hoodie_record_key": "k", "ts": ts_value, "v": "newer"}], schema=arrow)
    data = avro_data_block(rows, instant="20250101000000000", schema=schema, schema_json=json.dumps(schema))
    data += delete_block([delete], instant="20250101000001000", schema_json=json.dumps(schema))
    config = MergeConfig(semantics=semantics, ordering_field="ts")
    log_records = resolve_log_records(list(iter_blocks(data)), config)
    return [r for t in merge_slice_batches(None, None, log_records, config) for r in t.to_pylist()]


@pytest.mark.parametrize("semantics", list(MergeSemantics))
def test_record_merger_long_ordering_older_typed_delete_keeps_record(semantics: MergeSemantics) -> None:
    out = _merged(_schema("long"), MICROS, DeleteRecord("k", "", MICROS - 1, "LongWrapper"), semantics)
    assert [r["v"] for r in out] == ["newer"]


@pytest.mark.parametrize("semantics", list(MergeSemantics))
def test_record_merger_long_ordering_newer_typed_delete_deletes(semantics: MergeSemantics) -> None:
    assert _merged(_schema("long"), MICROS, DeleteRecord("k", "", MICROS + 1, "LongWrapper"), semantics) == []


@pytest.mark.parametrize("semantics", list(MergeSemantics))
def test_record_merger_timestamp_micros_ordering_older_typed_delete_keeps_record(semantics: MergeSemantics) -> None:
    """A ``timestamp-micros`` ordering field is a Java ``Long`` (consistent logical timestamps off, the default), so
    a delete carrying ``LongWrapper(ts - 1)`` is of the same class and older: the record must stay."""
    schema = _schema({"type": "long", "logicalType": "timestamp-micros"})
    ts = datetime.fromtimestamp(MICROS / 1_000_000, timezone.utc)
    out = _merged(schema, ts, DeleteRecord("k", "", MICROS - 1, "LongWrapper"), semantics)
    assert [r["v"] for r in out] == ["newer"]
