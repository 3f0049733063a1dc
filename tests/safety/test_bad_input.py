"""Bad input: corrupt log files are reported (never raised, never modified); corrupt timeline and table config
files raise errors that name the file and the offending value; unknown files in ``.hoodie/`` are ignored."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from lake_orchestration.errors import (
    CorruptFileError,
    InvalidFileNameError,
    InvalidTablePropertiesError,
    UnsupportedTableVersionError,
)
from lake_orchestration.hudi.log.log_format import LogBlockType, iter_blocks
from lake_orchestration.hudi.log.scanner import InstantFilter, ScanStats, scan_blocks
from lake_orchestration.hudi.log.writer import rollback_command_block
from lake_orchestration.hudi.model.file_group import LogFile
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from lake_orchestration.io.storage import Storage
from tests.conftest import FIXTURE_LOG_FILES, HudiFixture, fixture_log_files

pytestmark = pytest.mark.fixtures

GetFixture = Callable[[HudiFixture], Path]
AVRO_LOG = "valid_log_avro_data/.ff32ab89-5ad0-4968-83b4-89a34c95d32f-0_20250316025816068.log.1_0-54-122"
DELETE_LOG = "valid_log_delete/.6d3d1d6e-2298-4080-a0c1-494877d6f40a-0_20250618054711154.log.1_0-26-85"
AVRO_INSTANT = "20250316025828811"
DELETE_INSTANT = "20250618054714114"
FILE_ID = "ff32ab89-5ad0-4968-83b4-89a34c95d32f-0"
BASE_INSTANT = "20250316025816068"
GARBAGE = b"\x00\x01garbage bytes, no magic here\xff" * 3
READER_LOGGER = "lake_orchestration.hudi.log.reader"


def _bytes(rel: str) -> bytes:
    fixture_log_files()  # skips (or fails in CI) without ../shared
    return (FIXTURE_LOG_FILES / rel).read_bytes()


def two_blocks() -> tuple[bytes, bytes]:
    """An Avro data block and a delete block written by Java, as two separate byte strings."""
    return _bytes(AVRO_LOG), _bytes(DELETE_LOG)


def scan(tmp_path: Path, data: bytes) -> tuple[list, ScanStats, Path]:  # type: ignore[type-arg]
    """Write ``data`` as a log file under ``tmp_path`` and run the slice log scan over it."""
    part = tmp_path / "p=1"
    part.mkdir(parents=True, exist_ok=True)
    lf = LogFile(FILE_ID, BASE_INSTANT, 1, "0-1-2", size=len(data), partition_path="p=1")  # type: ignore[arg-type]
    path = part / lf.name
    path.write_bytes(data)
    flt = InstantFilter(
        latest_instant="20991231000000000",
        completed=frozenset({AVRO_INSTANT, DELETE_INSTANT}),
        inflight=frozenset(),
        timeline_start=AVRO_INSTANT,
    )
    blocks, stats = scan_blocks(Storage(str(tmp_path)), [lf], flt)
    return blocks, stats, path


def _corrupt_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == READER_LOGGER and r.levelno == logging.WARNING]


def _check_scan(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    data: bytes,
    *,
    corrupt: int,
    valid_types: list[LogBlockType],
) -> None:
    caplog.set_level(logging.WARNING)
    iterated = list(iter_blocks(data))
    assert sum(b.is_corrupt for b in iterated) == corrupt
    assert all(b.corrupt_reason for b in iterated if b.is_corrupt)
    assert sum(b.size for b in iterated) == len(data)  # corrupt blocks account for every byte
    blocks, stats, path = scan(tmp_path, data)
    assert stats.total_corrupt_blocks == corrupt
    assert len(stats.corrupt_reasons) == corrupt
    assert [b.block_type for b in blocks] == valid_types
    warnings = _corrupt_warnings(caplog)
    assert len(warnings) == corrupt
    assert all(path.name in w.getMessage() for w in warnings)
    assert path.read_bytes() == data  # the scan never touches the file


# -- corrupt log files --------------------------------------------------------------------------------------------
def test_bad_input_truncated_log_file_last_block_corrupt_earlier_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    avro, delete = two_blocks()
    _check_scan(tmp_path, caplog, avro + delete[:-37], corrupt=1, valid_types=[LogBlockType.AVRO_DATA_BLOCK])


def test_bad_input_truncated_single_block_file_only_corrupt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    avro, _ = two_blocks()
    for cut in (6, 10, 500, len(avro) - 1):  # < 6 bytes is EOF for Java (no block at all)
        caplog.clear()
        _check_scan(tmp_path / str(cut), caplog, avro[:cut], corrupt=1, valid_types=[])


def test_bad_input_garbage_between_blocks_preceding_block_corrupt_next_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Java's isBlockCorrupt: a block must be followed by #HUDI# or EOF, so the block before the garbage is lost.
    avro, delete = two_blocks()
    data = avro + GARBAGE + delete
    _check_scan(tmp_path, caplog, data, corrupt=1, valid_types=[LogBlockType.DELETE_BLOCK])
    [bad] = [b for b in iter_blocks(data) if b.is_corrupt]
    assert (bad.offset, bad.size) == (0, len(avro) + len(GARBAGE))


def test_bad_input_garbage_inside_block_that_block_corrupt_next_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    avro, delete = two_blocks()
    mid = len(avro) // 2
    data = avro[:mid] + GARBAGE + avro[mid:] + delete
    _check_scan(tmp_path, caplog, data, corrupt=1, valid_types=[LogBlockType.DELETE_BLOCK])


@pytest.mark.parametrize("delta", [-1, 1, 5, 10**9, -(10**6)])
def test_bad_input_wrong_block_size_field_block_corrupt_next_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, delta: int
) -> None:
    avro, delete = two_blocks()
    size = int.from_bytes(avro[6:14], "big", signed=True)
    broken = avro[:6] + (size + delta).to_bytes(8, "big", signed=True) + avro[14:]
    _check_scan(tmp_path, caplog, broken + delete, corrupt=1, valid_types=[LogBlockType.DELETE_BLOCK])


def test_bad_input_wrong_trailing_length_block_corrupt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    avro, delete = two_blocks()
    broken = avro[:-8] + (len(avro) + 1).to_bytes(8, "big")
    _check_scan(tmp_path, caplog, delete + broken, corrupt=1, valid_types=[LogBlockType.DELETE_BLOCK])


def test_bad_input_only_garbage_one_corrupt_block(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _check_scan(tmp_path, caplog, GARBAGE, corrupt=1, valid_types=[])
    [b] = iter_blocks(GARBAGE)
    assert b.block_type is LogBlockType.CORRUPT_BLOCK and b.offset == 0 and b.size == len(GARBAGE)


def test_bad_input_garbage_before_first_block_corrupt_then_block_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    avro, _ = two_blocks()
    _check_scan(tmp_path, caplog, GARBAGE + avro, corrupt=1, valid_types=[LogBlockType.AVRO_DATA_BLOCK])


def test_bad_input_empty_log_file_no_blocks_no_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _check_scan(tmp_path, caplog, b"", corrupt=0, valid_types=[])


def test_bad_input_corrupt_block_followed_by_rollback_discarded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    avro, delete = two_blocks()
    rollback = rollback_command_block(instant="20990101000000000", target_instant="20980101000000000")
    data = delete + avro[:300] + rollback
    caplog.set_level(logging.WARNING)
    blocks, stats, path = scan(tmp_path, data)
    assert [b.block_type for b in blocks] == [LogBlockType.DELETE_BLOCK]
    assert stats.total_corrupt_blocks == 1
    assert stats.total_rollback_blocks == 1
    assert stats.rolled_back_blocks == 1
    assert path.read_bytes() == data


def test_bad_input_valid_block_followed_by_partial_magic_block_kept(tmp_path: Path) -> None:
    """Java's ``isBlockCorrupt`` reads the next magic with ``readFully(6)``: fewer than 6 bytes left is EOF, so
    the block is valid, and ``hasNext`` then ends the file (trailing partial magic ignored, no corrupt block)."""
    avro, _ = two_blocks()
    for tail in (b"#", b"#HU", b"#HUDI"):
        blocks = list(iter_blocks(avro + tail))
        assert [b.block_type for b in blocks] == [LogBlockType.AVRO_DATA_BLOCK], (tail, blocks[0].corrupt_reason)


# -- corrupt timeline files ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content",
    [b"", b"this is not an avro container", b"Obj\x01\x00truncated"],
    ids=["empty", "not-avro", "truncated-avro"],
)
def test_bad_input_corrupt_compaction_plan_fs_view_raises_naming_path(
    fresh_fixture: GetFixture, content: bytes
) -> None:
    base = fresh_fixture(HudiFixture.MOR_SIMPLE_NONHIVE)
    plan = base / ".hoodie" / "20250122000000000.compaction.requested"
    plan.write_bytes(content)
    table = HudiTable(str(base))
    with pytest.raises(CorruptFileError) as err:
        table.fs_view()
    assert err.value.path == str(plan)
    assert str(plan) in str(err.value)


def test_bad_input_compaction_plan_of_wrong_record_type_raises_naming_path(
    fresh_fixture: GetFixture, hudi_fixture: GetFixture
) -> None:
    base = fresh_fixture(HudiFixture.MOR_SIMPLE_NONHIVE)
    rollback_plan = hudi_fixture(HudiFixture.MOR_ROLLBACK) / ".hoodie" / "20250126040936578.rollback.requested"
    plan = base / ".hoodie" / "20250122000000000.compaction.requested"
    shutil.copyfile(rollback_plan, plan)
    with pytest.raises(CorruptFileError, match="HoodieCompactionPlan") as err:
        HudiTable(str(base)).fs_view()
    assert err.value.path == str(plan)


# -- malformed hoodie.properties -------------------------------------------------------------------------------------
def _rewrite_properties(base: Path, edit: Callable[[str], str]) -> Path:
    path = base / ".hoodie" / "hoodie.properties"
    text = path.read_text("latin-1")
    new = edit(text)
    assert new != text
    path.write_text(new, "latin-1")
    return path


def test_bad_input_properties_line_without_separator_raises_naming_path_and_line(fresh_fixture: GetFixture) -> None:
    base = fresh_fixture(HudiFixture.COW_NONPARTITIONED)
    path = _rewrite_properties(base, lambda t: t + "this_line_has_no_separator\n")
    with pytest.raises(InvalidTablePropertiesError) as err:
        HudiTable(str(base))
    assert err.value.path == str(path)
    assert "this_line_has_no_separator" in str(err.value)


def test_bad_input_properties_wrong_checksum_raises_naming_key_and_both_values(fresh_fixture: GetFixture) -> None:
    base = fresh_fixture(HudiFixture.COW_NONPARTITIONED)
    path = base / ".hoodie" / "hoodie.properties"
    text = path.read_text("latin-1")
    [line] = [ln for ln in text.splitlines() if ln.startswith("hoodie.table.checksum=")]
    good = line.split("=", 1)[1]
    _rewrite_properties(base, lambda t: t.replace(line, "hoodie.table.checksum=42"))
    with pytest.raises(InvalidTablePropertiesError) as err:
        HudiTable(str(base))
    msg = str(err.value)
    assert err.value.path == str(path)
    assert "hoodie.table.checksum" in msg and "42" in msg and good in msg


def test_bad_input_properties_bad_table_type_raises_naming_value(fresh_fixture: GetFixture) -> None:
    base = fresh_fixture(HudiFixture.COW_NONPARTITIONED)
    path = _rewrite_properties(
        base, lambda t: t.replace("hoodie.table.type=COPY_ON_WRITE", "hoodie.table.type=COPY_ON_READ")
    )
    with pytest.raises(InvalidTablePropertiesError) as err:
        HudiTable(str(base))
    assert err.value.path == str(path)
    assert "hoodie.table.type" in str(err.value) and "COPY_ON_READ" in str(err.value)


def test_bad_input_properties_table_version_8_raises_unsupported_naming_table_and_value(
    fresh_fixture: GetFixture,
) -> None:
    base = fresh_fixture(HudiFixture.COW_NONPARTITIONED)
    _rewrite_properties(base, lambda t: t.replace("hoodie.table.version=6", "hoodie.table.version=8"))
    with pytest.raises(UnsupportedTableVersionError) as err:
        HudiTable(str(base))
    assert err.value.version == "8"
    assert err.value.table_uri == str(base)
    assert str(base) in str(err.value) and "'8'" in str(err.value)


# -- unknown files in .hoodie ----------------------------------------------------------------------------------------
def test_bad_input_unknown_file_in_hoodie_ignored_with_warning_snapshot_unchanged(
    fresh_fixture: GetFixture, caplog: pytest.LogCaptureFixture
) -> None:
    base = fresh_fixture(HudiFixture.MOR_SIMPLE_NONHIVE)
    before = read_snapshot_table(HudiTable(str(base))).sort_by("_hoodie_record_key")
    timeline_before = HudiTable(str(base)).timeline
    (base / ".hoodie" / "notes.txt").write_text("remember to compact\n")
    caplog.set_level(logging.WARNING)
    table = HudiTable(str(base))
    assert table.timeline == timeline_before
    assert "notes.txt" in table.timeline.ignored_files
    assert any("notes.txt" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    after = read_snapshot_table(table).sort_by("_hoodie_record_key")
    assert after.num_rows == before.num_rows > 0
    assert after.to_pylist() == before.to_pylist()


def test_bad_input_timeline_file_with_invalid_instant_raises_naming_file_and_grammar(
    fresh_fixture: GetFixture,
) -> None:
    base = fresh_fixture(HudiFixture.COW_NONPARTITIONED)
    (base / ".hoodie" / "2024.commit").write_bytes(b"")
    table = HudiTable(str(base))
    with pytest.raises(InvalidFileNameError) as err:
        _ = table.timeline
    msg = str(err.value)
    assert err.value.name == "2024.commit"
    assert "'2024.commit'" in msg
    assert "yyyyMMddHHmmss" in msg and "<action>" in msg
    assert str(base / ".hoodie") in msg
