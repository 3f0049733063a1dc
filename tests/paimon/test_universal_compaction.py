"""The universal compaction picker against Java's own ``UniversalCompactionTest`` cases (apache/paimon
``paimon-core/src/test/java/org/apache/paimon/mergetree/compact/UniversalCompactionTest.java``), translated one to
one: same constructor arguments, same runs, same expected file sizes and output levels.

Not translated: ``testOptimizedCompactionInterval`` and ``testForcePickL0`` exercise writer-side timers
(``compaction.optimization-interval``, ``lookup-compact.max-interval``) that a snapshot-driven planner does not have.
"""

from __future__ import annotations

from lake_orchestration.paimon.model import BinaryRow, CompactUnit, CoreOptions, Levels, LevelSortedRun, SortedRun
from lake_orchestration.paimon.model.manifest import DataFileMeta, SimpleStats
from lake_orchestration.paimon.services.compaction import UniversalCompaction, pick_unit
from lake_orchestration.paimon.services.compaction.universal import create_unit, pick_full_compaction


def file(size: int, *, level: int = 0, name: str = "", max_seq: int = 0) -> DataFileMeta:
    """Java ``UniversalCompactionTest.file(size)``: only the size matters to the picker."""
    empty = BinaryRow.empty()
    stats = SimpleStats(min_values=empty, max_values=empty, null_counts=())
    return DataFileMeta(
        file_name=name,
        file_size=size,
        row_count=1,
        min_key=empty,
        max_key=empty,
        key_stats=stats,
        value_stats=stats,
        min_sequence_number=0,
        max_sequence_number=max_seq,
        schema_id=0,
        level=level,
    )


def level(lvl: int, size: int) -> LevelSortedRun:
    return LevelSortedRun(lvl, SortedRun((file(size),)))


def level0(*sizes: int) -> list[LevelSortedRun]:
    return [level(0, s) for s in sizes]


def create_levels(*levels: int) -> list[LevelSortedRun]:
    return [level(lv, 1) for lv in levels]


def sizes_of(unit: CompactUnit | None) -> list[int]:
    assert unit is not None
    return [f.file_size for f in unit.files]


def add_size(sizes: list[int]) -> list[int]:
    return [1, *sizes]


def append_and_pick_for_size_amp(compaction: UniversalCompaction, sizes: list[int]) -> list[int]:
    sizes = add_size(sizes)
    unit = compaction.pick_for_size_amp(3, level0(*sizes))
    return [sum(f.file_size for f in unit.files)] if unit is not None else sizes


def pick_for_size_ratio(compaction: UniversalCompaction, sizes: list[int]) -> list[int]:
    runs = [level(i, s) for i, s in enumerate(sizes)]
    unit = compaction.pick_for_size_ratio(len(sizes), runs)
    if unit is None:
        return sizes
    compact = [f.file_size for f in unit.files]
    result = list(sizes)
    for c in compact:
        result.remove(c)
    return [sum(compact), *result]


def append_and_pick_for_size_ratio(compaction: UniversalCompaction, sizes: list[int]) -> list[int]:
    return pick_for_size_ratio(compaction, add_size(sizes))


def uc(max_size_amp: int, size_ratio: int, trigger: int) -> UniversalCompaction:
    return UniversalCompaction(max_size_amp=max_size_amp, size_ratio=size_ratio, num_run_compaction_trigger=trigger)


def test_create_unit_output_level_is_next_run_level_minus_one_java_test_output_level() -> None:
    runs = create_levels(0, 0, 1, 3, 4)
    assert create_unit(runs, 5, 1).output_level == 1
    assert create_unit(runs, 5, 2).output_level == 1
    assert create_unit(runs, 5, 3).output_level == 2
    assert create_unit(runs, 5, 4).output_level == 3
    assert create_unit(runs, 5, 5).output_level == 5


def test_pick_by_size_amp_ratio_and_file_num_java_test_pick() -> None:
    compaction = uc(25, 1, 3)
    # by size amplification
    assert sizes_of(compaction.pick(3, level0(1, 2, 3, 3))) == [1, 2, 3, 3]
    # by size ratio
    assert sizes_of(compaction.pick(4, [level(0, 1), level(1, 1), level(2, 1), level(3, 50)])) == [1, 1, 1]
    # by file num: 3 joins the candidates by size ratio after picking by file num
    assert sizes_of(compaction.pick(4, [level(0, 1), level(1, 2), level(2, 3), level(3, 50)])) == [1, 2, 3]


def test_pick_never_outputs_level0_java_test_no_output_level0() -> None:
    compaction = uc(25, 1, 3)
    assert sizes_of(compaction.pick(3, [level(0, 1), level(0, 1), level(1, 1), level(2, 50)])) == [1, 1, 1]
    assert sizes_of(compaction.pick(3, [level(0, 1), level(0, 2), level(1, 3), level(2, 50)])) == [1, 2, 3]


def test_pick_all_level0_runs_goes_to_max_level_java_test_extreme_case_no_output_level0() -> None:
    compaction = uc(200, 1, 5)
    unit = compaction.pick(6, [level(0, 1), level(0, 1), level(0, 1), level(0, 1024), level(0, 1024 * 1024)])
    assert sizes_of(unit) == [1, 1, 1, 1024, 1024 * 1024]
    assert unit is not None and unit.output_level == 5


def test_pick_for_size_amp_sequence_java_test_size_amplification() -> None:
    compaction = uc(25, 0, 1)
    sizes = [1]
    expected = [
        [2], [3], [4], [1, 4], [6], [1, 6], [8], [1, 8], [1, 1, 8], [11], [1, 11], [1, 1, 11], [14], [1, 14],
        [1, 1, 14], [1, 1, 1, 14], [18],
    ]  # fmt: skip
    for want in expected:
        sizes = append_and_pick_for_size_amp(compaction, sizes)
        assert sizes == want


def test_pick_for_size_ratio_sequence_java_test_size_ratio() -> None:
    compaction = uc(25, 1, 5)
    sizes = [1, 1, 1, 1]
    expected = [
        [5], [1, 5], [1, 1, 5], [1, 1, 1, 5], [4, 5], [1, 4, 5], [1, 1, 4, 5], [3, 4, 5], [1, 3, 4, 5],
        [2, 3, 4, 5], [1, 2, 3, 4, 5], [16], [1, 16], [1, 1, 16], [1, 1, 1, 16], [4, 16], [1, 4, 16],
        [1, 1, 4, 16], [3, 4, 16], [1, 3, 4, 16], [2, 3, 4, 16], [1, 2, 3, 4, 16], [11, 16],
    ]  # fmt: skip
    for want in expected:
        sizes = append_and_pick_for_size_ratio(compaction, sizes)
        assert sizes == want


def test_pick_for_size_ratio_threshold_java_test_size_ratio_threshold() -> None:
    assert pick_for_size_ratio(uc(25, 10, 2), [8, 9, 10]) == [8, 9, 10]
    assert pick_for_size_ratio(uc(25, 20, 2), [8, 9, 10]) == [27]


def test_force_up_level0_picks_level0_up_java_test_lookup() -> None:
    compaction = uc(25, 1, 3)
    # level 0 to max level
    unit = compaction.pick_force_up_level0(3, level0(1, 2, 2, 2))
    assert sizes_of(unit) == [1, 2, 2, 2]
    assert unit is not None and unit.output_level == 2
    # level 0 force pick
    unit = compaction.pick_force_up_level0(3, [level(0, 1), level(1, 2), level(2, 2)])
    assert sizes_of(unit) == [1, 2, 2]
    assert unit is not None and unit.output_level == 2
    # level 0 to empty level
    unit = compaction.pick_force_up_level0(3, [level(0, 1), level(2, 2)])
    assert sizes_of(unit) == [1]
    assert unit is not None and unit.output_level == 1


def test_pick_full_compaction_single_max_level_run_none_else_all_runs() -> None:
    assert pick_full_compaction(3, []) is None
    assert pick_full_compaction(3, [level(2, 5)]) is None
    unit = pick_full_compaction(3, [level(0, 1), level(2, 5)])
    assert sizes_of(unit) == [1, 5]
    assert unit is not None and unit.output_level == 2


def test_pick_unit_below_trigger_without_lookup_none_with_deletion_vectors_level0_up() -> None:
    # one level-0 file, trigger 2: universal picks nothing; ForceUpLevel0 (deletion vectors) moves it to the max level
    levels = Levels.from_files([file(10, name="a", max_seq=1)], num_levels=3)
    assert pick_unit(levels, CoreOptions({"num-sorted-run.compaction-trigger": "2"})) is None
    options = CoreOptions({"num-sorted-run.compaction-trigger": "2", "deletion-vectors.enabled": "true"})
    unit = pick_unit(levels, options)
    assert unit is not None and unit.output_level == 2 and [f.file_name for f in unit.files] == ["a"]


def test_pick_unit_one_file_already_at_output_level_none() -> None:
    # Java's MergeTreeCompactManager drops a unit that is one file already at its output level
    levels = Levels.from_files([file(10, level=2, name="a")], num_levels=3)
    assert pick_unit(levels, CoreOptions({}), full=True) is None


def test_levels_level0_newest_first_then_levels_upward() -> None:
    files = [
        file(1, name="old", max_seq=1),
        file(1, name="new", max_seq=9),
        file(1, name="b-same", max_seq=5),
        file(1, name="a-same", max_seq=5),
        file(7, level=2, name="l2"),
    ]
    levels = Levels.from_files(files, num_levels=3)
    runs = levels.level_sorted_runs()
    assert [(r.level, [f.file_name for f in r.run.files]) for r in runs] == [
        (0, ["new"]),
        (0, ["a-same"]),
        (0, ["b-same"]),
        (0, ["old"]),
        (2, ["l2"]),
    ]
    assert levels.number_of_sorted_runs == 5 and levels.non_empty_highest_level() == 2
