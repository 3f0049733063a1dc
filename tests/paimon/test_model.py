"""Paimon model units: options with Java's defaults and derived values, BinaryRow decoding, schema and snapshot
parsing errors."""

from __future__ import annotations

import struct

import pytest

from lake_orchestration.errors import CorruptFileError, InvalidOptionError
from lake_orchestration.paimon.model import BinaryRow, CoreOptions, DataType, MergeEngine, Snapshot, TableSchema
from lake_orchestration.paimon.model.binary_row import bitset_width
from lake_orchestration.paimon.model.options import OPTIONS


def _row(*slots: bytes, nulls: tuple[int, ...] = (), var: bytes = b"") -> BinaryRow:
    """A serialized BinaryRow built by hand from the documented layout (independent of the decoder)."""
    arity = len(slots)
    header = bytearray(bitset_width(arity))
    for pos in nulls:
        header[(pos + 8) >> 3] |= 1 << ((pos + 8) & 7)
    return BinaryRow(struct.pack(">i", arity) + bytes(header) + b"".join(slots) + var)


def test_core_options_defaults_are_javas() -> None:
    o = CoreOptions({})
    assert (o.bucket, o.merge_engine, o.num_sorted_runs_compaction_trigger) == (-1, MergeEngine.DEDUPLICATE, 5)
    assert (o.num_sorted_runs_stop_trigger, o.num_levels) == (8, 6)
    assert (o.max_size_amplification_percent, o.size_ratio, o.full_compaction_delta_commits) == (200, 1, None)
    assert (o.target_file_size, o.compaction_file_size) == (128 << 20, (128 << 20) // 10 * 7)
    assert not o.deletion_vectors_enabled


def test_core_options_derived_values_follow_the_trigger_and_stop_never_below_it() -> None:
    o = CoreOptions({"num-sorted-run.compaction-trigger": "7", "num-sorted-run.stop-trigger": "3"})
    assert (o.num_levels, o.num_sorted_runs_stop_trigger) == (8, 7)
    o = CoreOptions({"num-levels": "4", "target-file-size": "64 mb", "merge-engine": "partial-update"})
    assert (o.num_levels, o.target_file_size, o.merge_engine) == (4, 64 << 20, MergeEngine.PARTIAL_UPDATE)


@pytest.mark.parametrize(
    ("key", "value"),
    [("num-sorted-run.compaction-trigger", "five"), ("merge-engine", "newest"), ("target-file-size", "big")],
)
def test_core_options_invalid_value_raises_naming_key_and_value(key: str, value: str) -> None:
    prop = {
        "num-sorted-run.compaction-trigger": "num_sorted_runs_compaction_trigger",
        "merge-engine": "merge_engine",
        "target-file-size": "target_file_size",
    }[key]
    with pytest.raises(InvalidOptionError, match=rf"{key}='{value}'"):
        getattr(CoreOptions({key: value}), prop)
    assert key in OPTIONS


def test_binary_row_decodes_ints_inline_and_long_strings_nulls_and_compact_decimal() -> None:
    long_text = "a string longer than seven bytes"
    width = bitset_width(4)
    var_offset = width + 4 * 8
    row = _row(
        struct.pack("<q", -42),
        b"abc" + bytes(5),
        struct.pack("<Q", (var_offset << 32) | len(long_text)),
        bytes(8),
        nulls=(3,),
        var=long_text.encode(),
    )
    # slot 1: an inline string needs its mark bit and length in the highest byte
    slots = bytearray(row.data)
    slots[4 + width + 8 + 7] = 0x80 | 3
    row = BinaryRow(bytes(slots))
    types = [DataType.parse(t, where="t") for t in ("BIGINT", "STRING", "VARCHAR(100)", "INT")]
    assert row.arity == 4
    assert row.to_values(types) == (-42, "abc", long_text, None)
    assert row.sort_key(types)[3] == (0, 0)  # nulls first
    dec = _row(struct.pack("<q", 12345))
    assert str(dec.get(0, DataType.parse("DECIMAL(10, 2)", where="t"))) == "123.45"
    assert BinaryRow.empty().arity == 0


def test_schema_and_snapshot_errors_name_the_file() -> None:
    with pytest.raises(CorruptFileError, match=r"schema-3: not a Paimon schema file"):
        TableSchema.from_json(b'{"id": 3}', path="schema-3")
    with pytest.raises(CorruptFileError, match=r"snapshot-9: unknown commitKind 'MERGE'"):
        Snapshot.from_json(
            b'{"id":9,"schemaId":0,"baseManifestList":"b","deltaManifestList":"d","commitUser":"u",'
            b'"commitIdentifier":1,"commitKind":"MERGE","timeMillis":0}',
            path="snapshot-9",
        )
    with pytest.raises(CorruptFileError, match=r"unparseable type 'INT\('"):
        DataType.parse("INT(", where="schema-0 field 'x'")
