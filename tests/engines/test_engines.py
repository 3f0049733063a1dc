"""The engine seam without Spark: the task codec round-trips typed tasks and never encodes storage options; the
local engine runs an importable task function in task order, on threads too."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from lake_orchestration.engines.base import TaskAttempt
from lake_orchestration.engines.codec import decode_task, decode_value, encode_task, encode_value
from lake_orchestration.engines.local import LocalEngine
from lake_orchestration.hudi.log.scanner import InstantFilter
from lake_orchestration.hudi.merge.record_merger import MergeConfig
from lake_orchestration.hudi.model.commit_metadata import RuntimeStats, WriteStat
from lake_orchestration.hudi.model.file_group import BaseFile, FileGroupId, FileSlice, LogFile
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.model.properties import MergeSemantics


@dataclass(frozen=True, kw_only=True)
class _SliceTask:
    base_uri: str
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)
    file_slice: FileSlice
    flt: InstantFilter
    merge: MergeConfig
    attempt: TaskAttempt


def _slice() -> FileSlice:
    p = "city=sf"
    return FileSlice(
        FileGroupId(p, "a1b2-0"),
        InstantTime("20240101000000000"),
        BaseFile.parse("a1b2-0_1-0-1_20240101000000000.parquet", partition_path=p, size=1234),
        (LogFile.parse(".a1b2-0_20240101000000000.log.1_0-1-0", partition_path=p, size=56),),
    )


def _task() -> _SliceTask:
    return _SliceTask(
        base_uri="s3://bucket/t",
        storage_options={"secret_access_key": "s3cr3t"},
        file_slice=_slice(),
        flt=InstantFilter("20240102000000000", frozenset({"20240101000000000"}), frozenset(), None),
        merge=MergeConfig(semantics=MergeSemantics.EVENT_TIME_ORDERING, ordering_field="ts"),
        attempt=TaskAttempt(3),
    )


def test_codec_typed_task_round_trip_equal_without_storage_options() -> None:
    task = _task()
    text = encode_task(task)
    assert "s3cr3t" not in text and "storage_options" not in text
    back = decode_task(text)
    assert back.storage_options == {}
    assert back == _SliceTask(**{**task.__dict__, "storage_options": {}})
    assert isinstance(back.file_slice.base_instant, InstantTime)


def test_codec_write_stat_round_trip_equal() -> None:
    stat = WriteStat(fileId="f", path="p/f.parquet", numWrites=7, runtimeStats=RuntimeStats(totalScanTime=4))
    assert decode_value(WriteStat, json.loads(json.dumps(encode_value(stat)))) == stat


def test_codec_wrong_type_raises() -> None:
    with pytest.raises(TypeError):
        decode_value(TaskAttempt, {"partition_id": "3"})


def _square(n: int) -> list[int]:
    return [n * n, -n]


@pytest.mark.parametrize("threads", [1, 4])
def test_local_engine_map_tasks_results_in_task_order(threads: int) -> None:
    out = LocalEngine(threads=threads).map_tasks(_square, list(range(9)), description="squares")
    assert out == [r for n in range(9) for r in (n * n, -n)]


def test_task_attempt_write_token_is_hudis() -> None:
    assert TaskAttempt(2, 5, 17).write_token == "2-5-17"  # FSUtils.makeWriteToken


def test_factory_builds_the_local_engine_in_process_with_one_thread() -> None:
    from lake_orchestration.engines.factory import build_engine
    from lake_orchestration.engines.local import or_local

    one, four = build_engine("local"), build_engine("local", threads=4)
    assert isinstance(one, LocalEngine) and one.in_process and one.name == "local"
    assert four.threads == 4 and not four.in_process  # tasks on a thread pool: through map_tasks
    assert isinstance(or_local(None), LocalEngine) and or_local(None).in_process
    assert or_local(four) is four
    with pytest.raises(ValueError, match=r"engine 'flink': expected one of local, spark"):
        build_engine("flink")


def test_factory_spark_engine_starts_no_session_until_a_task_runs() -> None:
    """The CLI's dry runs and empty task sets answer without a Spark JVM: the session starts on the first task."""
    from lake_orchestration.engines.factory import LazySparkEngine, build_engine
    from lake_orchestration.errors import EngineError

    started: list[str] = []
    lazy = LazySparkEngine(lambda: started.append("spark"))
    assert (lazy.name, lazy.in_process) == ("spark", False)
    assert lazy.map_tasks(_square, [], description="none") == [] and lazy.map_record_groups(_square, []) == []
    assert not lazy.started and started == []
    engine = build_engine("spark", spark_master="local[2]")
    assert isinstance(engine, LazySparkEngine) and not engine.started
    with pytest.raises(EngineError, match=r"Invalid Spark master 'bogus://x'"):
        build_engine("spark", spark_master="bogus://x")  # checked before any JVM


def test_engine_modules_import_no_table_format() -> None:
    """Issue 24: the engines run what Hudi and Paimon hand them (also kept by the import-linter contract)."""
    import ast
    from pathlib import Path

    import lake_orchestration.engines as engines

    for path in Path(engines.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert not name.startswith(("lake_orchestration.hudi", "lake_orchestration.paimon")), (path, name)
