"""Compaction on Hudi's defaults, run as a user runs it, against the pyarrow I/O floor (issue 13).

For each codec of ``--codecs`` (default gzip, Hudi's default, then snappy and zstd) a MERGE_ON_READ table is built
with this project's writer on its defaults (``hoodie.parquet.max.file.size`` and ``hoodie.parquet.block.size``
120 MiB, page size 1 MiB, dictionary on): a bulk_insert of ``--rows`` trips into ``--groups`` file groups of one
partition, then an upsert of ``--update-fraction`` of them (one log file per file group). Then, interleaved,
``--repeat`` times (the best run of each counts; every run is printed):

* compaction: ``lake-orch compaction run PATH --schedule --engine local`` as a subprocess on a fresh copy of the
  table (with ``hoodie.compact.inline.max.delta.commits=1`` so the one deltacommit triggers a plan, and the codec
  as ``hoodie.parquet.compression.codec``);
* floor: a fresh Python process in which pyarrow reads each of the same base files (``pq.read_table``) and writes
  its rows to a new parquet file with the same codec and pyarrow's defaults (its default compression level, row
  groups of up to 1Mi rows, dictionary on): no merge, no Hudi footer;
* floor at Java's level: the same with the compression level parquet-mr uses by default (gzip 6, zstd 3), which
  the compaction uses too, so the ratio to it compares equal work.

Wall seconds, CPU seconds (user + system of the child, from ``os.wait4``; both processes may use a second core:
the compaction writes on a background thread and pyarrow decodes on its thread pool), the ratio to the floor, the
input rows (base rows + log records) per CPU second ("per core") and the peak RSS of each child (``ru_maxrss``;
this parent stays small, so the figure is the child's). The load of the machine is printed: the load average and
the CPU seconds other processes used while each child ran (from ``/proc/stat``).

Targets (issue 13): compaction <= 1.5x the floor and >= 1.0M input rows/s per core, for gzip, snappy and zstd; peak
RSS of a 1M-row file group <= 1 GB.

Usage: python benchmarks/hudi_defaults_benchmark.py [--rows 2000000] [--groups 4] [--codecs gzip,snappy,zstd]
       [--repeat 2] [--update-fraction 0.1] [--workdir DIR] [--profile] [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JAVA_LEVEL = {"gzip": 6, "zstd": 3}  # parquet-mr: zlib's default level, ZstandardCodec's default level

_BUILD = r"""
import json, sys, time
from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.write import WriteOptions, write_table
path, rows, groups, fraction, codec = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
opts = WriteOptions(table_name="bench", record_key_fields=("uuid",), partition_fields=("city",), precombine_field="ts",
                    hive_style_partitioning=True, max_rows_per_file=-(-rows // groups), compression=codec)
base = generate_trips(rows, partitions=1, seed=1)
t0 = time.perf_counter()
write_table(path, base, operation="bulk_insert", options=opts)
t1 = time.perf_counter()
write_table(path, generate_updates(base, fraction=fraction, seed=10), operation="upsert", options=opts)
print(json.dumps({"bulk_insert": t1 - t0, "upsert": time.perf_counter() - t1}))
"""

_FLOOR = r"""
import sys
import pyarrow.parquet as pq
codec, level, out = sys.argv[1], sys.argv[2], sys.argv[3]
for i, base in enumerate(sys.argv[4:]):
    t = pq.read_table(base)
    pq.write_table(t, f"{out}/{i}.parquet", compression=codec, compression_level=int(level) if level else None)
"""


_BEFORE = r"""
import sys
# the package from the --before tree, not the editable install of this one
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path.insert(0, sys.argv.pop(1))
from lake_orchestration.cli.app import main
sys.argv[0] = "lake-orch"
sys.exit(main())
"""


def proc_stat_busy() -> float:
    """CPU seconds all processes of the machine spent (user + nice + system + irq + softirq + steal)."""
    with open("/proc/stat") as f:
        f_ = f.readline().split()[1:]
    vals = [int(x) for x in f_]
    busy = vals[0] + vals[1] + vals[2] + vals[5] + vals[6] + (vals[7] if len(vals) > 7 else 0)
    return busy / os.sysconf("SC_CLK_TCK")


def run_child(argv: list[str]) -> dict:
    """Run argv; wall seconds, the child's CPU seconds (user + system, from ``resource.getrusage(RUSAGE_CHILDREN)``
    before and after), its peak RSS in MB (``ru_maxrss`` from ``os.wait4``) and the CPU seconds others used meanwhile.
    """
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy0 = proc_stat_busy()
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True)
        assert p.stdout is not None
        out = p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        busy = proc_stat_busy() - busy0
        if p.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(argv[:4])} failed ({p.returncode}):\n{err.read()[-3000:]}")
    usage1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage1.ru_utime - usage0.ru_utime + usage1.ru_stime - usage0.ru_stime
    return {"wall": wall, "cpu": cpu, "rss": usage.ru_maxrss / 1024, "stdout": out, "busy": busy}


def build(path: Path, *, rows: int, groups: int, fraction: float, codec: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _BUILD, str(path), str(rows), str(groups), str(fraction), codec],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def base_files(path: Path) -> tuple[list[str], int]:
    """The latest base files (what the compaction reads) and their row count (footers only)."""
    import pyarrow.parquet as pq

    files = sorted(str(p) for p in path.rglob("*.parquet") if not p.name.startswith("."))
    return files, sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def fresh_copy(src: Path, dst: Path) -> Path:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


def lake_orch() -> str:
    exe = Path(sys.executable).with_name("lake-orch")
    return str(exe) if exe.exists() else "lake-orch"


def run_compaction_once(
    src: Path, root: Path, codec: str, base_rows: int, name: str, cmd: list[str], rep: int, results: dict
) -> None:
    """``cmd compaction run --schedule --engine local`` on a fresh copy of ``src``; recorded under ``name``."""
    work = fresh_copy(src, root / "work")
    argv = [
        *cmd,
        "compaction",
        "run",
        str(work),
        "--schedule",
        "--engine",
        "local",
        "--json",
        "--option",
        "hoodie.compact.inline.max.delta.commits=1",
        "--option",
        f"hoodie.parquet.compression.codec={codec}",
    ]
    r = run_child(argv)
    (res,) = json.loads(r["stdout"])
    r["input_rows"] = base_rows + res["log_records"]
    results.setdefault((codec, name), []).append(r)
    print(
        f"  run {rep + 1} {codec:6s} {name:22s} wall {r['wall']:6.2f} s  CPU {r['cpu']:6.2f} s  "
        f"others' CPU {max(0.0, r['busy'] - r['cpu']):5.1f} s  ({res['operations']} file groups, "
        f"{res['rows_written']:,} rows, {res['log_records']:,} log records)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--update-fraction", type=float, default=0.10)
    ap.add_argument("--codecs", default="gzip,snappy,zstd")
    ap.add_argument("--repeat", type=int, default=2, help="interleaved runs of each measurement (best counts)")
    ap.add_argument("--workdir", help="keep the tables here (built once, reused when present)")
    ap.add_argument("--profile", action="store_true", help="also run one compaction per codec under cProfile")
    ap.add_argument(
        "--before",
        metavar="DIR",
        help="also run the compaction with the lake_orchestration package of DIR (e.g. `git archive REV "
        "lake_orchestration | tar -x -C DIR`), interleaved: 'compaction (before)'",
    )
    args = ap.parse_args()
    codecs = [c.strip().lower() for c in args.codecs.split(",") if c.strip()]
    root = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="lake-orch-defaults-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPUs")
    tables: dict[str, Path] = {}
    inputs: dict[str, tuple[list[str], int]] = {}
    for codec in codecs:
        src = root / f"src-{codec}-{args.rows}-{args.groups}"
        if not (src / ".hoodie").exists():
            t = build(src, rows=args.rows, groups=args.groups, fraction=args.update_fraction, codec=codec)
            print(f"built {src.name}: bulk_insert {t['bulk_insert']:.1f} s, upsert {t['upsert']:.1f} s")
        tables[codec] = src
        inputs[codec] = base_files(src)
        files, rows = inputs[codec]
        size = sum(os.path.getsize(f) for f in files)
        print(f"{codec}: {len(files)} base files, {rows:,} rows, {size / 1e6:.0f} MB")
    results: dict[tuple[str, str], list[dict]] = {}
    for rep in range(args.repeat):
        for codec in codecs:
            files, base_rows = inputs[codec]
            runs = [("floor", ""), ("floor, Java's level", str(JAVA_LEVEL.get(codec, "")))]
            if codec not in JAVA_LEVEL:
                runs = runs[:1]
            for name, level in runs:
                out = root / "floor-out"
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                r = run_child([sys.executable, "-c", _FLOOR, codec, level, str(out), *files])
                r["input_rows"] = base_rows
                results.setdefault((codec, name), []).append(r)
                print(
                    f"  run {rep + 1} {codec:6s} {name:22s} wall {r['wall']:6.2f} s  CPU {r['cpu']:6.2f} s  "
                    f"others' CPU {max(0.0, r['busy'] - r['cpu']):5.1f} s"
                )
            variants = [("compaction (before)", [sys.executable, "-c", _BEFORE, args.before])] if args.before else []
            for name, cmd in [*variants, ("compaction", [lake_orch()])]:
                run_compaction_once(tables[codec], root, codec, base_rows, name, cmd, rep, results)
    print(f"load average after: {os.getloadavg()}")
    print()
    print("| codec | run | wall s | CPU s | input rows/s per core (CPU) | peak RSS | ratio to floor (wall) | (CPU) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for codec in codecs:
        floor = min(results[(codec, "floor")], key=lambda r: r["wall"])
        floor_cpu = min(r["cpu"] for r in results[(codec, "floor")])
        for name in ("floor", "floor, Java's level", "compaction (before)", "compaction"):
            rs = results.get((codec, name))
            if not rs:
                continue
            wall = min(r["wall"] for r in rs)
            cpu = min(r["cpu"] for r in rs)
            rss = max(r["rss"] for r in rs)
            rate = rs[0]["input_rows"] / cpu
            print(
                f"| {codec} | {name} | {wall:.2f} | {cpu:.2f} | {rate:,.0f} | {rss:,.0f} MB | "
                f"**{wall / floor['wall']:.2f}** | {cpu / floor_cpu:.2f} |"
            )
    print()
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"(peak RSS: ru_maxrss of each child, largest of its runs; Linux counts the parent's peak, {own:.0f} MB "
        "here, into a spawned child's, so smaller figures are not measurable)"
    )
    if args.profile:
        for codec in codecs:
            work = fresh_copy(tables[codec], root / "work")
            prof = root / f"compaction-{codec}.prof"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "cProfile",
                    "-o",
                    str(prof),
                    lake_orch(),
                    "compaction",
                    "run",
                    str(work),
                    "--schedule",
                    "--engine",
                    "local",
                    "--option",
                    "hoodie.compact.inline.max.delta.commits=1",
                    "--option",
                    f"hoodie.parquet.compression.codec={codec}",
                ],
                check=True,
                capture_output=True,
            )
            import pstats

            print(f"--- cProfile of the compaction, {codec} (tottime, top 15) ---")
            pstats.Stats(str(prof)).sort_stats("tottime").print_stats(15)
    if not args.workdir:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
