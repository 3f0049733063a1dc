"""Compaction speed: one 5M-row file group against a pyarrow floor, Spark local[2] vs local[1], peak RSS.

Part 1 — one file group of ``--rows`` rows with ``--update-fraction`` updates and ``--delete-fraction`` deletes in
log files (written by this project's writer) is compacted in a fresh process with the local engine (one task; its
base file is written on a background thread, so it may use a second core: CPU seconds are printed beside wall
seconds). Printed: input rows/s per core (base rows + log records over CPU seconds), peak RSS of that process, and
the wall-time ratio to a floor measured in the same run, also in a fresh process: pyarrow reading the base file and
writing the same rows to a new parquet file with the same codec (no merge, no Hudi footer). Target: ratio <= 1.5
with the Hudi footer. Floor and compactions run ``--repeat`` times interleaved (each compaction on a fresh copy of
the table); the best run of each is compared, every run is printed.

Part 2 — ``--groups`` file groups of ``--group-rows`` rows (default 1,000,000: base files of ~95 MB, near Hudi's
default ``hoodie.parquet.max.file.size`` of 120 MB) compacted on Spark local[1] and local[2], each run in a fresh
process on a fresh copy of the table, ``--repeat`` times interleaved, best of each. Two kinds of run:
  * fresh Python workers: a warm-up job only starts the workers and imports the code, so each worker's first
    compaction task also pays the first touch of its memory;
  * warm Python workers (long-lived executors, a Spark Connect server): the workers first compact another copy of
    the table, then the timed compaction runs on them.
Printed: wall seconds, the speedup local[1]/local[2] (target >= 1.8 on 2 cores) and the Python workers' user and
system CPU seconds (from /proc), which show where a lost speedup went. For reference, the same tasks in a plain
process pool (no Spark; 1 against 2 fresh processes) give this machine's ceiling for this work.

Usage: python benchmarks/compaction_benchmark.py [--rows 5000000] [--groups 8] [--group-rows 1000000] [--repeat 2]
       [--skip-single] [--skip-spark (also skips the pool)] [--skip-pool]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.hudi.services.compaction import schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import WriteOptions, write_table

CODEC = "snappy"


def build(path: Path, *, rows: int, groups: int, update_fraction: float, delete_fraction: float) -> None:
    opts = WriteOptions(
        table_name="bench",
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        hive_style_partitioning=True,
        max_rows_per_file=rows // groups,
        small_file_limit=0,
        compression=CODEC,
    )
    base = generate_trips(rows, partitions=1, seed=1)
    write_table(str(path), base, operation="bulk_insert", options=opts)
    half = update_fraction / 2
    for n in range(2):  # two deltacommits -> two log files per group
        write_table(
            str(path),
            generate_updates(base, fraction=half, seed=10 + n, ts_offset=(n + 1) * 10**7),
            operation="upsert",
            options=opts,
        )
    write_table(str(path), pick_deletes(base, fraction=delete_fraction, seed=20), operation="delete", options=opts)


_CHILD = r"""
import glob, json, os, resource, sys, time
from lake_orchestration.hudi.services.compaction import run_compaction, CompactionConfig
from lake_orchestration.hudi.table import HudiTable

def worker_cpu():
    # user and system seconds of the Python workers (processes run as `python -m pyspark.daemon`), by pid
    out = {}
    for d in glob.glob("/proc/[0-9]*"):
        try:
            argv = open(d + "/cmdline", "rb").read().split(b"\0")
            if b"-m" not in argv or argv[argv.index(b"-m") + 1 : argv.index(b"-m") + 2] != [b"pyspark.daemon"]:
                continue
            f = open(d + "/stat").read().rsplit(")", 1)[1].split()
            out[d] = (int(f[11]) / os.sysconf("SC_CLK_TCK"), int(f[12]) / os.sysconf("SC_CLK_TCK"))
        except OSError:
            pass
    return out

engine = None
cfg = CompactionConfig(compression=sys.argv[3], memory_max_bytes=int(sys.argv[4]))
if sys.argv[2] != "local":
    from lake_orchestration.engines.spark_session import local_spark_session
    from lake_orchestration.engines.spark import SparkEngine, warm_up
    engine = SparkEngine(local_spark_session(master=sys.argv[2], conf={"spark.driver.memory": "2g"}))
    # start the Python workers (long-lived executors in production) so the timing is the compaction itself
    engine.map_tasks(warm_up, ["lake_orchestration.hudi.services.compaction.executor"] * 4, description="warm up")
    if len(sys.argv) > 5:  # warm workers: compact another copy of the table first
        run_compaction(HudiTable(sys.argv[5]), config=cfg, engine=engine)
w0 = worker_cpu()
c0 = os.times()
t0 = time.perf_counter()
(r,) = run_compaction(HudiTable(sys.argv[1]), config=cfg, engine=engine)
secs = time.perf_counter() - t0
c1 = os.times()
w1 = worker_cpu()
user = sum(u - w0.get(p, (0, 0))[0] for p, (u, _) in w1.items())
system = sum(s - w0.get(p, (0, 0))[1] for p, (_, s) in w1.items())
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forked parent (which held the whole table)
rss_kb = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"seconds": secs, "cpu": c1.user + c1.system - c0.user - c0.system, "rows": r.rows_written,
                  "log_records": r.log_records, "rss_mb": rss_kb / 1024, "ops": r.operations,
                  "worker_user": user, "worker_sys": system}))
"""

_POOL = r"""
import dataclasses, json, sys, time
from multiprocessing import get_context

def init():
    import pyarrow as pa
    pa.set_cpu_count(1)  # as in a Spark task
    import lake_orchestration.hudi.services.compaction.executor  # noqa: F401

def run(a):
    from lake_orchestration.engines.base import TaskAttempt
    from lake_orchestration.engines.codec import decode_task
    from lake_orchestration.hudi.services.compaction.executor import execute_operation
    i, payload = a
    execute_operation(dataclasses.replace(decode_task(payload), attempt=TaskAttempt(i, 1, i)))

if __name__ == "__main__":
    from lake_orchestration.engines.codec import encode_task
    from lake_orchestration.hudi.model.instant import Action, Instant, State
    from lake_orchestration.hudi.services.compaction import CompactionConfig, compaction_tasks, load_plan
    from lake_orchestration.hudi.table import HudiTable
    t = HudiTable(sys.argv[1])
    inst = str(t.timeline.pending_compactions().first.time)
    plan = load_plan(t, inst)
    t.transition_to_inflight(Instant(inst, Action.COMPACTION, State.REQUESTED))
    tasks, _ = compaction_tasks(t, inst, CompactionConfig(compression=sys.argv[3]), plan=plan)
    with get_context("spawn").Pool(int(sys.argv[2]), initializer=init) as pool:
        pool.map(time.sleep, [0.2] * int(sys.argv[2]), chunksize=1)  # processes started and imports done
        t0 = time.perf_counter()
        pool.map(run, [(i, encode_task(x)) for i, x in enumerate(tasks)], chunksize=1)
        print(json.dumps({"seconds": time.perf_counter() - t0}))
"""

_FLOOR = r"""
import json, os, sys, time
import pyarrow as pa
import pyarrow.parquet as pq
base, out, codec = sys.argv[1:4]
c0 = os.times()
t0 = time.perf_counter()
pf = pq.ParquetFile(base)
w = None
for b in pf.iter_batches(batch_size=131_072):
    tb = pa.Table.from_batches([b])
    if w is None:
        w = pq.ParquetWriter(out, tb.schema, compression=codec)
    w.write_table(tb)
w.close()
secs = time.perf_counter() - t0
c1 = os.times()
print(json.dumps({"seconds": secs, "cpu": c1.user + c1.system - c0.user - c0.system}))
"""


def run_child(path: Path, master: str, memory: int = 100 * 1024 * 1024, warm: Path | None = None) -> dict:
    argv = [sys.executable, "-c", _CHILD, str(path), master, CODEC, str(memory)] + ([str(warm)] if warm else [])
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_pool(path: Path, processes: int, root: Path) -> dict:
    """The same compaction tasks in a plain process pool (spawned, so the script is a file)."""
    script = root / "pool.py"
    script.write_text(_POOL)
    out = subprocess.run(
        [sys.executable, str(script), str(path), str(processes), CODEC], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def floor(path: Path, out: Path) -> dict:
    """pyarrow in a fresh process: read the base file and write the same rows to a new parquet file."""
    t = HudiTable(str(path))
    (fs,) = t.fs_view().latest_merged_file_slices_before_or_on(str(t.timeline.latest_completed_commit_time()))
    res = subprocess.run(
        [sys.executable, "-c", _FLOOR, str(path / fs.base_file.relative_path), str(out), CODEC],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


def fresh_copy(src: Path, dst: Path) -> Path:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--update-fraction", type=float, default=0.10)
    ap.add_argument("--delete-fraction", type=float, default=0.01)
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--group-rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2, help="interleaved runs of each measurement (best counts)")
    ap.add_argument("--skip-single", action="store_true")
    ap.add_argument("--skip-spark", action="store_true")
    ap.add_argument("--skip-pool", action="store_true", help="skip the plain process pool reference")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lake-orch-compaction-bench-"))
    try:
        if not args.skip_single:
            one = root / "one"
            t0 = time.perf_counter()
            build(
                one,
                rows=args.rows,
                groups=1,
                update_fraction=args.update_fraction,
                delete_fraction=args.delete_fraction,
            )
            print(f"built a {args.rows:,}-row file group in {time.perf_counter() - t0:.1f}s")
            schedule_compaction(HudiTable(str(one)), force=True)
            runs = (
                ("log side in memory (1 GiB budget)", 1 << 30),
                ("default hoodie.memory.compaction.max.size=100 MiB", 100 << 20),
            )
            floors: list[dict] = []
            results: dict[str, list[dict]] = {label: [] for label, _ in runs}
            for _ in range(max(1, args.repeat)):
                floors.append(floor(one, root / "floor.parquet"))
                print(f"  floor: {floors[-1]['seconds']:.2f}s wall, {floors[-1]['cpu']:.2f}s CPU")
                for label, memory in runs:
                    r = run_child(fresh_copy(one, root / "work"), "local", memory)
                    results[label].append(r)
                    print(f"  compaction, {label}: {r['seconds']:.2f}s wall, {r['cpu']:.2f}s CPU")
            f = min(floors, key=lambda x: x["seconds"])
            print(
                f"floor (pyarrow read base + write parquet, best of {len(floors)}): {f['seconds']:.2f}s wall, "
                f"{f['cpu']:.2f}s CPU"
            )
            for label, _ in runs:
                r = min(results[label], key=lambda x: x["seconds"])
                inputs = args.rows + r["log_records"]
                print(
                    f"compaction, {label}, local engine (best of {len(results[label])}): {r['seconds']:.2f}s wall, "
                    f"{r['cpu']:.2f}s CPU, {inputs / r['cpu']:,.0f} input rows/s per core (CPU), "
                    f"{inputs / r['seconds']:,.0f} input rows/s (wall), {r['rows']:,} rows written, "
                    f"peak RSS {r['rss_mb']:.0f} MB, ratio to floor {r['seconds'] / f['seconds']:.2f} wall "
                    f"(target <= 1.5), {r['cpu'] / f['cpu']:.2f} CPU"
                )
        if not args.skip_spark:
            many = root / "many"
            build(
                many,
                rows=args.groups * args.group_rows,
                groups=args.groups,
                update_fraction=args.update_fraction,
                delete_fraction=args.delete_fraction,
            )
            schedule_compaction(HudiTable(str(many)), force=True)
            kinds = ("fresh", "warm")
            masters = ("local[1]", "local[2]")
            spark_runs: dict[tuple[str, str], list[dict]] = {(k, m): [] for k in kinds for m in masters}
            pool_runs: dict[int, list[dict]] = {1: [], 2: []}
            for _ in range(max(1, args.repeat)):
                for (kind, master), got in spark_runs.items():
                    warm = fresh_copy(many, root / "warm") if kind == "warm" else None
                    got.append(run_child(fresh_copy(many, root / "work"), master, warm=warm))
                    print(
                        f"  {master}, {kind} workers: {got[-1]['seconds']:.2f}s, workers' CPU "
                        f"{got[-1]['worker_user']:.1f}s user + {got[-1]['worker_sys']:.1f}s system"
                    )
                if not args.skip_pool:
                    for n, got in pool_runs.items():
                        got.append(run_pool(fresh_copy(many, root / "work"), n, root))
                        print(f"  process pool of {n}: {got[-1]['seconds']:.2f}s")
            print(f"{args.groups} file groups x {args.group_rows:,} rows on Spark (best of {args.repeat}):")
            for kind in kinds:
                r1 = min(spark_runs[(kind, "local[1]")], key=lambda x: x["seconds"])
                r2 = min(spark_runs[(kind, "local[2]")], key=lambda x: x["seconds"])
                print(
                    f"  {kind} Python workers: local[1] {r1['seconds']:.2f}s, local[2] {r2['seconds']:.2f}s, "
                    f"speedup {r1['seconds'] / r2['seconds']:.2f} (target >= 1.8); workers' CPU local[1] "
                    f"{r1['worker_user']:.1f}s user + {r1['worker_sys']:.1f}s system, local[2] "
                    f"{r2['worker_user']:.1f}s user + {r2['worker_sys']:.1f}s system"
                )
            if not args.skip_pool:
                p1 = min(pool_runs[1], key=lambda x: x["seconds"])
                p2 = min(pool_runs[2], key=lambda x: x["seconds"])
                print(
                    f"  plain process pool, fresh processes (no Spark): 1 process {p1['seconds']:.2f}s, "
                    f"2 processes {p2['seconds']:.2f}s, speedup {p1['seconds'] / p2['seconds']:.2f}"
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
