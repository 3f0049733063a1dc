"""Units of the Paimon compaction executor, no table needed: Java's ``IntervalPartitionTest`` cases, the
``MergeTreeCompactTask.doCompact`` decisions (upgrade or rewrite) on constructed units, the merge engines on small
row sets against hand-computed results, string statistics truncation and ``BinaryRow`` serialization."""

from __future__ import annotations

import decimal
import itertools
import random
import re
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest

from lake_orchestration.engines.codec import decode_task, encode_task
from lake_orchestration.errors import PlanError
from lake_orchestration.paimon.model import (
    BinaryRow,
    Bucket,
    CoreOptions,
    DataFileMeta,
    DataType,
    FileSource,
    Levels,
    MergeEngine,
    SimpleStats,
    TableSchema,
)
from lake_orchestration.paimon.services.compaction.executor import (
    BucketCompactTask,
    Upgrade,
    _truncate_max,
    compact_steps,
    interval_partition,
    upgrade_rewrites,
)
from lake_orchestration.paimon.services.compaction.merge import merge_rows
from lake_orchestration.paimon.services.compaction.planner import BucketCompaction, plan_bucket

INT = DataType.parse("INT NOT NULL", where="test")
EMPTY = SimpleStats(min_values=BinaryRow.empty(), max_values=BinaryRow.empty(), null_counts=())


def _key(k: int) -> BinaryRow:
    return BinaryRow.from_values([k], [INT])


def _file(
    lo: int, hi: int, *, name: str = "", size: int = 100, level: int = 0, deletes: int | None = 0
) -> DataFileMeta:
    return DataFileMeta(
        file_name=name or f"f-{lo}-{hi}",
        file_size=size,
        row_count=25,
        min_key=_key(lo),
        max_key=_key(hi),
        key_stats=EMPTY,
        value_stats=EMPTY,
        min_sequence_number=0,
        max_sequence_number=24,
        schema_id=0,
        level=level,
        delete_row_count=0,
    )


def _order(row: BinaryRow) -> Any:
    return row.sort_key([INT])


def _parse(text: str) -> list[DataFileMeta]:
    return [_file(int(a), int(b)) for a, b in re.findall(r"\[(\d+), (\d+)]", text)]


def _span(f: DataFileMeta) -> tuple[int, int]:
    return f.min_key.to_values([INT])[0], f.max_key.to_values([INT])[0]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        # Java IntervalPartitionTest.testSameMinKey / testSameMaxKey / testSectionPartitioning
        ("[100, 200], [100, 400], [100, 300], [100, 500]", "[100, 200] | [100, 300] | [100, 400] | [100, 500]"),
        ("[100, 500], [300, 500], [200, 500], [400, 500]", "[100, 500] | [200, 500] | [300, 500] | [400, 500]"),
        (
            "[0, 9], [5, 7], [9, 15], [16, 22], [16, 28], [24, 32]",
            "[0, 9] | [5, 7], [9, 15]\n[16, 22], [24, 32] | [16, 28]",
        ),
    ],
)  # fmt: skip
def test_interval_partition_java_cases_same_sections_and_runs(given: str, expected: str) -> None:
    want = [sorted(tuple(_span(f) for f in _parse(run)) for run in line.split("|")) for line in expected.split("\n")]
    got = [
        sorted(tuple(_span(f) for f in run) for run in section) for section in interval_partition(_parse(given), _order)
    ]
    assert got == want


def test_interval_partition_random_runs_are_sorted_and_at_most_the_input_run_count() -> None:
    """Java ``IntervalPartitionTest.randomTest``: sections never hold more runs than the input's sorted runs, each
    run is sorted with disjoint ranges, and sections do not overlap each other."""
    rng = random.Random(17)
    for _ in range(100):
        runs = rng.randint(1, 10)
        files = []
        for _ in range(runs):
            points = sorted(rng.sample(range(1000), 2 * rng.randint(1, 10)))
            files += [_file(points[j], points[j + 1]) for j in range(0, len(points), 2)]
        sections = interval_partition(files, _order)
        assert sum(len(run) for section in sections for run in section) == len(files)
        previous_max = -1
        for section in sections:
            assert len(section) <= runs
            bounds = [(_order(f.min_key), _order(f.max_key)) for run in section for f in run]
            assert min(b[0] for b in bounds)[0][1] > previous_max
            previous_max = max(b[1] for b in bounds)[0][1]
            for run in section:
                for a, b in itertools.pairwise(run):
                    assert _order(a.max_key) < _order(b.min_key)


def _unit(files: list[DataFileMeta], *, output_level: int = 1, max_level: int = 3) -> BucketCompaction:
    return BucketCompaction(
        partition=BinaryRow.empty(),
        bucket=0,
        total_buckets=1,
        bucket_path="bucket-0",
        output_level=output_level,
        max_level=max_level,
        drop_delete=output_level == max_level,
        files=tuple(files),
    )


def _steps(unit: BucketCompaction, *, retracting: set[str] = frozenset()) -> list[tuple[str, list[str]]]:  # type: ignore[assignment]
    steps = compact_steps(
        unit, key_order=_order, min_file_size=1000, has_retractions=lambda f: f.file_name in retracting
    )
    return [
        ("upgrade", [s.file.file_name]) if isinstance(s, Upgrade) else ("rewrite", [f.file_name for f in s.files])
        for s in steps
    ]


def test_compact_steps_large_non_overlapping_files_are_upgraded_without_rewrite() -> None:
    unit = _unit([_file(0, 9, name="a", size=5000), _file(10, 19, name="b", size=5000)])
    assert _steps(unit) == [("upgrade", ["a"]), ("upgrade", ["b"])]


def test_compact_steps_small_files_rewritten_together_a_lone_small_file_upgraded() -> None:
    assert _steps(_unit([_file(0, 9, name="a"), _file(10, 19, name="b")])) == [("rewrite", ["a", "b"])]
    assert _steps(_unit([_file(0, 9, name="a")])) == [("upgrade", ["a"])]


def test_compact_steps_large_file_interrupts_candidates_rewrite_before_upgrade() -> None:
    files = [_file(0, 9, name="s1"), _file(10, 19, name="s2"), _file(20, 29, name="big", size=5000)]
    files += [_file(30, 39, name="s3")]
    assert _steps(_unit(files)) == [("rewrite", ["s1", "s2"]), ("upgrade", ["big"]), ("upgrade", ["s3"])]


def test_compact_steps_overlapping_runs_rewritten_file_already_at_output_level_untouched() -> None:
    files = [_file(0, 20, name="new"), _file(5, 9, name="old", level=2), _file(30, 40, name="kept", level=1, size=5000)]
    assert _steps(_unit(files)) == [("rewrite", ["new", "old"])]


def test_compact_steps_max_level_file_with_retractions_rewritten_instead_of_upgraded() -> None:
    files = [_file(0, 9, name="clean", size=5000), _file(10, 19, name="deletes", size=5000)]
    unit = _unit(files, output_level=3, max_level=3)
    assert _steps(unit, retracting={"deletes"}) == [("upgrade", ["clean"]), ("rewrite", ["deletes"])]
    # below the max level retractions are kept: an upgrade is fine
    assert _steps(_unit(files), retracting={"deletes"}) == [("upgrade", ["clean"]), ("upgrade", ["deletes"])]


def _kinds(unit: BucketCompaction, options: dict[str, str], *, retracting: tuple[str, ...] = ()) -> list[str]:
    def retracts(f: DataFileMeta) -> bool:
        return f.file_name in retracting

    steps = compact_steps(
        unit,
        key_order=_order,
        min_file_size=1000,
        has_retractions=retracts,
        upgrade_rewrites=lambda f: upgrade_rewrites(
            f,
            options=CoreOptions(options),
            output_level=unit.output_level,
            max_level=unit.max_level,
            has_retractions=retracts,
        ),
    )
    return ["upgrade" if isinstance(s, Upgrade) else "rewrite" for s in steps]


def test_upgrade_rewrites_vector_index_table_rewrites_files_not_compacted_moving_above_level0() -> None:
    """Java (golden ``test_pk_vector_golden`` snapshot 2): the ANN index is built only from COMPACT files above
    level 0, so a level-0 APPEND file moved up is rewritten; an already compacted file is upgraded."""
    vector = {"pk-vector.index.columns": "embedding", "deletion-vectors.enabled": "true"}
    appended = replace(_file(0, 9, name="a"), file_source=FileSource.APPEND)
    assert _kinds(_unit([appended], output_level=5, max_level=5), vector) == ["rewrite"]
    assert _kinds(_unit([appended], output_level=5, max_level=5), {"deletion-vectors.enabled": "true"}) == ["upgrade"]
    compacted = replace(_file(0, 9, name="c", level=1, size=5000), file_source=FileSource.COMPACT)
    assert _kinds(_unit([compacted], output_level=2, max_level=5), vector) == ["upgrade"]


def test_upgrade_rewrites_lookup_tables_follow_java_lookup_rewriter_upgrade_strategy() -> None:
    """Java ``LookupMergeTreeCompactRewriter.upgradeStrategy`` for a level-0 file."""
    dv = {"deletion-vectors.enabled": "true"}
    level0 = _file(0, 9, name="a", size=5000)
    # deletion vectors and retractions: rewritten at any output level (retractions are dropped)
    assert _kinds(_unit([level0]), dv, retracting=("a",)) == ["rewrite"]
    # no retractions: upgraded to the max level, and below it for deduplicate without sequence.field
    assert _kinds(_unit([level0], output_level=3), dv) == ["upgrade"]
    assert _kinds(_unit([level0]), dv) == ["upgrade"]
    assert _kinds(_unit([level0]), {**dv, "sequence.field": "ts"}) == ["rewrite"]
    assert _kinds(_unit([level0]), {**dv, "merge-engine": "partial-update"}) == ["rewrite"]
    # first-row (lookup without deletion vectors): rewritten below the max level, upgraded to it
    assert _kinds(_unit([level0]), {"merge-engine": "first-row"}) == ["rewrite"]
    assert _kinds(_unit([level0], output_level=3), {"merge-engine": "first-row"}) == ["upgrade"]
    # files above level 0 and tables without lookup: upgraded
    assert _kinds(_unit([replace(level0, level=1)], output_level=2), {**dv, "merge-engine": "partial-update"}) == [
        "upgrade"
    ]
    assert _kinds(_unit([level0]), {"merge-engine": "partial-update"}) == ["upgrade"]


# -- merge engines ------------------------------------------------------------------------------------------------
def _rows(*rows: tuple[int, int, int, Any, Any]) -> pa.Table:
    """(key, seq, kind, a, b) rows -> a data-file table (``_KEY_k``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, k, a, b)."""
    keys, seqs, kinds, a, b = zip(*rows, strict=True)
    return pa.table(
        {
            "_KEY_k": pa.array(keys, pa.int32()),
            "_SEQUENCE_NUMBER": pa.array(seqs, pa.int64()),
            "_VALUE_KIND": pa.array(kinds, pa.int8()),
            "k": pa.array(keys, pa.int32()),
            "a": pa.array(a, pa.int64()),
            "b": pa.array(b, pa.string()),
        }
    )


def _merge(table: pa.Table, engine: MergeEngine, *, drop_delete: bool = False, **options: str) -> list[tuple]:
    merged = merge_rows(
        table,
        key_columns=["_KEY_k"],
        value_columns=["k", "a", "b"],
        primary_keys=["k"],
        engine=engine,
        options=options,
        drop_delete=drop_delete,
    )
    return [(r["k"], r["_SEQUENCE_NUMBER"], r["_VALUE_KIND"], r["a"], r["b"]) for r in merged.to_pylist()]


# rows arrive in file order, not sorted: the merge sorts by key then sequence number
ROWS = _rows((2, 5, 0, 20, "x"), (1, 3, 0, 10, None), (1, 1, 0, 1, "first"), (2, 7, 3, None, None), (3, 2, 0, 3, "c"))


def test_merge_deduplicate_last_row_per_key_retraction_kept_or_dropped() -> None:
    assert _merge(ROWS, MergeEngine.DEDUPLICATE) == [(1, 3, 0, 10, None), (2, 7, 3, None, None), (3, 2, 0, 3, "c")]
    assert _merge(ROWS, MergeEngine.DEDUPLICATE, drop_delete=True) == [(1, 3, 0, 10, None), (3, 2, 0, 3, "c")]


def test_merge_first_row_keeps_the_oldest_row_and_ignores_retractions() -> None:
    expected = [(1, 1, 0, 1, "first"), (2, 5, 0, 20, "x"), (3, 2, 0, 3, "c")]
    assert _merge(ROWS, MergeEngine.FIRST_ROW, **{"ignore-delete": "true"}) == expected
    with pytest.raises(PlanError, match="ignore-delete"):  # Java's FirstRowMergeFunction refuses -D/-U without it
        _merge(ROWS, MergeEngine.FIRST_ROW)


def test_merge_partial_update_non_null_fields_overwrite_retraction_needs_an_option() -> None:
    no_delete = ROWS.filter(pa.compute.not_equal(ROWS.column("_VALUE_KIND"), 3))
    assert _merge(no_delete, MergeEngine.PARTIAL_UPDATE) == [
        (1, 3, 0, 10, "first"),
        (2, 5, 0, 20, "x"),
        (3, 2, 0, 3, "c"),
    ]
    with pytest.raises(PlanError, match="ignore-delete"):
        _merge(ROWS, MergeEngine.PARTIAL_UPDATE)
    # an ignored retraction does not take the sequence number (Java's latestSequenceNumber)
    assert _merge(ROWS, MergeEngine.PARTIAL_UPDATE, **{"ignore-delete": "true"})[1] == (2, 5, 0, 20, "x")
    removed = _merge(ROWS, MergeEngine.PARTIAL_UPDATE, drop_delete=True,
                     **{"partial-update.remove-record-on-delete": "true"})  # fmt: skip
    assert [r[0] for r in removed] == [1, 3]


def test_merge_aggregation_sum_retracts_last_non_null_value_default() -> None:
    rows = _rows((1, 1, 0, 5, "a"), (1, 2, 0, 7, None), (1, 3, 1, 2, None), (2, 1, 0, None, "z"))
    assert _merge(rows, MergeEngine.AGGREGATE, **{"fields.a.aggregate-function": "sum"}) == [
        (1, 3, 0, 10, "a"),
        (2, 1, 0, None, "z"),
    ]
    options = {"fields.a.aggregate-function": "max", "fields.a.ignore-retract": "true"}
    assert _merge(rows, MergeEngine.AGGREGATE, **options)[0] == (1, 3, 0, 7, "a")
    with pytest.raises(PlanError, match="cannot retract"):
        _merge(rows, MergeEngine.AGGREGATE, **{"fields.a.aggregate-function": "max"})
    with pytest.raises(PlanError, match="aggregate-function='median'"):
        _merge(rows, MergeEngine.AGGREGATE, **{"fields.a.aggregate-function": "median"})


def test_truncate_max_rounds_the_last_code_point_up() -> None:
    assert _truncate_max("Apache Paimon supports primary key tables", 16) == "Apache Paimon sv"
    assert _truncate_max("short", 16) == "short"
    assert _truncate_max("ab\U0010ffff\U0010ffffz", 4) == "ac"


def test_binary_row_from_values_reads_back_long_strings_nulls_and_decimals() -> None:
    types = [DataType.parse(t, where="test") for t in ("STRING", "INT", "BIGINT", "DECIMAL(10, 2)", "DOUBLE")]
    values = ("a string longer than seven bytes", None, -5, decimal.Decimal("12.34"), 1.5)
    row = BinaryRow.from_values(values, types)
    assert row.to_values(types) == values
    assert len(row.data) % 8 == 4  # 4-byte arity, then 8-byte words
    assert BinaryRow.from_values(["short"], types[:1]).to_values(types[:1]) == ("short",)


def test_bucket_compact_task_travels_through_the_engine_codec_unchanged() -> None:
    """Engines ship tasks as codec JSON (Spark, for large task sets): the planned bucket comes back equal."""
    files = [_file(0, 9, name="a", level=0), _file(5, 30, name="b", level=2)]
    unit = _unit(files, output_level=2, max_level=2)
    task = BucketCompactTask.of(unit, base_uri="/t", storage_options={"secret": "x"}, schema_id=3)
    decoded = decode_task(encode_task(task))
    assert decoded == replace(task, storage_options={})  # secrets never travel as task data
    assert decoded.compaction == unit


def test_merge_sequence_field_orders_rows_before_the_sequence_number() -> None:
    """``sequence.field``: a later write with a smaller user sequence loses (user-defined sequence comparator)."""
    rows = _rows((1, 1, 0, 20, "newer-ts"), (1, 2, 0, 10, "older-ts"), (2, 1, 0, 5, "only"))
    assert [r[4] for r in _merge(rows, MergeEngine.DEDUPLICATE, **{"sequence.field": "a"})] == ["newer-ts", "only"]
    assert [r[4] for r in _merge(rows, MergeEngine.DEDUPLICATE)] == ["older-ts", "only"]


def _bucket(*files: DataFileMeta, num_levels: int = 3) -> Bucket:
    levels = Levels.from_files(files, num_levels=num_levels, key_order=_order)
    return Bucket(partition=BinaryRow.empty(), bucket=0, total_buckets=1, levels=levels)


SCHEMA = TableSchema.from_json(
    b'{"version":3,"id":0,"fields":[{"id":0,"name":"k","type":"INT NOT NULL"},{"id":1,"name":"v","type":"STRING"}],'
    b'"highestFieldId":1,"partitionKeys":[],"primaryKeys":["k"],"options":{}}',
    path="schema-0",
)


@pytest.mark.parametrize("lookup", ["deletion-vectors.enabled", "merge-engine"])
def test_plan_bucket_lookup_table_unit_leaving_a_key_in_a_higher_level_becomes_full(lookup: str) -> None:
    """Deletion vectors / first-row: readers skip merging above level 0, so a level-0 file forced up to level 1 over
    an overlapping level-2 file would show both rows; without lookup the plan compacts everything to the max level."""
    options = CoreOptions({"num-sorted-run.compaction-trigger": "5", "num-levels": "3",
                           lookup: "true" if lookup.startswith("deletion") else "first-row"})  # fmt: skip
    overlapping = _bucket(_file(0, 9, name="new"), _file(5, 20, name="old", level=2, size=5000))
    unit = plan_bucket(overlapping, options, SCHEMA, full=False, bucket_path="bucket-0")
    assert unit is not None and (unit.output_level, {f.file_name for f in unit.files}) == (2, {"new", "old"})
    assert unit.drop_delete

    disjoint = _bucket(_file(0, 9, name="new"), _file(10, 20, name="old", level=2, size=5000))
    unit = plan_bucket(disjoint, options, SCHEMA, full=False, bucket_path="bucket-0")
    assert unit is not None and (unit.output_level, [f.file_name for f in unit.files]) == (1, ["new"])
    assert not unit.drop_delete or lookup.startswith("deletion")  # deletion vectors drop deletes at any level

    plain = CoreOptions({"num-sorted-run.compaction-trigger": "5", "num-levels": "3"})
    assert plan_bucket(overlapping, plain, SCHEMA, full=False, bucket_path="bucket-0") is None  # 2 runs < trigger
