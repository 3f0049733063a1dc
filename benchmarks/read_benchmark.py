"""Merged read of one file slice: our reader vs hudi-rs (`hudi` wheel), measured in the same run.

The slice is generated with this project's own writer: a bulk_insert of ``--rows`` trips into one file group,
then ``--log-files`` upserts, each updating a disjoint ``--update-fraction / --log-files`` share of the rows
(one new log file per upsert). Both readers merge the same base file and log files; the figures printed are
rows/s of the merged output (best of ``--repeat`` runs) and their ratio.

Usage: python benchmarks/read_benchmark.py [--rows 2000000] [--update-fraction 0.12] [--log-files 4]
"""

from __future__ import annotations

import argparse
import gc
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from lake_orchestration.datagen import generate_trips
from lake_orchestration.hudi.log.scanner import InstantFilter
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import ReadStats, merge_config_for, read_file_slice
from lake_orchestration.hudi.write import WriteOptions, write_table


def build_slice(path: Path, rows: int, update_fraction: float, log_files: int) -> None:
    opts = WriteOptions(
        table_name="bench",
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        hive_style_partitioning=True,
        max_rows_per_file=rows,
        compression="snappy",
    )
    base = generate_trips(rows, partitions=1, seed=1)
    write_table(str(path), base, operation="bulk_insert", options=opts)
    rng = np.random.default_rng(5)
    per_file = int(rows * update_fraction / log_files)
    chosen = rng.choice(rows, size=per_file * log_files, replace=False)
    for i in range(log_files):
        idx = np.sort(chosen[i * per_file : (i + 1) * per_file])
        upd = base.take(pa.array(idx))
        upd = upd.set_column(1, "ts", pa.array(upd.column("ts").to_numpy() + 10_000_000 * (i + 1)))
        upd = upd.set_column(4, "fare", pa.array(rng.uniform(5, 120, len(idx))))
        write_table(str(path), upd, operation="upsert", options=opts)


def time_best(fn, repeat: int) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    best = float("inf")
    rows = 0
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        rows = fn()
        best = min(best, time.perf_counter() - t0)
    return best, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--update-fraction", type=float, default=0.12)
    ap.add_argument("--log-files", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None, help="Where to build the slice (default: a temp dir, removed after)")
    args = ap.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="lake-orch-bench-"))
    path = root / "bench"
    try:
        t0 = time.perf_counter()
        if not (path / ".hoodie").exists():
            build_slice(path, args.rows, args.update_fraction, args.log_files)
        print(f"slice built in {time.perf_counter() - t0:.1f}s at {path}")
        table = HudiTable(str(path))
        (fs,) = table.fs_view().latest_merged_file_slices_before_or_on(
            str(table.timeline.latest_completed_commit_time())
        )
        assert fs.base_file is not None
        log_bytes = sum(lf.size for lf in fs.log_files)
        print(
            f"base file: {fs.base_file.name} ({fs.base_file.size / 1e6:.1f} MB), "
            f"{len(fs.log_files)} log files ({log_bytes / 1e6:.1f} MB)"
        )
        flt = InstantFilter.from_timeline(table.timeline)
        mcfg = merge_config_for(table)

        def ours() -> int:
            stats = ReadStats()
            n = 0
            for t in read_file_slice(table.storage, fs, instant_filter=flt, merge_config=mcfg, stats=stats):
                n += t.num_rows
            ours.log_records = stats.log_records  # type: ignore[attr-defined]
            return n

        from hudi import HudiTableBuilder

        reader = HudiTableBuilder.from_base_uri(str(path)).build().create_file_group_reader_with_options()
        base_rel = fs.base_file.relative_path
        logs_rel = [lf.relative_path for lf in fs.log_files]

        def theirs() -> int:
            batch = reader.read_file_slice_from_paths(base_rel, logs_rel)
            return batch.num_rows

        t_ours, n_ours = time_best(ours, args.repeat)
        t_theirs, n_theirs = time_best(theirs, args.repeat)
        if n_ours != n_theirs:
            raise SystemExit(f"row counts differ: ours {n_ours}, hudi-rs {n_theirs}")
        print(
            f"log records merged: {ours.log_records} "  # type: ignore[attr-defined]
            f"({ours.log_records / args.rows:.1%} of base rows)"
        )  # type: ignore[attr-defined]
        print(f"{'reader':<28}{'seconds':>10}{'rows/s':>14}")
        print(f"{'lake_orchestration':<28}{t_ours:>10.3f}{n_ours / t_ours:>14,.0f}")
        print(f"{'hudi-rs read_file_slice':<28}{t_theirs:>10.3f}{n_theirs / t_theirs:>14,.0f}")
        print(f"ratio (ours / hudi-rs rows/s): {t_theirs / t_ours:.2f}")
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
