"""Compaction triggers x strategies with exact expected operations (Hudi 0.14/0.15 rules).

Strategies (``org.apache.hudi.table.action.compact.strategy``): ``LogFileSizeBasedCompactionStrategy`` (keep slices
whose log bytes >= threshold, largest first, then the IO budget), ``LogFileNumBasedCompactionStrategy`` (same with the
number of log files), ``BoundedIOCompactionStrategy`` (``hoodie.compaction.target.io``: take operations until the
budget is spent, the one that spends it included), ``UnBoundedCompactionStrategy`` (everything),
``DayBasedCompactionStrategy`` (the latest ``daybased.target.partitions`` partitions of *all* partitions, newest
first, no IO budget) and ``BoundedPartitionAwareCompactionStrategy`` (partitions dated today - N days or later,
newest first, no IO budget).
Triggers (``ScheduleCompactionActionExecutor#needCompact``): deltacommits since the last compaction, and seconds
from the last compaction (or the first deltacommit) to the new instant, each instant truncated to whole seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pendulum
import pyarrow as pa
import pytest

from lake_orchestration.hudi.model.avro import CompactionPlan
from lake_orchestration.hudi.model.instant import INSTANT_FORMAT, InstantTime
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import (
    CompactionConfig,
    TriggerStrategy,
    run_compaction,
    schedule_compaction,
)
from lake_orchestration.hudi.services.compaction.planner import generate_plan, trigger_reason
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

MB = 1024 * 1024
OPTS = WriteOptions(
    table_name="m",
    table_type=TableType.MERGE_ON_READ,
    record_key_fields=("id",),
    partition_fields=("day",),
    precombine_field="ts",
    small_file_limit=0,
    compression="snappy",
)

# group -> (partition day offset from today, rows, bytes of payload per row, upserts touching it)
# Base files: A ~3.7 MB, E ~2.7 MB, B ~1.8 MB, others < 1 MB (the bloom filter alone is ~0.4 MB).
# Log files: A one big file (300 rows), E 4, B 3, C 2, D 1 small ones; F none.
GROUPS = {
    "A": (-15, 300, 11_500, 1),
    "B": (-5, 5, 290_000, 3),
    "C": (-1, 5, 20, 2),
    "D": (0, 5, 20, 1),
    "E": (2, 5, 490_000, 4),
    "F": (5, 5, 20, 0),
}


@dataclass(frozen=True)
class Slice:
    partition: str
    file_id: str
    log_files: int
    log_bytes: int
    base_bytes: int


def _day(offset: int) -> str:
    return pendulum.today("UTC").date().add(days=offset).format("YYYY/MM/DD")


def _rows(ids: list[str], days: list[str], ts: int, payloads: list[str]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "day": pa.array(days, pa.string()),
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "payload": pa.array(payloads, pa.string()),
        }
    )


@pytest.fixture(scope="module")
def strategy_table(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Slice]]]:
    path = tmp_path_factory.mktemp("matrix") / "m"
    rng = np.random.default_rng(7)
    ids, days, payloads = [], [], []
    for g, (offset, n, size, _) in GROUPS.items():
        for i in range(n):
            ids.append(f"{g}{i:03d}")
            days.append(_day(offset))
            payloads.append(rng.bytes(size // 2).hex())
    write_table(str(path), _rows(ids, days, 1, payloads), operation="bulk_insert", options=OPTS)
    for round_ in range(4):  # upsert r touches the groups with more than r upserts; A with all 300 rows
        up_ids, up_days = [], []
        for g, (offset, n, _, ups) in GROUPS.items():
            if ups > round_:
                k = n if g == "A" else 1
                up_ids += [f"{g}{i:03d}" for i in range(k)]
                up_days += [_day(offset)] * k
        write_table(
            str(path), _rows(up_ids, up_days, 2 + round_, ["x"] * len(up_ids)), operation="upsert", options=OPTS
        )
    # the slices as the disk shows them (independent of the file-system view under test)
    slices = {}
    for g, (offset, *_rest) in GROUPS.items():
        part = path / _day(offset)
        (base,) = part.glob("*.parquet")
        logs = list(part.glob(".*.log.*"))
        slices[g] = Slice(
            partition=_day(offset),
            file_id=base.name.split("_")[0],
            log_files=len(logs),
            log_bytes=sum(p.stat().st_size for p in logs),
            base_bytes=base.stat().st_size,
        )
    assert [slices[g].log_files for g in "ABCDEF"] == [1, 3, 2, 1, 4, 0]
    # the layout the expectations below rely on
    assert [slices[g].base_bytes // MB for g in "ABCDE"] == [3, 1, 0, 0, 2]
    by_size = sorted("ABCDE", key=lambda g: slices[g].log_bytes, reverse=True)
    assert by_size == ["A", "E", "B", "C", "D"] and len({slices[g].log_bytes for g in "ABCDE"}) == 5
    yield path, slices


def _io_mb(s: Slice) -> int:
    """``TOTAL_IO_MB`` of a slice: (base + logs) // MB read + base // MB written."""
    return (s.base_bytes + s.log_bytes) // MB + s.base_bytes // MB


def _ops(plan: CompactionPlan, slices: dict[str, Slice]) -> list[str]:
    names = {(s.partition, s.file_id): g for g, s in slices.items()}
    return [names[(op.partition_path, op.file_id)] for op in plan.operations]


# (strategy options, expected groups in plan order; a set where Java's order is not defined)
STRATEGY_CASES = [
    pytest.param({}, ["A", "E", "B", "C", "D"], id="size-default-all-largest-logs-first"),
    pytest.param({"hoodie.compaction.logfile.size.threshold": "{C}"}, ["A", "E", "B", "C"], id="size-threshold-eq"),
    pytest.param({"hoodie.compaction.logfile.size.threshold": "{C+1}"}, ["A", "E", "B"], id="size-threshold-gt"),
    pytest.param({"hoodie.compaction.target.io": "0"}, ["A"], id="size-io-0"),
    pytest.param({"hoodie.compaction.target.io": "{io_A}"}, ["A"], id="size-io-eq-first"),
    pytest.param({"hoodie.compaction.target.io": "{io_A+1}"}, ["A", "E"], id="size-io-first+1"),
    pytest.param({"hoodie.compaction.target.io": "{io_A+io_E+io_B}"}, ["A", "E", "B"], id="size-io-eq-three"),
    pytest.param({"hoodie.compaction.target.io": "{io_A+io_E+io_B+1}"}, ["A", "E", "B", "C", "D"], id="size-io-all"),
    pytest.param(
        {"hoodie.compaction.strategy": "LogFileNumBasedCompactionStrategy"}, {"A", "B", "C", "D", "E"}, id="num-all"
    ),
    pytest.param(
        {
            "hoodie.compaction.strategy": "LogFileNumBasedCompactionStrategy",
            "hoodie.compaction.logfile.num.threshold": "2",
        },
        ["E", "B", "C"],
        id="num-threshold-2",
    ),
    pytest.param(
        {
            "hoodie.compaction.strategy": "LogFileNumBasedCompactionStrategy",
            "hoodie.compaction.logfile.num.threshold": "3",
        },
        ["E", "B"],
        id="num-threshold-eq-3",
    ),
    pytest.param(
        {"hoodie.compaction.strategy": "LogFileNumBasedCompactionStrategy", "hoodie.compaction.target.io": "{io_E+1}"},
        ["E", "B"],
        id="num-io",
    ),
    pytest.param(
        {"hoodie.compaction.strategy": "UnBoundedCompactionStrategy", "hoodie.compaction.target.io": "0"},
        {"A", "B", "C", "D", "E"},
        id="unbounded-ignores-io",
    ),
    pytest.param(
        {"hoodie.compaction.strategy": "BoundedIOCompactionStrategy", "hoodie.compaction.target.io": "{io_all}"},
        {"A", "B", "C", "D", "E"},
        id="bounded-io-enough",
    ),
    pytest.param(
        {
            "hoodie.compaction.strategy": "DayBasedCompactionStrategy",
            "hoodie.compaction.daybased.target.partitions": "2",
        },
        ["E"],  # the 2 latest partitions are F (no log files) and E
        id="day-2",
    ),
    pytest.param(
        {
            "hoodie.compaction.strategy": "DayBasedCompactionStrategy",
            "hoodie.compaction.daybased.target.partitions": "4",
            "hoodie.compaction.target.io": "0",
        },
        ["E", "D", "C"],
        id="day-4-ignores-io",
    ),
    pytest.param(
        {"hoodie.compaction.strategy": "DayBasedCompactionStrategy"}, ["E", "D", "C", "B", "A"], id="day-default-10"
    ),
    pytest.param(
        {"hoodie.compaction.strategy": "BoundedPartitionAwareCompactionStrategy"},
        ["E", "D", "C", "B"],  # dated today - 10 or later (A is 15 days old)
        id="partition-aware-10",
    ),
    pytest.param(
        {
            "hoodie.compaction.strategy": "BoundedPartitionAwareCompactionStrategy",
            "hoodie.compaction.daybased.target.partitions": "5",
        },
        ["E", "D", "C", "B"],  # B is dated exactly today - 5
        id="partition-aware-eq-5",
    ),
    pytest.param(
        {"hoodie.compaction.strategy": "BoundedPartitionAwareCompactionStrategy", "hoodie.compaction.target.io": "1"},
        ["E", "D", "C", "B"],
        id="partition-aware-ignores-io",
    ),
    pytest.param(
        {
            "hoodie.compaction.strategy": "BoundedPartitionAwareCompactionStrategy",
            "hoodie.compaction.daybased.target.partitions": "4",
        },
        ["E", "D", "C"],
        id="partition-aware-4",
    ),
]


def _resolve(options: dict[str, str], slices: dict[str, Slice]) -> dict[str, str]:
    env = {"C": slices["C"].log_bytes, **{f"io_{g}": _io_mb(s) for g, s in slices.items()}}
    env["io_all"] = sum(_io_mb(slices[g]) for g in "ABCDE")
    out = {}
    for k, v in options.items():
        if v.startswith("{"):
            v = str(eval(v[1:-1], {}, env))  # test-local arithmetic on the names above
        out[k] = v
    return out


@pytest.mark.parametrize(("options", "expected"), STRATEGY_CASES)
def test_compaction_strategy_selects_exact_operations(
    strategy_table: tuple[Path, dict[str, Slice]], options: dict[str, str], expected: list[str] | set[str]
) -> None:
    path, slices = strategy_table
    cfg = CompactionConfig.from_options(_resolve(options, slices))
    plan = generate_plan(HudiTable(str(path)), cfg)
    got = _ops(plan, slices)
    assert got, "empty plan"
    if isinstance(expected, set):
        assert set(got) == expected and len(got) == len(expected)
    else:
        assert got == expected
    for op in plan.operations:  # each operation carries its slice exactly
        s = next(s for s in slices.values() if s.file_id == op.file_id)
        assert len(op.delta_file_paths) == s.log_files
        assert op.metrics["TOTAL_LOG_FILES"] == s.log_files
        assert op.metrics["TOTAL_LOG_FILES_SIZE"] == s.log_bytes
        assert op.metrics["TOTAL_IO_MB"] == _io_mb(s)


def test_compaction_scheduled_plan_on_disk_has_the_strategy_operations(
    strategy_table: tuple[Path, dict[str, Slice]], tmp_path: Path
) -> None:
    import shutil

    src, slices = strategy_table
    path = tmp_path / "m"
    shutil.copytree(src, path)
    cfg = CompactionConfig.from_options(
        {
            "hoodie.compaction.strategy": "LogFileNumBasedCompactionStrategy",
            "hoodie.compaction.logfile.num.threshold": "3",
        }
    )
    r = schedule_compaction(HudiTable(str(path)), config=cfg, force=True)
    assert r.scheduled
    requested = path / ".hoodie" / f"{r.instant}.compaction.requested"
    plan = CompactionPlan.from_bytes(requested.read_bytes(), path=str(requested))
    assert _ops(plan, slices) == ["E", "B"]


# -- triggers ---------------------------------------------------------------------------------------------------
T0 = "20240101000000900"  # the first deltacommit: 900 ms past a whole second


def _at(ts: str, seconds: float) -> str:
    dt = pendulum.from_format(ts, INSTANT_FORMAT, tz="UTC").add(microseconds=round(seconds * 1_000_000))
    return f"{dt.format('YYYYMMDDHHmmss')}{dt.microsecond // 1000:03d}"


@pytest.fixture
def trigger_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, list[str]]]:
    """4 deltacommits at chosen instants: T0, T0 + 10 s, + 20 s, + 30 s (whole-second offsets)."""
    times = iter([T0] + [_at(T0, 10 * i) for i in range(1, 4)] + [_at(T0, 200 + 10 * i) for i in range(10)])
    used: list[str] = []

    def next_time(self: HudiTable) -> InstantTime:
        used.append(next(times))
        return InstantTime(used[-1])

    monkeypatch.setattr(HudiTable, "new_instant_time", next_time)
    path = tmp_path / "t"
    ids = [f"k{i}" for i in range(5)]
    write_table(str(path), _rows(ids, ["2024/01/01"] * 5, 1, ["p"] * 5), operation="bulk_insert", options=OPTS)
    for n in range(3):
        write_table(str(path), _rows(ids[:2], ["2024/01/01"] * 2, 2 + n, ["u"] * 2), operation="upsert", options=OPTS)
    assert used == [T0, _at(T0, 10), _at(T0, 20), _at(T0, 30)]
    yield path, used


# (strategy, max delta commits, max delta seconds, seconds after T0 of the new instant, compact?)
# 4 deltacommits since T0; Java truncates both instants to whole seconds: T0 + 3599.1 s counts as 3600 s.
TRIGGER_CASES = [
    ("NUM_COMMITS", 4, 10**6, 40, True),
    ("NUM_COMMITS", 5, 10**6, 40, False),
    ("TIME_ELAPSED", 99, 3600, 3599.1, True),  # 01:00:00.000 - 00:00:00.900 -> 3600 - 0 whole seconds
    ("TIME_ELAPSED", 99, 3601, 3600.0, False),
    ("TIME_ELAPSED", 99, 3601, 3601.0, True),
    ("NUM_AND_TIME", 4, 3600, 3600, True),
    ("NUM_AND_TIME", 5, 3600, 3600, False),
    ("NUM_AND_TIME", 4, 3601, 3600, False),
    ("NUM_OR_TIME", 5, 3600, 3600, True),
    ("NUM_OR_TIME", 4, 3601, 3600, True),
    ("NUM_OR_TIME", 5, 3601, 3600, False),
]


@pytest.mark.parametrize(("strategy", "num", "secs", "after", "compact"), TRIGGER_CASES)
def test_compaction_trigger_decides_exactly(
    trigger_table: tuple[Path, list[str]], strategy: str, num: int, secs: int, after: float, compact: bool
) -> None:
    path, _ = trigger_table
    cfg = CompactionConfig.from_options(
        {
            "hoodie.compact.inline.trigger.strategy": strategy,
            "hoodie.compact.inline.max.delta.commits": str(num),
            "hoodie.compact.inline.max.delta.seconds": str(secs),
        }
    )
    instant = _at(T0, after)
    reason = trigger_reason(HudiTable(str(path)), instant, cfg)
    assert (reason is None) is compact, reason
    r = schedule_compaction(HudiTable(str(path)), config=cfg, instant_time=instant)
    assert r.scheduled is compact, r.reason
    if compact:
        assert r.plan is not None and len(r.plan.operations) == 1


def test_compaction_trigger_counts_from_the_last_compaction(trigger_table: tuple[Path, list[str]]) -> None:
    path, used = trigger_table
    c = _at(T0, 100)
    assert schedule_compaction(HudiTable(str(path)), instant_time=c, force=True).scheduled
    assert run_compaction(HudiTable(str(path)))
    ids = ["k0", "k1"]
    for n in range(2):
        write_table(str(path), _rows(ids, ["2024/01/01"] * 2, 10 + n, ["v"] * 2), operation="upsert", options=OPTS)
    assert used[-2:] == [_at(T0, 200), _at(T0, 210)]
    t = HudiTable(str(path))

    def decide(strategy: str, num: int, secs: int, after_c: float) -> bool:
        cfg = CompactionConfig(
            trigger_strategy=TriggerStrategy(strategy), max_delta_commits=num, max_delta_seconds=secs
        )
        return trigger_reason(t, _at(c, after_c), cfg) is None

    assert decide("NUM_COMMITS", 2, 10**6, 120)  # 2 deltacommits since the compaction, not 6
    assert not decide("NUM_COMMITS", 3, 10**6, 120)
    assert decide("TIME_ELAPSED", 99, 120, 120)  # seconds since the compaction, not since T0
    assert not decide("TIME_ELAPSED", 99, 121, 120)
    assert decide("NUM_AND_TIME", 2, 120, 120) and not decide("NUM_AND_TIME", 2, 121, 120)
    assert decide("NUM_OR_TIME", 3, 120, 120) and not decide("NUM_OR_TIME", 3, 121, 120)


def test_date_partitions_record_their_depth_as_java(strategy_table: tuple[Path, dict[str, Slice]]) -> None:
    """``yyyy/MM/dd`` from one partition field is 3 directory levels: Java writes ``partitionDepth=3`` (the v6
    time-based key generator fixture has ``partitionDepth=4`` for ``2023/04/03/12``), which Java uses to find the
    table's base path from a partition."""
    path, slices = strategy_table
    for s in slices.values():
        text = (path / s.partition / ".hoodie_partition_metadata").read_text()
        assert "partitionDepth=3\n" in text, text
