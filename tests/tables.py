"""The table builders tests share (issue 24 item 6: one copy instead of one per module): a trips table of N commits,
the generated MERGE_ON_READ table the compaction and log-compaction tests work on, and the traces a Java writer with
the metadata table enabled leaves. The trips table's write options are :mod:`tests.trips`.

A builder writes its table once per test process (the first time it is asked for with those arguments) into a
template folder, and copies it to the test's folder each time (fresh files, fresh modification times): the same
table as writing it again, without the writes (a generated table of 6 deltas is ~10 writes, several seconds)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pyarrow as pa

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import write_table
from tests.trips import trips_options, write_trips_history

T = TypeVar("T")
_TEMPLATES: dict[tuple[object, ...], tuple[Path, object]] = {}


def built_once(tmp_path: Path, key: tuple[object, ...], build: Callable[[Path], T]) -> tuple[Path, T]:
    """``tmp_path / "t"``: a copy of the table ``build(folder)`` wrote into ``folder / "t"`` the first time ``key``
    was asked for in this process; with what ``build`` returned then. ``key`` names the builder and its arguments
    (unique across modules: a module's own builder puts its module's name first)."""
    if key not in _TEMPLATES:
        folder = Path(tempfile.mkdtemp(prefix="lake-orch-test-table-"))
        atexit.register(shutil.rmtree, folder, True)
        _TEMPLATES[key] = (folder / "t", build(folder))
    template, built = _TEMPLATES[key]
    path = tmp_path / "t"
    shutil.copytree(template, path, copy_function=shutil.copy)  # shutil.copy: the copies get fresh mtimes
    return path, built  # type: ignore[return-value]


GENERATED_OPTIONS = trips_options(hive_style_partitioning=True, max_rows_per_file=120, small_file_limit=0)
"""The options of :func:`generated_table`: the trips table, hive-style partitions, base files of at most 120 rows, no
small-file handling (an upsert's inserts go to new file groups, its updates to log files)."""


def trips_table(
    tmp_path: Path,
    commits: int,
    table_type: TableType = TableType.MERGE_ON_READ,
    *,
    rows: int = 40,
    fraction: float = 0.1,
) -> tuple[Path, pa.Table]:
    """A trips table ``tmp_path / "t"`` of ``commits`` commits: a bulk insert of ``rows`` trips in 2 cities, then
    ``commits - 1`` upserts of ``fraction`` of them (:func:`tests.trips.write_trips_history`). Returns the path and
    the rows of the bulk insert."""

    def build(folder: Path) -> pa.Table:
        options = trips_options(table_type=table_type)
        return write_trips_history(folder / "t", options, rows=rows, upserts=commits - 1, fraction=fraction)

    return built_once(tmp_path, ("trips", commits, table_type, rows, fraction), build)


def generated_table(tmp_path: Path, *, deltas: int = 6) -> Path:
    """A MERGE_ON_READ trips table ``tmp_path / "t"`` (:data:`GENERATED_OPTIONS`): a bulk insert of 600 trips in 4
    cities, then ``deltas`` upserts of 10% of them plus 10 new trips, with a delete of 3% after every second upsert
    (deltas=6: 9 deltacommits after the bulk insert)."""

    def build(folder: Path) -> None:
        path = folder / "t"
        base = generate_trips(600, partitions=4, seed=1)
        write_table(str(path), base, operation="bulk_insert", options=GENERATED_OPTIONS)
        for n in range(deltas):
            upd = pa.concat_tables(
                [
                    generate_updates(base, fraction=0.1, seed=n, ts_offset=(n + 1) * 10**7),
                    generate_trips(10, partitions=4, seed=100 + n),
                ]
            )
            write_table(str(path), upd, operation="upsert", options=GENERATED_OPTIONS)
            if n % 2:
                write_table(
                    str(path),
                    pick_deletes(base, fraction=0.03, seed=200 + n),
                    operation="delete",
                    options=GENERATED_OPTIONS,
                )

    return built_once(tmp_path, ("generated", deltas), build)[0]


def fake_metadata_table(path: Path) -> None:
    """What a Java writer with the metadata table and its column stats index enabled leaves: the partitions property
    and .hoodie/metadata (a partition other than ``files``: still refused unless hoodie.metadata.enable=false)."""
    t = HudiTable(str(path))
    t.update_properties({"hoodie.table.metadata.partitions": "files,column_stats"})
    mdt = path / ".hoodie" / "metadata" / ".hoodie"
    mdt.mkdir(parents=True)
    (mdt / "hoodie.properties").write_text("hoodie.table.name=t_metadata\n")
