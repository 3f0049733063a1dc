"""Clean speed: plan + execute + commit over ~1,000 cleanable file slices, against a floor measured in the same run.

A COPY_ON_WRITE table with ``--groups`` file groups is updated ``--versions`` times (every update rewrites every
file group, so each group gets a new file slice per commit). ``KEEP_LATEST_FILE_VERSIONS`` with 1 retained version
then cleans ``groups x versions`` slices. Printed: planning time (timeline, listing, file-system view, savepoints,
pending compactions), execution time (deletes + metadata) with the local thread pool, slices/s, and the ratio to a
floor: deleting the same files one by one with ``os.remove`` (no planning, no timeline).

Usage: python benchmarks/clean_benchmark.py [--groups 100] [--versions 10]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.clean import CleanConfig, execute_clean, plan_clean, schedule_clean
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

OPTIONS = {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "1"}


def build(path: Path, *, groups: int, versions: int) -> None:
    opts = WriteOptions(
        table_name="bench",
        table_type=TableType.COPY_ON_WRITE,
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        hive_style_partitioning=True,
        max_rows_per_file=20,
        small_file_limit=0,
        compression="snappy",
    )
    base = generate_trips(groups * 20, partitions=4, seed=1)
    write_table(str(path), base, operation="bulk_insert", options=opts)
    for n in range(versions):
        write_table(
            str(path),
            generate_updates(base, fraction=1.0, seed=n, ts_offset=(n + 1) * 10**6),
            operation="upsert",
            options=opts,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--versions", type=int, default=10)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="clean-bench-"))
    try:
        table_a, table_b = work / "a", work / "b"
        t0 = time.perf_counter()
        build(table_a, groups=args.groups, versions=args.versions)
        shutil.copytree(table_a, table_b)
        print(f"built {args.groups} file groups x {args.versions + 1} versions in {time.perf_counter() - t0:.1f} s")

        # floor: the same deletes, one os.remove each, on the copy
        planning = plan_clean(HudiTable(str(table_b)), CleanConfig.from_options(OPTIONS))
        files = [f.file_path for infos in planning.plan.file_paths_to_be_deleted_per_partition.values() for f in infos]
        t0 = time.perf_counter()
        for f in files:
            os.remove(f)
        floor = time.perf_counter() - t0

        t0 = time.perf_counter()
        inst, planning, _ = schedule_clean(HudiTable(str(table_a)), CleanConfig.from_options(OPTIONS))
        plan_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        md = execute_clean(HudiTable(str(table_a)), str(inst.time))
        exec_s = time.perf_counter() - t0
        slices = args.groups * args.versions
        total = plan_s + exec_s
        print(f"cleanable file slices: {slices}, files deleted: {md.total_files_deleted}")
        print(f"plan (schedule, .clean.requested): {plan_s:.3f} s")
        print(f"execute (deletes + .clean):        {exec_s:.3f} s")
        print(f"total: {total:.3f} s = {slices / total:,.0f} slices/s")
        print(
            f"floor (os.remove of the same files): {floor:.3f} s; ratio total/floor {total / floor:.1f}, "
            f"execute/floor {exec_s / floor:.2f}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
