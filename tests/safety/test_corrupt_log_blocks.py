"""Corrupt log blocks: only framing corruption (a torn write) is skipped and counted; a block whose frame is intact
but whose content does not decode stops reads, writes, compaction and log compaction with ``CorruptLogBlockError``
naming the file, the block offset and its instant, before anything is written (issue 11, items 1 and 2).

Tables are a MOR table written by this project (Avro data blocks) and Java fixtures (parquet data blocks, a delete
block, a rolled-back block). Damage is made inside a block's content with its frame left intact (checked with
``iter_blocks``): a record length prefix flipped in the middle of an Avro block, bytes zeroed where polars' Avro
decoder panics (``PanicException``, a ``BaseException``), a parquet footer length flipped, a delete block's version
flipped. "Nothing written" is checked on a listing of every file of the table with its SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.engines.spark import SparkEngine
from lake_orchestration.errors import CorruptLogBlockError
from lake_orchestration.hudi.log import block_content
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlock, LogBlockType, encode_metadata, iter_blocks
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
from lake_orchestration.hudi.services.log_compaction import run_log_compaction, schedule_log_compaction
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.table.snapshot import ReadStats
from lake_orchestration.hudi.write import write_table
from tests.conftest import REPO_ROOT, HudiFixture
from tests.forkserver import ForkServer
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

OPTS = trips_options(hive_style_partitioning=True, small_file_limit=0)


# -- tables and damage ------------------------------------------------------------------------------------------
def _written_table(tmp_path: Path) -> tuple[Path, pa.Table]:
    """A MOR table of 2 partitions: a bulk insert, then an upsert that writes one Avro data block per file group."""
    path = tmp_path / "t"
    base = generate_trips(120, partitions=2, seed=3)
    write_table(str(path), base, operation="bulk_insert", options=OPTS)
    write_table(str(path), generate_updates(base, fraction=0.5, seed=4), operation="upsert", options=OPTS)
    return path, base


def _log_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob(".*.log.*") if ".hoodie" not in p.relative_to(path).parts)


def _fingerprint(path: Path) -> dict[str, str]:
    """Every file of the table (timeline included) with its SHA-256."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def _content_start(block: LogBlock) -> int:
    """Offset of a block's content in its file: the content is followed by the footer and the trailing length."""
    return block.offset + block.size - 8 - len(encode_metadata(block.footer)) - len(block.content)


def _damage(log: Path, block_type: LogBlockType, damage) -> LogBlock:  # type: ignore[no-untyped-def]
    """Rewrite the content of the first ``block_type`` block of ``log`` with ``damage(content) -> bytes`` (same
    length); the frame stays intact: the file still reads as the same well-framed blocks."""
    data = log.read_bytes()
    before = list(iter_blocks(data))
    block = next(b for b in before if b.block_type is block_type)
    start = _content_start(block)
    assert data[start : start + len(block.content)] == block.content
    new = damage(block.content)
    assert len(new) == len(block.content) and new != block.content
    out = data[:start] + new + data[start + len(block.content) :]
    log.write_bytes(out)
    after = list(iter_blocks(out))
    assert [(b.block_type, b.offset, b.size, b.header) for b in after] == [
        (b.block_type, b.offset, b.size, b.header) for b in before
    ], "the damage must leave the frame intact"
    return block


def _record_starts(content: bytes) -> list[int]:
    """Offsets of the record length prefixes of an Avro data block's content (independent walk of the layout)."""
    _, count = struct.unpack_from(">ii", content, 0)
    pos, starts = 8, []
    for _ in range(count):
        starts.append(pos)
        (n,) = struct.unpack_from(">i", content, pos)
        pos += 4 + n
    assert pos == len(content)
    return starts


def flip_middle_record_length(content: bytes) -> bytes:
    """Bytes flipped mid-block: the length prefix of the middle record."""
    starts = _record_starts(content)
    at = starts[len(starts) // 2]
    return content[:at] + bytes(b ^ 0xFF for b in content[at : at + 4]) + content[at + 4 :]


def zero_where_polars_panics(schema_json: str):  # type: ignore[no-untyped-def]
    """4 zeroed bytes at the first position (from the middle of the block) where polars' Avro decoder panics."""
    from polars.exceptions import PanicException

    schema = json.loads(schema_json)
    target = block_content.avro_to_arrow_schema(schema)

    def damage(content: bytes) -> bytes:
        count = struct.unpack_from(">i", content, 4)[0]
        middle = len(content) // 2
        for at in [*range(middle, len(content) - 4), *range(8, middle)]:
            bad = content[:at] + b"\0\0\0\0" + content[at + 4 :]
            if bad == content:
                continue
            try:
                block_content._decode_polars(memoryview(bad)[8:], count, schema, target)
            except PanicException:
                return bad
            except Exception:
                continue
        pytest.fail("no 4-byte zeroing makes polars panic")

    return damage


def _file_id(log: Path) -> str:
    """``.{fileId}_{baseInstant}.log.{version}_{token}`` -> fileId."""
    return log.name[1:].split("_", 1)[0]


def _first_block(log: Path, block_type: LogBlockType) -> LogBlock:
    return next(b for b in iter_blocks(log.read_bytes()) if b.block_type is block_type)


def _damaged_written_table(tmp_path: Path, how: str) -> tuple[Path, Path, LogBlock]:
    path, _ = _written_table(tmp_path)
    log = _log_files(path)[0]
    block = _first_block(log, LogBlockType.AVRO_DATA_BLOCK)
    damage = flip_middle_record_length if how == "flip" else zero_where_polars_panics(block.get(HeaderKey.SCHEMA) or "")
    _damage(log, LogBlockType.AVRO_DATA_BLOCK, damage)
    return path, log, block


def _assert_names_block(err: CorruptLogBlockError, log: Path, block: LogBlock) -> None:
    assert err.path == str(log)
    assert err.offset == block.offset
    assert err.instant == block.instant_time and err.instant
    msg = str(err)
    assert str(log) in msg and f"at byte {block.offset}" in msg and str(block.instant_time) in msg, msg


def _cli_env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }


_FORKS: list[ForkServer] = []


@pytest.fixture(scope="module", autouse=True)
def _fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The module's :mod:`tests.forkserver`: the CLI's imports paid once, each ``lake-orch`` a forked child of it."""
    forks = ForkServer(
        sys.executable, ["--import", "lake_orchestration.cli.app"], tmp_path_factory.mktemp("forks") / "log", _cli_env()
    )
    _FORKS.append(forks)
    yield
    _FORKS.remove(forks)
    forks.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``lake-orch ARGS`` in a fresh process, importing this checkout's package (``python -m``; a forked child of the
    module's fork server, which imported it once)."""
    (forks,) = _FORKS
    return forks.run(args, module="lake_orchestration.cli.app", env=_cli_env(), cwd=os.getcwd(), timeout=300)


def _assert_cli_error(r: subprocess.CompletedProcess[str], log: Path, block: LogBlock) -> None:
    assert r.returncode != 0, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    assert "Error: Cannot decode" in r.stderr, r.stderr
    assert str(log) in r.stderr and f"at byte {block.offset}" in r.stderr and str(block.instant_time) in r.stderr
    assert r.stdout == "", r.stdout


DAMAGE = ["flip", "polars_panic"]


# -- reads ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", DAMAGE)
def test_corrupt_block_snapshot_read_raises_naming_file_offset_instant(tmp_path: Path, how: str) -> None:
    path, log, block = _damaged_written_table(tmp_path, how)
    before = _fingerprint(path)
    with pytest.raises(CorruptLogBlockError) as info:
        read_snapshot_table(HudiTable(str(path)))
    _assert_names_block(info.value, log, block)
    assert _fingerprint(path) == before


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("how", DAMAGE)
def test_corrupt_block_cli_read_error_on_stderr_no_output_file(tmp_path: Path, how: str, as_json: bool) -> None:
    path, log, block = _damaged_written_table(tmp_path, how)
    before = _fingerprint(path)
    out = tmp_path / "out.parquet"
    r = _cli("read", str(path), "-o", str(out), *(["--json"] if as_json else []))
    _assert_cli_error(r, log, block)
    assert not out.exists() and not list(tmp_path.glob(".out.parquet*")), "a failed read leaves no output file"
    assert _fingerprint(path) == before


def test_corrupt_block_cli_read_keeps_an_existing_output_untouched(tmp_path: Path) -> None:
    path, log, block = _damaged_written_table(tmp_path, "flip")
    out = tmp_path / "out.parquet"
    out.write_bytes(b"previous output")
    _assert_cli_error(_cli("read", str(path), "-o", str(out), "--json"), log, block)
    assert out.read_bytes() == b"previous output"


# -- writes -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", DAMAGE)
def test_corrupt_block_upsert_into_its_file_group_raises_nothing_written(tmp_path: Path, how: str) -> None:
    path, log, block = _damaged_written_table(tmp_path, how)
    # three rows of the damaged file group's base file, updated
    base_rows = pq.read_table(next(log.parent.glob(f"{_file_id(log)}_*.parquet")))
    upd = base_rows.select([c for c in base_rows.column_names if not c.startswith("_hoodie_")]).slice(0, 3)
    upd = upd.set_column(upd.schema.get_field_index("fare"), "fare", pc.add(upd.column("fare"), 1.0))
    before = _fingerprint(path)
    with pytest.raises(CorruptLogBlockError) as info:
        write_table(str(path), upd, operation="upsert", options=OPTS)
    _assert_names_block(info.value, log, block)
    assert _fingerprint(path) == before
    # the CLI says the same on stderr
    src = tmp_path / "upd.parquet"
    pq.write_table(upd, src)
    _assert_cli_error(_cli("write", str(path), "--input", str(src), "--operation", "upsert", "--json"), log, block)
    assert _fingerprint(path) == before


# -- compaction and log compaction ------------------------------------------------------------------------------
@pytest.mark.parametrize("how", DAMAGE)
def test_corrupt_block_compaction_raises_before_inflight_nothing_written(tmp_path: Path, how: str) -> None:
    path, log, block = _damaged_written_table(tmp_path, how)
    sched = schedule_compaction(HudiTable(str(path)), force=True)
    assert sched.scheduled, sched.reason
    assert len(sched.plan.operations) == 2  # the damaged file group and a sound one: neither is written
    before = _fingerprint(path)
    with pytest.raises(CorruptLogBlockError) as info:
        run_compaction(HudiTable(str(path)), instant_time=str(sched.instant))
    _assert_names_block(info.value, log, block)
    assert _fingerprint(path) == before
    pending = HudiTable(str(path)).timeline.get(str(sched.instant), Action.COMPACTION)
    assert pending is not None and pending.state is State.REQUESTED
    r = _cli("compaction", "run", str(path), "--engine", "local", "--json")
    _assert_cli_error(r, log, block)
    assert _fingerprint(path) == before


@pytest.mark.parametrize("how", DAMAGE)
def test_corrupt_block_log_compaction_raises_before_inflight_nothing_written(tmp_path: Path, how: str) -> None:
    path, log, block = _damaged_written_table(tmp_path, how)
    cfg = CompactionConfig(log_compaction_blocks_threshold=1)
    sched = schedule_log_compaction(HudiTable(str(path)), config=cfg)
    assert sched.scheduled, sched.reason
    before = _fingerprint(path)
    with pytest.raises(CorruptLogBlockError) as info:
        run_log_compaction(HudiTable(str(path)), str(sched.instant), config=cfg)
    _assert_names_block(info.value, log, block)
    assert _fingerprint(path) == before
    pending = HudiTable(str(path)).timeline.get(str(sched.instant), Action.LOG_COMPACTION)
    assert pending is not None and pending.state is State.REQUESTED
    _assert_cli_error(_cli("log-compaction", "run", str(path)), log, block)
    assert _fingerprint(path) == before


def test_corrupt_block_repaired_file_then_compaction_runs_as_planned(tmp_path: Path) -> None:
    """The refused plan stays runnable: once the log file is restored, the same plan compacts to hudi-rs's rows."""
    path, _ = _written_table(tmp_path)
    expected = hudi_rs_snapshot(path)
    log = _log_files(path)[0]
    good = log.read_bytes()
    _damage(log, LogBlockType.AVRO_DATA_BLOCK, flip_middle_record_length)
    sched = schedule_compaction(HudiTable(str(path)), force=True)
    with pytest.raises(CorruptLogBlockError):
        run_compaction(HudiTable(str(path)), instant_time=str(sched.instant))
    log.write_bytes(good)
    [res] = run_compaction(HudiTable(str(path)), instant_time=str(sched.instant))
    assert res.operations == 2 and all(s.totalCorruptLogBlock == 0 for s in res.stats)
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), expected, ignore=REWRITTEN_BY_SERVICES)
    assert_same_rows(hudi_rs_snapshot(path), expected, ignore=REWRITTEN_BY_SERVICES)


def test_corrupt_block_verify_task_returns_the_block(tmp_path: Path) -> None:
    """The engine task of the check before a compaction goes inflight returns the block (called here as each Spark
    task calls it) instead of raising inside an executor, so the driver raises the same error."""
    from dataclasses import asdict

    from lake_orchestration.hudi.services.compaction import compaction_tasks
    from lake_orchestration.hudi.services.compaction.executor import find_corrupt_blocks

    path, log, block = _damaged_written_table(tmp_path, "flip")
    t = HudiTable(str(path))
    sched = schedule_compaction(t, force=True)
    tasks, _ = compaction_tasks(t, str(sched.instant), CompactionConfig())
    bad = [asdict(r) for task in tasks for r in find_corrupt_blocks(task)]
    assert len(tasks) == 2 and len(bad) == 1
    assert {k: v for k, v in bad[0].items() if k != "reason"} == {
        "path": str(log),
        "offset": block.offset,
        "instant": block.instant_time,
        "block_type": "AVRO_DATA_BLOCK",
    }
    assert "record length" in bad[0]["reason"]


@pytest.mark.spark
def test_corrupt_block_compaction_on_spark_raises_before_inflight_nothing_written(tmp_path: Path, spark) -> None:  # type: ignore[no-untyped-def]
    path, log, block = _damaged_written_table(tmp_path, "polars_panic")
    sched = schedule_compaction(HudiTable(str(path)), force=True)
    before = _fingerprint(path)
    with pytest.raises(CorruptLogBlockError) as info:
        run_compaction(HudiTable(str(path)), instant_time=str(sched.instant), engine=SparkEngine(spark))
    _assert_names_block(info.value, log, block)
    assert _fingerprint(path) == before


# -- Java fixtures: parquet data blocks and delete blocks -------------------------------------------------------


def _flip_parquet_footer_length(content: bytes) -> bytes:
    return content[:-8] + bytes(b ^ 0xFF for b in content[-8:-4]) + content[-4:]


def _flip_delete_version(content: bytes) -> bytes:
    return bytes(b ^ 0xFF for b in content[:4]) + content[4:]


@pytest.mark.fixtures
@pytest.mark.parametrize(
    ("fixture", "block_type", "damage"),
    [
        (HudiFixture.MOR_SIMPLE_NONHIVE, LogBlockType.PARQUET_DATA_BLOCK, _flip_parquet_footer_length),
        (HudiFixture.MOR_COMPLEX_HIVE, LogBlockType.PARQUET_DATA_BLOCK, _flip_parquet_footer_length),
        (HudiFixture.TRIPS_MOR_AVRO, LogBlockType.DELETE_BLOCK, _flip_delete_version),
    ],
    ids=["parquet-simple", "parquet-complex", "delete-trips"],
)
def test_corrupt_block_java_fixture_read_and_compaction_raise(fresh_fixture, fixture, block_type, damage) -> None:  # type: ignore[no-untyped-def]
    path = fresh_fixture(fixture)
    log = next(p for p in _log_files(path) if any(b.block_type is block_type for b in iter_blocks(p.read_bytes())))
    block = _damage(log, block_type, damage)
    before = _fingerprint(path)
    with pytest.raises(CorruptLogBlockError) as info:
        read_snapshot_table(HudiTable(str(path)))
    _assert_names_block(info.value, log, block)
    sched = schedule_compaction(HudiTable(str(path)), force=True)
    assert sched.scheduled, sched.reason
    before = _fingerprint(path)
    with pytest.raises(CorruptLogBlockError) as info:
        run_compaction(HudiTable(str(path)), instant_time=str(sched.instant))
    _assert_names_block(info.value, log, block)
    assert _fingerprint(path) == before


# -- what is still skipped: framing corruption, blocks that are not read ------------------------------------------
def test_torn_tail_is_skipped_and_counted_compaction_commits(tmp_path: Path) -> None:
    """A crashed writer's torn last block (framing corruption) is skipped and counted, as Java's reader does."""
    path, base = _written_table(tmp_path)
    expected = hudi_rs_snapshot(path)
    # a second upsert writes a new log file per group; tear its block (a writer killed mid-append)
    write_table(
        str(path), generate_updates(base, fraction=0.3, seed=9, ts_offset=10**8), operation="upsert", options=OPTS
    )
    newest = max(_log_files(path), key=lambda p: (int(p.name.split(".log.")[1].split("_")[0]), p.stat().st_mtime))
    data = newest.read_bytes()
    newest.write_bytes(data[: len(data) - 25])
    assert [b.block_type for b in iter_blocks(newest.read_bytes())] == [LogBlockType.CORRUPT_BLOCK]
    stats = ReadStats()
    got = read_snapshot_table(HudiTable(str(path)), stats=stats)
    assert stats.corrupt_blocks == 1 and str(newest.name) in stats.corrupt_reasons[0]
    # the torn block's group reads as before the second upsert there; the other group has its update
    assert got.num_rows == expected.num_rows
    assert_same_rows(got, hudi_rs_snapshot(path))
    sched = schedule_compaction(HudiTable(str(path)), force=True)
    [res] = run_compaction(HudiTable(str(path)), instant_time=str(sched.instant))
    by_fid = {s.fileId: s for s in res.stats}
    assert by_fid[_file_id(newest)].totalCorruptLogBlock == 1
    assert sum(s.totalCorruptLogBlock for s in res.stats) == 1
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), got, ignore=REWRITTEN_BY_SERVICES)


@pytest.mark.fixtures
def test_content_corrupt_rolled_back_block_is_never_decoded(fresh_fixture) -> None:  # type: ignore[no-untyped-def]
    """MOR_ROLLBACK: the parquet block of 20250126040826878 was rolled back (command block in .log.2): damaging its
    content changes nothing, for reads and compaction, because a rolled-back block is never decoded."""
    path = fresh_fixture(HudiFixture.MOR_ROLLBACK)
    expected = hudi_rs_snapshot(path)
    log = next(p for p in _log_files(path) if ".log.1_" in p.name)
    block = _damage(log, LogBlockType.PARQUET_DATA_BLOCK, _flip_parquet_footer_length)
    assert block.instant_time == "20250126040826878"
    with pytest.raises(Exception):  # noqa: B017 -- the damage is real: the content does not decode
        block_content.decode_parquet_data(_first_block(log, LogBlockType.PARQUET_DATA_BLOCK).content)
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), expected)
    sched = schedule_compaction(HudiTable(str(path)), force=True)
    [res] = run_compaction(HudiTable(str(path)), instant_time=str(sched.instant))
    assert all(s.totalCorruptLogBlock == 0 for s in res.stats)
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), expected, ignore=REWRITTEN_BY_SERVICES)
    assert_same_rows(hudi_rs_snapshot(path), expected, ignore=REWRITTEN_BY_SERVICES)


def test_content_corrupt_block_of_an_uncommitted_write_is_never_decoded(tmp_path: Path) -> None:
    """A write that never completed (its .deltacommit missing, inflight left): its blocks are skipped unread, so
    damaged content there neither fails a read nor an upsert."""
    path, base = _written_table(tmp_path)
    expected = hudi_rs_snapshot(path)
    res = write_table(
        str(path), generate_updates(base, fraction=0.3, seed=9, ts_offset=10**8), operation="upsert", options=OPTS
    )
    (path / ".hoodie" / f"{res.instant}.deltacommit").unlink()  # crashed before its commit
    log = next(p for p in _log_files(path) if _first_block(p, LogBlockType.AVRO_DATA_BLOCK).instant_time == res.instant)
    _damage(log, LogBlockType.AVRO_DATA_BLOCK, flip_middle_record_length)
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), expected)
    assert_same_rows(hudi_rs_snapshot(path), expected)
    w = write_table(str(path), generate_trips(5, partitions=2, seed=50), operation="upsert", options=OPTS)
    assert w.inserted == 5
