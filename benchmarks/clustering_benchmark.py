"""Clustering speed: ours against Java Hudi 0.15 on the same table, in one run (issue 29).

The table: a COPY_ON_WRITE trips table of ``--rows`` rows in 4 cities written by Java's datasource in ``--batches``
bulk inserts (each adds new small file groups; Hudi's defaults otherwise, metadata table and automatic services
off), copied fresh for every run. Both sides schedule, execute and commit one clustering sorted by ``fare`` (Hudi's
size-based plan strategy, sort-and-size execution, linear layout, defaults otherwise: every base file is under the
300 MB small-file limit, so every file group is clustered): ours ``run_clustering(schedule=True)`` with
``hoodie.clustering.plan.strategy.sort.columns=fare`` on the local engine, in this process; Java
``call run_clustering(path => ..., order => 'fare')`` (its ``scheduleAndExecute``), timed inside its driver
(``timed_sql`` of ``tests/java/hudi_java_driver.py``) in the long-lived Spark ``local[2]`` session of
``tests/java/harness.py`` (JVM start and a warm-up round not timed). ``--rounds`` rounds, ours and Java's
interleaved, medians printed with the ratio ours/Java, wall and CPU seconds (this process for ours, the JVM's for
Java). Ours runs its groups one after the other on one task thread; ``--local-threads 2`` adds a column of ours with
two task threads (the two cores Java's ``local[2]`` has).

Correctness, every round: a completed replacecommit on both, the same number of new base files per partition, the
same rows (count and checksum of the data columns, our reader; Java's reader too in the first round), and each new
base file of ours sorted by ``fare``.

Usage: python benchmarks/clustering_benchmark.py [--rows 1000000] [--batches 8] [--rounds 3] [--local-threads 2]
       [--quick] [--java-memory 4g] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from java_peer_benchmark import (
    Bench,
    CheckFailed,
    Clock,
    Op,
    Timing,
    active_instants,
    data_files,
    java_options,
    same,
)

from lake_orchestration.datagen import generate_trips
from lake_orchestration.engines.base import Engine
from lake_orchestration.engines.local import LocalEngine
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.clustering import ClusteringConfig, run_clustering
from lake_orchestration.hudi.table import HudiTable
from tests.java.harness import start_java_hudi

SORT = "fare"


def build(b: Bench, rows: int, batches: int) -> Path:
    """Java writes the table: ``batches`` bulk inserts of ``rows / batches`` trips in 4 cities each."""
    state = b.fresh("clustering-table")
    src = b.fresh("clustering-input").with_suffix(".parquet")
    t0 = time.perf_counter()
    for k in range(batches):
        pq.write_table(generate_trips(rows // batches, partitions=4, seed=30 + k), src)
        b.java.call(
            "write", path=str(state), input=str(src), options=java_options(TableType.COPY_ON_WRITE, "bulk_insert")
        )
    files = len([f for f in data_files(state) if f.endswith(".parquet")])
    print(
        f"  clustering table: Java wrote {rows:,} rows in {batches} bulk inserts ({files} base files) "
        f"in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    return state


def _new_files(path: Path) -> tuple[str, list[str]]:
    """The completed replacecommit's instant and the base files it wrote (relative paths)."""
    done = [n for n in active_instants(path) if n.endswith(".replacecommit")]
    if len(done) != 1:
        raise CheckFailed(f"{path}: expected one completed replacecommit, got {done}")
    instant = done[0].split(".")[0]
    return instant, [f for f in data_files(path) if f.endswith(f"_{instant}.parquet")]


def clustering(b: Bench, state: Path, rows: int, engine: Engine | None = None, label: str = "") -> None:
    op = Op("clustering", rows)
    config = ClusteringConfig.from_options(
        {"hoodie.clustering.plan.strategy.sort.columns": SORT, "hoodie.metadata.enable": "false"}
    )

    def ours(eng: Engine | None = None) -> tuple[Timing, Path]:
        path = b.copy(state, "clustering-ours")
        clock = Clock()
        (result,) = run_clustering(HudiTable(str(path)), schedule=True, config=config, engine=eng)
        timing = clock.stop()
        same("rows written by our clustering", result.rows_written, rows)
        return timing, path

    def java() -> tuple[Timing, Path]:
        path = b.copy(state, "clustering-java")
        res = b.java.call(
            "timed_sql",
            query=(
                f"call run_clustering(path => '{path}', order => '{SORT}', options => 'hoodie.metadata.enable=false')"
            ),
        )
        return (res["seconds"], res["cpu"]), path

    def check(o: Path, j: Path, with_java: bool) -> str:
        (_, new_o), (_, new_j) = _new_files(o), _new_files(j)
        same(
            "new base files per partition",
            sorted(f.split("/")[0] for f in new_o),
            sorted(f.split("/")[0] for f in new_j),
        )
        for f in new_o:
            fares = pq.read_table(o / f, columns=[SORT]).column(SORT).to_pylist()
            if fares != sorted(fares):
                raise CheckFailed(f"ours: {f} is not sorted by {SORT}")
        return b.rows_check(o, j, with_java, expected=rows) + f"; {len(new_o)} new base files on both, sorted"

    alt = (lambda: ours(engine)) if engine is not None else None
    b.interleaved(op, ours, java, check, alt)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--local-threads", type=int, default=0, help="also ours with this many task threads")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 40,000 rows, 1 round")
    ap.add_argument("--java-memory", default="4g")
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    if args.quick:
        args.rows, args.rounds = 40_000, 1
    root = Path(tempfile.mkdtemp(prefix="clustering-bench-", dir=args.workdir))
    os.environ.setdefault("JAVA_HUDI_MASTER", "local[2]")
    os.environ["JAVA_HUDI_DRIVER_MEMORY"] = args.java_memory
    print(
        f"{os.cpu_count()} cores, load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())} at start; "
        f"Java: Spark {os.environ['JAVA_HUDI_MASTER']}; work folder {root}",
        flush=True,
    )
    java = start_java_hudi(root / "java", on_missing=lambda reason: sys.exit(f"Java Hudi is not available: {reason}"))
    engine = LocalEngine(threads=args.local_threads) if args.local_threads else None
    label = f"ours {args.local_threads} thr" if engine is not None else ""
    b = Bench(java, root, args.rounds, engine, label)
    try:
        t0 = time.perf_counter()
        rounds, b.rounds = b.rounds, 1  # an untimed warm-up round on a small table (JIT, class loading, imports)
        clustering(b, build(b, 8_000, 2), 8_000, engine, label)
        b.rounds, b.results = rounds, {}
        print(f"warm-up round done in {time.perf_counter() - t0:.0f} s; timed rounds:", flush=True)
        clustering(b, build(b, args.rows, args.batches), args.rows, engine, label)
        op = b.results["clustering"]
        ours, jv = statistics.median(op.ours), statistics.median(op.java)
        cpu_o, cpu_j = statistics.median(op.ours_cpu), statistics.median(op.java_cpu)
        print(f"\nmedians of {b.rounds} interleaved rounds, {args.rows:,} rows in {args.batches} bulk inserts")
        print(
            f"clustering  ours {ours:.2f} s  Java {jv:.2f} s  ours/Java {ours / jv:.2f}   "
            f"cpu-s ours {cpu_o:.2f}  Java {cpu_j:.2f}  cpu ours/Java {cpu_o / cpu_j:.2f}"
        )
        if op.alt:
            alt = statistics.median(op.alt)
            print(f"            {label} {alt:.2f} s  {label}/Java {alt / jv:.2f}")
        print(
            f"load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())} at the end; "
            f"total {time.perf_counter() - t0:.0f} s"
        )
    finally:
        java.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
