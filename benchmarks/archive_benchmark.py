"""Archival of 1,000 instants: archive write + verify + delete, then the merge of small archive files and the
archived-timeline read, measured in one run.

The table is written with this project's writer (a bulk_insert and ``--upserts`` upserts into a MERGE_ON_READ
table); its last deltacommit's three timeline files are then copied to ``--instants`` new instant times (real
commit metadata, ~``--partitions`` write stats each), so archival has realistic content to convert. Archival keeps
Hudi's default 20..30 commits active, so ``--instants`` + upserts + 1 - 20 instants are archived.

Usage: python benchmarks/archive_benchmark.py [--instants 1000] [--runs-to-merge 10]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import pendulum

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.instant import INSTANT_FORMAT
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline
from lake_orchestration.hudi.write import WriteOptions, write_table


def build(path: Path, *, instants: int, upserts: int, partitions: int) -> None:
    opts = WriteOptions(
        table_name="bench",
        table_type=TableType.MERGE_ON_READ,
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
    )
    base = generate_trips(2000, partitions=partitions, seed=1)
    write_table(str(path), base, operation="bulk_insert", options=opts)
    for i in range(upserts):
        write_table(
            str(path),
            generate_updates(base, fraction=0.1, seed=i, ts_offset=(i + 1) * 10**6),
            operation="upsert",
            options=opts,
        )
    hoodie = path / ".hoodie"
    last = sorted(p.name.split(".")[0] for p in hoodie.glob("*.deltacommit"))[-1]
    start = pendulum.from_format(last, INSTANT_FORMAT, tz="UTC")
    for k in range(1, instants + 1):
        dt = start.add(seconds=k)
        ts = f"{dt.format('YYYYMMDDHHmmss')}{dt.microsecond // 1000:03d}"
        for suffix in ("deltacommit.requested", "deltacommit.inflight", "deltacommit"):
            shutil.copyfile(hoodie / f"{last}.{suffix}", hoodie / f"{ts}.{suffix}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instants", type=int, default=1000)
    ap.add_argument("--upserts", type=int, default=5)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--runs-to-merge", type=int, default=10, help="archive files to merge")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="archive-bench-"))
    try:
        path = work / "t"
        build(path, instants=args.instants, upserts=args.upserts, partitions=args.partitions)
        table = HudiTable(str(path))
        files_before = sum(1 for p in (path / ".hoodie").iterdir() if p.is_file())

        t0 = time.perf_counter()
        result = run_archive(table)
        archive_s = time.perf_counter() - t0
        n = len(result.archived_instants)
        size = (path / ".hoodie" / "archived" / (result.archive_file or "")).stat().st_size
        files_after = sum(1 for p in (path / ".hoodie").iterdir() if p.is_file())

        # small archive runs, then one run that merges them
        for _ in range(args.runs_to_merge - 1):
            run_archive(
                HudiTable(str(path)),
                ArchiveConfig.from_options({"hoodie.keep.min.commits": "19", "hoodie.keep.max.commits": "20"}),
            )
            build_more = sorted((path / ".hoodie").glob("*.deltacommit"))[-1].name.split(".")[0]
            dt = pendulum.from_format(build_more, INSTANT_FORMAT, tz="UTC")
            for k in range(1, 3):
                d = dt.add(seconds=k)
                ts = f"{d.format('YYYYMMDDHHmmss')}{d.microsecond // 1000:03d}"
                for suffix in ("deltacommit.requested", "deltacommit.inflight", "deltacommit"):
                    shutil.copyfile(path / ".hoodie" / f"{build_more}.{suffix}", path / ".hoodie" / f"{ts}.{suffix}")
        archive_files = len(list((path / ".hoodie" / "archived").glob(".commits_.archive*"))) + 1
        merge_opts = {
            "hoodie.archive.merge.enable": "true",
            "hoodie.archive.merge.files.batch.size": str(archive_files),
        }
        t0 = time.perf_counter()
        merged = run_archive(
            HudiTable(str(path)),
            ArchiveConfig.from_options(
                {**merge_opts, "hoodie.keep.min.commits": "19", "hoodie.keep.max.commits": "20"}
            ),
        )
        merge_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        archived = ArchivedTimeline.load(HudiTable(str(path)).storage)
        read_s = time.perf_counter() - t0

        print(f"table: {args.instants + args.upserts + 1} completed deltacommits, {files_before} timeline files")
        print(
            f"archive: {n} instants ({len(result.archived_files)} state files) in {archive_s:.3f} s "
            f"= {n / archive_s:,.0f} instants/s; archive file {size / 1e6:.2f} MB; "
            f"{files_before} -> {files_after} timeline files"
        )
        print(
            f"merge: {len(merged.merge.candidates)} of {archive_files} archive files -> {merged.merge.merged_file} "
            f"in {merge_s:.3f} s (incl. that run's archive step)"
        )
        print(
            f"archived timeline read: {len(archived)} entries in {read_s:.3f} s "
            f"= {len(archived) / read_s:,.0f} entries/s"
        )
        print(f"ratio archive time per instant / read time per entry: {(archive_s / n) / (read_s / len(archived)):.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
