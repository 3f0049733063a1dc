"""Write markers (``.hoodie/.temp/<instant>``): listed back as written, reconciled against write stats, removed."""

from __future__ import annotations

from pathlib import Path

from lake_orchestration.hudi.table.marker import (
    Marker,
    create_marker,
    delete_markers,
    list_markers,
    reconcile_markers,
)
from lake_orchestration.io.storage import Storage

INSTANT = "20250101000000000"


def test_marker_created_markers_list_back_with_partition_name_and_io_type(tmp_path: Path) -> None:
    st = Storage(str(tmp_path))
    create_marker(st, INSTANT, "city=a/day=1", "f1-0_0-1-1_20250101000000000.parquet", "CREATE")
    create_marker(st, INSTANT, "", "f2-0_1-1-1_20250101000000000.parquet", "MERGE")
    create_marker(st, INSTANT, "city=b", ".f3-0_20241231000000000.log.1_2-1-1", "APPEND")
    create_marker(st, "20250102000000000", "city=b", "other.parquet", "CREATE")  # another instant's
    assert (tmp_path / ".hoodie" / ".temp" / INSTANT / "city=a" / "day=1").is_dir()
    markers = sorted(list_markers(st, INSTANT), key=lambda m: m.data_file)
    assert markers == [
        Marker("city=a/day=1/f1-0_0-1-1_20250101000000000.parquet", "CREATE"),
        Marker("city=b/.f3-0_20241231000000000.log.1_2-1-1", "APPEND"),
        Marker("f2-0_1-1-1_20250101000000000.parquet", "MERGE"),
    ]
    assert [(m.partition, m.name) for m in markers] == [
        ("city=a/day=1", "f1-0_0-1-1_20250101000000000.parquet"),
        ("city=b", ".f3-0_20241231000000000.log.1_2-1-1"),
        ("", "f2-0_1-1-1_20250101000000000.parquet"),
    ]
    assert list_markers(st, "20250103000000000") == []  # no folder: nothing, no error


def test_marker_reconcile_deletes_only_unwritten_base_files_then_delete_removes_the_folder(tmp_path: Path) -> None:
    st = Storage(str(tmp_path))
    part = tmp_path / "p"
    part.mkdir()
    written, speculative, log = "a_0-1-1_1.parquet", "a_0-1-2_1.parquet", ".a_1.log.1_0-1-3"
    for name, io_type in ((written, "CREATE"), (speculative, "CREATE"), (log, "APPEND")):
        (part / name).write_bytes(b"x")
        create_marker(st, INSTANT, "p", name, io_type)
    assert reconcile_markers(st, INSTANT, {f"p/{written}"}) == [f"p/{speculative}"]
    assert sorted(p.name for p in part.iterdir()) == sorted([written, log])  # log files are kept
    delete_markers(st, INSTANT)
    assert not (tmp_path / ".hoodie" / ".temp" / INSTANT).exists()


def test_marker_timeline_server_based_markers_list_from_their_markers_files(tmp_path: Path) -> None:
    """Java's Spark writers default to TIMELINE_SERVER_BASED markers: ``MARKERS<n>`` files with one marker a line
    beside ``MARKERS.type`` (and, on a local file system, Hadoop's ``.crc`` files); a rollback of a failed Java
    write that read them as DIRECT markers found no file to delete."""
    folder = tmp_path / ".hoodie" / ".temp" / INSTANT
    folder.mkdir(parents=True)
    (folder / "MARKERS.type").write_text("TIMELINE_SERVER_BASED")
    (folder / ".MARKERS.type.crc").write_bytes(b"crc")
    (folder / "MARKERS0").write_text(
        "city=a/f1-0_0-1-1_20250101000000000.parquet.marker.MERGE\n"
        "city=b/.f3-0_20241231000000000.log.1_2-1-1.marker.APPEND\n"
    )
    (folder / ".MARKERS0.crc").write_bytes(b"crc")
    (folder / "MARKERS3").write_text("f2-0_1-1-1_20250101000000000.parquet.marker.CREATE\n")
    markers = sorted(list_markers(Storage(str(tmp_path)), INSTANT), key=lambda m: m.data_file)
    assert markers == [
        Marker("city=a/f1-0_0-1-1_20250101000000000.parquet", "MERGE"),
        Marker("city=b/.f3-0_20241231000000000.log.1_2-1-1", "APPEND"),
        Marker("f2-0_1-1-1_20250101000000000.parquet", "CREATE"),
    ]
