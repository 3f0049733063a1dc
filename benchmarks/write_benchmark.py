"""Write path on Spark local[2]: a bulk_insert of --rows trips, then an upsert of --upsert-rows into it.

Prints rows/s of each write and the share of its time spent tagging (index lookup: footer pruning with min/max and
bloom filter, then key confirmation) vs writing files (the file-group tasks on Spark), measured in one run.

Usage: python benchmarks/write_benchmark.py [--rows 2000000] [--upsert-rows 200000] [--master local[2]]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.engines.spark import SparkEngine
from lake_orchestration.engines.spark_session import local_spark_session
from lake_orchestration.hudi.write import WriteOptions, write_table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--upsert-rows", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--table-type", default="MERGE_ON_READ", choices=["MERGE_ON_READ", "COPY_ON_WRITE"])
    args = ap.parse_args()
    spark = local_spark_session(master=args.master, conf={"spark.driver.memory": "6g"})
    root = Path(tempfile.mkdtemp(prefix="lake-orch-write-bench-"))
    path = str(root / "t")
    try:
        opts = WriteOptions.from_hudi_options(
            {
                "hoodie.table.name": "bench",
                "hoodie.datasource.write.table.type": args.table_type,
                "hoodie.datasource.write.recordkey.field": "uuid",
                "hoodie.datasource.write.partitionpath.field": "city",
                "hoodie.datasource.write.precombine.field": "ts",
                "hoodie.parquet.compression.codec": "snappy",
            },
            max_rows_per_file=250_000,
        )
        base = generate_trips(args.rows, partitions=args.partitions, seed=1)
        upd_n = args.upsert_rows - args.upsert_rows // 10
        upsert = pa.concat_tables(
            [
                generate_updates(base, fraction=upd_n / args.rows, seed=2),
                generate_trips(args.upsert_rows // 10, partitions=args.partitions, seed=3),
            ]
        )
        print(f"{'write':<12}{'rows':>10}{'seconds':>10}{'rows/s':>12}{'index %':>9}{'write %':>9}")
        for name, data, op in (("bulk_insert", base, "bulk_insert"), ("upsert", upsert, "upsert")):
            t0 = time.perf_counter()
            r = write_table(path, data, operation=op, options=opts, engine=SparkEngine(spark))
            total = time.perf_counter() - t0
            print(
                f"{name:<12}{data.num_rows:>10}{total:>10.2f}{data.num_rows / total:>12,.0f}"
                f"{100 * r.index_seconds / total:>8.1f}%{100 * r.write_seconds / total:>8.1f}%"
            )
            if op == "upsert":
                print(f"  upsert: {r.updated} updated, {r.inserted} inserted, {len(r.files_written)} files written")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
