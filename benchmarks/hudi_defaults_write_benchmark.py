"""Writes on Hudi's defaults, run as a user runs them, against the pyarrow I/O floor (issue 13).

Input: ``--rows`` trips in ``--partitions`` cities, written once to a parquet file with the codec (as a user's
input file), and an update file with ``--update-fraction`` of them (same keys, new fare and ts). For each codec of
``--codecs`` (default gzip, Hudi's default) and ``--repeat`` times, interleaved (every run printed, the best counts):

* bulk_insert: ``lake-orch write TABLE --input BASE --operation bulk_insert --table-name ... --record-key uuid
  --precombine-field ts --partition-field city`` into a new MERGE_ON_READ table, every other option at its default
  (``hoodie.parquet.max.file.size`` / ``hoodie.parquet.block.size`` 120 MiB, gzip unless ``--codecs`` says
  otherwise, given as ``hoodie.parquet.compression.codec``);
* its floor: a fresh Python process in which pyarrow reads the input file and writes it to one parquet file with
  the same codec and pyarrow's defaults (no keys, no meta columns, no sort, no Hudi footer);
* its floor at Java's level: the same with the compression level parquet-mr uses by default (gzip 6, zstd 3;
  Arrow's defaults are 9 and 1), which the project's base-file writer uses too: the ratio to it compares equal work;
* upsert: ``lake-orch write TABLE --input UPDATES --operation upsert`` into that table (one log file per file
  group: the index reads the key column of the base files the footers do not rule out, the updates are encoded as
  Avro log blocks);
* its floor: a fresh process that reads the ``_hoodie_record_key`` column of every base file of the table and the
  update file, and writes the updated rows to a parquet file with the codec (and again at Java's level).

Figures: wall seconds, CPU seconds of the child (user + system from ``resource.getrusage(RUSAGE_CHILDREN)``
before and after; pyarrow may use a second core), rows per CPU second, the ratio to the floor in CPU and in wall
time, and the CPU seconds other processes used meanwhile (``/proc/stat``: how loaded the machine was).

Targets (issue 13): bulk_insert <= 2.0x its floor, upsert of 10 % into the table <= 4.0x its floor.

Usage: python benchmarks/hudi_defaults_write_benchmark.py [--rows 2000000] [--partitions 4] [--repeat 2]
       [--update-fraction 0.1] [--codecs gzip] [--profile]
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

_INPUT = r"""
import sys
import pyarrow.parquet as pq
from lake_orchestration.datagen import generate_trips, generate_updates
rows, parts, fraction, codec, base_path, upd_path = sys.argv[1:7]
base = generate_trips(int(rows), partitions=int(parts), seed=1)
pq.write_table(base, base_path, compression=codec)
pq.write_table(generate_updates(base, fraction=float(fraction), seed=2), upd_path, compression=codec)
"""

JAVA_LEVEL = {"gzip": 6, "zstd": 3}  # parquet-mr's default levels (zlib's 6, ZstandardCodec's 3); Arrow: 9 and 1

_BULK_FLOOR = r"""
import sys
import pyarrow.parquet as pq
src, out, codec, level = sys.argv[1:5]
pq.write_table(pq.read_table(src), out, compression=codec, compression_level=int(level) if level else None)
"""

_UPSERT_FLOOR = r"""
import sys
import pyarrow.parquet as pq
src, out, codec, level = sys.argv[1:5]
keys = sum(pq.read_table(f, columns=["_hoodie_record_key"]).num_rows for f in sys.argv[5:])
pq.write_table(pq.read_table(src), out, compression=codec, compression_level=int(level) if level else None)
"""


def proc_stat_busy() -> float:
    """CPU seconds all processes of the machine spent (user + nice + system + irq + softirq + steal)."""
    with open("/proc/stat") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    busy = vals[0] + vals[1] + vals[2] + vals[5] + vals[6] + (vals[7] if len(vals) > 7 else 0)
    return busy / os.sysconf("SC_CLK_TCK")


def run_child(argv: list[str]) -> dict:
    """Run argv: wall seconds, the child's CPU seconds and the CPU seconds the rest of the machine used meanwhile."""
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy0 = proc_stat_busy()
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    busy = proc_stat_busy() - busy0
    usage1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:5])} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    cpu = usage1.ru_utime - usage0.ru_utime + usage1.ru_stime - usage0.ru_stime
    return {"wall": wall, "cpu": cpu, "others": max(0.0, busy - cpu), "stdout": p.stdout}


def lake_orch() -> str:
    exe = Path(sys.executable).with_name("lake-orch")
    return str(exe) if exe.exists() else "lake-orch"


def base_files(table: Path) -> list[str]:
    return sorted(str(p) for p in table.rglob("*.parquet") if not p.name.startswith("."))


def write_cmd(table: Path, src: Path, operation: str, codec: str, *, create: bool) -> list[str]:
    argv = [lake_orch(), "write", str(table), "--input", str(src), "--operation", operation, "--json"]
    if create:
        argv += [
            "--table-name",
            "bench",
            "--record-key",
            "uuid",
            "--precombine-field",
            "ts",
            "--partition-field",
            "city",
        ]
    if codec != "gzip":
        argv += ["--option", f"hoodie.parquet.compression.codec={codec}"]
    return argv


def profile(table: Path, src: Path, operation: str, codec: str, *, create: bool, out: Path) -> None:
    """Run the same CLI command under cProfile (CPU time) and print the top entries."""
    argv = write_cmd(table, src, operation, codec, create=create)
    code = (
        "import cProfile, pstats, sys, time\n"
        "from lake_orchestration.cli.app import cli\n"
        "pr = cProfile.Profile(time.process_time)\n"
        "pr.enable()\n"
        "try:\n"
        "    cli(sys.argv[1:], standalone_mode=False)\n"
        "finally:\n"
        "    pr.disable()\n"
        f"    pr.dump_stats({str(out)!r})\n"
        f"    pstats.Stats({str(out)!r}).sort_stats('cumulative').print_stats(30)\n"
    )
    p = subprocess.run([sys.executable, "-c", code, *argv[1:]], capture_output=True, text=True, check=True)
    print(p.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--update-fraction", type=float, default=0.10)
    ap.add_argument("--codecs", default="gzip")
    ap.add_argument("--repeat", type=int, default=2, help="interleaved runs of each measurement (best counts)")
    ap.add_argument("--profile", action="store_true", help="also run one bulk_insert and upsert under cProfile")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lake-orch-write-defaults-"))
    print(
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start; {args.rows:,} rows, "
        f"{args.partitions} partitions, {args.update_fraction:.0%} updates"
    )
    try:
        for codec in args.codecs.split(","):
            base, upd = root / f"base.{codec}.parquet", root / f"updates.{codec}.parquet"
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    _INPUT,
                    str(args.rows),
                    str(args.partitions),
                    str(args.update_fraction),
                    codec,
                    str(base),
                    str(upd),
                ],
                check=True,
            )
            runs: dict[str, list[dict]] = {
                k: [] for k in ("bulk floor", "bulk floor L", "bulk_insert", "upsert floor", "upsert floor L", "upsert")
            }
            java = str(JAVA_LEVEL.get(codec, ""))
            n_upd = 0
            for r in range(args.repeat):
                table = root / f"t.{codec}.{r}"
                out = str(root / "floor.parquet")
                runs["bulk floor"].append(run_child([sys.executable, "-c", _BULK_FLOOR, str(base), out, codec, ""]))
                runs["bulk floor L"].append(run_child([sys.executable, "-c", _BULK_FLOOR, str(base), out, codec, java]))
                runs["bulk_insert"].append(run_child(write_cmd(table, base, "bulk_insert", codec, create=True)))
                files = base_files(table)
                for key, level in (("upsert floor", ""), ("upsert floor L", java)):
                    argv = [sys.executable, "-c", _UPSERT_FLOOR, str(upd), out, codec, level, *files]
                    runs[key].append(run_child(argv))
                res = run_child(write_cmd(table, upd, "upsert", codec, create=False))
                n_upd = json.loads(res["stdout"])["updated"]
                runs["upsert"].append(res)
                for k, v in runs.items():
                    print(
                        f"  run {r + 1} {codec:<6} {k:<15} wall {v[-1]['wall']:6.2f} s  cpu {v[-1]['cpu']:6.2f} s"
                        f"  (others used {v[-1]['others']:5.1f} cpu-s meanwhile)"
                    )
                if r + 1 < args.repeat:
                    shutil.rmtree(table)
            best = {k: {m: min(x[m] for x in v) for m in ("wall", "cpu")} for k, v in runs.items()}
            print(f"\n{codec}: best of {args.repeat} (base files: {len(files)}; L = at Java's level {java or '-'})")
            print(
                f"{'step':<16}{'rows':>11}{'wall s':>9}{'cpu s':>9}{'rows/cpu-s':>13}"
                f"{'x floor cpu':>13}{'x floor wall':>14}{'x floor L cpu':>15}"
            )
            for step, rows in (("bulk_insert", args.rows), ("upsert", n_upd)):
                prefix = "bulk" if step == "bulk_insert" else "upsert"
                floor, floor_l = best[f"{prefix} floor"], best[f"{prefix} floor L"]
                for k in (step, f"{prefix} floor", f"{prefix} floor L"):
                    b = best[k]
                    ratio = ""
                    if k == step:
                        ratio = (
                            f"{b['cpu'] / floor['cpu']:>13.2f}{b['wall'] / floor['wall']:>14.2f}"
                            f"{b['cpu'] / floor_l['cpu']:>15.2f}"
                        )
                    print(f"{k:<16}{rows:>11,}{b['wall']:>9.2f}{b['cpu']:>9.2f}{rows / b['cpu']:>13,.0f}{ratio}")
            if args.profile:
                table = root / f"t.{codec}.profile"
                profile(table, base, "bulk_insert", codec, create=True, out=root / "bulk.prof")
                profile(table, upd, "upsert", codec, create=False, out=root / "upsert.prof")
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
