"""Paimon compaction speed: a full compaction of one bucket against a pyarrow read+write floor.

The table (one bucket, ``--rows`` rows, ``--updates`` commits each updating ``--update-fraction`` of the keys, one
commit deleting ``--delete-fraction``) is written by pypaimon in its own venv (``PYPAIMON_PYTHON``, else the venv
the Paimon tests build under ``~/.cache/lake_orchestration``). Each measurement runs in a fresh process on a fresh
copy of the table, ``--repeat`` times interleaved; the best of each is compared:

* floor: pyarrow reads every live file of the bucket and writes the rows to one parquet file with the table's codec
  (zstd), no merge;
* compaction: ``run_compaction(table, full=True)`` (plan, sort-merge with deduplicate and drop-delete, rolling output,
  COMPACT snapshot), local engine.

Printed: input rows/s of the compaction, wall seconds of both and their ratio (target <= 2: the merge sorts, the
floor does not), peak RSS of each process.

Usage: python benchmarks/paimon_compaction_benchmark.py [--rows 2000000] [--updates 3] [--update-fraction 0.1]
       [--delete-fraction 0.02] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "tests" / "paimon" / "pypaimon_driver.py"
PYPAIMON_VERSION = "2.1.0"

_CHILD = r"""
import json, resource, sys, time
import pyarrow as pa
import pyarrow.parquet as pq
from lake_orchestration.paimon.table import PaimonTable
from lake_orchestration.paimon.services.compaction import run_compaction

mode, path = sys.argv[1], sys.argv[2]
import pyarrow.compute as pc
pc.sum(pa.array([1]))  # pyarrow's first compute call imports pandas (~0.4 s): a process cost, not compaction's
table = PaimonTable.open(path)
(bucket,) = table.buckets()
files = bucket.files
rows = sum(f.row_count for f in files)
base = table.bucket_path(bucket.partition, bucket.bucket)
start = time.perf_counter()
if mode == "floor":
    data = pa.concat_tables([pq.read_table(f"{base}/{f.file_name}") for f in files])
    pq.write_table(data, f"{base}/floor.parquet", compression="zstd", compression_level=1)
    out_rows = data.num_rows
else:
    result = run_compaction(table, full=True)
    out_rows = sum(f.row_count for f in table.buckets()[0].files)
seconds = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "rows_in": rows, "rows_out": out_rows, "files_in": len(files), "rss": rss}))
"""


def pypaimon_python() -> str:
    given = os.environ.get("PYPAIMON_PYTHON")
    if given:
        return given
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lake_orchestration"
    py = cache / f"pypaimon-{PYPAIMON_VERSION}-py{sys.version_info.major}{sys.version_info.minor}" / "bin" / "python"
    if not py.is_file():
        raise SystemExit(f"no pypaimon venv at {py}: run the Paimon tests once (they build it) or set PYPAIMON_PYTHON")
    return str(py)


def build(warehouse: Path, args: argparse.Namespace) -> Path:
    spec = {
        "warehouse": str(warehouse),
        "identifier": "default.bench",
        "rows": args.rows,
        "updates": args.updates,
        "update_fraction": args.update_fraction,
        "delete_fraction": args.delete_fraction,
        "options": {"bucket": "1", "write-only": "true"},
    }
    subprocess.run([pypaimon_python(), str(DRIVER), "bulk", json.dumps(spec)], check=True, capture_output=True)
    return warehouse / "default.db" / "bench"


def measure(mode: str, table: Path, scratch: Path) -> dict:
    copy = scratch / f"{mode}-copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(table, copy)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", _CHILD, mode, str(copy)], check=True, capture_output=True, text=True,
                         env=env)  # fmt: skip
    shutil.rmtree(copy, ignore_errors=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--updates", type=int, default=3)
    parser.add_argument("--update-fraction", type=float, default=0.1)
    parser.add_argument("--delete-fraction", type=float, default=0.02)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="paimon-bench-") as tmp:
        scratch = Path(tmp)
        table = build(scratch / "warehouse", args)
        runs: dict[str, list[dict]] = {"floor": [], "compaction": []}
        for _ in range(args.repeat):
            for mode in runs:
                runs[mode].append(measure(mode, table, scratch))
                print(mode, runs[mode][-1], flush=True)
    floor = min(runs["floor"], key=lambda r: r["seconds"])
    compaction = min(runs["compaction"], key=lambda r: r["seconds"])
    print(
        f"input rows {compaction['rows_in']:,} in {compaction['files_in']} files -> {compaction['rows_out']:,} rows; "
        f"compaction {compaction['seconds']:.2f}s ({compaction['rows_in'] / compaction['seconds']:,.0f} rows/s, "
        f"peak RSS {compaction['rss'] / 2**20:.0f} MiB); floor {floor['seconds']:.2f}s "
        f"(peak RSS {floor['rss'] / 2**20:.0f} MiB); ratio {compaction['seconds'] / floor['seconds']:.2f}"
    )


if __name__ == "__main__":
    main()
